// kvscope against llama.cpp on Gemma 3 270M (the second model). Label `model`.
//
// Data: tests/data/gemma3_llamacpp_reference.json (scripts/dev/
// record_gemma_reference.py: llama-cpp-python, 8 prompts with BOS, 24 greedy
// tokens, llama.cpp's top-2 margin at every step, top-5 logits at steps 0, 1,
// 11, 23). The prompt "long_two_topics" (681 tokens) is longer than Gemma's
// 512-token sliding window, so its later rows exercise the sliding layers'
// masking; "long_paragraph" (334 tokens) stays inside it.
//
// As with SmolLM2 (llama_reference_test.cpp), exact token agreement cannot be
// asked everywhere: both engines quantise activations to 8 bits before the
// quantised matmuls and differ in small ways upstream (llama.cpp keeps its KV
// cache, Q and attention probabilities in f16; accumulation orders differ),
// which leaves each with its own noise around the exact logits. So the tests
// ask that we part from llama.cpp only where its top two candidates are within
// kTieMargin, and that the logits of llama.cpp's top-5 candidates agree within
// kLogitTolerance on identical (teacher-forced) inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/kv_storage.h"
#include "kvscope/engine.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "runtime/model_runner.h"
#include "support/greedy.h"
#include "support/require_data.h"
#include "support/teacher_forced.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

// Measured on identical inputs (TeacherForcedLogits prints them; Gemma's
// logits here are ~10-40), since the K-quant layers take 8-bit activations
// as llama.cpp's do (kernels/cpu/kquant_packed.h): llama.cpp's top-5 logits
// and ours differ by 0.25 on average and by at most 1.06; llama.cpp's top-1
// logit, checked at all 192 steps, is within 1.74 (AVX2: 1.39), so
// kLogitTolerance has ~13% headroom (a Xeon with AVX-512 VNNI). Before, with
// f32 activations in those layers: 0.20, 0.91 and 1.94 (korean step 4, a
// near-uniform shift of the row that leaves the probabilities alone).
// Our argmax differs from llama.cpp's at 7 of 192 teacher-forced positions,
// all where llama.cpp's top-2 margin is at most 0.39, and free-running greedy
// first diverges only at such steps; 4 of 8 prompts match all 24 tokens. The gap tolerance leaves
// ~2x headroom; kTieMargin must cover the gap noise (a flip needs a gap error
// above llama.cpp's margin). SmolLM2's test judges flips by an exact float64
// forward instead; none is recorded for Gemma yet. With the sliding window
// switched off the long prompt's top-1 logits move by up to 11.6 and 19 of 24
// argmaxes change, far outside these bounds (LongPromptCatchesAMissingSlidingWindow); an off-by-one window
// (511 or 513) is NOT detectable this way (differences stay below 0.95).
constexpr float kLogitTolerance = 2.0f;  // ours vs llama.cpp, any top-5 logit and each step's top-1
constexpr float kGapTolerance = 1.0f;    // ours vs llama.cpp, a top-5 logit minus the top-1 logit
constexpr float kTieMargin = 0.75f;      // llama.cpp top-2 gap below which a flip is a near-tie
constexpr int32_t kMinExactPrompts = 3;  // prompts whose 24 free-running tokens all match (measured 5 of 8)

nlohmann::json load_reference() {
  std::ifstream in(test::test_data_dir() + "/gemma3_llamacpp_reference.json");
  return nlohmann::json::parse(in);
}

class GemmaReference : public ::testing::Test {
 protected:
  void SetUp() override {
    KVSCOPE_REQUIRE_DATA(!test::gemma_model_path().empty(), test::TestData::kGemmaModel);
    ref_ = load_reference();
  }
  nlohmann::json ref_;
};

TEST_F(GemmaReference, TokenizerGivesLlamaCppPromptIds) {
  auto file = GgufFile::open(test::gemma_model_path());
  ASSERT_TRUE(file.ok()) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab.ok()) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok.ok()) << tok.error();
  ASSERT_TRUE((*tok)->add_bos());
  ASSERT_EQ((*tok)->bos_id(), 2);
  for (const auto& p : ref_["prompts"]) {
    std::vector<int32_t> ids;
    if ((*tok)->add_bos()) ids.push_back((*tok)->bos_id());
    const auto body = (*tok)->encode(p["text"].get<std::string>(), true);
    ids.insert(ids.end(), body.begin(), body.end());
    EXPECT_EQ(ids, p["prompt_ids"].get<std::vector<int32_t>>()) << p["name"];
  }
}

