// How the KV cache stores K and V: the element type of a cached row, and the
// conversions in and out. Rows are written once per token and layer
// (store_kv_row, quantising on write) and read by attention a tile at a time
// (load_kv_row), so the pool can hold 2x (f16, bf16) or ~3.8x (q8_0) the
// tokens of f32 in the same memory. The conversions are exact functions of
// the row: a type gives the same bits whatever the batch, block size or
// thread, so the invariance rules hold within a type.
//   tested by tests/kernels/kv_cache_type_test.cpp
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvscope {

enum class KvCacheType : uint8_t {
  F32,   // 4 bytes per element, exact
  F16,   // IEEE half, round to nearest even
  BF16,  // bfloat16, round to nearest even
  Q8_0,  // blocks of 32: an f16 scale d = max|x| / 127 and 32 int8 (GGUF's Q8_0 layout)
};

inline constexpr int32_t kQ8BlockElems = 32;
inline constexpr int32_t kQ8BlockBytes = 2 + kQ8BlockElems;

const char* kv_cache_type_name(KvCacheType type);

// Bytes of n elements (q8_0: n a multiple of 32).
size_t kv_row_bytes(KvCacheType type, int64_t n);

// Whether rows of head_dim elements can be stored (q8_0 needs whole blocks per head).
bool kv_type_fits_head_dim(KvCacheType type, int32_t head_dim);

// dst <- src[0, n) in `type` (q8_0: n a multiple of 32).
void store_kv_row(KvCacheType type, const float* src, int64_t n, uint8_t* dst);

// dst[0, n) <- the n elements stored at src (q8_0: n a multiple of 32).
void load_kv_row(KvCacheType type, const uint8_t* src, int32_t n, float* dst);

}  // namespace kvscope
