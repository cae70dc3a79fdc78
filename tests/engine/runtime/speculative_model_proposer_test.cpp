// Model-based speculative decoding through the engine on random tiny models
// (label `unit`): early-exit self-speculation (spec = early_exit) and a draft
// model (spec = draft).
//   - A draft that is the target itself (early exit at every layer; the model
//     as its own draft model) must have every draft token accepted under
//     greedy decoding: a draft reading stale or missing K/V would guess
//     differently. Also for a second request served from the prefix cache,
//     after copy-on-write of forked siblings, and after swap preemption.
//   - Greedy output (tokens and every logits row) is bitwise the plain
//     output at concurrency 1 and 16, for an early exit at one layer and for
//     a different random draft model, where drafts are also rejected; a
//     sampled reply with a fixed seed is the same token for token.
//   - A draft model with another vocabulary, a missing draft file and an
//     early-exit layer beyond the model are refused at Engine::create with
//     the reason.
//   - The KV plan counts the draft's K/V in every block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include "kvscope/engine.h"
#include "kvscope/kv_plan.h"
#include "spec/spec_tracker.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

struct Reply {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // [calls][vocab]
  int32_t num_from_draft = 0;
  FinishReason finish = FinishReason::None;
  RequestStats stats;
};

struct Outcome {
  std::vector<Reply> replies;  // in submission order
  SpecStats spec;
  double propose_time_s = 0.0;  // summed over the steps
  int64_t num_target_rows = 0;   // query rows of the target's passes
  int64_t num_draft_rows = 0;    // and of the model proposer's
  int64_t num_draft_forwards = 0;
  int64_t max_extra_draft_rows = 0;  // per step: draft rows beyond the target's rows
  int64_t num_preemptions = 0;
};

