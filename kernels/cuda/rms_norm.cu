// RMSNorm kernels; see rms_norm.cuh. A warp per row (row_norm.cuh's order,
// the one the matmuls that normalise their own input use): the row is read
// once for the sum of squares and once more (from L1/L2, rows are small: 576
// to 8192 floats) for the scaled write; at decode sizes each launch is a few
// memory latencies.
#include "kernels/cuda/rms_norm.cuh"

#include <cstdint>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"
#include "kernels/cuda/row_norm.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kRowsPerBlock = 8;
constexpr int kThreads = kRowsPerBlock * kWarpSize;

// Warp w of block b takes row t = b * 8 + w. When `delta` is non-null, x is
// the residual stream and is updated in place first: x[t][i] += delta[t][i].
// Each lane touches the same quads of the row in every pass (row_norm.cuh's
// mapping), which is what lets out alias x or delta.
template <bool kQuads>
__global__ void rms_norm_kernel(float* x, const float* delta, const float* weight, int64_t num_tokens, int64_t n,
                                float eps, float* out) {
  await_previous_kernel();
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (t >= num_tokens) return;  // warp-uniform; no block-wide barrier follows
  const int lane = threadIdx.x % kWarpSize;
  float* row = x + t * n;
  const float* drow = delta ? delta + t * n : nullptr;
  float* orow = out + t * n;
  const int64_t quads = (n + 3) / 4;
  if (drow) {
    for (int64_t q = lane; q < quads; q += kWarpSize) {
      if constexpr (kQuads) {
        const float4 v = reinterpret_cast<const float4*>(row)[q];
        const float4 d = reinterpret_cast<const float4*>(drow)[q];
        reinterpret_cast<float4*>(row)[q] =
            make_float4(__fadd_rn(v.x, d.x), __fadd_rn(v.y, d.y), __fadd_rn(v.z, d.z), __fadd_rn(v.w, d.w));
      } else {
        for (int64_t i = 4 * q; i < min(4 * q + 4, n); ++i) row[i] = __fadd_rn(row[i], drow[i]);
      }
    }
  }
  const float scale = warp_rms_scale(row, n, eps);  // reads only this lane's quads: its own writes
  for (int64_t q = lane; q < quads; q += kWarpSize) {
    if constexpr (kQuads) {
      const float4 v = reinterpret_cast<const float4*>(row)[q];
      const float4 g = reinterpret_cast<const float4*>(weight)[q];
      reinterpret_cast<float4*>(orow)[q] = rms_normed(v, scale, g);
    } else {
      for (int64_t i = 4 * q; i < min(4 * q + 4, n); ++i) orow[i] = rms_normed(row[i], scale, weight[i]);
    }
  }
}

cudaError_t launch(float* x, const float* delta, const float* weight, int64_t num_tokens, int64_t n, float eps,
                   float* out, cudaStream_t stream, const char* op) {
  KVSCOPE_CUDA_REQUIRE(op, num_tokens >= 0);
  KVSCOPE_CUDA_REQUIRE(op, n > 0);
  KVSCOPE_CUDA_REQUIRE(op, eps >= 0.0f);
  KVSCOPE_CUDA_REQUIRE(op, num_tokens / kRowsPerBlock < 0x7fffffff);  // grid.x limit
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, x != nullptr && weight != nullptr && out != nullptr);
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const unsigned int grid = num_blocks_for(num_tokens, kRowsPerBlock);
  // Every row is float4-aligned when the first one is and n is a multiple of 4
  // (warp_rms_scale makes the same choice per row, and takes the same order either way).
  if (n % 4 == 0 && aligned(x) && aligned(weight) && aligned(out) && (delta == nullptr || aligned(delta))) {
    launch_kernel(rms_norm_kernel<true>, grid, kThreads, 0, stream, x, delta, weight, num_tokens, n, eps, out);
  } else {
    launch_kernel(rms_norm_kernel<false>, grid, kThreads, 0, stream, x, delta, weight, num_tokens, n, eps, out);
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
