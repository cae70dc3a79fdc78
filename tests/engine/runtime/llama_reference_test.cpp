// kvscope against llama.cpp and against the exact model, on the default model.
// Label `model`.
//
// Data: tests/data/smollm2_llamacpp_reference.json (scripts/dev/
// record_llama_reference.py: llama-cpp-python, 20 prompts, 32 greedy tokens,
// llama.cpp's top-2 margin at every step, top-5 logits at steps 0, 1, 15, 31)
// and tests/data/smollm2_exact_reference.json (scripts/dev/
// record_exact_reference.py: a float64 NumPy forward over the dequantised
// weights, teacher-forced on llama.cpp's sequences: what both engines
// approximate; the exact argmax, runner-up and top-two gap at every one of
// the 640 positions, and the exact logits of llama.cpp's top-5 at 4 steps).
//
// Why exact token agreement with llama.cpp cannot be asked: both engines
// quantise activations to 8 bits before the quantised matmuls, and any tiny
// upstream difference (llama.cpp rounds its KV cache, Q and the attention
// probabilities to f16; accumulation orders differ) flips a few roundings,
// which after 30 layers leaves each engine with its own noise of a few tenths
// of a logit around the exact values. This small model is full of near-ties:
// the exact top-two gap is below 0.75 at 208 of the 640 positions. So where
// the engines part, neither is "the reference": the exact forward decides. The
// tests ask that kvscope part from the exact model's token no more often than
// llama.cpp does (a sign test: see below), and only where the exact call is
// close (gap <= kMaxFlipGap). An earlier version excused any difference from
// llama.cpp where llama.cpp's own top-two gap was below 0.75, which waved
// through about a third of all positions without asking who was right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/kv_storage.h"
#include "kvscope/engine.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "runtime/model_runner.h"
#include "support/exact_reference.h"
#include "support/greedy.h"
#include "support/require_data.h"
#include "support/teacher_forced.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

// Measured (TeacherForcedLogits prints them; Xeon, AVX-512) on the 640
// teacher-forced positions: kvscope's argmax differs from the exact one at 17
// (largest exact gap there 0.38), llama.cpp's at 16 (largest 0.36); 8 of them
// are shared (both engines quantise activations to 8 bits; the exact forward
// does not), 9 are kvscope's alone, 8 llama.cpp's alone. Counts this small
// cannot order two engines of equal accuracy ("ours <= llama.cpp's" is a coin
// flip: it failed 17 vs 16), so the comparison is a sign test on the 17
// positions where only one engine parts (fails at 14 of them); as a check of
// power, Gaussian noise of sigma 0.2 added to our logits makes kvscope part
// alone at 36 positions vs llama.cpp's 10 and flip where the exact gap is 1.11,
// failing both checks (sigma 0.1 passes: 14 vs 10). Logits
// (llama.cpp's top-5 at 80 rows): ours lie within 0.67 of exact (mean 0.151),
// llama.cpp's within 0.69 (mean 0.159); their distance below the top
// candidate is off by 0.119 on average for us, 0.124 for llama.cpp. Each
// single logit must stay within 1.0 of exact, and our mean errors may exceed
// llama.cpp's by at most 10% (8-bit activation noise moves the mean by a few
// percent whenever a kernel's accumulation order changes).
constexpr float kExactTolerance = 1.0f;   // ours vs exact, any top-5 logit
constexpr float kLlamaTolerance = 1.5f;   // ours vs llama.cpp, any top-5 logit
constexpr double kMeanErrorSlack = 1.10;  // our mean error vs exact / llama.cpp's
// A lossy KV cache (f16, bf16, q8_0) adds its rounding to every attention
// read. Measured on these 640 positions: the worst top-5 logit moves to 1.24
// from exact with f16 (0.85 with f32), and q8_0's mean error is 1.15x
// llama.cpp's (which caches f16). The bar for them is that much looser, and
// the sign test against llama.cpp is the same for every type.
constexpr float kLossyKvExactTolerance = 1.5f;
constexpr double kLossyKvMeanErrorSlack = 1.20;
constexpr double kSignTestAlpha = 0.01;   // chance of failing an engine exactly as good as llama.cpp

using test::exact_call;
using test::ExactCall;
using test::kMaxFlipGap;

nlohmann::json load_json(const std::string& name) { return test::load_test_json(name); }

int most_of_n_by_chance(int n) { return test::most_of_n_by_chance(n, kSignTestAlpha); }