class SpeculativeModelProposer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = std::filesystem::temp_directory_path().string();
    target_ = test::tiny_model_temp_path("spec_target");
    other_draft_ = test::tiny_model_temp_path("spec_other_draft");
    other_vocab_ = test::tiny_model_temp_path("spec_other_vocab");
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q8_0;
    spec.layers = 3;
    spec.seed = 3;
    ASSERT_TRUE(test::write_tiny_gguf(spec, target_).ok());
    test::TinyModelSpec draft = spec;  // same vocabulary, other weights and shape
    draft.layers = 1;
    draft.hidden = 32;
    draft.heads = 2;
    draft.kv_heads = 1;
    draft.ffn = 64;
    draft.seed = 11;
    ASSERT_TRUE(test::write_tiny_gguf(draft, other_draft_).ok());
    test::TinyModelSpec vocab = spec;
    vocab.vocab = 320;
    ASSERT_TRUE(test::write_tiny_gguf(vocab, other_vocab_).ok());
  }
  static void TearDownTestSuite() {
    for (const std::string& p : {target_, other_draft_, other_vocab_}) std::filesystem::remove(p);
  }

  static EngineConfig config(SpecMethod method) {
    EngineConfig c;
    c.model_path = target_;
    c.num_threads = 2;
    c.num_blocks = 4096;
    c.max_seqs = 64;
    c.max_batched_tokens = 256;
    c.spec = method;
    c.spec_never_pause = true;  // every decode step drafts: the mechanics are what is tested
    return c;
  }
  static EngineConfig early_exit(int32_t layers) {
    EngineConfig c = config(SpecMethod::EarlyExit);
    c.spec_early_exit_layer = layers;
    return c;
  }
  static EngineConfig draft_model(const std::string& path) {
    EngineConfig c = config(SpecMethod::Draft);
    c.spec_draft_model = path;
    return c;
  }

  static std::vector<std::vector<int32_t>> prompts(int num, uint32_t seed = 5) {
    std::mt19937 rng(seed);
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < num; ++i) {
      std::vector<int32_t> p;
      for (int k = 8 + 5 * (i % 7); k > 0; --k) p.push_back(static_cast<int32_t>(rng() % 250));
      out.push_back(p);
    }
    return out;
  }

  static SamplingParams greedy(int32_t max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }

  // Runs the prompts `concurrency` at a time to idle, on one engine.
  static Outcome run(const EngineConfig& c, const std::vector<std::vector<int32_t>>& ps, int32_t concurrency,
                     const SamplingParams& sampling, int32_t n = 1) {
    auto engine = Engine::create(c);
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
    Outcome o;
    if (!engine.ok()) return o;
    Engine& e = **engine;
    o.replies.resize(ps.size() * static_cast<size_t>(n));
    for (size_t first = 0; first < ps.size(); first += static_cast<size_t>(concurrency)) {
      for (size_t i = first; i < std::min(ps.size(), first + static_cast<size_t>(concurrency)); ++i) {
        GenerationRequest req;
        req.prompt_tokens = ps[i];
        req.sampling = sampling;
        req.n = n;
        Reply* replies = &o.replies[i * static_cast<size_t>(n)];
        req.on_logits = [replies](int32_t index, int32_t, const float* logits, int32_t vocab) {
          replies[index].logits.emplace_back(logits, logits + vocab);
        };
        req.on_event = [replies](const TokenEvent& ev) {
          Reply& r = replies[ev.index];
          if (ev.token >= 0) r.tokens.push_back(ev.token);
          if (ev.from_draft) ++r.num_from_draft;
          if (ev.finish != FinishReason::None) {
            r.finish = ev.finish;
            r.stats = ev.stats;
          }
        };
        auto id = e.submit(std::move(req));
        EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error());
      }
      while (e.has_work()) {
        e.step();
        const StepStats st = e.last_step_stats();
        o.propose_time_s += st.propose_time_s;
        o.num_target_rows += st.num_batch_tokens();
        o.num_draft_rows += st.num_draft_forward_rows;
        o.num_draft_forwards += st.num_draft_forwards;
        o.max_extra_draft_rows =
            std::max<int64_t>(o.max_extra_draft_rows, st.num_draft_forward_rows - st.num_batch_tokens());
      }
    }
    const auto snap = e.snapshot();
    o.spec = snap->spec;
    o.num_preemptions = e.kv_stats().num_preemptions;
    return o;
  }

  static void expect_same_replies(const Outcome& plain, const Outcome& spec) {
    ASSERT_EQ(plain.replies.size(), spec.replies.size());
    for (size_t i = 0; i < plain.replies.size(); ++i) {
      SCOPED_TRACE("reply " + std::to_string(i));
      const Reply& a = plain.replies[i];
      const Reply& b = spec.replies[i];
      EXPECT_EQ(a.tokens, b.tokens);
      EXPECT_EQ(a.finish, b.finish);
      ASSERT_EQ(a.logits.size(), b.logits.size());
      for (size_t j = 0; j < a.logits.size(); ++j) {
        EXPECT_EQ(std::memcmp(a.logits[j].data(), b.logits[j].data(), a.logits[j].size() * sizeof(float)), 0)
            << "logits of token " << j << " differ";
      }
    }
  }

  // Every draft token proposed was accepted, and there were many.
  static void expect_all_accepted(const Outcome& o, int64_t at_least) {
    EXPECT_GE(o.spec.num_draft_tokens, at_least);
    EXPECT_EQ(o.spec.num_accepted_tokens, o.spec.num_draft_tokens) << "a draft equal to the model was rejected";
    int64_t from_draft = 0;
    for (const Reply& r : o.replies) from_draft += r.num_from_draft;
    EXPECT_EQ(from_draft, o.spec.num_accepted_tokens);
  }

  static std::string target_, other_draft_, other_vocab_;
};
std::string SpeculativeModelProposer::target_;
std::string SpeculativeModelProposer::other_draft_;
std::string SpeculativeModelProposer::other_vocab_;

TEST_F(SpeculativeModelProposer, EarlyExitAtEveryLayerAcceptsEveryDraft) {
  const auto ps = prompts(16);
  for (int32_t conc : {1, 16}) {
    SCOPED_TRACE("concurrency " + std::to_string(conc));
    const Outcome plain = run(config(SpecMethod::Off), ps, conc, greedy(30));
    const Outcome spec = run(early_exit(3), ps, conc, greedy(30));
    expect_same_replies(plain, spec);
    expect_all_accepted(spec, 16 * 20);
    EXPECT_GT(spec.propose_time_s, 0.0) << "the draft forwards are the proposer's time";
    for (const Reply& r : spec.replies) EXPECT_GT(r.stats.num_accepted_tokens, 0);
  }
}

