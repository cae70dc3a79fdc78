// The CUDA backend (runtime/cuda_backend.h), label gpu, built only with
// KVSCOPE_CUDA=ON, on tiny random Llama models with Q4_1 matrices (the
// default model's type; the tiny spec writes every 2-D weight, the tied
// embedding included, as Q4_1):
//  - which models it refuses, naming what is missing (no device needed);
//  - the device KV pool's block copy, swap out / in and key re-rotation move
//    the bytes the host pool would (re-rotation bitwise equal to the host's);
//  - greedy requests on backend = cpu and backend = cuda: logits within a
//    stated normalised error, tokens equal up to a near-tie;
//  - on the CUDA backend, block size 16 vs 5, concurrency 1 vs 4 and
//    cascade off vs on give bitwise-identical logits and tokens;
//  - gpu_matmul = tensor_cores keeps that invariance, its logits close to
//    the f32 matmuls';
//  - the optional GEMM prefill (bf16 tiles + cuBLAS) agrees with matvec_q;
//  - device sampling (StepBatch::draws): the drawn tokens are the host
//    rule's (runtime/token_draw.h) on the same logits, the rows not drawn
//    come back unchanged, and an engine with gpu_sampling on emits the
//    tokens it emits with it off;
//  - untimed attention (gpu_attention_timing off) and fused norms
//    (gpu_norm_fusion on, or auto's choice per step) give the same bits (the step times themselves:
//    cuda_step_timing_test.cpp).
// Without a device the device tests skip with the CUDA error, or fail with
// KVSCOPE_REQUIRE_GPU=1 (scripts/gpu_check.sh), as tests/kernels/cuda/ do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kv/host_kv_pool.h"
#include "kvscope/engine.h"
#include "kvscope/invariance_check.h"
#include "model/model_loader.h"
#include "runtime/backend_select.h"
#include "runtime/cuda_backend.h"
#include "runtime/token_draw.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

test::TinyModelSpec q4_spec() {
  test::TinyModelSpec spec;
  spec.matrix_type = TensorType::Q4_1;
  spec.layers = 3;
  return spec;
}

std::shared_ptr<const ModelWeights> load_tiny(const test::TinyModelSpec& spec, const std::string& name) {
  const std::string path = test::tiny_model_temp_path("cuda_backend_" + name);
  EXPECT_TRUE(test::write_tiny_gguf(spec, path).ok());
  auto loaded = load_model(path);
  EXPECT_TRUE(loaded.ok()) << loaded.error();
  return loaded.ok() ? loaded->weights : nullptr;
}

const std::string& q4_path() {
  static const std::string path = [] {
    const std::string p = test::tiny_model_temp_path("cuda_backend");
    EXPECT_TRUE(test::write_tiny_gguf(q4_spec(), p).ok());
    return p;
  }();
  return path;
}

TEST(CudaBackendSupport, RefusesWhatItCannotRunNamingIt) {
  auto q4 = load_tiny(q4_spec(), "q4");
  ASSERT_TRUE(q4);
  EXPECT_EQ(cuda_unsupported(*q4, EngineConfig{}), "");

  test::TinyModelSpec f32 = q4_spec();
  f32.matrix_type = TensorType::F32;
  auto f32_weights = load_tiny(f32, "f32");
  ASSERT_TRUE(f32_weights);
  EXPECT_EQ(cuda_unsupported(*f32_weights, EngineConfig{}).rfind("output (the LM head) is F32; ", 0), 0u);
  f32.tied = false;
  f32.matrix_type = TensorType::F16;
  auto f16_weights = load_tiny(f32, "f16");
  ASSERT_TRUE(f16_weights);
  EXPECT_NE(cuda_unsupported(*f16_weights, EngineConfig{}).find("is F16"), std::string::npos);

  test::TinyModelSpec gemma = q4_spec();
  gemma.arch = Architecture::Gemma3;
  auto gemma_weights = load_tiny(gemma, "gemma3");
  ASSERT_TRUE(gemma_weights);
  EXPECT_EQ(cuda_unsupported(*gemma_weights, EngineConfig{}).rfind("Gemma 2 / Gemma 3 models", 0), 0u);

  test::TinyModelSpec qwen = q4_spec();
  qwen.qkv_bias = true;
  auto qwen_weights = load_tiny(qwen, "qwen2");
  ASSERT_TRUE(qwen_weights);
  EXPECT_EQ(cuda_unsupported(*qwen_weights, EngineConfig{}), "Q/K/V biases (Qwen2) are not implemented on the GPU");

  EngineConfig tp;
  tp.tp = 2;
  EXPECT_EQ(cuda_unsupported(*q4, tp), "tensor parallelism (tp = 2) is CPU-only");
  EngineConfig draft;
  draft.spec = SpecMethod::Draft;
  EXPECT_NE(cuda_unsupported(*q4, draft).find("spec = draft"), std::string::npos);
}

