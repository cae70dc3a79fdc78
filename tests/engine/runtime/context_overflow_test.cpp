// Context overflow (docs/context-overflow.md) through the engine on tiny
// random models:
//  - shift: with one layer, K/V depend only on a token and its position, so
//    after a shift the cache must equal a fresh prefill of the kept tokens at
//    their new positions; the next token's logits are compared with that
//    prefill's, for every KV cache type, and no block is left in use after;
//  - a long generation with shift runs far past max_model_len, parallel
//    samples sharing the blocks that move;
//  - a shift short of free blocks for its copies of shared blocks preempts
//    another sequence, and nobody's tokens change;
//  - truncate_middle keeps the first context_keep tokens and the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <vector>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

class ContextOverflowTest : public ::testing::Test {
 public:
  static std::string write_model(test::TinyModelSpec spec, const std::string& name) {
    const std::string path = test::tiny_model_temp_path("context_overflow_" + name);
    EXPECT_TRUE(test::write_tiny_gguf(spec, path).ok());
    return path;
  }
  static EngineConfig config(const std::string& path, KvCacheType type = KvCacheType::F32) {
    EngineConfig c;
    c.model_path = path;
    c.num_threads = 2;
    c.block_size = 8;
    c.max_model_len = 64;
    c.kv_cache_type = type;
    c.context_overflow = ContextOverflow::Shift;
    c.context_keep = 12;  // rounded up to 2 blocks: 16 tokens kept
    return c;
  }
  static std::vector<int32_t> prompt(int32_t n, int32_t salt = 0) {
    std::vector<int32_t> p;
    for (int32_t i = 0; i < n; ++i) p.push_back(3 + (i * 37 + salt * 11) % 250);
    return p;
  }
};

struct Generation {
  std::vector<std::vector<float>> logits;  // [generated token][vocab], the logits it was drawn from
  std::vector<TokenEvent> events;          // token events and the finishing one
};

Generation generate(Engine& engine, std::vector<int32_t> tokens, int32_t max_tokens) {
  auto run = std::make_shared<Generation>();
  GenerationRequest r;
  r.prompt_tokens = std::move(tokens);
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = max_tokens;
  r.on_logits = [run](int32_t, int32_t, const float* l, int32_t vocab) { run->logits.emplace_back(l, l + vocab); };
  r.on_event = [run](const TokenEvent& ev) { run->events.push_back(ev); };
  EXPECT_TRUE(engine.submit(std::move(r)).ok());
  engine.run_until_idle();
  return *run;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  return d;
}

// What a shift left in the cache, compared with computing it afresh.
struct ShiftCheck {
  double shifted_vs_fresh = 0.0;  // max |logit| difference, shifted cache vs fresh prefill, same KV type
  std::vector<float> fresh;       // the fresh prefill's logits
};

ShiftCheck check_shift(const std::string& path, KvCacheType type, int32_t tp = 1) {
  EngineConfig c = ContextOverflowTest::config(path, type);
  if (tp > 1) {  // tensor parallelism: one storage layer per (layer, KV head slot)
    c.tp = tp;
    c.tp_reduce = TpReduce::Deterministic;
  }
  auto created = Engine::create(c);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  if (!created.ok()) return {};
  Engine& engine = **created;
  const std::vector<int32_t> p = ContextOverflowTest::prompt(40);
  const Generation run = generate(engine, p, 40);
  EXPECT_EQ(run.events.back().finish, FinishReason::Length);
  EXPECT_EQ(run.events.back().stats.num_generated_tokens, 40);
  EXPECT_EQ(run.events.back().stats.num_context_shifts, 1);
  EXPECT_EQ(run.events.back().stats.num_dropped_tokens, 16);
  EXPECT_EQ(run.events.back().stats.num_context_tokens, 40 + 40 - 16);  // what the context holds at the end
  // The token after the shift says what was dropped: 2 blocks after the 2 kept.
  std::vector<int32_t> history = p;
  size_t after = 0;
  for (size_t i = 0; i < run.events.size(); ++i) {
    const TokenEvent& ev = run.events[i];
    if (ev.num_dropped_tokens > 0) {
      EXPECT_EQ(ev.num_dropped_tokens, 16);
      EXPECT_EQ(ev.dropped_from, 16);
      EXPECT_EQ(static_cast<int32_t>(history.size()), 64);  // the context was full
      after = i;
      break;
    }
    if (ev.token >= 0) history.push_back(ev.token);
  }
  EXPECT_GT(after, 0u);
  if (after == 0) return {};
  std::vector<int32_t> kept(history.begin(), history.begin() + 16);
  kept.insert(kept.end(), history.begin() + 32, history.end());
  const Generation fresh = generate(engine, kept, 1);
  // Prefix caching may serve the untouched kept blocks, never a moved one.
  EXPECT_LE(fresh.events.back().stats.num_cached_prompt_tokens, 16);
  EXPECT_EQ(engine.kv_stats().num_used_blocks, 0) << "blocks left in use";
  ShiftCheck out;
  out.fresh = fresh.logits.at(0);
  out.shifted_vs_fresh = max_abs_diff(run.logits.at(after), out.fresh);
  return out;
}

