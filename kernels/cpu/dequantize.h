// Fast dequantisation of one row (CPU backend). Bit-identical to
// dequantize_row_ref (kernels/reference/dequantize.h); tested exactly in
// tests/kernels/op_table_test.cpp.
#pragma once

#include <cstdint>

#include "kernels/tensor_type.h"

namespace kvscope {

// dst[n] = values of the first n elements of the row at src (n a multiple of
// the block size).
void dequantize_row_fast(TensorType type, const void* src, float* dst, int64_t n);

// out[row_len] = row `row` of an embedding table [num_rows][row_len] of `type`.
void embedding_row(TensorType type, const void* table, int64_t row, int64_t row_len, float* out);

}  // namespace kvscope
