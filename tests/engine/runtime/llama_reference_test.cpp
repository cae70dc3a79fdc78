// kvscope against llama.cpp and against the exact model, on the default model.
// Label `model`.
//
// Data: tests/data/smollm2_llamacpp_reference.json (scripts/dev/
// record_llama_reference.py: llama-cpp-python, 20 prompts, 32 greedy tokens,
// llama.cpp's top-2 margin at every step, top-5 logits at steps 0, 1, 15, 31)
// and tests/data/smollm2_exact_reference.json (scripts/dev/
// record_exact_reference.py: a float64 NumPy forward over the dequantised
// weights, teacher-forced on llama.cpp's sequences: what both engines
// approximate).
//
// Why exact token agreement with llama.cpp cannot be asked everywhere: both
// engines quantise activations to 8 bits before the quantised matmuls, and
// any tiny upstream difference (llama.cpp rounds its KV cache, Q and the
// attention probabilities to f16; accumulation orders differ) flips a few
// roundings, which after 30 layers leaves each engine with its own noise of a
// few tenths of a logit around the exact values. This small model is full of
// near-ties: in 19 of the 20 prompts llama.cpp's own top-2 gap falls below
// 0.15 somewhere in the 32 steps. So the tests pin (1) our closeness to the
// exact model, and (2) that we part from llama.cpp only where its top two
// candidates are within kTieMargin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/kv_storage.h"
#include "kvscope/engine.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "runtime/model_runner.h"
#include "support/greedy.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

// Measured on identical inputs (TeacherForcedLogits prints them): llama.cpp's
// top-5 logits lie up to 0.69 from the exact ones (mean 0.159), ours up to
// 0.83 (mean 0.159), so the engines can differ by up to ~1.4, and a gap below
// kTieMargin between the top two candidates may flip either engine's argmax.
// Each single logit must stay within 1.0 of exact, and our mean error may
// exceed llama.cpp's by at most 10% (8-bit activation noise moves the mean by
// a few percent whenever a kernel's accumulation order changes).
constexpr float kExactTolerance = 1.0f;   // ours vs exact, any top-5 logit
constexpr float kLlamaTolerance = 1.5f;   // ours vs llama.cpp, any top-5 logit
constexpr float kTieMargin = 0.75f;       // top-2 gap below which a flip is a near-tie
constexpr double kMeanErrorSlack = 1.10;  // our mean error vs exact / llama.cpp's

nlohmann::json load_json(const std::string& name) {
  std::ifstream in(test::test_data_dir() + "/" + name);
  return nlohmann::json::parse(in);
}

class LlamaReference : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::default_model_path().empty()) GTEST_SKIP() << "default model not found (run scripts/fetch_model.py)";
    ref_ = load_json("smollm2_llamacpp_reference.json");
    exact_ = load_json("smollm2_exact_reference.json");
  }
  nlohmann::json ref_, exact_;
};

TEST_F(LlamaReference, TokenizerGivesLlamaCppPromptIds) {
  auto file = GgufFile::open(test::default_model_path());
  ASSERT_TRUE(file.ok()) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok.ok()) << tok.error();
  for (const auto& p : ref_["prompts"]) {
    EXPECT_EQ((*tok)->encode(p["text"].get<std::string>(), true), p["prompt_ids"].get<std::vector<int32_t>>())
        << p["name"];
  }
}

TEST_F(LlamaReference, GreedyTokensMatchExceptAtNearTies) {
  EngineConfig config;
  config.model_path = test::default_model_path();
  config.num_threads = 2;
  auto engine = Engine::create(config);
  ASSERT_TRUE(engine.ok()) << engine.error();
  int num_exact = 0;
  for (const auto& p : ref_["prompts"]) {
    const auto expected = p["greedy_ids"].get<std::vector<int32_t>>();
    const auto margins = p["margins"].get<std::vector<float>>();
    const std::vector<int32_t> got = test::greedy_tokens(
        **engine, {p["prompt_ids"].get<std::vector<int32_t>>()}, static_cast<int32_t>(expected.size()))[0];
    ASSERT_EQ(got.size(), expected.size()) << p["name"];
    const auto diverge = std::mismatch(got.begin(), got.end(), expected.begin());
    if (diverge.first == got.end()) {
      ++num_exact;
      continue;
    }
    const size_t at = static_cast<size_t>(diverge.first - got.begin());
    EXPECT_LT(margins[at], kTieMargin) << p["name"] << ": diverges at token " << at << " where llama.cpp's top-2 margin is "
                                       << margins[at];
  }
  // Not 18 of 20: see the top of the file. A floor still catches a regression.
  EXPECT_GE(num_exact, 6) << "prompts with all 32 tokens equal to llama.cpp's";
  std::cout << "[          ] " << num_exact << " of " << ref_["prompts"].size()
            << " prompts match llama.cpp on all 32 greedy tokens\n";
}

