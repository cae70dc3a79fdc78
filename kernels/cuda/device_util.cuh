// Device-side helpers shared by the .cu files of kernels/cuda/ (never by
// hosts): warp and block reductions in a fixed order, the element loads of
// the storage types (f16 / bf16 bits, GGUF's Q8_0 and Q4_1 blocks), and the
// samplers' logit sanitising.
// Every reduction here is a fixed tree over lanes and warps, so a result
// depends only on the inputs and the block size, never on timing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

#include "kernels/cpu/kv_cache_type.h"

namespace kvscope::cuda {

inline constexpr int kWarpSize = 32;

// The CPU sampler's sanitize (engine/src/runtime/sampler.cpp): NaN ->
// -FLT_MAX, infinities clamped, so differences of logits are never NaN.
__device__ inline float sanitize(float x) { return isnan(x) ? -FLT_MAX : fminf(fmaxf(x, -FLT_MAX), FLT_MAX); }

__device__ inline float warp_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the whole block; every thread gets the result. blockDim.x must be
// a multiple of 32 (launchers use fixed block sizes that are). `scratch`
// holds 32 floats of shared memory; the call ends with a barrier so scratch
// can be reused by the next reduction.
__device__ inline float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = lane < num_warps ? scratch[lane] : 0.0f;
  total = warp_sum(total);  // every warp reduces the same values in the same tree
  __syncthreads();
  return total;
}

__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  v = warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = lane < num_warps ? scratch[lane] : -INFINITY;
  total = warp_max(total);
  __syncthreads();
  return total;
}

// f16 / bf16 from their 16 bits (exact widening).
__device__ inline float f16_bits_to_f32(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
__device__ inline float bf16_bits_to_f32(uint16_t bits) { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }

// GGUF block layouts (docs/model-formats.md, kernels/reference/dequantize.cpp):
//   Q8_0: 34 bytes = f16 scale d, 32 x int8 q;        x[j] = q[j] * d
//   Q4_1: 20 bytes = f16 scale d, f16 min m, 16 bytes; x[j] = (qs[j] & 15) * d + m,
//                                                      x[j + 16] = (qs[j] >> 4) * d + m  (j < 16)
// Block starts are 2-byte aligned (34 and 20 are even, rows start at even
// offsets), so the f16 fields are read as aligned 16-bit loads.
inline constexpr int kQBlockElems = 32;
inline constexpr int kQ8_0BlockBytes = 34;
inline constexpr int kQ4_1BlockBytes = 20;

__device__ inline float q8_0_element(const uint8_t* block, int j) {
  const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block));
  return __fmul_rn(static_cast<float>(static_cast<int8_t>(block[2 + j])), d);
}

__device__ inline float q4_1_element(const uint8_t* block, int j) {
  const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block));
  const float m = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block + 2));
  const uint8_t byte = block[4 + (j % 16)];
  const int q = j < 16 ? (byte & 15) : (byte >> 4);
  // __fmul_rn / __fadd_rn: no fused multiply-add, so the value is bitwise the
  // reference's (which is compiled with -ffp-contract=off).
  return __fadd_rn(__fmul_rn(static_cast<float>(q), d), m);
}

// KV cache rows (kernels/cpu/kv_cache_type.h): bytes of n elements, and
// element d of a row starting at `row` (q8_0: the row starts on a block, as
// every head's row does when head_dim % 32 == 0). Values equal load_kv_row's.
__device__ inline int64_t kv_bytes(KvCacheType type, int64_t n) {
  switch (type) {
    case KvCacheType::F32: return 4 * n;
    case KvCacheType::F16:
    case KvCacheType::BF16: return 2 * n;
    case KvCacheType::Q8_0: return n / kQ8BlockElems * kQ8BlockBytes;
  }
  return 0;
}

__device__ inline float load_kv_element(KvCacheType type, const uint8_t* row, int d) {
  switch (type) {
    case KvCacheType::F32: return reinterpret_cast<const float*>(row)[d];
    case KvCacheType::F16: return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[d]);
    case KvCacheType::BF16: return bf16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[d]);
    case KvCacheType::Q8_0: return q8_0_element(row + (d / kQ8BlockElems) * kQ8BlockBytes, d % kQ8BlockElems);
  }
  return 0.0f;
}

}  // namespace kvscope::cuda