class LlamaReference : public ::testing::Test {
 protected:
  void SetUp() override {
    KVSCOPE_REQUIRE_DATA(!test::default_model_path().empty(), test::TestData::kDefaultModel);
    ref_ = load_json("smollm2_llamacpp_reference.json");
    exact_ = load_json("smollm2_exact_reference.json");
    ASSERT_EQ(ref_["prompts"].size(), exact_["prompts"].size());
    for (size_t pi = 0; pi < ref_["prompts"].size(); ++pi) {
      ASSERT_EQ(ref_["prompts"][pi]["name"], exact_["prompts"][pi]["name"]);
      ASSERT_EQ(ref_["prompts"][pi]["greedy_ids"].size(), exact_["prompts"][pi]["top2"].size());
    }
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

// The engine path (paged prefill, then one decode step per token). Up to the
// first token where we part from llama.cpp both ran the same sequence, so the
// exact data (teacher-forced on llama.cpp's sequence) still applies there: our
// token must be the exact argmax, or the exact call must be close.
TEST_F(LlamaReference, GreedyTokensPartFromLlamaCppOnlyAtExactNearTies) {
  EngineConfig config;
  config.model_path = test::default_model_path();
  config.num_threads = 2;
  auto engine = Engine::create(config);
  ASSERT_TRUE(engine.ok()) << engine.error();
  int num_exact = 0, ours_right = 0;
  for (size_t pi = 0; pi < ref_["prompts"].size(); ++pi) {
    const auto& p = ref_["prompts"][pi];
    const auto expected = p["greedy_ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = test::greedy_tokens(
        **engine, {p["prompt_ids"].get<std::vector<int32_t>>()}, static_cast<int32_t>(expected.size()))[0];
    ASSERT_EQ(got.size(), expected.size()) << p["name"];
    const auto diverge = std::mismatch(got.begin(), got.end(), expected.begin());
    if (diverge.first == got.end()) {
      ++num_exact;
      continue;
    }
    const size_t at = static_cast<size_t>(diverge.first - got.begin());
    const ExactCall exact = exact_call(exact_["prompts"][pi], at);
    if (got[at] == exact.argmax) {
      ++ours_right;  // llama.cpp is the one that left the exact model here
    } else {
      EXPECT_LE(exact.gap, kMaxFlipGap) << p["name"] << ": at token " << at << " we pick " << got[at]
                                        << ", the exact model " << exact.argmax << " by " << exact.gap;
    }
  }
  // Free-running sequences part for good at the first flip, so most prompts
  // run into one of the many near-ties; a floor still catches a regression.
  EXPECT_GE(num_exact, 6) << "prompts with all 32 tokens equal to llama.cpp's";
  std::cout << "[          ] " << num_exact << " of " << ref_["prompts"].size()
            << " prompts match llama.cpp on all 32 greedy tokens; of the rest, we hold the exact argmax at the "
               "first difference in "
            << ours_right << "\n";
}


// Disagreements with the exact argmax over all teacher-forced positions.
struct FlipCount {
  int count = 0;
  int at_runner_up = 0;  // of which the engine picked the exact runner-up
  float max_gap = 0;     // largest exact top-two gap at a disagreement
  void add(int32_t picked, const ExactCall& exact) {
    if (picked == exact.argmax) return;
    ++count;
    if (picked == exact.runner_up) ++at_runner_up;
    max_gap = std::max(max_gap, exact.gap);
  }
};

std::ostream& operator<<(std::ostream& out, const FlipCount& f) {
  return out << f.count << " (" << f.at_runner_up << " of them the exact runner-up; largest exact gap " << f.max_gap
             << ")";
}

// Every KV cache type must meet the same bar against the exact model (f16 is
// what llama.cpp itself caches); the summary lines say what each one costs.
class LlamaReferenceKvType : public LlamaReference, public ::testing::WithParamInterface<KvCacheType> {};

TEST_P(LlamaReferenceKvType, TeacherForcedLogits) {
  const KvCacheType kv_type = GetParam();
  const bool lossy = kv_type != KvCacheType::F32;
  const float exact_tolerance = lossy ? kLossyKvExactTolerance : kExactTolerance;
  const double mean_error_slack = lossy ? kLossyKvMeanErrorSlack : kMeanErrorSlack;
  auto file = GgufFile::open(test::default_model_path());
  ASSERT_TRUE(file.ok()) << file.error();
  auto weights = load_gguf_weights(std::shared_ptr<const GgufFile>(std::move(file).value()));
  ASSERT_TRUE(weights.ok()) << weights.error();
  const ModelConfig& c = (*weights)->config;
  const int32_t block_size = 16, num_blocks = 64;
  KvStorage kv(c.num_layers, num_blocks, block_size, c.kv_size(), kv_type);
  BlockPool pool(num_blocks);
  ThreadPool threads(2);
  ModelRunner runner(*weights, kv, threads);

  float worst_exact = 0, worst_llama = 0, worst_llama_exact = 0;
  double sum_ours_exact = 0, sum_llama_exact = 0, sum_ours_gap = 0, sum_llama_gap = 0;
  int num_logits = 0, num_gaps = 0, num_positions = 0, ours_vs_llama = 0, ours_alone = 0, llama_alone = 0;
  FlipCount ours_flips, llama_flips;
  for (size_t pi = 0; pi < ref_["prompts"].size(); ++pi) {
    const auto& p = ref_["prompts"][pi];
    const auto& e = exact_["prompts"][pi];
    auto tokens = p["prompt_ids"].get<std::vector<int32_t>>();
    const auto gen = p["greedy_ids"].get<std::vector<int32_t>>();
    const size_t num_prompt = tokens.size();
    tokens.insert(tokens.end(), gen.begin(), gen.end() - 1);
    // llama.cpp's own sequence (prompt + its greedy tokens), every row's logits.
    const std::vector<float> logits = test::teacher_forced_logits(runner, pool, block_size, tokens);
    auto row_at = [&](size_t step) { return logits.data() + (num_prompt - 1 + step) * static_cast<size_t>(c.vocab_size); };
    for (size_t step = 0; step < gen.size(); ++step) {
      const float* row = row_at(step);
      const int32_t ours = static_cast<int32_t>(std::max_element(row, row + c.vocab_size) - row);
      const ExactCall exact = exact_call(e, step);
      ours_flips.add(ours, exact);
      llama_flips.add(gen[step], exact);  // llama.cpp's argmax here is its next greedy token
      ours_vs_llama += ours != gen[step];
      ours_alone += ours != exact.argmax && gen[step] == exact.argmax;
      llama_alone += ours == exact.argmax && gen[step] != exact.argmax;
      ++num_positions;
      if (ours != exact.argmax) {
        std::cout << "[          ] " << p["name"].get<std::string>() << " step " << step << ": kvscope picks " << ours
                  << ", exact " << exact.argmax << " (runner-up " << exact.runner_up << ", gap " << exact.gap
                  << "), llama.cpp " << gen[step] << "\n";
        EXPECT_LE(exact.gap, kMaxFlipGap) << p["name"] << " step " << step << ": we pick " << ours
                                          << ", the exact model " << exact.argmax << " by " << exact.gap;
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
        if (k > 0) {  // the distance below the top candidate: what decides the argmax
          const int32_t top = top5[0][0].get<int32_t>();
          const float exact_gap = exact - exact_top5[0][1].get<float>();
          sum_ours_gap += std::fabs((row[id] - row[top]) - exact_gap);
          sum_llama_gap += std::fabs((llama - top5[0][1].get<float>()) - exact_gap);
          ++num_gaps;
        }
        EXPECT_LT(d_exact, exact_tolerance) << p["name"] << " step " << step_text << " token " << id;
        EXPECT_LT(d_llama, kLlamaTolerance) << p["name"] << " step " << step_text << " token " << id;
      }
    }
  }
  // We must not part from the exact model's token more often than llama.cpp
  // does (a sign test on the positions where only one of the two parts), and
  // be about as close to its logits and to its gaps below the top candidate.
  const int max_alone = most_of_n_by_chance(ours_alone + llama_alone);
  EXPECT_LE(ours_alone, max_alone) << "positions where only kvscope parts from the exact argmax, vs " << llama_alone
                                   << " where only llama.cpp does";
  EXPECT_LE(sum_ours_exact, sum_llama_exact * mean_error_slack);
  EXPECT_LE(sum_ours_gap, sum_llama_gap * mean_error_slack);
  EXPECT_LE(worst_exact, std::max(worst_llama_exact, exact_tolerance));
  std::cout << "[          ] KV cache " << kv_cache_type_name(kv_type) << ": top-1 agrees with the exact model at "
            << num_positions - ours_flips.count << " of " << num_positions << " positions, mean |logit - exact| "
            << sum_ours_exact / num_logits << " over llama.cpp's top-5\n";
  std::cout << "[          ] top-5 logits over " << num_logits << " values: mean |kvscope - exact| "
            << sum_ours_exact / num_logits << " (max " << worst_exact << "), mean |llama.cpp - exact| "
            << sum_llama_exact / num_logits << " (max " << worst_llama_exact << "); max |kvscope - llama.cpp| "
            << worst_llama << "\n"
            << "[          ] argmax differs from the exact model's at " << num_positions
            << " teacher-forced positions: kvscope " << ours_flips << ", llama.cpp " << llama_flips
            << "; kvscope from llama.cpp at " << ours_vs_llama << "\n"
            << "[          ] only kvscope parts from the exact argmax at " << ours_alone << ", only llama.cpp at "
            << llama_alone << " (sign test allows kvscope up to " << max_alone << ")\n"
            << "[          ] gap below the top candidate over " << num_gaps << " values: mean |kvscope - exact| "
            << sum_ours_gap / num_gaps << ", mean |llama.cpp - exact| " << sum_llama_gap / num_gaps << "\n";
}

INSTANTIATE_TEST_SUITE_P(KvCacheTypes, LlamaReferenceKvType,
                         ::testing::Values(KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0),
                         [](const ::testing::TestParamInfo<KvCacheType>& info) {
                           return std::string(kv_cache_type_name(info.param));
                         });

}  // namespace
}  // namespace kvscope
