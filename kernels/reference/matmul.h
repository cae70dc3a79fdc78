// Reference matmul: every output as a double-precision dot product of the
// dequantised weight row with the f32 activation row. Slow and obviously right.
#pragma once

#include <cstdint>

#include "kernels/tensor_type.h"

namespace kvscope {

// w: [num_rows][row_len] in `type`; x: [num_tokens][row_len];
// y: [num_tokens][num_rows], y[t * num_rows + r] = dot(dequant(w row r), x row t).
void matmul_ref(TensorType type, const void* w, int64_t num_rows, int64_t row_len,
                const float* x, int64_t num_tokens, float* y);

}  // namespace kvscope
