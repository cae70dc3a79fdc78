// The CUDA backend on the default model, judged by the exact model. Labels
// gpu and model: it skips without a device (fails with KVSCOPE_REQUIRE_GPU=1)
// and, with one, needs the default model.
//
// Data: the reference files of llama_reference_test.cpp (support/
// exact_reference.h): llama.cpp's 20 prompts with its 32 greedy tokens, top-2
// margins and top-5 logits at 4 steps, and the exact model's argmax,
// runner-up and gap at every one of the 640 positions.
//
// The CPU backend, like llama.cpp, quantises activations to 8 bits before a
// quantised matmul; the GPU's matvec_q multiplies f32 activations, as the
// exact model does. So on the GPU the bar is the CPU's against llama.cpp
// (llama_reference_test.cpp) and more: the GPU must part from the exact
// argmax no more often than llama.cpp (the same sign test), only where the
// exact call is close, and its logits must be at least as close to the exact
// ones. Where free-running CPU and GPU sequences part, the exact model says
// which engine held its argmax.
//
// Every test runs once per GPU matmul (the setting gpu_matmul): the f32 and
// the tensor-core matmuls must each meet that bar. They round differently,
// so each is judged on its own, never against the other here.
//
// First run (H200, 2026-11-26, kvscope-cli check and tests/data's prompts):
// CPU and GPU gave the same 32 tokens on 10 of 20 prompts; at the 8 first
// differences the exact data can judge, the GPU held the exact argmax every
// time (exact gaps 0.03 to 0.38). The tensor-core matmuls (H100, 2026-11-26):
// the exact argmax at all 640 teacher-forced positions, as the f32 ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "kernels/cuda/cuda_test_util.h"
#include "kv/block_pool.h"
#include "kvscope/engine.h"
#include "kvscope/setting_table.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "runtime/cuda_backend.h"
#include "support/exact_reference.h"
#include "support/greedy.h"
#include "support/require_data.h"
#include "support/teacher_forced.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

using test::exact_call;
using test::ExactCall;
using test::kMaxFlipGap;

constexpr float kExactTolerance = 1.0f;  // any top-5 logit vs exact, as for the CPU
constexpr double kSignTestAlpha = 0.01;  // chance of failing an engine exactly as good as llama.cpp

// The parameter's name as the setting writes it ("tensor_cores").
std::string matmul_name(GpuMatmul m) { return find_setting("gpu_matmul")->choices.at(static_cast<size_t>(m)); }

class CudaReference : public ::testing::TestWithParam<GpuMatmul> {
 protected:
  void SetUp() override {
    KVSCOPE_REQUIRE_CUDA_DEVICE();
    KVSCOPE_REQUIRE_DATA(!test::default_model_path().empty(), test::TestData::kDefaultModel);
    ref_ = test::load_test_json("smollm2_llamacpp_reference.json");
    exact_ = test::load_test_json("smollm2_exact_reference.json");
    ASSERT_EQ(ref_["prompts"].size(), exact_["prompts"].size());
  }
  nlohmann::json ref_, exact_;
};

// llama.cpp's sequences (prompt + its greedy tokens) in one prefill each on
// the GPU, every generated position's logits against the exact model's.
TEST_P(CudaReference, TeacherForcedLogitsAgainstTheExactModel) {
  auto file = GgufFile::open(test::default_model_path());
  ASSERT_TRUE(file.ok()) << file.error();
  auto weights = load_gguf_weights(std::shared_ptr<const GgufFile>(std::move(file).value()));
  ASSERT_TRUE(weights.ok()) << weights.error();
  const ModelConfig& c = (*weights)->config;
  const int32_t block_size = 16, num_blocks = 64;
  const KvPoolSpec spec{.num_layers = c.num_layers, .kv_size = c.kv_size(), .num_blocks = num_blocks,
                        .block_size = block_size, .num_swap_blocks = 0, .type = KvCacheType::F32};
  auto pool = CudaBackend::make_pool(spec, *weights);
  ASSERT_TRUE(pool.ok()) << pool.error();
  CudaBackend::Options options;  // as engine_kv_setup.cpp sets it from gpu_matmul
  options.matvec_math =
      GetParam() == GpuMatmul::TensorCores ? cuda::MatvecMath::kTensorCores : cuda::MatvecMath::kF32;
  auto backend = CudaBackend::create(*weights, std::move(pool).value(), options);
  ASSERT_TRUE(backend.ok()) << backend.error();
  BlockPool blocks(num_blocks);

  test::ExactTally tally;
  for (size_t pi = 0; pi < ref_["prompts"].size(); ++pi) {
    const auto& p = ref_["prompts"][pi];
    const auto& e = exact_["prompts"][pi];
    const test::LlamaSequence seq = test::llama_sequence(p);
    const std::vector<int32_t>& gen = seq.greedy;
    const std::vector<float> logits = test::teacher_forced_logits(**backend, blocks, block_size, seq.tokens,
                                                                  static_cast<int32_t>(seq.num_prompt) - 1);
    ASSERT_EQ(logits.size(), gen.size() * static_cast<size_t>(c.vocab_size));
    auto row_at = [&](size_t step) { return logits.data() + step * static_cast<size_t>(c.vocab_size); };
    for (size_t step = 0; step < gen.size(); ++step) {
      const auto [ours, exact] = tally.add_position(row_at(step), c.vocab_size, gen[step], e, step);
      if (ours != exact.argmax) {
        EXPECT_LE(exact.gap, kMaxFlipGap) << p["name"] << " step " << step << ": the GPU picks " << ours
                                          << ", the exact model " << exact.argmax << " by " << exact.gap;
      }
    }
    for (const auto& [step_text, top5] : p["top5"].items()) {
      for (const test::ExactTally::Logit& l :
           tally.add_top5(row_at(std::stoul(step_text)), top5, e["top5_exact"][step_text])) {
        EXPECT_LT(l.ours_vs_exact, kExactTolerance) << p["name"] << " step " << step_text << " token " << l.id;
      }
    }
  }
  const test::ExactTally& t = tally;
  const int max_alone = test::most_of_n_by_chance(t.ours_alone + t.llama_alone, kSignTestAlpha);
  EXPECT_LE(t.ours_alone, max_alone) << "positions where only the GPU parts from the exact argmax, vs "
                                     << t.llama_alone << " where only llama.cpp does";
  // f32 activations (about 22 bits of each on the tensor cores): the GPU's
  // logits must be no further from exact than llama.cpp's 8-bit ones.
  EXPECT_LE(t.sum_ours_exact, t.sum_llama_exact);
  std::cout << "[          ] GPU (" << matmul_name(GetParam()) << "): argmax differs from the exact model's at "
            << t.ours_flips << " of " << t.positions << " teacher-forced positions; only the GPU parts at "
            << t.ours_alone << ", only llama.cpp at " << t.llama_alone << " (sign test allows " << max_alone << ")\n"
            << "[          ] top-5 logits over " << t.logits << " values: mean |GPU - exact| "
            << t.sum_ours_exact / t.logits << " (max " << t.worst_ours_exact << "), mean |llama.cpp - exact| "
            << t.sum_llama_exact / t.logits << "\n";
}