TEST_F(SpeculativeModelProposer, EarlyExitAtOneLayerIsBitwiseThePlainOutput) {
  const auto ps = prompts(16);
  for (int32_t conc : {1, 16}) {
    SCOPED_TRACE("concurrency " + std::to_string(conc));
    const Outcome plain = run(config(SpecMethod::Off), ps, conc, greedy(30));
    const Outcome spec = run(early_exit(1), ps, conc, greedy(30));
    expect_same_replies(plain, spec);
    EXPECT_GT(spec.spec.num_draft_tokens, 0);
    EXPECT_LT(spec.spec.num_accepted_tokens, spec.spec.num_draft_tokens) << "some drafts should be rejected";
  }
  // 0: half the layers (3 / 2 = 1), the same drafts as layer 1.
  const Outcome one = run(early_exit(1), ps, 16, greedy(30));
  const Outcome half = run(early_exit(0), ps, 16, greedy(30));
  EXPECT_EQ(one.spec.num_accepted_tokens, half.spec.num_accepted_tokens);
  EXPECT_EQ(one.spec.num_draft_tokens, half.spec.num_draft_tokens);
}

TEST_F(SpeculativeModelProposer, TheModelAsItsOwnDraftAcceptsEveryDraft) {
  const auto ps = prompts(16);
  for (int32_t conc : {1, 16}) {
    SCOPED_TRACE("concurrency " + std::to_string(conc));
    const Outcome plain = run(config(SpecMethod::Off), ps, conc, greedy(30));
    const Outcome spec = run(draft_model(target_), ps, conc, greedy(30));
    expect_same_replies(plain, spec);
    expect_all_accepted(spec, 16 * 20);
    // The draft model feeds the target's rows (drafts but the last one's
    // included) plus at most one catch-up row per sequence: never the
    // history again.
    EXPECT_LE(spec.max_extra_draft_rows, conc) << "the draft model fed more rows than the target";
    EXPECT_LE(spec.num_draft_rows, spec.num_target_rows + 16);
    EXPECT_GE(spec.num_draft_rows, spec.num_target_rows - spec.spec.num_drafts);
  }
}

// The second round of prompts starts with the first round's prompts: its
// prefill is served from the prefix cache, so the draft model must find its
// own K/V of those blocks in place (it wrote them in the first round).
TEST_F(SpeculativeModelProposer, DraftKvSurvivesPrefixCacheHits) {
  auto ps = prompts(4);
  std::vector<std::vector<int32_t>> both = ps;
  for (auto p : ps) {
    p.insert(p.end(), {7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24});
    both.push_back(p);
  }
  const Outcome plain = run(config(SpecMethod::Off), both, 4, greedy(40));
  const Outcome spec = run(draft_model(target_), both, 4, greedy(40));
  expect_same_replies(plain, spec);
  expect_all_accepted(spec, 8 * 25);
  int32_t cached = 0;
  for (size_t i = 4; i < 8; ++i) cached += spec.replies[i].stats.num_cached_prompt_tokens;
  EXPECT_GT(cached, 0) << "the second round should hit the prefix cache";
}

// Parallel sampling forks siblings that share blocks; the first write to a
// shared block copies it, the draft's K/V too.
TEST_F(SpeculativeModelProposer, DraftKvSurvivesCopyOnWrite) {
  const auto ps = prompts(3);
  // Greedy siblings are alike; each copies the shared last prompt block on its first write.
  const Outcome greedy_plain = run(config(SpecMethod::Off), ps, 3, greedy(30), 3);
  const Outcome greedy_spec = run(draft_model(target_), ps, 3, greedy(30), 3);
  expect_same_replies(greedy_plain, greedy_spec);
  expect_all_accepted(greedy_spec, 9 * 20);
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 42;
  p.max_tokens = 30;
  p.ignore_eos = true;
  const Outcome plain = run(config(SpecMethod::Off), ps, 3, p, 4);
  const Outcome spec = run(draft_model(target_), ps, 3, p, 4);
  expect_same_replies(plain, spec);
  // Sampling with q one-hot on the greedy token: acceptance is p(argmax),
  // not 1, so only correctness and some acceptance are checked here.
  EXPECT_GT(spec.spec.num_accepted_tokens, 0);
}