// A CUDA choice settled against a model the backend cannot run: auto falls
// back to the CPU saying why, cuda fails naming it; a model it runs keeps
// CUDA. (Engine::create and model-info settle this way; no device needed.)
TEST(CudaBackendSupport, SettlingTheChoiceAgainstTheModel) {
  test::TinyModelSpec gemma = q4_spec();
  gemma.arch = Architecture::Gemma3;
  auto gemma_weights = load_tiny(gemma, "settle_gemma3");
  auto q4 = load_tiny(q4_spec(), "settle_q4");
  ASSERT_TRUE(gemma_weights && q4);
  const BackendChoice cuda{BackendKind::Cuda, "CUDA: a device"};
  EngineConfig config;
  config.backend = BackendKind::Auto;
  auto settled = settle_backend(cuda, *gemma_weights, config);
  ASSERT_TRUE(settled.ok()) << settled.error();
  EXPECT_EQ(settled->kind, BackendKind::Cpu);
  EXPECT_EQ(settled->reason.rfind("CPU: the CUDA backend cannot run this model: Gemma 2 / Gemma 3", 0), 0u)
      << settled->reason;
  config.backend = BackendKind::Cuda;
  settled = settle_backend(cuda, *gemma_weights, config);
  ASSERT_FALSE(settled.ok());
  EXPECT_NE(settled.error().find("backend = cuda cannot run this model"), std::string::npos) << settled.error();
  settled = settle_backend(cuda, *q4, config);
  ASSERT_TRUE(settled.ok()) << settled.error();
  EXPECT_EQ(settled->kind, BackendKind::Cuda);
  // The CPU choice is never changed.
  settled = settle_backend(BackendChoice{BackendKind::Cpu, "CPU: backend = cpu"}, *gemma_weights, config);
  ASSERT_TRUE(settled.ok());
  EXPECT_EQ(settled->reason, "CPU: backend = cpu");
}

// ---- the device KV pool ------------------------------------------------------------

