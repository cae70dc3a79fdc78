// gpu_kernel_bench: the CUDA kernels of the engine's step, timed alone on
// SmolLM2-135M's shapes, as one JSON object on stdout (issue 14's bench-gpu
// table; docs/cuda.md, "Performance", reads it).
//
//   gpu_kernel_bench [--quick] > gpu_kernels.json
//
// What it measures, each the median of per-launch CUDA event times after a
// warm-up:
//   - copy_gbs: a 1 GiB device-to-device copy, bytes read + written per
//     second: the bandwidth ceiling every other figure is compared with;
//   - matvec: matvec_q on each weight shape at 1 to 512 tokens, with the
//     weights rotated among enough copies to exceed the L2 cache (a weight
//     read comes from device memory, as in a step), beside cuBLAS's bf16 GEMM
//     of the same shape (weights already bf16: the library's dense ceiling),
//     and the tensor-core kernels (MatvecMath::kTensorCores) as the engine
//     launches them (split over clusters when few blocks; the ranks used)
//     and never split;
//   - decode_attention: one decode row per sequence at 1k / 4k / 16k context,
//     through the path the engine runs (paged_prefill_attention, which now
//     splits a decode row into its partitions (paged_prefill.cuh) and
//     combines them; keys mixed_kernel_*, kept from when it walked the whole
//     context in one block, with partition_items per KV head) and the older
//     standalone split-KV kernel (paged_decode_attention, not wired: keys
//     split_kv_*), as KV bytes read per second and the fraction of copy_gbs;
//   - layer_matmuls: one layer's matmuls as the backend launches them (fused:
//     4 launches; f32 and tensor cores) and one launch per matrix (8), per
//     token count;
//   - prefill_attention: one whole prompt of 512 / 2048 rows, TFLOP/s.
// Inputs are random (never zeros); the CPU is not involved.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cuda/act_and_mul.cuh"
#include "kernels/cuda/dequantize_bf16.cuh"
#include "kernels/cuda/gemm_bf16.cuh"
#include "kernels/cuda/matvec_q.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/paged_prefill.cuh"
#include "kernels/tensor_type.h"

