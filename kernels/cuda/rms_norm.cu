// RMSNorm kernels; see rms_norm.cuh. A row is read once for the sum of
// squares and once more (from L1/L2, rows are small: 576 to 8192 floats) for
// the scaled write; at decode sizes each launch is a few memory latencies.
#include "kernels/cuda/rms_norm.cuh"

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row t. When `delta` is non-null, x is the residual stream and
// is updated in place first: x[t][i] += delta[t][i]. Each thread touches the
// same indices i in both passes, which is what lets out alias x or delta.
// kVec = 4: float4 loads and stores (n a multiple of 4, every row pointer
// 16-byte aligned; the launcher checks), so a SmolLM2 row of 576 is one load
// per thread and each pass costs one memory latency; kVec = 1 otherwise.
template <int kVec>
__global__ void rms_norm_kernel(float* x, const float* delta, const float* weight, int64_t n, float eps,
                                float* out) {
  await_previous_kernel();
  using Vec = std::conditional_t<kVec == 4, float4, float>;
  __shared__ float scratch[32];
  const int64_t t = blockIdx.x;
  Vec* row = reinterpret_cast<Vec*>(x + t * n);  // x[t][i] = x + t * n + i
  const Vec* drow = delta ? reinterpret_cast<const Vec*>(delta + t * n) : nullptr;
  Vec* orow = reinterpret_cast<Vec*>(out + t * n);
  const Vec* w = reinterpret_cast<const Vec*>(weight);
  const int64_t vecs = n / kVec;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < vecs; i += blockDim.x) {
    Vec v = row[i];
    if (drow) {
      const Vec dv = drow[i];
      if constexpr (kVec == 4) {
        v = make_float4(__fadd_rn(v.x, dv.x), __fadd_rn(v.y, dv.y), __fadd_rn(v.z, dv.z), __fadd_rn(v.w, dv.w));
      } else {
        v = __fadd_rn(v, dv);
      }
      row[i] = v;
    }
    if constexpr (kVec == 4) {
      sum_sq += v.x * v.x;
      sum_sq += v.y * v.y;
      sum_sq += v.z * v.z;
      sum_sq += v.w * v.w;
    } else {
      sum_sq += v * v;
    }
  }
  sum_sq = block_sum(sum_sq, scratch);
  const float scale = rsqrtf(sum_sq / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < vecs; i += blockDim.x) {
    const Vec v = row[i];
    const Vec g = w[i];
    if constexpr (kVec == 4) {
      orow[i] = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
    } else {
      orow[i] = v * scale * g;
    }
  }
}

cudaError_t launch(float* x, const float* delta, const float* weight, int64_t num_tokens, int64_t n, float eps,
                   float* out, cudaStream_t stream, const char* op) {
  KVSCOPE_CUDA_REQUIRE(op, num_tokens >= 0);
  KVSCOPE_CUDA_REQUIRE(op, n > 0);
  KVSCOPE_CUDA_REQUIRE(op, eps >= 0.0f);
  KVSCOPE_CUDA_REQUIRE(op, num_tokens <= 0x7fffffff);  // grid.x limit
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, x != nullptr && weight != nullptr && out != nullptr);
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const unsigned int grid = static_cast<unsigned int>(num_tokens);
  if (n % 4 == 0 && aligned(x) && aligned(weight) && aligned(out) && (delta == nullptr || aligned(delta))) {
    launch_kernel(rms_norm_kernel<4>, grid, kThreads, 0, stream, x, delta, weight, n, eps, out);
  } else {
    launch_kernel(rms_norm_kernel<1>, grid, kThreads, 0, stream, x, delta, weight, n, eps, out);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* weight, int64_t num_tokens, int64_t n, float eps, float* out,
                     cudaStream_t stream) {
  // Without delta the kernel never writes through x; the cast only lets the
  // two forms share one kernel.
  return launch(const_cast<float*>(x), nullptr, weight, num_tokens, n, eps, out, stream, "rms_norm");
}

cudaError_t add_rms_norm(float* residual, const float* delta, const float* weight, int64_t num_tokens, int64_t n,
                         float eps, float* out, cudaStream_t stream) {
  KVSCOPE_CUDA_REQUIRE("add_rms_norm", delta != nullptr || num_tokens == 0);
  return launch(residual, delta, weight, num_tokens, n, eps, out, stream, "add_rms_norm");
}

}  // namespace kvscope::cuda
