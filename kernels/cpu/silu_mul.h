// SwiGLU gate: out = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
// Reference: kernels/reference/silu_mul.cpp. Elementwise and batch-invariant
// (a value's result does not depend on its position in the array).
#pragma once

#include <cstdint>

namespace kvscope {

// gate, up, out: [n]; out may alias gate or up.
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

}  // namespace kvscope