TEST_F(SpeculativeModelProposer, SwapPreemptionKeepsTheOutputAndTheDraftKv) {
  const auto ps = prompts(12);
  for (SpecMethod method : {SpecMethod::Draft, SpecMethod::EarlyExit}) {
    EngineConfig c = method == SpecMethod::Draft ? draft_model(target_) : early_exit(3);
    c.block_size = 4;
    c.num_blocks = 60;  // too few for 12 requests of ~70 tokens: preemption
    c.preemption = PreemptionMode::Swap;
    EngineConfig off = c;
    off.spec = SpecMethod::Off;
    const Outcome plain = run(off, ps, 12, greedy(40));
    const Outcome spec = run(c, ps, 12, greedy(40));
    EXPECT_GT(spec.num_preemptions, 0);
    expect_same_replies(plain, spec);
    expect_all_accepted(spec, 100);
  }
}

TEST_F(SpeculativeModelProposer, ADifferentDraftModelIsBitwiseThePlainOutput) {
  const auto ps = prompts(16);
  for (int32_t conc : {1, 16}) {
    SCOPED_TRACE("concurrency " + std::to_string(conc));
    const Outcome plain = run(config(SpecMethod::Off), ps, conc, greedy(30));
    const Outcome spec = run(draft_model(other_draft_), ps, conc, greedy(30));
    expect_same_replies(plain, spec);
    EXPECT_GT(spec.spec.num_draft_tokens, 0);
  }
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.9f;
  p.seed = 7;
  p.max_tokens = 30;
  p.ignore_eos = true;
  expect_same_replies(run(config(SpecMethod::Off), ps, 16, p), run(draft_model(other_draft_), ps, 16, p));
  expect_same_replies(run(config(SpecMethod::Off), ps, 16, p), run(early_exit(2), ps, 16, p));
}

TEST_F(SpeculativeModelProposer, UnusableDraftsAreRefusedWithTheReason) {
  auto vocab = Engine::create(draft_model(other_vocab_));
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.error().find(other_vocab_), std::string::npos) << vocab.error();
  EXPECT_NE(vocab.error().find(target_), std::string::npos) << vocab.error();
  EXPECT_NE(vocab.error().find("vocabulary"), std::string::npos) << vocab.error();

  auto missing = Engine::create(draft_model(target_ + ".missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("draft model"), std::string::npos) << missing.error();

  EngineConfig none = config(SpecMethod::Draft);
  ASSERT_FALSE(none.validate().empty());
  EXPECT_EQ(none.validate().front().field, "spec_draft_model");

  auto deep = Engine::create(early_exit(4));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().find("the early-exit layer 4"), std::string::npos) << deep.error();
  EXPECT_NE(deep.error().find("3 layers"), std::string::npos) << deep.error();
}

TEST_F(SpeculativeModelProposer, TheDraftsKvIsInTheBlockPool) {
  ModelShape target;
  target.num_layers = 30;
  target.num_kv_heads = 3;
  target.head_dim = 64;
  target.hidden_size = 576;
  target.num_heads = 9;
  target.ffn_size = 1536;
  target.vocab_size = 49152;
  target.context_length = 8192;
  ModelShape with_draft = target;
  with_draft.draft_num_layers = 2;
  with_draft.draft_num_kv_heads = 1;
  with_draft.draft_head_dim = 32;
  EngineConfig c;
  c.kv_budget_bytes = 64 << 20;
  c.spec = SpecMethod::Draft;
  const KvPlan alone = plan_kv(target, c, 0);
  const KvPlan both = plan_kv(with_draft, c, 0);
  EXPECT_EQ(alone.draft_bytes_per_block, 0);
  EXPECT_EQ(both.draft_bytes_per_block, int64_t{2} * 2 * 32 * 4 * c.block_size);
  EXPECT_EQ(both.bytes_per_block, alone.bytes_per_block + both.draft_bytes_per_block);
  EXPECT_LT(both.num_blocks, alone.num_blocks) << "the same budget holds fewer blocks";
  c.spec = SpecMethod::Ngram;
  EXPECT_EQ(plan_kv(with_draft, c, 0).draft_bytes_per_block, 0) << "no draft model, no draft share";

  // The engine allocates what the plan says: both storages, same blocks.
  EngineConfig e = draft_model(other_draft_);
  e.num_blocks = 100;
  auto engine = Engine::create(e);
  ASSERT_TRUE(engine.ok()) << engine.error();
  const ModelInfo& info = (*engine)->model_info();
  EXPECT_EQ(info.num_kv_blocks, 100);
  const int64_t target_block = int64_t{2} * 3 * 2 * 16 * 4 * 16;  // 2 * layers * kv heads * head dim * f32 * slots
  const int64_t draft_block = int64_t{2} * 1 * 1 * 16 * 4 * 16;
  EXPECT_EQ(static_cast<int64_t>(info.kv_pool_bytes), 100 * (target_block + draft_block));
  EXPECT_EQ((*engine)->snapshot()->spec.draft_kv_bytes, 100 * draft_block);
  EXPECT_EQ((*engine)->snapshot()->spec.method, "draft");

  // A swapped-out block keeps the target's K/V only (the draft's are
  // recomputed): the swap space holds blocks of the target's size, in the
  // plan as in the engine. It counted the draft's share too, and planned
  // fewer blocks than fit.
  c.spec = SpecMethod::Draft;
  c.preemption = PreemptionMode::Swap;
  c.swap_space_bytes = 10 * alone.bytes_per_block;
  const KvPlan swapping = plan_kv(with_draft, c, 0);
  ASSERT_GT(swapping.draft_bytes_per_block, 0);
  EXPECT_EQ(swapping.num_swap_blocks, 10);
  EXPECT_EQ(swapping.swap_bytes, 10 * alone.bytes_per_block);
  e.preemption = PreemptionMode::Swap;
  e.swap_space_bytes = 7 * target_block;
  auto swapped = Engine::create(e);
  ASSERT_TRUE(swapped.ok()) << swapped.error();
  EXPECT_EQ(static_cast<int64_t>((*swapped)->model_info().swap_pool_bytes), 7 * target_block);
}

