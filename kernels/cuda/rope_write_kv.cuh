// Rotary embedding on a token's q and k heads and the write of its K and V
// rows into their KV-cache slot, in one launch: what rope (rope.cuh) then
// write_kv (kv_write.cuh) do, with the same rotation (rope_pair.cuh) and the
// same conversions (kv_row_store.cuh), so the same bits. A decode step of
// the default model saves one launch per layer (30 of ~270). Tested by
// tests/kernels/cuda/rope_write_kv_test.cpp against the two launches.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/kv_cache_type.h"
#include "kernels/rope_style.h"

namespace kvscope::cuda {

// The q/k/v rows of a step, as the CUDA backend keeps them: token t's row at
// qkv + t * row_stride holds num_heads query heads, then num_kv_heads key
// heads, then num_kv_heads value heads, head_dim floats each.
struct QkvRows {
  float* qkv = nullptr;
  int64_t row_stride = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
};

// For each token t: rotates its q and k heads in place by positions[t]
// (rope's rule, base and style, freq_factors [head_dim / 2] or nullptr), then,
// if slot_mapping[t] is in [0, num_slots), writes its rotated K row and its V
// row (num_kv_heads * head_dim floats each) to k_cache / v_cache at that slot,
// converted to `type` (write_kv's rule; a negative slot is padding).
// Preconditions: rope's and write_kv's.
cudaError_t rope_and_write_kv(const QkvRows& rows, int64_t num_tokens, const int32_t* positions, float base,
                              RopeStyle style, const float* freq_factors, const int64_t* slot_mapping,
                              KvCacheType type, void* k_cache, void* v_cache, int64_t num_slots,
                              cudaStream_t stream);

}  // namespace kvscope::cuda