TEST(CudaBackend, KvPoolBlockOperationsMoveTheHostPoolsBytes) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  auto weights = load_tiny(q4_spec(), "pool");
  ASSERT_TRUE(weights);
  const ModelConfig& c = weights->config;
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16}) {
    const KvPoolSpec spec{.num_layers = c.num_layers, .kv_size = c.kv_size(), .num_blocks = 6, .block_size = 5,
                          .num_swap_blocks = 3, .type = type};
    auto device = DeviceKvPool::create(spec, weights);
    ASSERT_TRUE(device.ok()) << device.error();
    HostKvPool host(spec, weights);
    // The same random rows in both, stored through the host pool (f16: as converted).
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> k(static_cast<size_t>(c.kv_size())), v(k.size());
    for (int32_t l = 0; l < c.num_layers; ++l) {
      for (int64_t slot = 0; slot < 6 * 5; ++slot) {
        for (size_t i = 0; i < k.size(); ++i) k[i] = normal(rng), v[i] = normal(rng);
        host.storage().store(l, slot, k.data(), v.data());
      }
    }
    const size_t layer_bytes = host.storage().row_bytes() * 30;
    for (int32_t l = 0; l < c.num_layers; ++l) {
      CUDA_OK(cudaMemcpy((*device)->k_layer(l), host.storage().k(l, 0), layer_bytes, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemcpy((*device)->v_layer(l), host.storage().v(l, 0), layer_bytes, cudaMemcpyHostToDevice));
    }
    for (KvBlockStore* store : {static_cast<KvBlockStore*>(device->get()), static_cast<KvBlockStore*>(&host)}) {
      store->copy_block(1, 4);
      store->swap_out_block(2, 1);
      store->swap_out_block(0, 2);
      store->swap_in_block(1, 0);  // block 0 <- what block 2 held
      store->swap_in_block(2, 5);  // block 5 <- what block 0 held
      store->rerotate_keys(3, 4, -9);
    }
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint8_t> got(layer_bytes);
    for (int32_t l = 0; l < c.num_layers; ++l) {
      CUDA_OK(cudaMemcpy(got.data(), (*device)->k_layer(l), layer_bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(got.data(), host.storage().k(l, 0), layer_bytes), 0) << "K of layer " << l;
      CUDA_OK(cudaMemcpy(got.data(), (*device)->v_layer(l), layer_bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(got.data(), host.storage().v(l, 0), layer_bytes), 0) << "V of layer " << l;
    }
    EXPECT_EQ((*device)->pool_bytes(), host.pool_bytes());
    EXPECT_EQ((*device)->swap_bytes(), host.swap_bytes());
  }
}

// ---- CPU vs CUDA -------------------------------------------------------------------

struct GreedyRun {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // [tokens][vocab]
};

std::vector<GreedyRun> run_greedy(BackendKind backend, const std::vector<std::vector<int32_t>>& prompts,
                                  int32_t max_tokens, GpuMatmul matmul = GpuMatmul::F32) {
  EngineConfig config;
  config.model_path = q4_path();
  config.backend = backend;
  config.gpu_matmul = matmul;
  config.num_threads = 2;
  config.num_blocks = 128;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.error();
  if (!engine.ok()) return {};
  EXPECT_EQ((*engine)->model_info().backend, backend == BackendKind::Cuda ? "cuda" : "cpu");
  std::vector<GreedyRun> runs(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest r;
    r.prompt_tokens = prompts[i];
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = max_tokens;
    GreedyRun& run = runs[i];
    r.on_logits = [&run](int32_t, int32_t, const float* l, int32_t vocab) { run.logits.emplace_back(l, l + vocab); };
    r.on_event = [&run](const TokenEvent& e) {
      if (e.token >= 0) run.tokens.push_back(e.token);
    };
    EXPECT_TRUE((*engine)->submit(std::move(r)).ok());
  }
  (*engine)->run_until_idle();
  return runs;
}

std::vector<std::vector<int32_t>> some_prompts(int32_t vocab) {
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t n : {1, 7, 40, 97}) {
    std::vector<int32_t>& p = prompts.emplace_back();
    for (int32_t i = 0; i < n; ++i) p.push_back((i * 31 + n * 17 + 3) % vocab);
  }
  return prompts;
}

// The CPU multiplies with its own repacked kernels (activations quantised
// to 8 bits per 32-element block for the quantised matrices, as llama.cpp
// does) and the GPU in f32 through matvec_q: the same function, rounded
// differently, and the CPU's activation rounding dominates. The first GPU
// run (H200, 2026-11-26) saw errors of 0.020 to 0.032 over these 48 rows of
// logits, so the first estimate of 2e-2 was too tight; 5e-2 leaves room for
// other prompts while a wrong kernel (errors near 1) still fails. On the
// default model the GPU's tokens are the closer ones to the f64 reference
// (docs/cuda.md, "What ran on a GPU").
constexpr double kCpuCudaTolerance = 5e-2;

TEST(CudaBackend, GreedyOnTheGpuMatchesTheCpu) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  const auto prompts = some_prompts(300);
  const auto cpu = run_greedy(BackendKind::Cpu, prompts, 12);
  const auto gpu = run_greedy(BackendKind::Cuda, prompts, 12);
  ASSERT_EQ(cpu.size(), prompts.size());
  ASSERT_EQ(gpu.size(), prompts.size());
  double worst = 0.0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    ASSERT_EQ(cpu[p].tokens.size(), 12u);
    ASSERT_EQ(gpu[p].tokens.size(), 12u);
    for (size_t i = 0; i < 12; ++i) {
      const std::vector<float>& a = cpu[p].logits[i];
      const std::vector<float>& b = gpu[p].logits[i];
      double diff = 0.0, norm = 0.0, max_abs = 0.0;
      for (size_t j = 0; j < a.size(); ++j) {
        diff += (a[j] - b[j]) * double(a[j] - b[j]);
        norm += a[j] * double(a[j]);
        max_abs = std::max(max_abs, double(std::fabs(a[j] - b[j])));
      }
      const double error = std::sqrt(diff / norm);  // NaN fails the comparison below
      worst = std::max(worst, error);
      EXPECT_LE(error, kCpuCudaTolerance) << "prompt " << p << ", token " << i;
      if (cpu[p].tokens[i] != gpu[p].tokens[i]) {
        // Allowed only at a near-tie: the CPU's two candidates within the logits' difference.
        const float gap = a[static_cast<size_t>(cpu[p].tokens[i])] - a[static_cast<size_t>(gpu[p].tokens[i])];
        EXPECT_LE(gap, 2 * max_abs) << "prompt " << p << " diverges at token " << i << " without a near-tie";
        break;  // the sequences differ from here on: nothing more to compare
      }
    }
  }
  std::cout << "largest normalised logits error CPU vs CUDA: " << worst << " (tolerance " << kCpuCudaTolerance
            << ")\n";
}

