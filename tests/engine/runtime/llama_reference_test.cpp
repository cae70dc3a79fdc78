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
// candidate is off by 0.119 on average for us, 0.124 for llama.cpp. (Those
// are the figures the bars were set from. After later kernel changes, on an
// AMD EPYC with AVX-512, 2026-11-27: ours part at 15, mean error 0.161.) Each
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

  test::ExactTally tally;
  for (size_t pi = 0; pi < ref_["prompts"].size(); ++pi) {
    const auto& p = ref_["prompts"][pi];
    const auto& e = exact_["prompts"][pi];
    // llama.cpp's own sequence (prompt + its greedy tokens), every row's logits.
    const test::LlamaSequence seq = test::llama_sequence(p);
    const std::vector<int32_t>& gen = seq.greedy;
    const std::vector<float> logits = test::teacher_forced_logits(runner, pool, block_size, seq.tokens);
    auto row_at = [&](size_t step) {
      return logits.data() + (seq.num_prompt - 1 + step) * static_cast<size_t>(c.vocab_size);
    };
    for (size_t step = 0; step < gen.size(); ++step) {
      // llama.cpp's argmax here is its next greedy token.
      const auto [ours, exact] = tally.add_position(row_at(step), c.vocab_size, gen[step], e, step);
      if (ours != exact.argmax) {
        std::cout << "[          ] " << p["name"].get<std::string>() << " step " << step << ": kvscope picks " << ours
                  << ", exact " << exact.argmax << " (runner-up " << exact.runner_up << ", gap " << exact.gap
                  << "), llama.cpp " << gen[step] << "\n";
        EXPECT_LE(exact.gap, kMaxFlipGap) << p["name"] << " step " << step << ": we pick " << ours
                                          << ", the exact model " << exact.argmax << " by " << exact.gap;
      }
    }
    for (const auto& [step_text, top5] : p["top5"].items()) {
      for (const test::ExactTally::Logit& l :
           tally.add_top5(row_at(std::stoul(step_text)), top5, e["top5_exact"][step_text])) {
        EXPECT_LT(l.ours_vs_exact, exact_tolerance) << p["name"] << " step " << step_text << " token " << l.id;
        EXPECT_LT(l.ours_vs_llama, kLlamaTolerance) << p["name"] << " step " << step_text << " token " << l.id;
      }
    }
  }
  // We must not part from the exact model's token more often than llama.cpp
  // does (a sign test on the positions where only one of the two parts), and
  // be about as close to its logits and to its gaps below the top candidate.
  const test::ExactTally& t = tally;
  const int max_alone = most_of_n_by_chance(t.ours_alone + t.llama_alone);
  EXPECT_LE(t.ours_alone, max_alone) << "positions where only kvscope parts from the exact argmax, vs "
                                     << t.llama_alone << " where only llama.cpp does";
  EXPECT_LE(t.sum_ours_exact, t.sum_llama_exact * mean_error_slack);
  EXPECT_LE(t.sum_ours_gap, t.sum_llama_gap * mean_error_slack);
  EXPECT_LE(t.worst_ours_exact, std::max(t.worst_llama_exact, exact_tolerance));
  std::cout << "[          ] KV cache " << kv_cache_type_name(kv_type) << ": top-1 agrees with the exact model at "
            << t.positions - t.ours_flips.count << " of " << t.positions << " positions, mean |logit - exact| "
            << t.sum_ours_exact / t.logits << " over llama.cpp's top-5\n";
  std::cout << "[          ] top-5 logits over " << t.logits << " values: mean |kvscope - exact| "
            << t.sum_ours_exact / t.logits << " (max " << t.worst_ours_exact << "), mean |llama.cpp - exact| "
            << t.sum_llama_exact / t.logits << " (max " << t.worst_llama_exact << "); max |kvscope - llama.cpp| "
            << t.worst_ours_llama << "\n"
            << "[          ] argmax differs from the exact model's at " << t.positions
            << " teacher-forced positions: kvscope " << t.ours_flips << ", llama.cpp " << t.llama_flips
            << "; kvscope from llama.cpp at " << t.ours_vs_llama << "\n"
            << "[          ] only kvscope parts from the exact argmax at " << t.ours_alone << ", only llama.cpp at "
            << t.llama_alone << " (sign test allows kvscope up to " << max_alone << ")\n"
            << "[          ] gap below the top candidate over " << t.gaps << " values: mean |kvscope - exact| "
            << t.sum_ours_gap / t.gaps << ", mean |llama.cpp - exact| " << t.sum_llama_gap / t.gaps << "\n";
}

INSTANTIATE_TEST_SUITE_P(KvCacheTypes, LlamaReferenceKvType,
                         ::testing::Values(KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0),
                         [](const ::testing::TestParamInfo<KvCacheType>& info) {
                           return std::string(kv_cache_type_name(info.param));
                         });

}  // namespace
}  // namespace kvscope
