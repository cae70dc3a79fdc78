// One K or V row into the cache in the cache's type, by a whole block:
// f32 / f16 / bf16 rows one element per thread, q8_0 rows one 32-element
// block per warp (lane j holds element j, so the block's max|x| is one warp
// reduction and every lane writes its own int8). The conversions are the
// CPU storage's, bit for bit (kv_write.cuh). Shared by write_kv (kv_write.cu)
// and the fused rotary + write (rope_write_kv.cu).
#pragma once

#include <cstdint>

#include "kernels/cpu/kv_cache_type.h"
#include "kernels/cuda/device_util.cuh"

namespace kvscope::cuda {

// Writes one row of kv_size floats at src to dst in `type`.
__device__ inline void store_row(KvCacheType type, const float* src, int32_t kv_size, uint8_t* dst) {
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

}  // namespace kvscope::cuda
