// GeGLU gate (Gemma): out = gelu_tanh(gate) * up with
// gelu_tanh(g) = 0.5 g (1 + tanh(k (g + 0.044715 g^3))), k = sqrt(2/pi),
// computed as g * sigmoid(2 k (g + 0.044715 g^3)) (the same function).
// Reference: kernels/reference/gelu_tanh_mul.cpp. Batch-invariant.
#pragma once

#include <cstdint>

namespace kvscope {

// gate, up, out: [n]; out may alias gate or up.
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);

}  // namespace kvscope
