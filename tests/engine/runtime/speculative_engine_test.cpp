// Speculative decoding through the engine on a random tiny model (label
// `unit`): with spec = ngram, greedy output is bitwise the plain output
// (tokens, and every token's logits row through on_logits) at concurrency 1
// and 16, block sizes 16 and 1, with drafts both accepted and rejected; a
// sampled reply with a fixed seed is the same token for token; rejected
// drafts leave no block behind and do not poison the prefix cache; max
// tokens, the context length and stop strings cut replies exactly where plain
// decoding does, also in the middle of an accepted draft.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

struct Reply {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;           // of each on_logits call
  std::vector<std::vector<float>> logits;   // [calls][vocab]
  std::vector<uint64_t> token_steps;        // the engine step that emitted each token
  int32_t num_from_draft = 0;               // token events marked from_draft
  std::string text;
  FinishReason finish = FinishReason::None;
  RequestStats stats;
};

struct Outcome {
  std::vector<Reply> replies;  // in submission order
  std::vector<EngineEvent> events;
  KvStats kv;
  SpecStats spec;
};

class SpeculativeEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("speculative");
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q8_0;
    spec.seed = 3;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static EngineConfig config(SpecMethod spec, int32_t block_size = 16) {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.block_size = block_size;
    c.num_blocks = 4096;
    c.max_seqs = 64;
    c.max_batched_tokens = 256;
    c.spec = spec;
    c.record_snapshots = false;
    return c;
  }

  // Prompts that repeat themselves (so the n-gram proposer finds matches)
  // and random ones.
  static std::vector<std::vector<int32_t>> prompts(int num) {
    std::mt19937 rng(5);
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < num; ++i) {
      std::vector<int32_t> unit;
      for (int k = 2 + i % 5; k > 0; --k) unit.push_back(static_cast<int32_t>(rng() % 250));
      std::vector<int32_t> p;
      if (i % 4 == 3) {
        for (int k = 0; k < 20; ++k) p.push_back(static_cast<int32_t>(rng() % 250));
      } else {
        for (int r = 0; r < 4 + i % 3; ++r) p.insert(p.end(), unit.begin(), unit.end());
      }
      out.push_back(p);
    }
    return out;
  }

  // Runs the prompts `concurrency` at a time to idle.
  static Outcome run(const EngineConfig& c, const std::vector<std::vector<int32_t>>& ps, int32_t concurrency,
                     const SamplingParams& sampling) {
    auto engine = Engine::create(c);
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
    Outcome o;
    if (!engine.ok()) return o;
    Engine& e = **engine;
    e.set_tracing(true);
    o.replies.resize(ps.size());
    uint64_t step = 0;
    for (size_t first = 0; first < ps.size(); first += static_cast<size_t>(concurrency)) {
      for (size_t i = first; i < std::min(ps.size(), first + static_cast<size_t>(concurrency)); ++i) {
        Reply& r = o.replies[i];
        GenerationRequest req;
        req.prompt_tokens = ps[i];
        req.sampling = sampling;
        req.on_logits = [&r](int32_t, int32_t position, const float* logits, int32_t vocab) {
          r.positions.push_back(position);
          r.logits.emplace_back(logits, logits + vocab);
        };
        req.on_event = [&r, &step](const TokenEvent& ev) {
          if (ev.token >= 0) {
            r.tokens.push_back(ev.token);
            r.token_steps.push_back(step);
          }
          if (ev.from_draft) ++r.num_from_draft;
          r.text += ev.text;
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
        ++step;
      }
    }
    o.events = e.take_events();
    o.kv = e.kv_stats();
    o.spec = e.snapshot()->spec;
    return o;
  }

  static SamplingParams greedy(int32_t max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }

  // Tokens, positions and every logits row, bit for bit.
  static void expect_same_replies(const Outcome& plain, const Outcome& spec) {
    ASSERT_EQ(plain.replies.size(), spec.replies.size());
    for (size_t i = 0; i < plain.replies.size(); ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i));
      const Reply& a = plain.replies[i];
      const Reply& b = spec.replies[i];
      EXPECT_EQ(a.tokens, b.tokens);
      EXPECT_EQ(a.text, b.text);
      EXPECT_EQ(a.finish, b.finish);
      EXPECT_EQ(a.positions, b.positions);
      ASSERT_EQ(a.logits.size(), b.logits.size());
      for (size_t j = 0; j < a.logits.size(); ++j) {
        ASSERT_EQ(a.logits[j].size(), b.logits[j].size());
        EXPECT_EQ(std::memcmp(a.logits[j].data(), b.logits[j].data(), a.logits[j].size() * sizeof(float)), 0)
            << "logits of token " << j << " differ";
      }
      // on_logits once per emitted token (no end-of-generation token here).
      EXPECT_EQ(b.logits.size(), b.tokens.size());
    }
  }

  static std::string path_;
};
std::string SpeculativeEngine::path_;