TEST_F(ContextOverflowTest, ShiftedCacheGivesTheLogitsOfAFreshPrefillOfTheKeptTokens) {
  struct Variant {
    const char* name;
    test::TinyModelSpec spec;
  };
  std::vector<Variant> variants(3);
  variants[0].name = "llama";  // adjacent pairs, one base
  variants[1].name = "llama_rope_freqs";  // with Llama 3 freq factors
  variants[1].spec.rope_freqs = true;
  // Half-split pairs; layer 0 of Gemma 3 is a sliding-window layer with the
  // local rope base (its window, 512, is wider than this context).
  variants[2].name = "gemma3_local_layer";
  variants[2].spec.arch = Architecture::Gemma3;
  for (Variant& v : variants) {
    SCOPED_TRACE(v.name);
    v.spec.layers = 1;  // K/V of one layer depend on token and position only
    v.spec.heads = 2;
    v.spec.kv_heads = 2;  // two KV heads: tp = 2 puts one in each storage layer
    v.spec.head_dim = 32;  // q8_0 needs whole blocks of 32 per head
    v.spec.ffn = 256;      // tp_reduce = deterministic cuts the FFN into 8 chunks of 32
    const std::string path = write_model(v.spec, v.name);
    const ShiftCheck f32 = check_shift(path, KvCacheType::F32);
    std::printf("%s f32: max |shifted - fresh| logit = %.3g\n", v.name, f32.shifted_vs_fresh);
    // f32: the keys differ only by the rounding of composing two rotations
    // (kernels test: ~1e-5 of a key's length at these positions); measured
    // ~1e-6 on logits of size ~1.
    EXPECT_LT(f32.shifted_vs_fresh, 1e-4);
    const ShiftCheck tp2 = check_shift(path, KvCacheType::F32, 2);
    std::printf("%s f32 tp=2: max |shifted - fresh| logit = %.3g\n", v.name, tp2.shifted_vs_fresh);
    EXPECT_LT(tp2.shifted_vs_fresh, 1e-4) << "tp = 2";
    for (KvCacheType type : {KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0}) {
      const ShiftCheck q = check_shift(path, type);
      // The type's own error: the same fresh prefill stored in f32 vs in the type.
      const double own = max_abs_diff(q.fresh, f32.fresh);
      std::printf("%s %s: max |shifted - fresh| logit = %.3g (the type's own error vs f32: %.3g)\n", v.name,
                  kv_cache_type_name(type), q.shifted_vs_fresh, own);
      // A shifted key was rounded to the type twice (written, then
      // re-rotated), a fresh one once: the two differ by at most about twice
      // the type's own error, plus the f32 composition error.
      EXPECT_LE(q.shifted_vs_fresh, 2.0 * own + 1e-4) << kv_cache_type_name(type);
    }
  }
}