namespace kvscope {
namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "gpu_kernel_bench: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

template <typename T>
struct Device {
  T* p = nullptr;
  size_t n = 0;
  explicit Device(size_t count) : n(count) { check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  explicit Device(const std::vector<T>& host) : Device(host.size()) {
    check(cudaMemcpy(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() { cudaFree(p); }
};

// Median seconds of `reps` launches of fn(i), each between two events.
template <typename Fn>
double median_seconds(int reps, Fn fn) {
  for (int i = 0; i < 3; ++i) fn(i);  // warm-up
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<cudaEvent_t> ev(static_cast<size_t>(2 * reps));
  for (cudaEvent_t& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(ev[2 * i], nullptr), "cudaEventRecord");
    fn(i);
    check(cudaEventRecord(ev[2 * i + 1], nullptr), "cudaEventRecord");
  }
  check(cudaDeviceSynchronize(), "timed launches");
  std::vector<double> t(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
    t[static_cast<size_t>(i)] = ms * 1e-3;
  }
  for (cudaEvent_t e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Uniform in [-1, 1): a xorshift stream seeded from rng (the K/V pools reach
// hundreds of millions of floats, too many for mt19937's pace).
std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  uint64_t s = (static_cast<uint64_t>(rng()) << 32 | rng()) | 1;
  std::vector<float> v(n);
  for (float& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(static_cast<int64_t>(s >> 40) - (int64_t{1} << 23)) * (1.0f / (1 << 23));
  }
  return v;
}

// Random GGUF blocks with plausible f16 scales (0x2000..0x23ff: about 0.008
// to 0.016) and every quant value.
std::vector<uint8_t> random_quant_rows(TensorType type, int64_t rows, int64_t len, std::mt19937& rng) {
  const int64_t block_bytes = type == TensorType::Q8_0 ? 34 : 20;
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * (len / 32) * block_bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  for (size_t at = 0; at < bytes.size(); at += static_cast<size_t>(block_bytes)) {
    bytes[at + 1] = 0x20 | (bytes[at + 1] & 0x03);  // d's high byte: small positive
    if (type == TensorType::Q4_1) bytes[at + 3] = 0xa0 | (bytes[at + 3] & 0x03);  // m: small negative
  }
  return bytes;
}

double copy_bandwidth(int reps) {
  const size_t bytes = size_t{1} << 30;
  Device<uint8_t> a(bytes), b(bytes);
  check(cudaMemset(a.p, 1, bytes), "cudaMemset");
  const double s = median_seconds(reps, [&](int) {
    check(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, nullptr), "copy");
  });
  return 2.0 * static_cast<double>(bytes) / s / 1e9;
}

struct WeightShape {
  const char* name;
  TensorType type;
  int64_t rows, len;
};

nlohmann::ordered_json bench_matvec(const std::vector<int64_t>& token_counts, int reps, std::mt19937& rng,
                                    cublasHandle_t blas) {
  const WeightShape shapes[] = {
      {"attn_q / attn_output (576 x 576)", TensorType::Q4_1, 576, 576},
      {"attn_k / attn_v (192 x 576)", TensorType::Q4_1, 192, 576},
      {"ffn_gate / ffn_up (1536 x 576)", TensorType::Q4_1, 1536, 576},
      {"ffn_down (576 x 1536)", TensorType::Q4_1, 576, 1536},
      {"output head (49152 x 576)", TensorType::Q8_0, 49152, 576},
  };
  constexpr size_t kRotateBytes = 256u << 20;  // several times the L2 cache
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  const int64_t max_tokens = *std::max_element(token_counts.begin(), token_counts.end());
  for (const WeightShape& s : shapes) {
    const std::vector<uint8_t> w = random_quant_rows(s.type, s.rows, s.len, rng);
    const size_t copies = std::max<size_t>(1, kRotateBytes / w.size());
    Device<uint8_t> dw(w.size() * copies);
    for (size_t c = 0; c < copies; ++c) {
      check(cudaMemcpy(dw.p + c * w.size(), w.data(), w.size(), cudaMemcpyHostToDevice), "upload weights");
    }
    Device<float> dx(random_floats(static_cast<size_t>(max_tokens * s.len), rng));
    Device<float> dy(static_cast<size_t>(max_tokens * s.rows));
    // The bf16 copy of one weight set and activations, for cuBLAS.
    Device<uint16_t> w16(static_cast<size_t>(s.rows * s.len)), x16(static_cast<size_t>(max_tokens * s.len));
    check(cuda::dequantize_rows_bf16(s.type, dw.p, s.len, 0, s.rows, w16.p, nullptr), "dequantize_rows_bf16");
    check(cuda::f32_to_bf16(dx.p, max_tokens * s.len, x16.p, nullptr), "f32_to_bf16");
    for (int64_t tokens : token_counts) {
      const double sec = median_seconds(reps, [&](int i) {
        const uint8_t* wi = dw.p + static_cast<size_t>(i) % copies * w.size();
        check(cuda::matvec_q(s.type, wi, s.rows, s.len, dx.p, tokens, dy.p, nullptr), "matvec_q");
      });
      // The tensor-core kernels as the engine launches them (split over
      // clusters when the launch has few blocks, swept when it has many), and
      // plain ("unsplit": neither).
      const auto tensor = [&](cuda::TensorCoreSplit split) {
        return median_seconds(reps, [&](int i) {
          const uint8_t* wi = dw.p + static_cast<size_t>(i) % copies * w.size();
          check(cuda::matvec_q(s.type, wi, s.rows, s.len, dx.p, tokens, dy.p, nullptr, cuda::MatvecMath::kTensorCores,
                               split),
                "matvec_q (tensor cores)");
        });
      };
      const double tensor_auto = tensor(cuda::TensorCoreSplit::kAuto);
      const double tensor_unsplit = tensor(cuda::TensorCoreSplit::kNever);
      const int split_ranks = cuda::tensor_core_split_ranks(s.rows, s.len, tokens, cuda::TensorCoreSplit::kAuto);
      const int sweep_groups = cuda::tensor_core_sweep_groups(s.rows, s.len, tokens, cuda::TensorCoreSplit::kAuto);
      const double gemm = median_seconds(reps, [&](int) {
        check(cuda::gemm_bf16(blas, w16.p, s.rows, s.len, x16.p, tokens, dy.p, s.rows, nullptr), "gemm_bf16");
      });
      // The engine's gemm_prefill path: the quantised weights dequantised to
      // bf16 (one tile here: the whole matrix), the activations rounded, then the GEMM.
      const double dequant_gemm = median_seconds(reps, [&](int i) {
        const uint8_t* wi = dw.p + static_cast<size_t>(i) % copies * w.size();
        check(cuda::dequantize_rows_bf16(s.type, wi, s.len, 0, s.rows, w16.p, nullptr), "dequantize_rows_bf16");
        check(cuda::f32_to_bf16(dx.p, tokens * s.len, x16.p, nullptr), "f32_to_bf16");
        check(cuda::gemm_bf16(blas, w16.p, s.rows, s.len, x16.p, tokens, dy.p, s.rows, nullptr), "gemm_bf16");
      });
      const double flops = 2.0 * static_cast<double>(s.rows * s.len * tokens);
      out.push_back({{"shape", s.name},
                     {"type", s.type == TensorType::Q8_0 ? "q8_0" : "q4_1"},
                     {"tokens", tokens},
                     {"us", sec * 1e6},
                     {"weight_gbs", static_cast<double>(w.size()) / sec / 1e9},
                     {"tflops", flops / sec / 1e12},
                     {"tensor_cores_us", tensor_auto * 1e6},
                     {"tensor_cores_split_ranks", split_ranks},
                     {"tensor_cores_sweep_groups", sweep_groups},
                     {"tensor_cores_unsplit_us", tensor_unsplit * 1e6},
                     {"cublas_bf16_us", gemm * 1e6},
                     {"vs_cublas_bf16", gemm / sec},
                     {"dequant_bf16_gemm_us", dequant_gemm * 1e6}});
      std::fprintf(stderr,
                   "matvec %-34s %4lld tokens: %8.2f us  (tensor cores %8.2f us, %d ranks, %d groups a block; plain "
                   "%8.2f us; cuBLAS bf16 %8.2f us, dequantise + GEMM %8.2f us)\n",
                   s.name, static_cast<long long>(tokens), sec * 1e6, tensor_auto * 1e6, split_ranks, sweep_groups,
                   tensor_unsplit * 1e6, gemm * 1e6, dequant_gemm * 1e6);
    }
  }
  return out;
}

// One layer's matmuls at SmolLM2's shapes as the CUDA backend launches them
// (q/k/v in one matvec_q_multi, attn_output, gate and up with SiLU in one
// matvec_q_glu, ffn_down: 4 launches) against one launch per matrix plus
// silu_mul (8 launches), 30 layers' worth of distinct weights rotated.
nlohmann::ordered_json bench_layer_matmuls(const std::vector<int64_t>& token_counts, int reps, std::mt19937& rng) {
  constexpr int kLayers = 30;
  constexpr int64_t H = 576, KV = 192, F = 1536;
  std::vector<std::unique_ptr<Device<uint8_t>>> owned;
  auto upload = [&](const std::vector<uint8_t>& bytes) {
    owned.push_back(std::make_unique<Device<uint8_t>>(bytes));
    return owned.back()->p;
  };
  struct DeviceLayer {
    const uint8_t *q, *k, *v, *o, *gate, *up, *down;
  };
  std::vector<DeviceLayer> layers;
  for (int l = 0; l < kLayers; ++l) {
    const TensorType t = TensorType::Q4_1;
    layers.push_back({upload(random_quant_rows(t, H, H, rng)), upload(random_quant_rows(t, KV, H, rng)),
                      upload(random_quant_rows(t, KV, H, rng)), upload(random_quant_rows(t, H, H, rng)),
                      upload(random_quant_rows(t, F, H, rng)), upload(random_quant_rows(t, F, H, rng)),
                      upload(random_quant_rows(t, H, F, rng))});
  }
  const int64_t max_tokens = *std::max_element(token_counts.begin(), token_counts.end());
  Device<float> x(random_floats(static_cast<size_t>(max_tokens * F), rng));
  Device<float> qkv(static_cast<size_t>(max_tokens * (H + 2 * KV))), o(static_cast<size_t>(max_tokens * H));
  Device<float> gate(static_cast<size_t>(max_tokens * F)), up(static_cast<size_t>(max_tokens * F));
  const TensorType q4 = TensorType::Q4_1;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int64_t tokens : token_counts) {
    const double fused = median_seconds(reps, [&](int i) {
      const DeviceLayer& L = layers[static_cast<size_t>(i % kLayers)];
      const cuda::MatvecOutput outs[3] = {{L.q, H, qkv.p, H + 2 * KV}, {L.k, KV, qkv.p + H, H + 2 * KV},
                                          {L.v, KV, qkv.p + H + KV, H + 2 * KV}};
      check(cuda::matvec_q_multi(q4, outs, 3, H, x.p, tokens, nullptr), "matvec_q_multi");
      check(cuda::matvec_q(q4, L.o, H, H, x.p, tokens, o.p, nullptr), "matvec_q");
      check(cuda::matvec_q_glu(q4, L.gate, L.up, F, H, x.p, tokens, cuda::GluActivation::Silu, gate.p, F, nullptr),
            "matvec_q_glu");
      check(cuda::matvec_q(q4, L.down, H, F, gate.p, tokens, o.p, nullptr), "matvec_q");
    });
    const double fused_tensor = median_seconds(reps, [&](int i) {
      const DeviceLayer& L = layers[static_cast<size_t>(i % kLayers)];
      const cuda::MatvecOutput outs[3] = {{L.q, H, qkv.p, H + 2 * KV}, {L.k, KV, qkv.p + H, H + 2 * KV},
                                          {L.v, KV, qkv.p + H + KV, H + 2 * KV}};
      constexpr cuda::MatvecMath kTc = cuda::MatvecMath::kTensorCores;
      check(cuda::matvec_q_multi(q4, outs, 3, H, x.p, tokens, nullptr, kTc), "matvec_q_multi");
      check(cuda::matvec_q(q4, L.o, H, H, x.p, tokens, o.p, nullptr, kTc), "matvec_q");
      check(cuda::matvec_q_glu(q4, L.gate, L.up, F, H, x.p, tokens, cuda::GluActivation::Silu, gate.p, F, nullptr,
                               kTc),
            "matvec_q_glu");
      check(cuda::matvec_q(q4, L.down, H, F, gate.p, tokens, o.p, nullptr, kTc), "matvec_q");
    });
    const double separate = median_seconds(reps, [&](int i) {
      const DeviceLayer& L = layers[static_cast<size_t>(i % kLayers)];
      check(cuda::matvec_q(q4, L.q, H, H, x.p, tokens, qkv.p, nullptr), "matvec_q");
      check(cuda::matvec_q(q4, L.k, KV, H, x.p, tokens, qkv.p, nullptr), "matvec_q");
      check(cuda::matvec_q(q4, L.v, KV, H, x.p, tokens, qkv.p, nullptr), "matvec_q");
      check(cuda::matvec_q(q4, L.o, H, H, x.p, tokens, o.p, nullptr), "matvec_q");
      check(cuda::matvec_q(q4, L.gate, F, H, x.p, tokens, gate.p, nullptr), "matvec_q");
      check(cuda::matvec_q(q4, L.up, F, H, x.p, tokens, up.p, nullptr), "matvec_q");
      check(cuda::silu_mul(gate.p, up.p, tokens * F, gate.p, nullptr), "silu_mul");
      check(cuda::matvec_q(q4, L.down, H, F, gate.p, tokens, o.p, nullptr), "matvec_q");
    });
    out.push_back({{"tokens", tokens},
                   {"fused_4_launches_us", fused * 1e6},
                   {"fused_4_launches_tensor_cores_us", fused_tensor * 1e6},
                   {"separate_8_launches_us", separate * 1e6}});
    std::fprintf(stderr,
                 "layer matmuls %4lld tokens: fused (4 launches) %8.2f us, tensor cores %8.2f us, separate (8) %8.2f "
                 "us\n",
                 static_cast<long long>(tokens), fused * 1e6, fused_tensor * 1e6, separate * 1e6);
  }
  return out;
}

// SmolLM2's attention: 9 query heads, 3 KV heads, head_dim 64, f32 cache.
AttentionShape smollm2_attention() {
  AttentionShape s;
  s.num_heads = 9;
  s.num_kv_heads = 3;
  s.head_dim = 64;
  s.scale = 0.125f;
  return s;
}

// A paged f32 pool holding `contexts[s]` positions for each sequence, in
// shuffled blocks of 16, and its block tables.
struct Pool {
  static constexpr int32_t kBlockSize = 16;
  std::vector<int32_t> table_start{0}, block_ids;
  int64_t num_blocks = 0;
  Pool(const std::vector<int32_t>& contexts, std::mt19937& rng) {
    for (int32_t c : contexts) num_blocks += (c + kBlockSize - 1) / kBlockSize;
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    size_t at = 0;
    for (int32_t c : contexts) {
      for (int32_t b = 0; b < (c + kBlockSize - 1) / kBlockSize; ++b) block_ids.push_back(ids[at++]);
      table_start.push_back(static_cast<int32_t>(block_ids.size()));
    }
  }
};

nlohmann::ordered_json bench_decode_attention(const std::vector<int32_t>& contexts, const std::vector<int32_t>& batches,
                                              int reps, double copy_gbs, std::mt19937& rng) {
  const AttentionShape shape = smollm2_attention();
  const int64_t kv_row = static_cast<int64_t>(shape.num_kv_heads) * shape.head_dim;
  const int64_t q_row = static_cast<int64_t>(shape.num_heads) * shape.head_dim;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int32_t batch : batches) {
    for (int32_t context : contexts) {
      const std::vector<int32_t> ctx(static_cast<size_t>(batch), context);
      const Pool pool(ctx, rng);
      const size_t pool_floats = static_cast<size_t>(pool.num_blocks * Pool::kBlockSize * kv_row);
      Device<float> k(random_floats(pool_floats, rng)), v(random_floats(pool_floats, rng));
      Device<float> q(random_floats(static_cast<size_t>(batch * q_row), rng)), o(static_cast<size_t>(batch * q_row));
      std::vector<int32_t> positions(static_cast<size_t>(batch), context - 1), query_start(static_cast<size_t>(batch) + 1);
      std::iota(query_start.begin(), query_start.end(), 0);
      Device<int32_t> dpos(positions), dqs(query_start), dstart(pool.table_start), dids(pool.block_ids);
      const PagedKvLayer kv{k.p, v.p, Pool::kBlockSize, KvCacheType::F32};
      // The engine's path, planned as a step would be: each decode row cut into partitions, then combined.
      const PagedAttentionBatch host_batch{batch, query_start.data(), positions.data(), pool.table_start.data(),
                                           pool.block_ids.data()};
      cuda::PrefillPlan plan;
      check(cuda::plan_paged_prefill(shape, host_batch, CascadeGroups{}, &plan), "plan_paged_prefill");
      Device<int32_t> dplan(plan.data);
      const size_t plan_ws = cuda::paged_prefill_workspace_floats(plan, shape);
      Device<float> dplan_ws(plan_ws);
      const cuda::PagedPrefillBatch pb{batch, dqs.p, dpos.p, dstart.p, dids.p};
      const double mixed = median_seconds(reps, [&](int) {
        check(cuda::paged_prefill_attention(shape, kv, pb, plan, dplan.p, q.p, o.p, dplan_ws.p, plan_ws, nullptr),
              "paged_prefill_attention");
      });
      // The split-KV decode kernel.
      const size_t ws = cuda::paged_decode_workspace_floats(batch, shape.num_heads, shape.head_dim, context,
                                                            cuda::kDecodePartitionSize);
      Device<float> dws(ws);
      const cuda::PagedDecodeBatch db{batch, dpos.p, dstart.p, dids.p, context};
      const double split = median_seconds(reps, [&](int) {
        check(cuda::paged_decode_attention(shape, kv, db, q.p, o.p, cuda::kDecodePartitionSize, dws.p, ws, nullptr),
              "paged_decode_attention");
      });
      const double bytes = 2.0 * static_cast<double>(batch) * context * kv_row * sizeof(float);
      out.push_back({{"batch", batch},
                     {"context", context},
                     {"kv_bytes", bytes},
                     {"mixed_kernel_us", mixed * 1e6},
                     {"mixed_kernel_gbs", bytes / mixed / 1e9},
                     {"mixed_kernel_of_copy", bytes / mixed / 1e9 / copy_gbs},
                     {"partition_items", plan.num_partition_items},
                     {"combine_rows", plan.num_combine_rows},
                     {"split_kv_us", split * 1e6},
                     {"split_kv_gbs", bytes / split / 1e9},
                     {"split_kv_of_copy", bytes / split / 1e9 / copy_gbs}});
      std::fprintf(stderr, "decode attention batch %3d context %6d: engine %9.1f us (%6.1f GB/s), split-KV %9.1f us (%6.1f GB/s)\n",
                   batch, context, mixed * 1e6, bytes / mixed / 1e9, split * 1e6, bytes / split / 1e9);
    }
  }
  return out;
}

nlohmann::ordered_json bench_prefill_attention(const std::vector<int32_t>& lengths, int reps, std::mt19937& rng) {
  const AttentionShape shape = smollm2_attention();
  const int64_t kv_row = static_cast<int64_t>(shape.num_kv_heads) * shape.head_dim;
  const int64_t q_row = static_cast<int64_t>(shape.num_heads) * shape.head_dim;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int32_t n : lengths) {
    const Pool pool({n}, rng);
    const size_t pool_floats = static_cast<size_t>(pool.num_blocks * Pool::kBlockSize * kv_row);
    Device<float> k(random_floats(pool_floats, rng)), v(random_floats(pool_floats, rng));
    Device<float> q(random_floats(static_cast<size_t>(n * q_row), rng)), o(static_cast<size_t>(n * q_row));
    std::vector<int32_t> positions(static_cast<size_t>(n)), query_start{0, n};
    std::iota(positions.begin(), positions.end(), 0);
    Device<int32_t> dpos(positions), dqs(query_start), dstart(pool.table_start), dids(pool.block_ids);
    const PagedAttentionBatch host_batch{1, query_start.data(), positions.data(), pool.table_start.data(),
                                         pool.block_ids.data()};
    cuda::PrefillPlan plan;
    check(cuda::plan_paged_prefill(shape, host_batch, CascadeGroups{}, &plan), "plan_paged_prefill");
    Device<int32_t> dplan(plan.data);
    const size_t plan_ws = cuda::paged_prefill_workspace_floats(plan, shape);  // 0 unless n == 1
    Device<float> dplan_ws(plan_ws);
    const PagedKvLayer kv{k.p, v.p, Pool::kBlockSize, KvCacheType::F32};
    const cuda::PagedPrefillBatch pb{1, dqs.p, dpos.p, dstart.p, dids.p};
    const double sec = median_seconds(reps, [&](int) {
      check(cuda::paged_prefill_attention(shape, kv, pb, plan, dplan.p, q.p, o.p, dplan_ws.p, plan_ws, nullptr),
            "paged_prefill_attention");
    });
    // q.k and p.v: 2 flops per multiply-add, head_dim each, per (row, head, key).
    const double pairs = static_cast<double>(n) * (n + 1) / 2.0;
    const double flops = 4.0 * pairs * shape.num_heads * shape.head_dim;
    out.push_back({{"rows", n}, {"us", sec * 1e6}, {"tflops", flops / sec / 1e12}});
    std::fprintf(stderr, "prefill attention %5d rows: %9.1f us, %.2f TFLOP/s\n", n, sec * 1e6, flops / sec / 1e12);
  }
  return out;
}

}  // namespace
}  // namespace kvscope