// Drafts accepted and rejected, and neither changes a bit of the output.
TEST_F(SpeculativeEngine, GreedyIsBitwiseThePlainOutput) {
  const auto ps = prompts(16);
  for (int32_t bs : {16, 1}) {
    for (int32_t conc : {1, 16}) {
      SCOPED_TRACE("block size " + std::to_string(bs) + ", concurrency " + std::to_string(conc));
      const Outcome plain = run(config(SpecMethod::Off, bs), ps, conc, greedy(40));
      const Outcome spec = run(config(SpecMethod::Ngram, bs), ps, conc, greedy(40));
      expect_same_replies(plain, spec);
      EXPECT_EQ(plain.spec.num_drafts, 0);
      for (const Reply& r : plain.replies) {
        EXPECT_EQ(r.num_from_draft, 0);
      }
      EXPECT_GT(spec.spec.num_accepted_tokens, 0);
      EXPECT_GT(spec.spec.num_draft_tokens, spec.spec.num_accepted_tokens) << "no draft was ever rejected";

      // Per request, per step and in the trace, the counts agree.
      int64_t drafts = 0, draft_tokens = 0, accepted = 0;
      for (const Reply& r : spec.replies) {
        // Every accepted draft token reached the reply marked as one (no
        // end-of-generation token is hidden here: ignore_eos).
        EXPECT_EQ(r.num_from_draft, r.stats.num_accepted_tokens);
        if (r.stats.num_drafts > 0) {
          EXPECT_GT(r.stats.spec_speedup_estimate, 0.0);
        } else {
          EXPECT_EQ(r.stats.spec_speedup_estimate, 0.0);
        }
        drafts += r.stats.num_drafts;
        draft_tokens += r.stats.num_draft_tokens;
        accepted += r.stats.num_accepted_tokens;
      }
      EXPECT_EQ(drafts, spec.spec.num_drafts);
      EXPECT_EQ(draft_tokens, spec.spec.num_draft_tokens);
      EXPECT_EQ(accepted, spec.spec.num_accepted_tokens);
      int64_t verify_events = 0, verify_accepted = 0, verify_drafted = 0;
      for (const EngineEvent& e : spec.events) {
        if (e.type != EngineEventType::Verify) continue;
        ++verify_events;
        verify_accepted += e.value;
        verify_drafted += e.value2;
        EXPECT_LE(e.value, e.value2);
        EXPECT_LE(e.value2, 4);  // spec_k
      }
      EXPECT_EQ(verify_events, spec.spec.num_drafts);
      EXPECT_EQ(verify_accepted, spec.spec.num_accepted_tokens);
      EXPECT_EQ(verify_drafted, spec.spec.num_draft_tokens);
      // Acceptance by position: judged counts fall with the position, and
      // position 0 is judged once per proposal.
      ASSERT_FALSE(spec.spec.num_judged_at.empty());
      EXPECT_EQ(spec.spec.num_judged_at[0], spec.spec.num_drafts);
      int64_t accepted_by_position = 0;
      for (size_t i = 0; i < spec.spec.num_judged_at.size(); ++i) {
        EXPECT_LE(spec.spec.num_accepted_at[i], spec.spec.num_judged_at[i]);
        if (i > 0) {
          EXPECT_LE(spec.spec.num_judged_at[i], spec.spec.num_judged_at[i - 1]);
        }
        accepted_by_position += spec.spec.num_accepted_at[i];
      }
      EXPECT_EQ(accepted_by_position, spec.spec.num_accepted_tokens);
      // Nothing is left in the pool but cached-free prefix blocks.
      EXPECT_EQ(spec.kv.num_used_blocks, 0);
    }
  }
}

