// Rotary embedding kernel; see rope.cuh. One thread per (token, head, pair);
// the rotation itself is rope_pair.cuh's (how the angle is computed, and why
// partly in f64). f64 costs little here: the op moves num_tokens * num_heads
// * head_dim * 8 bytes and does a few f64 operations per pair.
#include "kernels/cuda/rope.cuh"

#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/rope_pair.cuh"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void rope_kernel(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                            const int32_t* positions, float base, bool adjacent_pairs, int64_t token_stride,
                            const float* freq_factors) {
  await_previous_kernel();
  const int64_t half = head_dim / 2;
  const int64_t pairs_per_token = num_heads * half;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= num_tokens * pairs_per_token) return;
  const int64_t t = idx / pairs_per_token;      // token
  const int64_t h = (idx % pairs_per_token) / half;  // head
  const int64_t i = idx % half;                 // pair within the head
  float* v = x + t * token_stride + h * head_dim;  // x[t][h][:] (token rows token_stride apart)
  rotate_pair(v, i, head_dim, positions[t], base, adjacent_pairs, freq_factors);
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
  launch_kernel(rope_kernel, num_blocks_for(num_pairs, kThreads), kThreads, 0, stream, x, num_tokens, num_heads,
                head_dim, positions, base, style == RopeStyle::kAdjacentPairs, stride, freq_factors);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
