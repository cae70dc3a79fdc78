// Weight tiles to bf16 for prefill GEMMs on the tensor cores: GGUF Q4_1 / Q8_0
// rows dequantised (bitwise the reference's f32 values, then rounded to
// nearest even) into a bf16 tile, and f32 activations rounded the same way.
// The weights stay quantised in device memory; a prefill matmul dequantises
// one tile of rows at a time into a bounded workspace and hands it to cuBLAS
// (gemm_bf16.cuh). bf16 values are passed as their 16 bits (uint16_t), as the
// KV cache's bf16 rows are. Tests: tests/kernels/cuda/dequantize_bf16_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/tensor_type.h"

namespace kvscope::cuda {

// out[r][c] = bf16(dequant(w row first_row + r)[c]) for r < num_rows, c < row_len.
// w: [*][row_bytes(type, row_len)] device bytes; out: [num_rows][row_len] device bf16 bits.
// Preconditions: type Q4_1 or Q8_0, row_len > 0 and a multiple of 32,
// first_row >= 0, num_rows >= 0.
cudaError_t dequantize_rows_bf16(TensorType type, const void* w, int64_t row_len, int64_t first_row,
                                 int64_t num_rows, uint16_t* out, cudaStream_t stream);

// out[i] = bf16(x[i]) (round to nearest even) for i < n; device arrays.
cudaError_t f32_to_bf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);

}  // namespace kvscope::cuda
