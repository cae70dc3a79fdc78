// Reference dequantisation: one row of any supported weight type to f32.
// Plain scalar code that follows docs/model-formats.md "Quantised block
// layouts" line by line; tests/kernels/dequantize_gguf_test.cpp pins it
// against values produced by the gguf Python package.
#pragma once

#include <cstdint>

#include "kernels/tensor_type.h"

namespace kvscope {

// dst[n] = values of the first n elements of the row at src.
// Precondition: n is a multiple of the type's block size.
void dequantize_row_ref(TensorType type, const void* src, float* dst, int64_t n);

// The brief's name for the same function.
inline void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  dequantize_row_ref(type, src, dst, n);
}

}  // namespace kvscope
