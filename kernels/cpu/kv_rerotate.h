// Re-rotating cached keys in place after a context shift
// (docs/context-overflow.md). RoPE turns pair i of a key written at position
// p by the angle p * f_i, and rotations compose: a key moved from p to
// p + delta is turned once more by delta * f_i. That is rope() itself with
// every position set to delta, so the frequencies (base, pair style, Llama 3
// freq factors) are by construction the ones the key was written with.
// A quantised cache row (f16, bf16, q8_0) is loaded, turned in f32 and stored
// again, costing one more rounding of the type per shift.
//   tested by tests/kernels/kv_rerotate_test.cpp (against a double-precision
//   rotation, odd sizes, both pair styles, every cache type)
#pragma once

#include <cstdint>

#include "kernels/cpu/kv_cache_type.h"
#include "kernels/rope_style.h"

namespace kvscope {

// rows: [num_rows][kv_row_bytes(type, num_heads * head_dim)], consecutive
// (one block's slots of one layer in KvStorage); each row holds num_heads
// keys of head_dim. Turns every key by delta positions (negative: moved
// towards the start). freq_factors: [head_dim / 2] or nullptr, as for rope().
void rerotate_kv_rows(KvCacheType type, uint8_t* rows, int64_t num_rows, int64_t num_heads, int64_t head_dim,
                      int32_t delta, float base, RopeStyle style, const float* freq_factors = nullptr);

}  // namespace kvscope