// ---- invariance on the GPU ---------------------------------------------------------

void expect_bitwise(const std::string& a_spec, const std::string& b_spec, bool want_cascade = false,
                    bool want_graphs = false) {
  EngineConfig base;
  base.model_path = q4_path();
  base.num_threads = 2;
  base.num_blocks = 256;
  auto a = parse_invariance_side(a_spec, base);
  auto b = parse_invariance_side(b_spec, base);
  ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error() : a.error());
  // Distinct first bytes: no prompt reuses another's prefix blocks; the
  // longest spans several attention tiles (what cascade groups share).
  const std::vector<std::string> prompts = {
      "a", "Bonjour, comment allez-vous aujourd'hui ?",
      "Paged attention keeps the KV cache in fixed-size blocks, so sequences of any length share one pool without "
      "fragmentation; the block table maps positions to blocks."};
  InvarianceOptions options;
  options.max_tokens = 20;
  auto report = check_invariance(*a, *b, prompts, options);
  ASSERT_TRUE(report.ok()) << report.error();
  for (const PromptVerdict& v : report->prompts) {
    EXPECT_TRUE(v.identical && v.logits_identical)
        << a_spec << " vs " << b_spec << ": \"" << v.prompt << "\" first differs at token " << v.first_divergence
        << ", max logit difference " << v.max_logit_diff;
  }
  EXPECT_GT(report->stats_b.max_batch_seqs, 1) << "the companions never shared a step";
  if (want_cascade) {
    EXPECT_GT(report->stats_b.num_cascade_steps, 0) << "no cascade pass ran";
  }
  if (want_graphs) {
    EXPECT_EQ(report->stats_a.num_graph_steps, 0) << "side a was meant to launch kernel by kernel";
    // 20 tokens per prompt: most decode steps repeat the previous step's shape.
    EXPECT_GT(report->stats_b.num_graph_steps, report->stats_b.num_steps / 2) << "few steps replayed a graph";
  }
}

