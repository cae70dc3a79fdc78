// K/V write on the GPU: each token's new K and V rows go to their KV-cache
// slots (slot_mapping), converted to the cache type on the way. The byte
// layout is the CPU storage's (kernels/cpu/kv_cache_type.h, engine KvStorage):
// slot s of a layer starts at s * kv_row_bytes(type, kv_size), so a block
// copied between host and device means the same thing on both. The
// conversions are the CPU's, bit for bit: f16 / bf16 round to nearest even,
// q8_0 takes its scale as stored (f16 of max|x| / 127) and rounds x / d half
// away from zero. Tested by tests/kernels/cuda/kv_write_test.cpp, which
// compares the bytes with store_kv_row's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/kv_cache_type.h"

namespace kvscope::cuda {

// For each token t with slot_mapping[t] in [0, num_slots):
//   k_cache[slot] <- convert(k[t]), v_cache[slot] <- convert(v[t]),
// where k[t] = k + t * src_row_stride (kv_size floats; stride 0 means kv_size),
// likewise v. Tokens with a negative slot (padding) are skipped, and so are
// slots >= num_slots (a caller bug; nothing outside the cache is written).
// k, v: device f32; slot_mapping: [num_tokens] device int64;
// k_cache, v_cache: [num_slots][kv_row_bytes(type, kv_size)] device bytes.
// Preconditions: kv_size > 0, q8_0 needs kv_size % 32 == 0 (whole blocks per
// row; per head too when each head's dim is a multiple of 32),
// src_row_stride 0 or >= kv_size.
cudaError_t write_kv(const float* k, const float* v, int64_t src_row_stride, const int64_t* slot_mapping,
                     int64_t num_tokens, int32_t kv_size, KvCacheType type, void* k_cache, void* v_cache,
                     int64_t num_slots, cudaStream_t stream);

}  // namespace kvscope::cuda
