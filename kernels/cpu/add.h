// Elementwise add (residual connections). Reference: kernels/reference/add.cpp.
#pragma once

#include <cstdint>

namespace kvscope {

// out[n] = a + b; out may alias a or b.
void add(const float* a, const float* b, int64_t n, float* out);

}  // namespace kvscope
