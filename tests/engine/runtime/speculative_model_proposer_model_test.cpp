// The model proposers on the default model (label `model`): early exit at
// every layer and the model as its own draft model draft exactly what the
// model computes, so under greedy decoding no draft token is ever rejected
// (drafted tokens not accepted were cut by the reply's end), at 1 and 8
// requests at once; early exit at half the layers is rejected often; and
// every reply is bitwise the plain reply (tokens and logits rows).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "kvscope/engine.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

const std::vector<std::string> kPrompts = {
    "Repeat this text exactly: The quick brown fox jumps over the lazy dog. Pack my box with five dozen jugs.",
    "Why is the sky blue?",
    "Here is a list of fruits: apple, banana, cherry, date. Write the list again, one fruit per line.",
    "Write a short poem about the sea.",
};

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<std::vector<float>>> logits;
  SpecStats spec;
};

Outcome run(const EngineConfig& c, int32_t concurrency) {
  auto engine = Engine::create(c);
  EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
  Outcome o;
  if (!engine.ok()) return o;
  Engine& e = **engine;
  o.tokens.resize(kPrompts.size());
  o.logits.resize(kPrompts.size());
  for (size_t first = 0; first < kPrompts.size(); first += static_cast<size_t>(concurrency)) {
    for (size_t i = first; i < std::min(kPrompts.size(), first + static_cast<size_t>(concurrency)); ++i) {
      GenerationRequest req;
      req.messages = {{"user", kPrompts[i]}};
      req.sampling.temperature = 0.0f;
      req.sampling.max_tokens = 48;
      req.on_logits = [&o, i](int32_t, int32_t, const float* logits, int32_t vocab) {
        o.logits[i].emplace_back(logits, logits + vocab);
      };
      req.on_event = [&o, i](const TokenEvent& ev) {
        if (ev.token >= 0) o.tokens[i].push_back(ev.token);
      };
      EXPECT_TRUE(e.submit(std::move(req)).ok());
    }
    e.run_until_idle();
  }
  o.spec = e.snapshot()->spec;
  return o;
}

int64_t rejected(const SpecStats& s) {
  return std::accumulate(s.num_judged_at.begin(), s.num_judged_at.end(), int64_t{0}) - s.num_accepted_tokens;
}

void expect_same(const Outcome& plain, const Outcome& spec) {
  ASSERT_EQ(plain.tokens.size(), spec.tokens.size());
  for (size_t i = 0; i < plain.tokens.size(); ++i) {
    SCOPED_TRACE("prompt " + std::to_string(i));
    EXPECT_EQ(plain.tokens[i], spec.tokens[i]);
    ASSERT_EQ(plain.logits[i].size(), spec.logits[i].size());
    for (size_t j = 0; j < plain.logits[i].size(); ++j) {
      EXPECT_EQ(std::memcmp(plain.logits[i][j].data(), spec.logits[i][j].data(),
                            plain.logits[i][j].size() * sizeof(float)),
                0)
          << "logits row " << j;
    }
  }
}

TEST(SpeculativeModelProposerModel, ADraftEqualToTheModelIsNeverRejected) {
  const std::string model = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!model.empty(), test::TestData::kDefaultModel);
  EngineConfig c;
  c.model_path = model;
  c.num_threads = 2;
  for (int32_t conc : {1, 4}) {
    SCOPED_TRACE("concurrency " + std::to_string(conc));
    const Outcome plain = run(c, conc);
    EngineConfig exit_all = c;
    exit_all.spec = SpecMethod::EarlyExit;
    exit_all.spec_early_exit_layer = 30;  // SmolLM2-135M: every layer
    exit_all.spec_never_pause = true;
    EngineConfig self = c;
    self.spec = SpecMethod::Draft;
    self.spec_draft_model = model;
    self.spec_never_pause = true;
    for (const EngineConfig& s : {exit_all, self}) {
      SCOPED_TRACE(spec_method_name(s.spec));
      const Outcome o = run(s, conc);
      expect_same(plain, o);
      EXPECT_GT(o.spec.num_accepted_tokens, 60);
      EXPECT_EQ(rejected(o.spec), 0);
    }
    EngineConfig half = exit_all;
    half.spec_early_exit_layer = 0;  // 15 layers
    const Outcome o = run(half, conc);
    expect_same(plain, o);
    EXPECT_GT(rejected(o.spec), 0);
  }
}

}  // namespace
}  // namespace kvscope
