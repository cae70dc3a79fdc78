// Reference GELU(tanh approximation)-gated product (GeGLU); see elementwise.h.
#include <cmath>

#include "kernels/reference/elementwise.h"

namespace kvscope {

void gelu_tanh_mul_ref(const float* gate, const float* up, int64_t n, float* out) {
  const double k = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    const double gelu = 0.5 * g * (1.0 + std::tanh(k * (g + 0.044715 * g * g * g)));
    out[i] = static_cast<float>(gelu * up[i]);
  }
}

}  // namespace kvscope