// A replayed graph is the same launches with the same arguments: the same
// bits as launching them one by one, for lone and batched decode steps.
TEST(CudaBackend, GraphReplaysAreBitwiseTheLaunches) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  expect_bitwise("backend=cuda,gpu_graphs=false,concurrency=2", "backend=cuda,gpu_graphs=true,concurrency=2", false,
                 true);
  expect_bitwise("backend=cuda,gpu_graphs=false,concurrency=5", "backend=cuda,gpu_graphs=true,concurrency=5", false,
                 true);
}

// Overlapped launches (gpu_overlap_launches) run the same kernels in the same
// order, each waiting for its predecessor's results: the same bits as plain
// launches, with graphs and without, under either matmul math.
TEST(CudaBackend, OverlappedLaunchesAreBitwiseThePlainOnes) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  expect_bitwise("backend=cuda,gpu_overlap_launches=false,concurrency=3",
                 "backend=cuda,gpu_overlap_launches=true,concurrency=3");
  expect_bitwise("backend=cuda,gpu_overlap_launches=false,gpu_graphs=false,gpu_matmul=tensor_cores,concurrency=3",
                 "backend=cuda,gpu_overlap_launches=true,gpu_graphs=false,gpu_matmul=tensor_cores,concurrency=3");
  expect_bitwise("backend=cuda,gpu_overlap_launches=false,gpu_matmul=tensor_cores,concurrency=2",
                 "backend=cuda,gpu_overlap_launches=true,gpu_matmul=tensor_cores,concurrency=2");
}

// The events that time attention (gpu_attention_timing) only sit between the
// kernels: the same bits without them, eager and replayed.
TEST(CudaBackend, UntimedAttentionIsBitwiseTheTimed) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  expect_bitwise("backend=cuda,gpu_attention_timing=true,concurrency=3",
                 "backend=cuda,gpu_attention_timing=false,concurrency=3");
  expect_bitwise("backend=cuda,gpu_attention_timing=true,gpu_graphs=false,concurrency=2",
                 "backend=cuda,gpu_attention_timing=false,gpu_graphs=false,concurrency=2");
}

// Fused norms (gpu_norm_fusion) share the norm's arithmetic with the rms_norm
// launches they replace: the same bits, eager and replayed, under either math,
// in GEMM-prefill steps (separate norms), and under auto on the tensor cores,
// which fuses only steps of at most 16 rows, switching within one run.
TEST(CudaBackend, FusedNormsAreBitwiseTheSeparateOnes) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  expect_bitwise("backend=cuda,gpu_norm_fusion=off,concurrency=3", "backend=cuda,gpu_norm_fusion=on,concurrency=3");
  expect_bitwise("backend=cuda,gpu_norm_fusion=off,gpu_graphs=false,gpu_matmul=tensor_cores,concurrency=2",
                 "backend=cuda,gpu_norm_fusion=on,gpu_graphs=false,gpu_matmul=tensor_cores,concurrency=2");
  expect_bitwise("backend=cuda,gpu_norm_fusion=off,gpu_matmul=tensor_cores,concurrency=4",
                 "backend=cuda,gpu_norm_fusion=on,gpu_matmul=tensor_cores,concurrency=4");
  expect_bitwise("backend=cuda,gpu_norm_fusion=off,gpu_prefill_gemm=true,concurrency=2",
                 "backend=cuda,gpu_norm_fusion=on,gpu_prefill_gemm=true,concurrency=2");
  expect_bitwise("backend=cuda,gpu_norm_fusion=off,gpu_matmul=tensor_cores,concurrency=16",
                 "backend=cuda,gpu_norm_fusion=auto,gpu_matmul=tensor_cores,concurrency=16");
}

TEST(CudaBackend, BlockSizeAndConcurrencyAreBitwiseInvariant) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  expect_bitwise("backend=cuda,block_size=16", "backend=cuda,block_size=5,concurrency=4");
}

