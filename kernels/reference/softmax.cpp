// Reference softmax; see elementwise.h.
#include <cmath>

#include "kernels/reference/elementwise.h"

namespace kvscope {

void softmax_ref(const float* x, int64_t n, float* out) {
  if (n <= 0) return;
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(std::exp(static_cast<double>(x[i]) - max) / sum);
  }
}

}  // namespace kvscope
