// Prompt scoring on the default model (label `model`): the logits the engine
// scores each prompt token by (GenerationRequest::on_prompt_logits) are,
// bit for bit, the rows of one teacher-forced forward pass over the same
// tokens, which llama_reference_test holds against llama.cpp and the exact
// model. Two cases: llama.cpp's 20 reference sequences scored at once (their
// rows share the steps), and all of them as one prompt of 2,056 tokens,
// longer than a step may score (kv_plan.h's max_scored_rows: 170 rows of
// SmolLM2's vocabulary), so the engine splits it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kv/block_pool.h"
#include "kv/kv_storage.h"
#include "kvscope/engine.h"
#include "kvscope/kv_plan.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "runtime/model_runner.h"
#include "support/exact_reference.h"
#include "support/require_data.h"
#include "support/teacher_forced.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

class PromptScoringModel : public ::testing::Test {
 protected:
  void SetUp() override {
    KVSCOPE_REQUIRE_DATA(!test::default_model_path().empty(), test::TestData::kDefaultModel);
    const nlohmann::json ref = test::load_test_json("smollm2_llamacpp_reference.json");
    for (const auto& p : ref["prompts"]) sequences_.push_back(test::llama_sequence(p).tokens);
  }

  // Every row of one forward pass over each of `sequences` through a ModelRunner.
  static std::vector<std::vector<float>> teacher_forced(const std::vector<std::vector<int32_t>>& sequences,
                                                        int32_t* vocab) {
    auto file = GgufFile::open(test::default_model_path());
    EXPECT_TRUE(file.ok());
    auto weights = load_gguf_weights(std::shared_ptr<const GgufFile>(std::move(file).value()));
    EXPECT_TRUE(weights.ok());
    const ModelConfig& c = (*weights)->config;
    *vocab = c.vocab_size;
    const int32_t block_size = 16;
    size_t longest = 0;
    for (const auto& s : sequences) longest = std::max(longest, s.size());
    const int32_t num_blocks = static_cast<int32_t>(longest) / block_size + 1;
    KvStorage kv(c.num_layers, num_blocks, block_size, c.kv_size(), KvCacheType::F32);
    BlockPool pool(num_blocks);
    ThreadPool threads(2);
    ModelRunner runner(*weights, kv, threads);
    std::vector<std::vector<float>> out;
    for (const auto& s : sequences) out.push_back(test::teacher_forced_logits(runner, pool, block_size, s));
    return out;
  }

  // Each prompt's scored rows, [num_prompt - 1][vocab], all submitted at once
  // with max_tokens 0; `max_rows` is the most prompt rows any step computed.
  static std::vector<std::vector<float>> scored(const std::vector<std::vector<int32_t>>& prompts, int32_t* max_rows) {
    EngineConfig config;
    config.model_path = test::default_model_path();
    config.num_threads = 2;
    config.max_batched_tokens = 2048;  // the scoring bound, not the budget, splits the long prompt
    auto engine = Engine::create(config);
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
    std::vector<std::vector<float>> rows(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerationRequest r;
      r.prompt_tokens = prompts[i];
      r.sampling.max_tokens = 0;
      r.on_prompt_logits = [&rows, i](int32_t position, int32_t, const float* logits, int32_t vocab) {
        EXPECT_EQ(rows[i].size(), static_cast<size_t>(position - 1) * static_cast<size_t>(vocab));
        rows[i].insert(rows[i].end(), logits, logits + vocab);
      };
      EXPECT_TRUE((*engine)->submit(std::move(r)).ok());
    }
    *max_rows = 0;
    while ((*engine)->has_work()) {
      (*engine)->step();
      *max_rows = std::max(*max_rows, (*engine)->last_step_stats().num_prefill_tokens);
    }
    return rows;
  }

  std::vector<std::vector<int32_t>> sequences_;
};

bool bitwise_equal(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

TEST_F(PromptScoringModel, ManyPromptsAtOnceScoreAsOneForwardPassEach) {
  int32_t max_rows = 0;
  const std::vector<std::vector<float>> rows = scored(sequences_, &max_rows);
  int32_t vocab = 0;
  const std::vector<std::vector<float>> expected = teacher_forced(sequences_, &vocab);
  for (size_t i = 0; i < sequences_.size(); ++i) {
    const size_t n = (sequences_[i].size() - 1) * static_cast<size_t>(vocab);
    ASSERT_EQ(rows[i].size(), n) << "sequence " << i;
    // The teacher-forced pass has one more row: the one after the last token.
    EXPECT_TRUE(bitwise_equal(rows[i].data(), expected[i].data(), n)) << "sequence " << i;
  }
}

TEST_F(PromptScoringModel, ALongPromptIsScoredOverSeveralSteps) {
  std::vector<int32_t> all;
  for (const auto& s : sequences_) all.insert(all.end(), s.begin(), s.end());
  ASSERT_GT(all.size(), 1000u);
  int32_t max_rows = 0;
  const std::vector<std::vector<float>> rows = scored({all}, &max_rows);
  EngineConfig config;
  config.max_batched_tokens = 2048;
  EXPECT_EQ(max_scored_rows(config, 49152), 170);
  EXPECT_EQ(max_rows, 170) << "8M floats of logits a step over SmolLM2's 49,152 tokens";
  int32_t vocab = 0;
  const std::vector<float> expected = teacher_forced({all}, &vocab)[0];
  const size_t row = static_cast<size_t>(vocab);
  ASSERT_EQ(rows[0].size(), (all.size() - 1) * row);
  for (size_t p = 0; p + 1 < all.size(); ++p) {
    ASSERT_TRUE(bitwise_equal(rows[0].data() + p * row, expected.data() + p * row, row)) << "row " << p;
  }
}

}  // namespace
}  // namespace kvscope