// Switching the proposer without reloading the model: the draft model is
// loaded by reconfigure, and dropped again.
TEST_F(SpeculativeModelProposer, ReconfigureSwitchesProposers) {
  auto engine = Engine::create(config(SpecMethod::Ngram));
  ASSERT_TRUE(engine.ok()) << engine.error();
  Engine& e = **engine;
  const auto ps = prompts(4);
  const Outcome plain = run(config(SpecMethod::Off), ps, 4, greedy(20));
  for (const EngineConfig& c : {draft_model(target_), early_exit(3), config(SpecMethod::Off)}) {
    ASSERT_TRUE(e.reconfigure(c).ok());
    Outcome o;
    o.replies.resize(ps.size());
    for (size_t i = 0; i < ps.size(); ++i) {
      GenerationRequest req;
      req.prompt_tokens = ps[i];
      req.sampling = greedy(20);
      Reply* r = &o.replies[i];
      req.on_logits = [r](int32_t, int32_t, const float* logits, int32_t vocab) {
        r->logits.emplace_back(logits, logits + vocab);
      };
      req.on_event = [r](const TokenEvent& ev) {
        if (ev.token >= 0) r->tokens.push_back(ev.token);
        if (ev.finish != FinishReason::None) r->finish = ev.finish;
      };
      ASSERT_TRUE(e.submit(std::move(req)).ok());
    }
    e.run_until_idle();
    expect_same_replies(plain, o);
  }
  EngineConfig bad = draft_model(other_vocab_);
  EXPECT_FALSE(e.reconfigure(bad).ok());
}

// The auto-disable rule prices a model proposer's draft passes: c rows per
// draft token raise the break-even acceptance from n / (n + f/r) to
// n (1 + c) / (n + f/r), and a proposer costing more than it can save pauses.
TEST(SpecTrackerDraftCost, DraftPassesRaiseTheBreakEven) {
  EXPECT_DOUBLE_EQ(SpecTracker::required_acceptance(1, 0.0), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(SpecTracker::required_acceptance(1, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(SpecTracker::required_acceptance(4, 0.5), 1.0);
  SpecTracker t;
  ASSERT_TRUE(t.may_propose(1, 0.5));  // the prior: one try
  t.record(4, 3);                      // 3 of 4 (0.8 with the prior): pays at n = 1 (needs 0.5)
  EXPECT_TRUE(t.may_propose(1, 0.5));
  EXPECT_FALSE(t.may_propose(4, 0.5)) << "with 4 rows in the step, 0.8 is not 1.0";
  EXPECT_TRUE(t.paused());
  SpecTracker free;
  ASSERT_TRUE(free.may_propose(1, 0.0));
  free.record(4, 3);
  EXPECT_TRUE(free.may_propose(4, 0.0)) << "without draft passes 0.8 beats 4 / 6";
}

}  // namespace
}  // namespace kvscope