// The tensor-core matmuls (gpu_matmul = tensor_cores): the same invariance
// as the f32 ones, and logits close to theirs. Both carry about 22 bits of
// each activation and accumulate in f32, so they differ by rounding order
// only (an error near 1e-6 expected; 2e-6 on an H100); a wrong fragment
// layout would be near 1.
TEST(CudaBackend, TensorCoreMatmulsKeepTheInvarianceAndTheLogits) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  const auto prompts = some_prompts(300);
  const auto f32 = run_greedy(BackendKind::Cuda, prompts, 8);
  const auto tensor = run_greedy(BackendKind::Cuda, prompts, 8, GpuMatmul::TensorCores);
  expect_bitwise("backend=cuda,gpu_matmul=tensor_cores,block_size=16",
                 "backend=cuda,gpu_matmul=tensor_cores,block_size=5,concurrency=4");
  ASSERT_EQ(f32.size(), prompts.size());
  ASSERT_EQ(tensor.size(), prompts.size());
  double worst = 0.0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    ASSERT_EQ(f32[p].logits.size(), tensor[p].logits.size());
    for (size_t i = 0; i < f32[p].logits.size(); ++i) {
      const double error = cuda_test::normalised_error(tensor[p].logits[i], f32[p].logits[i]);
      worst = std::max(worst, error);
      EXPECT_LE(error, 1e-3) << "prompt " << p << ", token " << i;
      if (f32[p].tokens[i] != tensor[p].tokens[i]) break;  // the sequences part: nothing more to compare
    }
  }
  // Not bitwise f32's: the setting reached the backend (an H100 showed 2e-6).
  EXPECT_GT(worst, 0.0) << "gpu_matmul = tensor_cores gave the f32 matmuls' bits";
  std::cout << "largest normalised logits error f32 vs tensor-core matmuls: " << worst << "\n";
}

TEST(CudaBackend, CascadeIsBitwiseFlat) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  expect_bitwise("backend=cuda,cascade=off,concurrency=4", "backend=cuda,cascade=on,concurrency=4", true);
}

// ---- GEMM prefill ------------------------------------------------------------------