int main(int argc, char** argv) {
  using namespace kvscope;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "gpu_kernel_bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gpu_kernel_bench: cublasCreate failed\n");
    return 1;
  }
  const int reps = quick ? 5 : 30;
  std::mt19937 rng(2026);
  nlohmann::ordered_json j;
  j["bench"] = "gpu_kernel_bench";
  j["device"] = {{"name", prop.name},
                 {"multiprocessors", prop.multiProcessorCount},
                 {"memory_mib", prop.totalGlobalMem >> 20},
                 {"l2_mib", prop.l2CacheSize >> 20},
                 {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)}};
  j["method"] = "median of per-launch CUDA event times after 3 warm-up launches; random inputs";
  j["reps"] = reps;
  const double copy_gbs = copy_bandwidth(reps);
  j["copy_gbs"] = copy_gbs;
  std::fprintf(stderr, "device-to-device copy: %.0f GB/s (read + write)\n", copy_gbs);
  const std::vector<int64_t> tokens = quick ? std::vector<int64_t>{1, 64} : std::vector<int64_t>{1, 8, 16, 64, 128, 512};
  j["matvec"] = bench_matvec(tokens, reps, rng, blas);
  j["layer_matmuls"] = bench_layer_matmuls(tokens, reps, rng);
  const std::vector<int32_t> contexts = quick ? std::vector<int32_t>{1024} : std::vector<int32_t>{1024, 4096, 16384};
  const std::vector<int32_t> batches = quick ? std::vector<int32_t>{1} : std::vector<int32_t>{1, 16, 64};
  j["decode_attention"] = bench_decode_attention(contexts, batches, reps, copy_gbs, rng);
  j["prefill_attention"] = bench_prefill_attention(quick ? std::vector<int32_t>{512} : std::vector<int32_t>{512, 2048},
                                                   reps, rng);
  cublasDestroy(blas);
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}
