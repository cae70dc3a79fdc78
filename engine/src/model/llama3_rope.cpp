#include "model/llama3_rope.h"

#include <cmath>
#include <fmt/format.h>
#include <numbers>

namespace kvscope {

Result<std::vector<float>> llama3_rope_freq_factors(int32_t head_dim, double rope_base, const Llama3RopeScaling& s) {
  if (!(s.factor >= 1.0) || !(s.low_freq_factor > 0.0) || !(s.high_freq_factor > s.low_freq_factor) ||
      s.original_context < 1) {
    return Error{fmt::format("llama3 rope scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and "
                             "original_max_position_embeddings >= 1 (got {}, {}, {}, {})",
                             s.factor, s.low_freq_factor, s.high_freq_factor, s.original_context)};
  }
  const double context = static_cast<double>(s.original_context);
  const double low_freq_wavelength = context / s.low_freq_factor;    // longer: divided by factor
  const double high_freq_wavelength = context / s.high_freq_factor;  // shorter: kept
  std::vector<float> divisors(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < divisors.size(); ++i) {
    const double freq = std::pow(rope_base, -2.0 * static_cast<double>(i) / head_dim);
    const double wavelength = 2.0 * std::numbers::pi / freq;
    double divisor = 1.0;
    if (wavelength > low_freq_wavelength) {
      divisor = s.factor;
    } else if (wavelength >= high_freq_wavelength) {
      const double smooth = (context / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / s.factor + smooth);
    }
    divisors[i] = static_cast<float>(divisor);
  }
  return divisors;
}

}  // namespace kvscope
