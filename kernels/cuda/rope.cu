// Rotary embedding kernel; see rope.cuh. One thread per (token, head, pair).
// The angle is computed as the reference computes it, so results agree with
// it to rounding even at large positions, where an error of one ulp in the
// frequency becomes pos * ulp in the angle:
//   exponent  -2i/head_dim in f32 (the same two operations),
//   inv_freq  base^exponent in f64 rounded to f32 (what a correctly rounded
//             powf gives; glibc's is, for all but rare cases),
//   angle     f32 pos * inv_freq, then cos / sin and the rotation in f64.
// f64 costs little here: the op moves num_tokens * num_heads * head_dim * 8
// bytes and does a few f64 operations per pair.
#include "kernels/cuda/rope.cuh"

#include "kernels/cuda/launch_check.h"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void rope_kernel(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                            const int32_t* positions, float base, bool adjacent_pairs, int64_t token_stride,
                            const float* freq_factors) {
  const int64_t half = head_dim / 2;
  const int64_t pairs_per_token = num_heads * half;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= num_tokens * pairs_per_token) return;
  const int64_t t = idx / pairs_per_token;      // token
  const int64_t h = (idx % pairs_per_token) / half;  // head
  const int64_t i = idx % half;                 // pair within the head
  float* v = x + t * token_stride + h * head_dim;  // x[t][h][:] (token rows token_stride apart)

  const float exponent = -2.0f * static_cast<float>(i) / static_cast<float>(head_dim);
  float inv_freq = static_cast<float>(pow(static_cast<double>(base), static_cast<double>(exponent)));
  if (freq_factors) inv_freq = __fdiv_rn(inv_freq, freq_factors[i]);
  const float angle = __fmul_rn(static_cast<float>(positions[t]), inv_freq);
  double s, c;
  sincos(static_cast<double>(angle), &s, &c);
  // Adjacent pairs: (v[2i], v[2i+1]); half split: (v[i], v[i + head_dim/2]).
  const int64_t a = adjacent_pairs ? 2 * i : i;
  const int64_t b = adjacent_pairs ? 2 * i + 1 : i + half;
  const double x0 = v[a];
  const double x1 = v[b];
  v[a] = static_cast<float>(x0 * c - x1 * s);
  v[b] = static_cast<float>(x0 * s + x1 * c);
}

}  // namespace

cudaError_t rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, const int32_t* positions,
                 float base, RopeStyle style, int64_t token_stride, const float* freq_factors,
                 cudaStream_t stream) {
  KVSCOPE_CUDA_REQUIRE("rope", num_tokens >= 0);
  KVSCOPE_CUDA_REQUIRE("rope", num_heads > 0);
  KVSCOPE_CUDA_REQUIRE("rope", head_dim > 0 && head_dim % 2 == 0);
  KVSCOPE_CUDA_REQUIRE("rope", token_stride == 0 || token_stride >= num_heads * head_dim);
  KVSCOPE_CUDA_REQUIRE("rope", base > 0.0f);
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE("rope", x != nullptr && positions != nullptr);
  const int64_t stride = token_stride == 0 ? num_heads * head_dim : token_stride;
  const int64_t num_pairs = num_tokens * num_heads * (head_dim / 2);
  KVSCOPE_CUDA_REQUIRE("rope", num_pairs / kThreads < 0x7fffffff);  // grid.x limit
  rope_kernel<<<num_blocks_for(num_pairs, kThreads), kThreads, 0, stream>>>(
      x, num_tokens, num_heads, head_dim, positions, base, style == RopeStyle::kAdjacentPairs, stride, freq_factors);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