// Sampling: verification draws each token with the plain sampler's random
// number and accepts a draft when it is that token, so a fixed seed gives the
// same reply. Penalties see the accepted drafts as tokens so far. At a high
// temperature the guesses fail and speculation pauses itself.
TEST_F(SpeculativeEngine, SampledWithAFixedSeedIsTheSameReply) {
  const auto ps = prompts(16);
  struct Case {
    float temperature;
    float repetition_penalty;
    bool expect_pauses;
  };
  for (const Case& c : {Case{0.3f, 1.0f, false}, Case{0.7f, 1.3f, false}, Case{2.0f, 1.0f, true}}) {
    SCOPED_TRACE("temperature " + std::to_string(c.temperature));
    SamplingParams p = greedy(48);
    p.temperature = c.temperature;
    p.repetition_penalty = c.repetition_penalty;
    p.top_p = 0.95f;
    p.seed = 11;
    const Outcome plain = run(config(SpecMethod::Off), ps, 16, p);
    const Outcome spec = run(config(SpecMethod::Ngram), ps, 16, p);
    expect_same_replies(plain, spec);
    EXPECT_GT(spec.spec.num_drafts, 0);
    if (c.expect_pauses) {
      EXPECT_GT(spec.spec.num_pauses, 0);
      int64_t pauses = 0;
      for (const Reply& r : spec.replies) pauses += r.stats.num_spec_pauses;
      EXPECT_EQ(pauses, spec.spec.num_pauses);
    } else {
      EXPECT_GT(spec.spec.num_accepted_tokens, 0);
    }
  }
  // Greedy with a repetition penalty: the argmax of penalised logits.
  SamplingParams p = greedy(40);
  p.repetition_penalty = 1.2f;
  expect_same_replies(run(config(SpecMethod::Off), ps, 16, p), run(config(SpecMethod::Ngram), ps, 16, p));
}

