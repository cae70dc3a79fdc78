// gpu_sampling on the CPU backend (label `unit`): the engine hands the rows
// that need only a token to the backend (StepBatch::draws) with each
// sequence's own random number and penalised tokens, and the tokens are the
// ones the engine's sampler draws with the setting off. Random tiny model;
// every sampling option, greedy, parallel samples, logprob callbacks,
// speculative decoding and preemption mixed in one run. On a GPU the same
// comparison is cuda_backend_test's (label gpu).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <vector>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

class BackendSampling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("backend_sampling");
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q8_0;
    spec.seed = 3;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static EngineConfig config(bool gpu_sampling) {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.block_size = 4;
    c.num_blocks = 96;  // small: some sequences are preempted and recomputed
    c.max_seqs = 16;
    c.max_batched_tokens = 64;
    c.gpu_sampling = gpu_sampling;
    return c;
  }

  struct Outcome {
    std::map<std::pair<int, int32_t>, std::vector<int32_t>> tokens;  // (submission, index)
    int64_t num_backend_draws = 0;
    int64_t num_logits_calls = 0;
  };

  static SamplingParams sampling(int i) {
    SamplingParams p;
    p.seed = 1000 + static_cast<uint64_t>(i);
    p.max_tokens = 20;
    p.ignore_eos = true;
    p.temperature = i % 6 == 0 ? 0.0f : 0.6f + 0.1f * static_cast<float>(i % 5);
    p.top_k = i % 3 == 0 ? 0 : 5 + i;
    p.top_p = i % 2 == 0 ? 1.0f : 0.9f;
    p.min_p = i % 4 == 0 ? 0.0f : 0.03f;
    p.repetition_penalty = i % 3 == 2 ? 1.0f : 1.2f;
    p.presence_penalty = i % 2 == 1 ? 0.3f : 0.0f;
    p.frequency_penalty = i % 5 == 1 ? 0.0f : 0.2f;
    p.repeat_last_n = i % 7 == 0 ? -1 : 12;
    return p;
  }

  static Outcome run(const EngineConfig& c) {
    auto made = Engine::create(c);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error());
    Outcome o;
    if (!made.ok()) return o;
    Engine& engine = **made;
    std::mt19937 rng(17);
    std::map<RequestId, int> submission;
    for (int i = 0; i < 24; ++i) {
      GenerationRequest r;
      for (int k = 5 + static_cast<int>(rng() % 9); k > 0; --k) r.prompt_tokens.push_back(static_cast<int32_t>(rng() % 200));
      r.sampling = sampling(i);
      r.n = i % 8 == 3 ? 3 : 1;  // parallel samples: their first tokens come from the host
      if (i % 8 == 5) {
        // Logprobs: this request's rows always come back as logits.
        r.on_logits = [&o](int32_t, int32_t, const float*, int32_t) { ++o.num_logits_calls; };
      }
      r.on_event = [&o, &submission](const TokenEvent& ev) {
        if (ev.token >= 0) o.tokens[{submission.at(ev.id), ev.index}].push_back(ev.token);
      };
      auto id = engine.submit(std::move(r));
      EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error());
      if (id.ok()) submission[*id] = i;
    }
    while (engine.has_work()) {
      engine.step();
      o.num_backend_draws += engine.last_step_stats().num_backend_draws;
    }
    return o;
  }

  static std::string path_;
};
std::string BackendSampling::path_;

TEST_F(BackendSampling, BackendDrawsGiveTheEnginesSamplerTokens) {
  const Outcome off = run(config(false));
  const Outcome on = run(config(true));
  EXPECT_EQ(off.num_backend_draws, 0);
  EXPECT_GT(on.num_backend_draws, 200);  // most tokens were drawn by the backend
  EXPECT_GT(on.num_logits_calls, 0);     // and the logprob requests' rows still came back
  EXPECT_EQ(on.num_logits_calls, off.num_logits_calls);
  ASSERT_EQ(on.tokens.size(), off.tokens.size());
  ASSERT_EQ(off.tokens.size(), 24u + 3u * 2u);
  for (const auto& [key, tokens] : off.tokens) {
    EXPECT_EQ(tokens.size(), 20u);
    EXPECT_EQ(on.tokens.at(key), tokens) << "submission " << key.first << " sample " << key.second;
  }
}

TEST_F(BackendSampling, SpeculativeVerificationStaysOnTheHostAndKeepsTokens) {
  EngineConfig c = config(true);
  c.spec = SpecMethod::Ngram;
  EngineConfig off = c;
  off.gpu_sampling = false;
  const Outcome a = run(off), b = run(c);
  EXPECT_GT(b.num_backend_draws, 0);
  for (const auto& [key, tokens] : a.tokens) EXPECT_EQ(b.tokens.at(key), tokens) << "submission " << key.first;
}

}  // namespace
}  // namespace kvscope
