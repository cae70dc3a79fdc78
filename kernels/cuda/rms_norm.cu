// RMSNorm kernels; see rms_norm.cuh. Bandwidth-bound: a row is read once for
// the sum of squares and once more (from L1/L2, rows are small: 576 to 8192
// floats) for the scaled write.
#include "kernels/cuda/rms_norm.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row t. When `delta` is non-null, x is the residual stream and
// is updated in place first: x[t][i] += delta[t][i]. Each thread touches the
// same indices i (i = threadIdx.x + k * blockDim.x) in both passes, which is
// what lets out alias x or delta.
__global__ void rms_norm_kernel(float* x, const float* delta, const float* weight, int64_t n, float eps,
                                float* out) {
  __shared__ float scratch[32];
  const int64_t t = blockIdx.x;
  float* row = x + t * n;                // x[t][i] = x + t * n + i
  const float* drow = delta ? delta + t * n : nullptr;
  float* orow = out + t * n;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = row[i];
    if (drow) {
      v = __fadd_rn(v, drow[i]);
      row[i] = v;
    }
    sum_sq += v * v;
  }
  sum_sq = block_sum(sum_sq, scratch);
  const float scale = rsqrtf(sum_sq / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) orow[i] = row[i] * scale * weight[i];
}

cudaError_t launch(float* x, const float* delta, const float* weight, int64_t num_tokens, int64_t n, float eps,
                   float* out, cudaStream_t stream, const char* op) {
  KVSCOPE_CUDA_REQUIRE(op, num_tokens >= 0);
  KVSCOPE_CUDA_REQUIRE(op, n > 0);
  KVSCOPE_CUDA_REQUIRE(op, eps >= 0.0f);
  KVSCOPE_CUDA_REQUIRE(op, num_tokens <= 0x7fffffff);  // grid.x limit
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, x != nullptr && weight != nullptr && out != nullptr);
  rms_norm_kernel<<<static_cast<unsigned int>(num_tokens), kThreads, 0, stream>>>(x, delta, weight, n, eps, out);
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