// shift where no shift can happen (paging off; a context of two blocks with
// the first kept) stops like stop: the settings say so when applied.
TEST_F(ContextOverflowTest, AShiftThatCannotHappenIsWarnedAbout) {
  const std::string path = write_model({}, "warn");
  const auto warnings = [&path](EngineConfig c) {
    auto engine = Engine::create(c);
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
    return engine.ok() ? (*engine)->warnings() : std::vector<std::string>{};
  };
  const auto mentions = [](const std::vector<std::string>& ws, const std::string& part) {
    return std::any_of(ws.begin(), ws.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
  };
  EngineConfig c = config(path);
  EXPECT_FALSE(mentions(warnings(c), "context_overflow"));  // 64 tokens in blocks of 8: shifts drop 2 blocks
  c.paged = false;
  EXPECT_TRUE(mentions(warnings(c), "context_overflow = shift needs paged KV blocks"));
  c = config(path);
  c.max_model_len = 24;  // 3 blocks of 8, 2 kept: the 23 computed tokens fill 2, nothing to drop
  EXPECT_TRUE(mentions(warnings(c), "context_overflow = shift has nothing to drop in a context of 24 tokens"));
  const Generation run = generate(**Engine::create(c), prompt(20), 40);
  EXPECT_EQ(run.events.back().finish, FinishReason::ContextFull);  // as the warning said
  EXPECT_EQ(run.events.back().stats.num_context_shifts, 0);
}

TEST_F(ContextOverflowTest, StopFinishesWithContextFull) {
  const std::string path = write_model({}, "stop");
  EngineConfig c = config(path);
  c.context_overflow = ContextOverflow::Stop;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  const Generation run = generate(**engine, prompt(40), 100);
  EXPECT_EQ(run.events.back().finish, FinishReason::ContextFull);
  EXPECT_EQ(run.events.back().stats.num_generated_tokens, 24);
  EXPECT_EQ(run.events.back().stats.num_context_shifts, 0);
  EXPECT_EQ(run.events.back().stats.num_context_tokens, 64);  // full: max_model_len
}

TEST_F(ContextOverflowTest, LongGenerationShiftsFarPastTheContext) {
  test::TinyModelSpec spec;  // 2 layers
  spec.rope_freqs = true;    // Llama 3 freq factors in the re-rotation too
  const std::string path = write_model(spec, "long");
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::Q8_0}) {
    if (!kv_type_fits_head_dim(type, spec.head_dim)) continue;
    SCOPED_TRACE(kv_cache_type_name(type));
    EngineConfig c = config(path, type);
    c.record_snapshots = true;
    auto created = Engine::create(c);
    ASSERT_TRUE(created.ok()) << created.error();
    Engine& engine = **created;
    // Two samples of a 50-token prompt: the blocks a shift moves are shared
    // by both (copied, not rotated under the other).
    std::vector<std::vector<TokenEvent>> finals(2);
    GenerationRequest r;
    r.prompt_tokens = prompt(50, 3);
    r.n = 2;
    r.sampling.temperature = 0.7f;
    r.sampling.seed = 5;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 1000;
    r.on_event = [&finals](const TokenEvent& ev) {
      if (ev.finish != FinishReason::None) finals[static_cast<size_t>(ev.index)].push_back(ev);
    };
    ASSERT_TRUE(engine.submit(std::move(r)).ok());
    int32_t max_shifts_seen = 0;
    while (engine.has_work()) {
      engine.step();
      for (const SequenceSnapshot& s : engine.snapshot()->sequences) {
        EXPECT_LE(static_cast<int32_t>(s.tokens.size()), 64);
        max_shifts_seen = std::max(max_shifts_seen, s.num_context_shifts);
      }
    }
    for (const auto& f : finals) {
      ASSERT_EQ(f.size(), 1u);
      EXPECT_EQ(f[0].finish, FinishReason::Length) << f[0].error;
      EXPECT_EQ(f[0].stats.num_generated_tokens, 1000);
      // 50 + 1000 tokens through a 64-token context, 16 dropped per shift.
      EXPECT_EQ(f[0].stats.num_dropped_tokens, 16 * f[0].stats.num_context_shifts);
      EXPECT_EQ(f[0].stats.num_context_shifts, (50 + 1000 - 64 + 15) / 16 + 0);
    }
    EXPECT_GT(max_shifts_seen, 50);
    EXPECT_EQ(engine.kv_stats().num_used_blocks, 0) << "blocks left in use";
  }
}

// What one sequence of a request generated, and how it ended.
struct SequenceRun {
  std::vector<int32_t> tokens;
  TokenEvent last;
};

