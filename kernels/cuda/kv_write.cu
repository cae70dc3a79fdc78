// K/V write kernel; see kv_write.cuh. One block per token; f32 / f16 / bf16
// rows are written one element per thread, q8_0 rows one 32-element block
// per warp (lane j holds element j, so the block's max|x| is one warp
// reduction and every lane writes its own int8).
#include "kernels/cuda/kv_write.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of 32: whole warps for q8_0

// Writes one row of kv_size floats at src to dst in `type`.
__device__ void store_row(KvCacheType type, const float* src, int32_t kv_size, uint8_t* dst) {
  switch (type) {
    case KvCacheType::F32:
      for (int32_t e = threadIdx.x; e < kv_size; e += blockDim.x) reinterpret_cast<float*>(dst)[e] = src[e];
      return;
    case KvCacheType::F16:
      for (int32_t e = threadIdx.x; e < kv_size; e += blockDim.x) {
        reinterpret_cast<uint16_t*>(dst)[e] = __half_as_ushort(__float2half_rn(src[e]));
      }
      return;
    case KvCacheType::BF16:
      for (int32_t e = threadIdx.x; e < kv_size; e += blockDim.x) {
        reinterpret_cast<uint16_t*>(dst)[e] = __bfloat16_as_ushort(__float2bfloat16_rn(src[e]));
      }
      return;
    case KvCacheType::Q8_0: {
      const int lane = threadIdx.x % kWarpSize;
      const int warp = threadIdx.x / kWarpSize;
      const int num_warps = blockDim.x / kWarpSize;
      const int32_t num_q_blocks = kv_size / kQ8BlockElems;
      for (int32_t b = warp; b < num_q_blocks; b += num_warps) {  // warp-uniform loop: shuffles are safe
        const float x = src[b * kQ8BlockElems + lane];
        const float amax = warp_max(fabsf(x));
        // As store_kv_row: d16 = f16(amax / 127), quantise with the stored d.
        const __half d16 = __float2half_rn(__fdiv_rn(amax, 127.0f));
        const float d = __half2float(d16);
        const float id = d != 0.0f ? __frcp_rn(d) : 0.0f;  // 1 / d, correctly rounded
        uint8_t* block = dst + static_cast<int64_t>(b) * kQ8BlockBytes;  // block b: [f16 d][32 x int8]
        if (lane == 0) *reinterpret_cast<uint16_t*>(block) = __half_as_ushort(d16);
        block[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(lroundf(__fmul_rn(x, id))));
      }
      return;
    }
  }
}

__global__ void write_kv_kernel(const float* k, const float* v, int64_t src_row_stride, const int64_t* slot_mapping,
                                int32_t kv_size, KvCacheType type, uint8_t* k_cache, uint8_t* v_cache,
                                int64_t num_slots, int64_t slot_bytes) {
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
  write_kv_kernel<<<static_cast<unsigned int>(num_tokens), kThreads, 0, stream>>>(
      k, v, stride, slot_mapping, kv_size, type, static_cast<uint8_t*>(k_cache), static_cast<uint8_t*>(v_cache),
      num_slots, slot_bytes);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
