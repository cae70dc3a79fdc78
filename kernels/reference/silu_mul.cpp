// Reference SiLU-gated product (SwiGLU); see elementwise.h.
#include <cmath>

#include "kernels/reference/elementwise.h"

namespace kvscope {

void silu_mul_ref(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

}  // namespace kvscope