// Request 0: two samples of a 50-token prompt (they share its blocks, the
// moved ones included); request 1: a short prompt admitted between them
// (running order: sample 0, request 1, sample 1). Greedy, so every sequence's
// tokens are its own whatever the batch. Keyed by request * 2 + index.
std::map<int32_t, SequenceRun> run_samples_beside_another(const EngineConfig& c, KvStats* kv = nullptr) {
  std::map<int32_t, SequenceRun> runs;
  auto created = Engine::create(c);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  if (!created.ok()) return runs;
  Engine& engine = **created;
  for (int32_t request = 0; request < 2; ++request) {
    GenerationRequest r;
    r.prompt_tokens = ContextOverflowTest::prompt(request == 0 ? 50 : 4, request + 3);
    r.n = request == 0 ? 2 : 1;
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 70;
    r.on_event = [&runs, request](const TokenEvent& ev) {
      SequenceRun& run = runs[request * 2 + ev.index];
      if (ev.token >= 0) run.tokens.push_back(ev.token);
      if (ev.finish != FinishReason::None) run.last = ev;
    };
    EXPECT_TRUE(engine.submit(std::move(r)).ok());
  }
  engine.run_until_idle();
  EXPECT_EQ(engine.kv_stats().num_used_blocks, 0) << "blocks left in use";
  if (kv) *kv = engine.kv_stats();
  return runs;
}

TEST_F(ContextOverflowTest, AShiftShortOfBlocksForItsCopiesPreemptsAnotherSequence) {
  const std::string path = write_model({}, "short_of_blocks");
  EngineConfig roomy = config(path);
  const std::map<int32_t, SequenceRun> reference = run_samples_beside_another(roomy);
  ASSERT_EQ(reference.size(), 3u);
  for (const auto& [key, run] : reference) {
    ASSERT_EQ(run.last.finish, FinishReason::Length) << key;
    EXPECT_EQ(run.last.stats.num_preemptions, 0) << key;
  }
  // When the samples are first full (64 tokens: 6 shared blocks and 2 each)
  // the short request holds 3 blocks: 13 in all, none free for the 2 copies
  // of the shared blocks that sample 0's shift moves.
  for (PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    SCOPED_TRACE(mode == PreemptionMode::Recompute ? "recompute" : "swap");
    EngineConfig tight = roomy;
    tight.num_blocks = 13;
    tight.preemption = mode;
    KvStats kv;
    const std::map<int32_t, SequenceRun> runs = run_samples_beside_another(tight, &kv);
    ASSERT_EQ(runs.size(), 3u);
    // Each mode did preempt as itself (swap had the room it needs).
    EXPECT_GT(kv.num_preemptions, 0);
    if (mode == PreemptionMode::Swap) {
      EXPECT_GT(kv.num_swapped_out_blocks, 0);
    } else {
      EXPECT_EQ(kv.num_swapped_out_blocks, 0);
    }
    for (const auto& [key, run] : runs) {
      SCOPED_TRACE(key);
      // Before: sample 0 stopped with context_full.
      EXPECT_EQ(run.last.finish, FinishReason::Length) << run.last.error;
      EXPECT_EQ(run.last.stats.num_generated_tokens, 70);
      // The short request, not yet full, was preempted rather than the full
      // sample 1 (later the scheduler preempts whoever is youngest as the
      // pool fills), and nobody's tokens changed: the samples kept their
      // caches, and the short request had not shifted.
      if (key == 2) {
        EXPECT_GE(run.last.stats.num_preemptions, 1);
      }
      EXPECT_EQ(run.tokens, reference.at(key).tokens);
      EXPECT_EQ(run.last.stats.num_context_shifts, reference.at(key).last.stats.num_context_shifts);
    }
  }
  // Without the short request, the only other sequence is the full sample 1:
  // it is preempted (and shifts once it has run again) instead of sample 0
  // stopping.
  EngineConfig pair = roomy;
  pair.num_blocks = 10;
  auto created = Engine::create(pair);
  ASSERT_TRUE(created.ok()) << created.error();
  std::vector<TokenEvent> finals;
  GenerationRequest r;
  r.prompt_tokens = prompt(50, 3);
  r.n = 2;
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 70;
  r.on_event = [&finals](const TokenEvent& ev) {
    if (ev.finish != FinishReason::None) finals.push_back(ev);
  };
  ASSERT_TRUE((*created)->submit(std::move(r)).ok());
  (*created)->run_until_idle();
  ASSERT_EQ(finals.size(), 2u);
  for (const TokenEvent& f : finals) {
    EXPECT_EQ(f.finish, FinishReason::Length) << f.error;
    EXPECT_EQ(f.stats.num_generated_tokens, 70);
    EXPECT_GE(f.stats.num_context_shifts, 1);
    EXPECT_EQ(f.stats.num_preemptions, f.index == 1 ? 1 : 0);
  }
  EXPECT_EQ((*created)->kv_stats().num_used_blocks, 0) << "blocks left in use";
}

