// The RMSNorm arithmetic of one row, shared by every kernel that normalises:
// rms_norm.cu's launches and the matmuls that normalise their input as they
// stage it (matvec_q.cuh's InputNorm). One definition, so a fused matmul
// multiplies exactly the bits an rms_norm launch would have written, and
// fusing or not is invisible in the model's output.
//
// The order, fixed whatever the launch: one warp per row; lane l takes the
// quads of elements [4q, 4q + 4) for q = l, l + 32, ..., and adds each
// element's square into its partial with an FMA, element order within a quad;
// then the xor tree over the 32 partials (warp_sum). A float4 load per quad
// where the row allows it, scalar loads otherwise: the same order either way.
// Internal to kernels/cuda.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_util.cuh"

namespace kvscope::cuda {

// Whether the quads of a row of `n` floats at `p` can be read as float4.
__device__ inline bool quads_are_aligned(const void* p, int64_t n) {
  return n % 4 == 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// 1 / sqrt(mean(row^2) + eps), for the calling warp's row (every lane gets it).
__device__ inline float warp_rms_scale(const float* row, int64_t n, float eps) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t quads = (n + 3) / 4;
  float sum_sq = 0.0f;
  if (quads_are_aligned(row, n)) {
    const float4* v = reinterpret_cast<const float4*>(row);
    for (int64_t q = lane; q < quads; q += kWarpSize) {
      const float4 f = v[q];
      sum_sq = __fmaf_rn(f.x, f.x, sum_sq);
      sum_sq = __fmaf_rn(f.y, f.y, sum_sq);
      sum_sq = __fmaf_rn(f.z, f.z, sum_sq);
      sum_sq = __fmaf_rn(f.w, f.w, sum_sq);
    }
  } else {
    for (int64_t q = lane; q < quads; q += kWarpSize) {
      for (int64_t i = 4 * q; i < min(4 * q + 4, n); ++i) sum_sq = __fmaf_rn(row[i], row[i], sum_sq);
    }
  }
  sum_sq = warp_sum(sum_sq);
  return rsqrtf(__fadd_rn(__fdiv_rn(sum_sq, static_cast<float>(n)), eps));
}

// The scales of rows t0 .. t0 + rows - 1 of x (rows of row_len floats) into
// scale[0 .. rows): the block's warps take rows w, w + warps, ... Called by
// every thread of the block; the caller's next barrier publishes them.
__device__ inline void block_rms_scales(const float* x, int64_t row_len, int64_t t0, int rows, float eps,
                                        float* scale) {
  const int warps = static_cast<int>(blockDim.x) / kWarpSize;
  for (int t = static_cast<int>(threadIdx.x) / kWarpSize; t < rows; t += warps) {
    const float s = warp_rms_scale(x + (t0 + t) * row_len, row_len, eps);
    if (threadIdx.x % kWarpSize == 0) scale[t] = s;
  }
}

// One element of the normalised row: (v * scale) * weight, rounded twice as written.
__device__ inline float rms_normed(float v, float scale, float weight) {
  return __fmul_rn(__fmul_rn(v, scale), weight);
}

__device__ inline float4 rms_normed(float4 v, float scale, float4 weight) {
  return make_float4(rms_normed(v.x, scale, weight.x), rms_normed(v.y, scale, weight.y),
                     rms_normed(v.z, scale, weight.z), rms_normed(v.w, scale, weight.w));
}

}  // namespace kvscope::cuda
