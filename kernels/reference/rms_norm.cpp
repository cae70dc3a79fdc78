// Reference RMSNorm; see elementwise.h.
#include <cmath>

#include "kernels/reference/elementwise.h"

namespace kvscope {

void rms_norm_ref(const float* x, const float* weight, int64_t n, float eps, float* out) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const double scale = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] * scale * weight[i]);
}

}  // namespace kvscope