// The blocks a shift must copy are shared with a request that ended in the
// same step: not reaped yet, it still holds them. Its blocks are given back
// first, and no one is preempted for the copies (a finished sequence is no
// victim, so a third request was preempted in its place).
TEST_F(ContextOverflowTest, AShiftTakesBackTheBlocksOfARequestThatJustEnded) {
  const std::string path = write_model({}, "just_ended");
  EngineConfig c = config(path);
  c.num_blocks = 14;
  auto created = Engine::create(c);
  ASSERT_TRUE(created.ok()) << created.error();
  Engine& engine = **created;
  std::map<int32_t, TokenEvent> last;  // 0 the long one, 1 the one that ends, 2 a third
  const auto submit = [&](int32_t which, std::vector<int32_t> tokens, int32_t max_tokens) {
    GenerationRequest r;
    r.prompt_tokens = std::move(tokens);
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = max_tokens;
    r.on_event = [&last, which](const TokenEvent& ev) {
      if (ev.finish != FinishReason::None) last[which] = ev;
    };
    ASSERT_TRUE(engine.submit(std::move(r)).ok());
  };
  submit(0, prompt(50, 3), 30);
  engine.step();  // its prompt computed: the second finds the 6 full blocks in the prefix cache
  // One token behind the first, it ends (13 tokens, 63 in all) in the step
  // the first fills the 64-token context, the pool then full with the third.
  submit(1, prompt(50, 3), 13);
  submit(2, prompt(20, 7), 30);
  engine.run_until_idle();
  ASSERT_EQ(last.size(), 3u);
  for (const auto& [which, ev] : last) {
    SCOPED_TRACE(which);
    EXPECT_EQ(ev.finish, FinishReason::Length) << ev.error;
    EXPECT_EQ(ev.stats.num_preemptions, 0);
  }
  EXPECT_GE(last[0].stats.num_context_shifts, 1);
  EXPECT_EQ(engine.kv_stats().num_used_blocks, 0) << "blocks left in use";
}

TEST_F(ContextOverflowTest, SpeculativeGreedyShiftsAsPlainGreedyDoes) {
  // Verification emits several tokens a step, but never past the full
  // context, so the shifts fall on the same tokens and greedy output is the
  // same; a draft model (here the model itself) recomputes its own K/V of
  // the moved blocks.
  const std::string path = write_model({}, "spec");
  std::vector<int32_t> plain;
  for (SpecMethod method : {SpecMethod::Off, SpecMethod::Ngram, SpecMethod::EarlyExit, SpecMethod::Draft}) {
    SCOPED_TRACE(static_cast<int>(method));
    EngineConfig c = config(path);
    c.spec = method;
    c.spec_never_pause = true;
    if (method == SpecMethod::Draft) c.spec_draft_model = path;
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok()) << engine.error();
    std::vector<int32_t> p = prompt(30);
    for (int32_t i = 0; i < 30; ++i) p.push_back(p[static_cast<size_t>(i % 10)]);  // something to copy
    const Generation run = generate(**engine, p, 300);
    EXPECT_EQ(run.events.back().finish, FinishReason::Length);
    EXPECT_GT(run.events.back().stats.num_context_shifts, 10);
    std::vector<int32_t> tokens;
    for (const TokenEvent& ev : run.events) {
      if (ev.token >= 0) tokens.push_back(ev.token);
    }
    if (method == SpecMethod::Off) {
      plain = tokens;
    } else {
      EXPECT_GT(run.events.back().stats.num_draft_tokens, 0);
      EXPECT_EQ(tokens, plain);
    }
    EXPECT_EQ((*engine)->kv_stats().num_used_blocks, 0);
  }
}