// n greedy tokens of each prompt on `backend` (gpu_matmul: `matmul`); empty
// if the engine cannot be made (a test failure).
std::vector<std::vector<int32_t>> greedy_on(BackendKind backend, GpuMatmul matmul,
                                            const std::vector<std::vector<int32_t>>& prompts, int32_t n) {
  EngineConfig config;
  config.model_path = test::default_model_path();
  config.backend = backend;
  config.gpu_matmul = matmul;
  config.num_threads = 2;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.error();
  if (!engine.ok()) return {};
  return test::greedy_tokens(**engine, prompts, n);
}

// Free-running greedy on backend = cpu and backend = cuda (the checker's
// divergence report). Where they part while both still follow llama.cpp's
// sequence, the exact data applies: the GPU's token must be the exact argmax,
// or the exact call must be close.
TEST_P(CudaReference, GreedyCpuAndGpuPartOnlyAtExactNearTies) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& p : ref_["prompts"]) prompts.push_back(p["prompt_ids"].get<std::vector<int32_t>>());
  const int32_t n = static_cast<int32_t>(ref_["prompts"][0]["greedy_ids"].size());
  // The CPU's tokens do not depend on the parameter: made once, by whichever test runs first.
  static const std::vector<std::vector<int32_t>> cpu_runs = greedy_on(BackendKind::Cpu, GpuMatmul::F32, prompts, n);
  ASSERT_EQ(cpu_runs.size(), prompts.size());
  const std::vector<std::vector<int32_t>> gpu_runs = greedy_on(BackendKind::Cuda, GetParam(), prompts, n);
  ASSERT_EQ(gpu_runs.size(), prompts.size());
  int same = 0, judged = 0, gpu_exact = 0, cpu_exact = 0, unjudged = 0;
  for (size_t pi = 0; pi < prompts.size(); ++pi) {
    const std::vector<int32_t>& cpu = cpu_runs[pi];
    const std::vector<int32_t>& gpu = gpu_runs[pi];
    ASSERT_EQ(cpu.size(), gpu.size());
    const auto part = std::mismatch(cpu.begin(), cpu.end(), gpu.begin());
    if (part.first == cpu.end()) {
      ++same;
      continue;
    }
    const size_t at = static_cast<size_t>(part.first - cpu.begin());
    const auto llama = ref_["prompts"][pi]["greedy_ids"].get<std::vector<int32_t>>();
    if (!std::equal(cpu.begin(), cpu.begin() + static_cast<std::ptrdiff_t>(at), llama.begin())) {
      ++unjudged;  // both left llama.cpp's sequence earlier: the exact data says nothing here
      continue;
    }
    ++judged;
    const ExactCall exact = exact_call(exact_["prompts"][pi], at);
    gpu_exact += gpu[at] == exact.argmax;
    cpu_exact += cpu[at] == exact.argmax;
    if (gpu[at] != exact.argmax) {
      EXPECT_LE(exact.gap, kMaxFlipGap) << ref_["prompts"][pi]["name"] << " token " << at << ": the GPU picks "
                                        << gpu[at] << ", the CPU " << cpu[at] << ", the exact model " << exact.argmax
                                        << " by " << exact.gap;
    }
  }
  // Near-ties are common in this small model (the exact gap is below 0.75 at
  // a third of the positions), so many prompts part; a floor still catches
  // a GPU that parts everywhere.
  EXPECT_GE(same, 6) << "prompts with all " << n << " greedy tokens equal on CPU and GPU";
  std::cout << "[          ] CPU and GPU (" << matmul_name(GetParam()) << ") agree on all " << n << " tokens of "
            << same << " of " << prompts.size() << " prompts; at " << judged
            << " first differences the exact model can judge, the GPU holds its argmax at " << gpu_exact
            << ", the CPU at " << cpu_exact << "; " << unjudged << " part after leaving llama.cpp's sequence\n";
}

INSTANTIATE_TEST_SUITE_P(Matmul, CudaReference, ::testing::Values(GpuMatmul::F32, GpuMatmul::TensorCores),
                         [](const ::testing::TestParamInfo<GpuMatmul>& info) { return matmul_name(info.param); });

}  // namespace
}  // namespace kvscope
