// K/V write kernel; see kv_write.cuh. One block per token, writing its rows
// with store_row (kv_row_store.cuh).
#include "kernels/cuda/kv_write.cuh"

#include "kernels/cuda/kv_row_store.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32: whole warps for q8_0

__global__ void write_kv_kernel(const float* k, const float* v, int64_t src_row_stride, const int64_t* slot_mapping,
                                int32_t kv_size, KvCacheType type, uint8_t* k_cache, uint8_t* v_cache,
                                int64_t num_slots, int64_t slot_bytes) {
  await_previous_kernel();
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0 || slot >= num_slots) return;  // padding (or a bad slot: write nothing)
  // k[t][:] = k + t * src_row_stride; cache slot s: k_cache + s * slot_bytes.
  store_row(type, k + t * src_row_stride, kv_size, k_cache + slot * slot_bytes);
  store_row(type, v + t * src_row_stride, kv_size, v_cache + slot * slot_bytes);
}

}  // namespace

cudaError_t write_kv(const float* k, const float* v, int64_t src_row_stride, const int64_t* slot_mapping,
                     int64_t num_tokens, int32_t kv_size, KvCacheType type, void* k_cache, void* v_cache,
                     int64_t num_slots, cudaStream_t stream) {
  KVSCOPE_CUDA_REQUIRE("write_kv", num_tokens >= 0 && num_tokens <= 0x7fffffff);
  KVSCOPE_CUDA_REQUIRE("write_kv", kv_size > 0);
  KVSCOPE_CUDA_REQUIRE("write_kv", type == KvCacheType::F32 || type == KvCacheType::F16 ||
                                       type == KvCacheType::BF16 || type == KvCacheType::Q8_0);
  KVSCOPE_CUDA_REQUIRE("write_kv", type != KvCacheType::Q8_0 || kv_size % kQ8BlockElems == 0);
  KVSCOPE_CUDA_REQUIRE("write_kv", src_row_stride == 0 || src_row_stride >= kv_size);
  KVSCOPE_CUDA_REQUIRE("write_kv", num_slots >= 0);
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE("write_kv", k != nullptr && v != nullptr && slot_mapping != nullptr);
  KVSCOPE_CUDA_REQUIRE("write_kv", num_slots == 0 || (k_cache != nullptr && v_cache != nullptr));
  const int64_t stride = src_row_stride == 0 ? kv_size : src_row_stride;
  const int64_t slot_bytes = static_cast<int64_t>(kv_row_bytes(type, kv_size));
  launch_kernel(write_kv_kernel, static_cast<unsigned int>(num_tokens), kThreads, 0, stream, k, v, stride, slot_mapping,
                kv_size, type, static_cast<uint8_t*>(k_cache), static_cast<uint8_t*>(v_cache), num_slots, slot_bytes);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