// After many rejections: the pool is as decoding token by token leaves it,
// no block leaks, and a later request over the same tokens finds exactly the
// prefix-cache blocks it finds without speculation (no block was hashed with
// a rejected draft's token in it).
TEST_F(SpeculativeEngine, RejectedDraftsLeaveNoBlocksAndNoPoisonedHashes) {
  const auto ps = prompts(16);
  SamplingParams p = greedy(40);
  p.temperature = 1.0f;  // many rejections
  p.seed = 3;
  struct Pass {
    std::vector<std::vector<int32_t>> tokens;  // per prompt
    std::vector<int32_t> cached;               // second pass: prompt tokens from the prefix cache
    std::vector<std::vector<int32_t>> second_tokens;
    KvStats kv;
    std::vector<uint64_t> hashes;  // registered prefix hashes, sorted
    int64_t num_rejected = 0;
    int64_t num_rolled_back = 0;
  };
  auto pass = [&](SpecMethod method) {
    Pass out;
    EngineConfig c = config(method, 4);
    c.record_snapshots = true;
    auto engine = Engine::create(c);
    EXPECT_TRUE(engine.ok());
    Engine& e = **engine;
    auto submit_all = [&](const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& sp,
                          std::vector<std::vector<int32_t>>& tokens, std::vector<int32_t>* cached) {
      tokens.assign(prompts.size(), {});
      if (cached) cached->assign(prompts.size(), 0);
      for (size_t i = 0; i < prompts.size(); ++i) {
        GenerationRequest r;
        r.prompt_tokens = prompts[i];
        r.sampling = sp;
        r.on_event = [&tokens, cached, i](const TokenEvent& ev) {
          if (ev.token >= 0) tokens[i].push_back(ev.token);
          if (ev.finish != FinishReason::None && cached) (*cached)[i] = ev.stats.num_cached_prompt_tokens;
        };
        EXPECT_TRUE(e.submit(std::move(r)).ok());
      }
      while (e.has_work()) {
        e.step();
        const auto snap = e.snapshot();
        out.num_rejected += snap->last_step.num_draft_tokens - snap->last_step.num_accepted_tokens;
        out.num_rolled_back += snap->last_step.num_rolled_back_blocks;
        // Every sequence's table: exactly the blocks its computed tokens need.
        for (const SequenceSnapshot& s : snap->sequences) {
          if (s.state != SequenceState::Running) continue;
          EXPECT_EQ(static_cast<int32_t>(s.block_table.size()), (s.num_computed_tokens + 3) / 4);
          if (static_cast<int32_t>(s.tokens.size()) > s.num_prompt_tokens) {  // decoding
            EXPECT_EQ(s.num_computed_tokens, static_cast<int32_t>(s.tokens.size()) - 1);
          }
        }
      }
    };
    submit_all(ps, p, out.tokens, nullptr);
    out.kv = e.kv_stats();
    for (const BlockSnapshot& b : e.snapshot()->blocks) {
      if (b.hash != 0) out.hashes.push_back(b.hash);
    }
    std::sort(out.hashes.begin(), out.hashes.end());
    // The same tokens again, as prompts: every full block of them should be cached.
    std::vector<std::vector<int32_t>> again;
    for (size_t i = 0; i < ps.size(); ++i) {
      std::vector<int32_t> q = ps[i];
      q.insert(q.end(), out.tokens[i].begin(), out.tokens[i].end());
      again.push_back(q);
    }
    submit_all(again, greedy(8), out.second_tokens, &out.cached);
    EXPECT_EQ(e.kv_stats().num_used_blocks, 0);
    return out;
  };
  const Pass plain = pass(SpecMethod::Off);
  const Pass spec = pass(SpecMethod::Ngram);
  EXPECT_EQ(plain.tokens, spec.tokens);
  EXPECT_GT(spec.num_rejected, 20);
  EXPECT_GT(spec.num_rolled_back, 0);
  EXPECT_EQ(spec.kv.num_used_blocks, 0);
  EXPECT_EQ(spec.kv.num_used_blocks, plain.kv.num_used_blocks);
  EXPECT_EQ(spec.kv.num_cached_free_blocks, plain.kv.num_cached_free_blocks);
  EXPECT_EQ(spec.hashes, plain.hashes);
  EXPECT_EQ(spec.cached, plain.cached);
  EXPECT_EQ(spec.second_tokens, plain.second_tokens);
  for (size_t i = 0; i < ps.size(); ++i) {
    const int32_t len = static_cast<int32_t>(ps[i].size() + spec.tokens[i].size());
    EXPECT_EQ(spec.cached[i], (len - 1) / 4 * 4) << "prompt " << i;  // every full block but the last token's
  }
}

// max_tokens and the context length: replies end where plain decoding ends
// them, never a token later, whatever the draft held.
TEST_F(SpeculativeEngine, MaxTokensAndContextLengthCutExactly) {
  const auto ps = prompts(8);
  for (int32_t n = 1; n <= 24; ++n) {
    SCOPED_TRACE("max_tokens " + std::to_string(n));
    const Outcome plain = run(config(SpecMethod::Off), ps, 8, greedy(n));
    const Outcome spec = run(config(SpecMethod::Ngram), ps, 8, greedy(n));
    expect_same_replies(plain, spec);
    for (const Reply& r : spec.replies) {
      EXPECT_EQ(static_cast<int32_t>(r.tokens.size()), n);
      EXPECT_EQ(r.finish, FinishReason::Length);
    }
  }
  for (int32_t room : {1, 2, 5, 13}) {
    SCOPED_TRACE("context room " + std::to_string(room));
    const std::vector<std::vector<int32_t>> one = {ps[0]};
    EngineConfig off = config(SpecMethod::Off);
    EngineConfig on = config(SpecMethod::Ngram);
    off.max_model_len = on.max_model_len = static_cast<int32_t>(ps[0].size()) + room;
    const Outcome plain = run(off, one, 1, greedy(100));
    const Outcome spec = run(on, one, 1, greedy(100));
    expect_same_replies(plain, spec);
    EXPECT_EQ(static_cast<int32_t>(spec.replies[0].tokens.size()), room);
    EXPECT_EQ(spec.replies[0].finish, FinishReason::ContextFull);
  }
}