// Runs llama.cpp's own sequence (prompt + its greedy tokens) through our runner
// in one prefill and returns the logits of every row.
std::vector<float> teacher_forced_logits(ModelRunner& runner, BlockPool& pool, int32_t block_size,
                                         const std::vector<int32_t>& tokens) {
  BlockTable table(block_size);
  table.grow(pool, static_cast<int32_t>(tokens.size()));
  std::vector<int64_t> slots(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) slots[i] = table.slot(static_cast<int32_t>(i));
  StepBatch batch;
  batch.clear();
  batch.add_sequence(tokens.data(), static_cast<int32_t>(tokens.size()), 0, slots.data(), table.blocks(), false);
  for (int32_t i = 0; i < batch.num_tokens; ++i) batch.logits_rows.push_back(i);
  std::vector<float> logits;
  runner.forward(batch, logits);
  table.release_all(pool);
  return logits;
}

TEST_F(LlamaReference, TeacherForcedLogits) {
  auto file = GgufFile::open(test::default_model_path());
  ASSERT_TRUE(file.ok()) << file.error();
  auto weights = load_gguf_weights(std::shared_ptr<const GgufFile>(std::move(file).value()));
  ASSERT_TRUE(weights.ok()) << weights.error();
  const ModelConfig& c = (*weights)->config;
  const int32_t block_size = 16, num_blocks = 64;
  KvStorage kv(c.num_layers, num_blocks, block_size, c.kv_size());
  BlockPool pool(num_blocks);
  ThreadPool threads(2);
  ModelRunner runner(*weights, kv, threads);

  float worst_exact = 0, worst_llama = 0, worst_llama_exact = 0;
  double sum_ours_exact = 0, sum_llama_exact = 0;
  int num_logits = 0, flips_vs_exact = 0, flips_vs_llama = 0;
  ASSERT_EQ(ref_["prompts"].size(), exact_["prompts"].size());
  for (size_t pi = 0; pi < ref_["prompts"].size(); ++pi) {
    const auto& p = ref_["prompts"][pi];
    const auto& e = exact_["prompts"][pi];
    ASSERT_EQ(p["name"], e["name"]);
    auto tokens = p["prompt_ids"].get<std::vector<int32_t>>();
    const auto gen = p["greedy_ids"].get<std::vector<int32_t>>();
    const auto margins = p["margins"].get<std::vector<float>>();
    const size_t num_prompt = tokens.size();
    tokens.insert(tokens.end(), gen.begin(), gen.end() - 1);
    const std::vector<float> logits = teacher_forced_logits(runner, pool, block_size, tokens);
    auto row_at = [&](size_t step) { return logits.data() + (num_prompt - 1 + step) * static_cast<size_t>(c.vocab_size); };
    for (size_t step = 0; step < gen.size(); ++step) {
      const float* row = row_at(step);
      const int32_t ours = static_cast<int32_t>(std::max_element(row, row + c.vocab_size) - row);
      const int32_t exact_id = e["argmax"][step][0].get<int32_t>();
      const float exact_margin = e["argmax"][step][1].get<float>();
      if (ours != exact_id) {
        ++flips_vs_exact;
        EXPECT_LT(exact_margin, kTieMargin) << p["name"] << " step " << step << ": argmax differs from the exact model's";
      }
      if (ours != gen[step]) {
        ++flips_vs_llama;
        EXPECT_LT(margins[step], kTieMargin) << p["name"] << " step " << step << ": argmax differs from llama.cpp's";
      }
    }
    for (const auto& [step_text, top5] : p["top5"].items()) {
      const float* row = row_at(std::stoul(step_text));
      const auto& exact_top5 = e["top5_exact"][step_text];
      for (size_t k = 0; k < top5.size(); ++k) {
        const int32_t id = top5[k][0].get<int32_t>();
        ASSERT_EQ(id, exact_top5[k][0].get<int32_t>());
        const float llama = top5[k][1].get<float>(), exact = exact_top5[k][1].get<float>();
        const float d_exact = std::fabs(row[id] - exact), d_llama = std::fabs(row[id] - llama);
        worst_exact = std::max(worst_exact, d_exact);
        worst_llama = std::max(worst_llama, d_llama);
        sum_ours_exact += d_exact;
        sum_llama_exact += std::fabs(llama - exact);
        worst_llama_exact = std::max(worst_llama_exact, std::fabs(llama - exact));
        ++num_logits;
        EXPECT_LT(d_exact, kExactTolerance) << p["name"] << " step " << step_text << " token " << id;
        EXPECT_LT(d_llama, kLlamaTolerance) << p["name"] << " step " << step_text << " token " << id;
      }
    }
  }
  // We must be about as close to the exact model as llama.cpp is.
  EXPECT_LE(sum_ours_exact, sum_llama_exact * kMeanErrorSlack);
  EXPECT_LE(worst_exact, std::max(worst_llama_exact, kExactTolerance));
  std::cout << "[          ] top-5 logits over " << num_logits << " values: mean |kvscope - exact| "
            << sum_ours_exact / num_logits << " (max " << worst_exact << "), mean |llama.cpp - exact| "
            << sum_llama_exact / num_logits << " (max " << worst_llama_exact << "); max |kvscope - llama.cpp| "
            << worst_llama << "\n"
            << "[          ] argmax differs at 640 positions: from exact " << flips_vs_exact
            << ", from llama.cpp " << flips_vs_llama << " (all at near-ties)\n";
}

}  // namespace
}  // namespace kvscope