// Logits of a 57-token prefill (every row) and 3 decode steps through `backend`.
std::vector<float> prefill_then_decode(CudaBackend& backend, int32_t vocab) {
  constexpr int32_t kBlock = 16;
  const std::vector<int32_t> table = {2, 0, 5, 1, 3};
  auto slot = [&](int32_t pos) { return int64_t{table[static_cast<size_t>(pos / kBlock)]} * kBlock + pos % kBlock; };
  std::vector<int32_t> tokens(57);
  std::vector<int64_t> slots(57);
  for (int32_t i = 0; i < 57; ++i) {
    tokens[static_cast<size_t>(i)] = (i * 37 + 5) % vocab;
    slots[static_cast<size_t>(i)] = slot(i);
  }
  std::vector<float> all, logits;
  StepBatch batch;
  batch.add_sequence(tokens.data(), 57, 0, slots.data(), table, 57);
  EXPECT_TRUE(backend.forward(batch, logits));
  all.insert(all.end(), logits.begin(), logits.end());
  for (int32_t pos = 57; pos < 60; ++pos) {
    const int32_t token = (pos * 13) % vocab;
    const int64_t s = slot(pos);
    batch.clear();
    batch.add_sequence(&token, 1, pos, &s, table, 1);
    EXPECT_TRUE(backend.forward(batch, logits));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST(CudaBackend, GemmPrefillAgreesWithMatvec) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  auto weights = load_tiny(q4_spec(), "gemm");
  ASSERT_TRUE(weights);
  const ModelConfig& c = weights->config;
  const KvPoolSpec spec{.num_layers = c.num_layers, .kv_size = c.kv_size(), .num_blocks = 6, .block_size = 16};
  std::vector<float> results[2];
  for (bool gemm : {false, true}) {
    auto pool = CudaBackend::make_pool(spec, weights);
    ASSERT_TRUE(pool.ok()) << pool.error();
    auto backend = CudaBackend::create(weights, std::move(pool).value(), {.gemm_prefill = gemm, .gemm_min_rows = 4});
    ASSERT_TRUE(backend.ok()) << backend.error();
    results[gemm] = prefill_then_decode(**backend, c.vocab_size);
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < results[0].size(); ++i) {
    diff += (results[0][i] - results[1][i]) * double(results[0][i] - results[1][i]);
    norm += results[0][i] * double(results[0][i]);
  }
  // bf16 keeps 8 significant bits of weights and activations: about 4e-3
  // relative per product, less over a dot product's many terms.
  const double error = std::sqrt(diff / norm);
  EXPECT_LE(error, 2e-2);
  std::cout << "normalised logits error GEMM prefill vs matvec: " << error << "\n";
}

// ---- Sampling on the device ------------------------------------------------------

// A draw at u can differ from the host's only where u lands within rounding
// of a boundary of the cumulative distribution (the device sums in a tree):
// true when moving u by 1e-6 relative on the host gives the device's token.
bool near_tie(const StepBatch& batch, const float* logits, int32_t vocab, size_t d, int32_t device_token) {
  for (double scale : {1.0 - 1e-6, 1.0 + 1e-6}) {
    StepBatch moved = batch;
    moved.draws[d].uniform = std::min(batch.draws[d].uniform * scale, std::nextafter(1.0, 0.0));
    std::vector<int32_t> drawn;
    draw_tokens_on_host(moved, logits, vocab, drawn);
    if (drawn[d] == device_token) return true;
  }
  return false;
}

TEST(CudaBackend, DeviceDrawsAreTheHostRuleOnTheSameLogits) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  auto weights = load_tiny(q4_spec(), "draws");
  ASSERT_TRUE(weights);
  const ModelConfig& c = weights->config;
  const int32_t V = c.vocab_size;
  const KvPoolSpec spec{.num_layers = c.num_layers, .kv_size = c.kv_size(), .num_blocks = 12, .block_size = 16};
  auto pool = CudaBackend::make_pool(spec, weights);
  ASSERT_TRUE(pool.ok()) << pool.error();
  auto made = CudaBackend::create(weights, std::move(pool).value(), {});
  ASSERT_TRUE(made.ok()) << made.error();
  CudaBackend& backend = **made;
  // Five sequences of 1..29 tokens, each in its own blocks, every one wanting logits.
  StepBatch plain;
  plain.clear();
  std::vector<std::vector<int32_t>> tables;
  for (int32_t s = 0; s < 5; ++s) {
    const int32_t n = 1 + 7 * s;
    tables.push_back({2 * s, 2 * s + 1});
    std::vector<int32_t> tokens;
    std::vector<int64_t> slots;
    for (int32_t i = 0; i < n; ++i) {
      tokens.push_back((i * 29 + s * 11 + 1) % V);
      slots.push_back(int64_t{tables.back()[static_cast<size_t>(i / 16)]} * 16 + i % 16);
    }
    plain.add_sequence(tokens.data(), n, 0, slots.data(), tables.back(), 1);
  }
  std::vector<float> logits, drawn_logits;
  ASSERT_TRUE(backend.forward(plain, logits));
  EXPECT_TRUE(backend.drawn_tokens().empty());
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int32_t num_draws = 0, num_near_ties = 0;
  for (int32_t round = 0; round < 24; ++round) {
    StepBatch batch = plain;
    for (int32_t row : {0, 1, 3, 4}) {  // row 2 stays logits
      SamplingParams p;
      p.temperature = round % 6 == 0 ? 0.0f : 0.5f + 0.1f * static_cast<float>(round % 7);
      p.top_k = round % 3 == 0 ? 0 : 3 + round;
      p.top_p = round % 2 == 0 ? 1.0f : 0.9f;
      p.min_p = round % 4 == 1 ? 0.05f : 0.0f;
      p.repetition_penalty = row % 2 == 0 ? 1.3f : 1.0f;
      p.presence_penalty = round % 3 == 1 ? 0.4f : 0.0f;
      p.frequency_penalty = row == 4 ? 0.25f : 0.0f;
      std::vector<int32_t> ids;
      std::vector<float> counts;
      if (penalties_on(p)) {
        for (int32_t k = 0; k < 9; ++k) {
          ids.push_back((row * 41 + k * 17 + round) % V);  // distinct: 17 k mod V for k < 9
          counts.push_back(static_cast<float>(1 + k % 3));
        }
      }
      batch.add_draw(make_draw(row, p, uniform(rng)), ids, counts);
    }
    ASSERT_TRUE(backend.forward(batch, drawn_logits));
    const std::vector<int32_t> device = backend.drawn_tokens();
    ASSERT_EQ(device.size(), batch.draws.size());
    // The row not drawn comes back as the plain forward's, bit for bit.
    EXPECT_EQ(std::memcmp(drawn_logits.data() + 2 * V, logits.data() + 2 * V, V * sizeof(float)), 0);
    std::vector<int32_t> host;
    draw_tokens_on_host(batch, logits.data(), V, host);
    for (size_t d = 0; d < device.size(); ++d) {
      ++num_draws;
      if (device[d] == host[d]) continue;
      EXPECT_TRUE(near_tie(batch, logits.data(), V, d, device[d]))
          << "round " << round << " draw " << d << ": device " << device[d] << ", host " << host[d];
      ++num_near_ties;
    }
  }
  EXPECT_LE(num_near_ties * 50, num_draws) << num_near_ties << " near-ties in " << num_draws << " draws";
  std::cout << "device draws: " << num_draws << ", near-ties: " << num_near_ties << "\n";
}