TEST_F(ContextOverflowTest, TruncateMiddleAndShiftKeepTheStartAndTheEndOfALongPrompt) {
  const std::string path = write_model({}, "truncate");
  EngineConfig c = config(path);
  c.context_overflow = ContextOverflow::TruncateMiddle;
  c.context_keep = 10;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  const std::vector<int32_t> p = prompt(100);
  GenerationRequest r;
  r.prompt_tokens = p;
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 8;  // room for the reply: 8 (at most a quarter of 64)
  std::vector<TokenEvent> events;
  r.on_event = [&events](const TokenEvent& ev) { events.push_back(ev); };
  SubmittedPrompt submitted;
  ASSERT_TRUE((*engine)->submit(std::move(r), &submitted).ok());
  std::vector<int32_t> want(p.begin(), p.begin() + 10);  // the first context_keep
  want.insert(want.end(), p.end() - 46, p.end());        // and the end: 64 - 8 in all
  EXPECT_EQ(submitted.tokens, want);
  EXPECT_EQ(submitted.num_dropped_tokens, 44);
  EXPECT_FALSE(submitted.warnings.empty());
  (*engine)->run_until_idle();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finish, FinishReason::Length);
  EXPECT_EQ(events.back().stats.num_dropped_tokens, 44);
  EXPECT_EQ(events.back().stats.num_prompt_tokens, 56);

  // shift cuts it too, so a chat whose history outgrew the context after a
  // shift goes on with its next turn: to three quarters of the context (a
  // shift frees a quarter), whatever max_tokens; a prompt that fits stays whole.
  c.context_overflow = ContextOverflow::Shift;
  auto shifting = Engine::create(c);
  ASSERT_TRUE(shifting.ok());
  GenerationRequest next;
  next.prompt_tokens = p;
  next.sampling.temperature = 0.0f;
  next.sampling.max_tokens = 4;
  SubmittedPrompt cut;
  ASSERT_TRUE((*shifting)->submit(std::move(next), &cut).ok());
  std::vector<int32_t> want_shift(p.begin(), p.begin() + 10);
  want_shift.insert(want_shift.end(), p.end() - 38, p.end());  // 48 = 64 - 16 in all
  EXPECT_EQ(cut.tokens, want_shift);
  EXPECT_EQ(cut.num_dropped_tokens, 52);
  ASSERT_FALSE(cut.warnings.empty());
  EXPECT_NE(cut.warnings[0].find("context_overflow = shift"), std::string::npos) << cut.warnings[0];
  GenerationRequest fits;
  fits.prompt_tokens = prompt(63);
  fits.sampling.max_tokens = 4;
  SubmittedPrompt whole;
  ASSERT_TRUE((*shifting)->submit(std::move(fits), &whole).ok());
  EXPECT_EQ(whole.tokens.size(), 63u);
  EXPECT_EQ(whole.num_dropped_tokens, 0);

  // stop (the default) refuses the same prompt, as before.
  c.context_overflow = ContextOverflow::Stop;
  auto stopping = Engine::create(c);
  ASSERT_TRUE(stopping.ok());
  GenerationRequest again;
  again.prompt_tokens = p;
  EXPECT_FALSE((*stopping)->submit(std::move(again)).ok());
}

TEST_F(ContextOverflowTest, ContextKeepIsCappedZeroIsAllowedAndContiguousModeStops) {
  const std::string path = write_model({}, "keep");
  EngineConfig c = config(path);
  for (int32_t keep : {1 << 20, 0}) {
    SCOPED_TRACE(keep);
    c.context_keep = keep;  // capped at half the context: 32 tokens; 0: drop from the very start
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok()) << engine.error();
    const Generation run = generate(**engine, prompt(40), 60);
    EXPECT_EQ(run.events.back().finish, FinishReason::Length);
    EXPECT_GE(run.events.back().stats.num_context_shifts, 1);
    const auto notice = std::find_if(run.events.begin(), run.events.end(),
                                     [](const TokenEvent& ev) { return ev.num_dropped_tokens > 0; });
    ASSERT_NE(notice, run.events.end());
    EXPECT_EQ(notice->dropped_from, keep == 0 ? 0 : 32);
    EXPECT_EQ(notice->num_dropped_tokens, 16);
  }
  // Paged attention off: one contiguous run per sequence, so no shift.
  c.paged = false;
  auto contiguous = Engine::create(c);
  ASSERT_TRUE(contiguous.ok()) << contiguous.error();
  const Generation stopped = generate(**contiguous, prompt(40), 60);
  EXPECT_EQ(stopped.events.back().finish, FinishReason::ContextFull);
}

}  // namespace
}  // namespace kvscope