// A stop string that completes on a token in the middle of an accepted
// draft: the reply ends there, the rest of the draft is dropped.
TEST_F(SpeculativeEngine, StopStringInsideAnAcceptedDraft) {
  const auto ps = prompts(16);
  // Alone, as the stopped runs below: whether a sequence drafts depends on
  // the rows in the step (spec/spec_tracker.h), so the steps match theirs.
  const Outcome free_run = run(config(SpecMethod::Ngram), ps, 1, greedy(40));
  int32_t num_checked = 0;
  for (size_t i = 0; i < ps.size() && num_checked < 4; ++i) {
    const Reply& r = free_run.replies[i];
    // A token with a token of the same step after it (so it came from an
    // accepted draft) whose text completes a prefix of the reply.
    std::string text_so_far;
    std::vector<std::string> texts;
    {
      // Per-token text: replay the reply's tokens through a plain run's events.
      auto engine = Engine::create(config(SpecMethod::Off));
      ASSERT_TRUE(engine.ok());
      GenerationRequest req;
      req.prompt_tokens = ps[i];
      req.sampling = greedy(40);
      req.on_event = [&texts](const TokenEvent& ev) {
        if (ev.token >= 0) texts.push_back(ev.text);
      };
      ASSERT_TRUE((*engine)->submit(std::move(req)).ok());
      (*engine)->run_until_idle();
    }
    ASSERT_EQ(texts.size(), r.tokens.size());
    int32_t cut = -1;
    for (size_t t = 1; t + 1 < r.tokens.size(); ++t) {
      text_so_far += texts[t - 1];
      if (r.token_steps[t] == r.token_steps[t + 1] && r.token_steps[t] == r.token_steps[t - 1] && !texts[t].empty()) {
        cut = static_cast<int32_t>(t);
        break;
      }
    }
    if (cut < 0) continue;
    ++num_checked;
    SCOPED_TRACE("prompt " + std::to_string(i) + ", stop at token " + std::to_string(cut));
    SamplingParams p = greedy(40);
    p.stop = {text_so_far + texts[static_cast<size_t>(cut)]};
    const Outcome plain = run(config(SpecMethod::Off), {ps[i]}, 1, p);
    const Outcome spec = run(config(SpecMethod::Ngram), {ps[i]}, 1, p);
    expect_same_replies(plain, spec);
    const Reply& s = spec.replies[0];
    EXPECT_EQ(s.finish, FinishReason::Stop);
    ASSERT_EQ(static_cast<int32_t>(s.tokens.size()), cut + 1);
    // The last step emitted tokens that were all accepted drafts, and its
    // draft went on past the stop.
    const EngineEvent* last_verify = nullptr;
    for (const EngineEvent& e : spec.events) {
      if (e.type == EngineEventType::Verify) last_verify = &e;
    }
    ASSERT_NE(last_verify, nullptr);
    const int64_t emitted_last_step =
        std::count(s.token_steps.begin(), s.token_steps.end(), s.token_steps.back());
    EXPECT_GE(emitted_last_step, 2);
    EXPECT_LE(emitted_last_step, last_verify->value) << "the stop came on an accepted draft token";
  }
  EXPECT_GT(num_checked, 0) << "no reply had an accepted draft of three tokens to stop inside";
}

}  // namespace
}  // namespace kvscope