// The engine path: the long prompt (681 tokens) is prefilled in two chunks
// (max_batched_tokens 512), then decoded one token at a time.
TEST_F(GemmaReference, GreedyTokensMatchExceptAtNearTies) {
  EngineConfig config;
  config.model_path = test::gemma_model_path();
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
      std::cout << "[          ] " << p["name"].get<std::string>() << ": all " << expected.size() << " match\n";
      continue;
    }
    const size_t at = static_cast<size_t>(diverge.first - got.begin());
    std::cout << "[          ] " << p["name"].get<std::string>() << ": diverges at token " << at
              << " (llama.cpp margin " << margins[at] << ")\n";
    EXPECT_LT(margins[at], kTieMargin) << p["name"] << ": diverges at token " << at
                                       << " where llama.cpp's top-2 margin is " << margins[at];
  }
  EXPECT_GE(num_exact, kMinExactPrompts) << "prompts with all 24 tokens equal to llama.cpp's";
  std::cout << "[          ] " << num_exact << " of " << ref_["prompts"].size()
            << " prompts match llama.cpp on all 24 greedy tokens\n";
}


// Teacher-forced comparison of one prompt: what TeacherForcedLogits checks and
// prints, gathered so that the sliding-window test can reuse it.
struct Comparison {
  float max_top1 = 0;  // |ours - llama.cpp| of llama.cpp's top-1 logit, every step
  float max_top5 = 0;  // |ours - llama.cpp| of the top-5 logits at the recorded steps
  float max_gap = 0;   // |ours - llama.cpp| of (logit - top-1 logit) at the same entries
  double sum_top5 = 0;
  int num_top5 = 0;
  std::vector<std::pair<size_t, int32_t>> flips;  // (step, our argmax) where it differs from llama.cpp's
};

Comparison compare_teacher_forced(ModelRunner& runner, BlockPool& pool, int32_t block_size, const nlohmann::json& p) {
  const int32_t vocab = runner.config().vocab_size;
  auto tokens = p["prompt_ids"].get<std::vector<int32_t>>();
  const auto gen = p["greedy_ids"].get<std::vector<int32_t>>();
  const auto top2 = p["top2_logits"].get<std::vector<std::vector<float>>>();
  const size_t num_prompt = tokens.size();
  tokens.insert(tokens.end(), gen.begin(), gen.end() - 1);
  // Row i of `logits` is generated step i (sequence row num_prompt - 1 + i).
  const std::vector<float> logits =
      // Rows from the last prompt token on only: Gemma's vocabulary has 262144
      // entries, so logits for all ~700 rows of the long prompt would take 700 MB.
      test::teacher_forced_logits(runner, pool, block_size, tokens, static_cast<int32_t>(num_prompt - 1));
  EXPECT_EQ(logits.size(), gen.size() * static_cast<size_t>(vocab));
  auto row_at = [&](size_t step) { return logits.data() + step * static_cast<size_t>(vocab); };
  Comparison out;
  for (size_t step = 0; step < gen.size(); ++step) {
    const float* row = row_at(step);
    const int32_t ours = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
    if (ours != gen[step]) out.flips.emplace_back(step, ours);
    // llama.cpp's top-1 logit is recorded at every step, so every position is
    // checked, including all those past the sliding window.
    out.max_top1 = std::max(out.max_top1, std::fabs(row[gen[step]] - top2[step][0]));
  }
  for (const auto& [step_text, top5] : p["top5"].items()) {
    const float* row = row_at(std::stoul(step_text));
    const int32_t top1_id = top5[0][0].get<int32_t>();
    const float top1_llama = top5[0][1].get<float>();
    for (const auto& entry : top5) {
      const int32_t id = entry[0].get<int32_t>();
      const float llama = entry[1].get<float>();
      const float d = std::fabs(row[id] - llama);
      out.max_top5 = std::max(out.max_top5, d);
      out.max_gap = std::max(out.max_gap, std::fabs((row[id] - row[top1_id]) - (llama - top1_llama)));
      out.sum_top5 += d;
      ++out.num_top5;
    }
  }
  return out;
}

std::shared_ptr<const ModelWeights> load_gemma_weights() {
  auto file = GgufFile::open(test::gemma_model_path());
  EXPECT_TRUE(file.ok()) << file.error();
  if (!file.ok()) return nullptr;
  auto weights = load_gguf_weights(std::shared_ptr<const GgufFile>(std::move(file).value()));
  EXPECT_TRUE(weights.ok()) << weights.error();
  if (!weights.ok()) return nullptr;
  return *weights;
}

constexpr int32_t kBlockSize = 16, kNumBlocks = 64;  // 1024 slots > the longest sequence (681 + 23)

