// Row-wise softmax (sampling, tests). Reference: kernels/reference/softmax.cpp.
#pragma once

#include <cstdint>

namespace kvscope {

// x, out: [num_rows][n]; out may alias x.
void softmax(const float* x, int64_t num_rows, int64_t n, float* out);

}  // namespace kvscope