TEST(CudaBackend, GpuSamplingKeepsTheEnginesTokens) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  auto run = [](bool gpu_sampling, int64_t* num_draws) {
    EngineConfig config;
    config.model_path = q4_path();
    config.backend = BackendKind::Cuda;
    config.num_blocks = 128;
    config.gpu_sampling = gpu_sampling;
    auto engine = Engine::create(config);
    EXPECT_TRUE(engine.ok()) << engine.error();
    std::vector<std::vector<int32_t>> tokens(8);
    if (!engine.ok()) return tokens;
    const auto prompts = some_prompts(300);
    for (size_t i = 0; i < tokens.size(); ++i) {
      GenerationRequest r;
      r.prompt_tokens = prompts[i % prompts.size()];
      r.sampling.seed = 77 + i;
      r.sampling.temperature = i == 0 ? 0.0f : 0.9f;
      r.sampling.top_k = i % 2 == 0 ? 0 : 20;
      r.sampling.repetition_penalty = i % 3 == 0 ? 1.0f : 1.25f;
      r.sampling.frequency_penalty = i % 4 == 1 ? 0.3f : 0.0f;
      r.sampling.ignore_eos = true;
      r.sampling.max_tokens = 16;
      r.on_event = [&tokens, i](const TokenEvent& e) {
        if (e.token >= 0) tokens[i].push_back(e.token);
      };
      EXPECT_TRUE((*engine)->submit(std::move(r)).ok());
    }
    while ((*engine)->has_work()) {
      (*engine)->step();
      *num_draws += (*engine)->last_step_stats().num_backend_draws;
    }
    return tokens;
  };
  int64_t draws_off = 0, draws_on = 0;
  const auto off = run(false, &draws_off);
  const auto on = run(true, &draws_on);
  EXPECT_EQ(draws_off, 0);
  EXPECT_GT(draws_on, 8 * 10);
  // The same tokens, but for a draw at a near-tie (under 1% of draws in
  // sample_tokens_test), after which that request's stream may go its own way.
  int32_t num_different = 0;
  for (size_t i = 0; i < off.size(); ++i) {
    EXPECT_EQ(off[i].size(), 16u);
    num_different += on[i] != off[i];
  }
  EXPECT_LE(num_different, 1);
}

}  // namespace
}  // namespace kvscope
