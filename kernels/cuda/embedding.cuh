// Token embedding lookup on the GPU: each token's row of the embedding table,
// dequantised to f32. The table stays in its GGUF type and layout as loaded
// (SmolLM2's token_embd.weight is Q8_0; others are F32, F16 or Q4_1).
// Values equal kernels/reference/dequantize.h's bit for bit (no fused
// multiply-add); tested by tests/kernels/cuda/embedding_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/tensor_type.h"

namespace kvscope::cuda {

// out[t][:] = dequant(table row token_ids[t]); a token id outside
// [0, vocab_size) gives a row of NaN (visible, never a stray read).
// table: [vocab_size][row_bytes(type, dim)] device bytes; token_ids: [num_tokens] device;
// out: [num_tokens][dim] device f32.
// Preconditions: type is F32, F16, Q8_0 or Q4_1; dim > 0 (a multiple of 32 for
// the quantised types); vocab_size > 0.
cudaError_t embedding_lookup(TensorType type, const void* table, int64_t vocab_size, int64_t dim,
                             const int32_t* token_ids, int64_t num_tokens, float* out, cudaStream_t stream);

}  // namespace kvscope::cuda