TEST_F(GemmaReference, TeacherForcedLogits) {
  const auto weights = load_gemma_weights();
  ASSERT_TRUE(weights);
  const ModelConfig& c = weights->config;
  ASSERT_EQ(c.vocab_size, 262144);
  ASSERT_EQ(c.sliding_window, 512);
  KvStorage kv(c.num_layers, kNumBlocks, kBlockSize, c.kv_size());
  BlockPool pool(kNumBlocks);
  ThreadPool threads(2);
  ModelRunner runner(weights, kv, threads);

  float worst_top1 = 0, worst_top5 = 0, worst_gap = 0, worst_flip_margin = 0;
  double sum_top5 = 0;
  int num_top5 = 0, num_steps = 0, num_flips = 0;
  for (const auto& p : ref_["prompts"]) {
    const std::string name = p["name"];
    const auto margins = p["margins"].get<std::vector<float>>();
    ASSERT_LE(p["prompt_ids"].size() + p["greedy_ids"].size(), static_cast<size_t>(kNumBlocks * kBlockSize));
    const Comparison cmp = compare_teacher_forced(runner, pool, kBlockSize, p);
    for (const auto& [step, ours] : cmp.flips) {
      worst_flip_margin = std::max(worst_flip_margin, margins[step]);
      std::cout << "[          ] " << name << " step " << step << ": argmax " << ours << " vs llama.cpp's "
                << p["greedy_ids"][step] << " (llama.cpp margin " << margins[step] << ")\n";
      EXPECT_LT(margins[step], kTieMargin) << name << " step " << step << ": argmax differs from llama.cpp's";
    }
    EXPECT_LT(cmp.max_top1, kLogitTolerance) << name << ": top-1 logit";
    EXPECT_LT(cmp.max_top5, kLogitTolerance) << name << ": top-5 logits";
    EXPECT_LT(cmp.max_gap, kGapTolerance) << name << ": top-5 logits relative to the top-1";
    std::cout << "[          ] " << name << " (" << p["prompt_ids"].size()
              << " prompt tokens): max |kvscope - llama.cpp| top-1 " << cmp.max_top1 << ", top-5 " << cmp.max_top5
              << ", gap to top-1 " << cmp.max_gap << "\n";
    worst_top1 = std::max(worst_top1, cmp.max_top1);
    worst_top5 = std::max(worst_top5, cmp.max_top5);
    worst_gap = std::max(worst_gap, cmp.max_gap);
    sum_top5 += cmp.sum_top5;
    num_top5 += cmp.num_top5;
    num_steps += static_cast<int>(p["greedy_ids"].size());
    num_flips += static_cast<int>(cmp.flips.size());
  }
  std::cout << "[          ] top-5 logits over " << num_top5 << " values: mean |kvscope - llama.cpp| "
            << sum_top5 / num_top5 << ", max " << worst_top5 << ", max gap-to-top-1 difference " << worst_gap
            << "; top-1 logit at " << num_steps << " steps: max " << worst_top1 << "\n"
            << "[          ] argmax differs from llama.cpp's at " << num_flips << " of " << num_steps
            << " positions (largest llama.cpp margin there " << worst_flip_margin << ")\n";
}

// The data must be able to catch a sliding-window bug: the same comparison on
// the long prompt with the window switched off (each layer keeps its rope
// base, only the masking changes) must fail the tolerances above by far.
TEST_F(GemmaReference, LongPromptCatchesAMissingSlidingWindow) {
  const auto weights = load_gemma_weights();
  ASSERT_TRUE(weights);
  auto no_window = std::make_shared<ModelWeights>(*weights);  // shares the mapped matrices
  no_window->config.sliding_window = 1 << 20;
  const ModelConfig& c = no_window->config;
  KvStorage kv(c.num_layers, kNumBlocks, kBlockSize, c.kv_size());
  BlockPool pool(kNumBlocks);
  ThreadPool threads(2);
  ModelRunner runner(no_window, kv, threads);
  for (const auto& p : ref_["prompts"]) {
    if (p["prompt_ids"].size() <= 512) continue;
    const Comparison cmp = compare_teacher_forced(runner, pool, kBlockSize, p);
    std::cout << "[          ] without the window, " << p["name"].get<std::string>() << ": max |kvscope - llama.cpp| top-1 "
              << cmp.max_top1 << ", top-5 " << cmp.max_top5 << ", argmax differs at " << cmp.flips.size()
              << " of " << p["greedy_ids"].size() << " steps\n";
    EXPECT_GT(cmp.max_top1, 3 * kLogitTolerance) << p["name"];
    return;
  }
  FAIL() << "no prompt longer than the 512-token sliding window";
}

}  // namespace
}  // namespace kvscope
