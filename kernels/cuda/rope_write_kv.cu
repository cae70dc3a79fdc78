// Fused rotary + K/V write; see rope_write_kv.cuh. One block per token: its
// first head_dim / 2 threads compute the token's sines and cosines (one per
// pair index, shared by every head: 32, not 384, f64 pow + sincos chains for
// SmolLM2, the chain that a one-token launch waits on), a barrier, then the
// threads rotate the token's q and k pairs, a barrier makes the rotated k
// visible to the whole block, then the block writes the K and V rows.
#include "kernels/cuda/rope_write_kv.cuh"

#include "kernels/cuda/kv_row_store.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/rope_pair.cuh"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32: whole warps for q8_0 rows
constexpr int kMaxHalfDim = 256;  // head_dim / 2 at most: the shared sine / cosine table

__global__ void rope_write_kv_kernel(QkvRows rows, const int32_t* positions, float base, bool adjacent_pairs,
                                     const float* freq_factors, const int64_t* slot_mapping, KvCacheType type,
                                     uint8_t* k_cache, uint8_t* v_cache, int64_t num_slots, int64_t slot_bytes) {
  await_previous_kernel();
  const int64_t t = blockIdx.x;
  float* row = rows.qkv + t * rows.row_stride;  // q heads, then k heads, then v heads
  const int32_t pos = positions[t];
  const int64_t half = rows.head_dim / 2;
  __shared__ double sine[kMaxHalfDim], cosine[kMaxHalfDim];
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    sincos(static_cast<double>(rope_angle(i, rows.head_dim, pos, base, freq_factors)), &sine[i], &cosine[i]);
  }
  __syncthreads();  // the table, written by the first threads, is read by all
  const int64_t pairs = static_cast<int64_t>(rows.num_heads + rows.num_kv_heads) * half;
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int64_t i = p % half;
    rotate_pair_by(row + (p / half) * rows.head_dim, i, rows.head_dim, adjacent_pairs, sine[i], cosine[i]);
  }
  const int64_t slot = slot_mapping[t];
  if (slot < 0 || slot >= num_slots) return;  // block-uniform: no thread waits at the barrier below
  __syncthreads();  // the rotated k, written by other threads of the block, is read below
  const int32_t kv_size = rows.num_kv_heads * rows.head_dim;
  const float* k = row + static_cast<int64_t>(rows.num_heads) * rows.head_dim;
  store_row(type, k, kv_size, k_cache + slot * slot_bytes);
  store_row(type, k + kv_size, kv_size, v_cache + slot * slot_bytes);
}

}  // namespace

cudaError_t rope_and_write_kv(const QkvRows& rows, int64_t num_tokens, const int32_t* positions, float base,
                              RopeStyle style, const float* freq_factors, const int64_t* slot_mapping,
                              KvCacheType type, void* k_cache, void* v_cache, int64_t num_slots,
                              cudaStream_t stream) {
  const char* op = "rope_and_write_kv";
  KVSCOPE_CUDA_REQUIRE(op, num_tokens >= 0 && num_tokens <= 0x7fffffff);  // grid.x
  KVSCOPE_CUDA_REQUIRE(op, rows.num_heads > 0 && rows.num_kv_heads > 0);
  KVSCOPE_CUDA_REQUIRE(op, rows.head_dim > 0 && rows.head_dim % 2 == 0 && rows.head_dim / 2 <= kMaxHalfDim);
  KVSCOPE_CUDA_REQUIRE(op, rows.row_stride >= static_cast<int64_t>(rows.num_heads + 2 * rows.num_kv_heads) *
                                                  rows.head_dim);
  KVSCOPE_CUDA_REQUIRE(op, base > 0.0f);
  KVSCOPE_CUDA_REQUIRE(op, type == KvCacheType::F32 || type == KvCacheType::F16 || type == KvCacheType::BF16 ||
                               type == KvCacheType::Q8_0);
  const int32_t kv_size = rows.num_kv_heads * rows.head_dim;
  KVSCOPE_CUDA_REQUIRE(op, type != KvCacheType::Q8_0 || kv_size % kQ8BlockElems == 0);
  KVSCOPE_CUDA_REQUIRE(op, num_slots >= 0);
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, rows.qkv != nullptr && positions != nullptr && slot_mapping != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, num_slots == 0 || (k_cache != nullptr && v_cache != nullptr));
  const int64_t slot_bytes = static_cast<int64_t>(kv_row_bytes(type, kv_size));
  launch_kernel(rope_write_kv_kernel, static_cast<unsigned int>(num_tokens), kThreads, 0, stream, rows, positions, base,
                style == RopeStyle::kAdjacentPairs, freq_factors, slot_mapping, type, static_cast<uint8_t*>(k_cache),
                static_cast<uint8_t*>(v_cache), num_slots, slot_bytes);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
