// Reference rotary embedding; see elementwise.h.
#include <cmath>

#include "kernels/reference/elementwise.h"

namespace kvscope {

void rope_ref(float* x, int64_t num_heads, int64_t head_dim, int64_t pos, float base,
              RopeStyle style, const float* freq_factors) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < num_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      float inv_freq = std::pow(base, -2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
      if (freq_factors) inv_freq /= freq_factors[i];
      const float angle = static_cast<float>(pos) * inv_freq;
      const double c = std::cos(static_cast<double>(angle));
      const double s = std::sin(static_cast<double>(angle));
      const int64_t a = (style == RopeStyle::kAdjacentPairs) ? 2 * i : i;
      const int64_t b = (style == RopeStyle::kAdjacentPairs) ? 2 * i + 1 : i + half;
      const double x0 = v[a];
      const double x1 = v[b];
      v[a] = static_cast<float>(x0 * c - x1 * s);
      v[b] = static_cast<float>(x0 * s + x1 * c);
    }
  }
}

}  // namespace kvscope
