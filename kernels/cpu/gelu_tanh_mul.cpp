// gelu_tanh_mul; see gelu_tanh_mul.h. Tail through a padded 8-lane buffer.
#include "kernels/cpu/gelu_tanh_mul.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/vec_exp.h"

namespace kvscope {
namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
}

#if defined(__x86_64__) || defined(_M_X64)
namespace {
inline __m256 gelu_mul8(__m256 g, __m256 u) {
  const __m256 g3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
  const __m256 inner = _mm256_mul_ps(_mm256_set1_ps(-2.0f * kSqrt2OverPi),
                                     _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), g3, g));
  const __m256 e = detail::exp8(inner);  // exp(-2 k (g + 0.044715 g^3))
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}
}  // namespace

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, gelu_mul8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
    alignas(32) float g[8] = {};
    alignas(32) float u[8] = {};
    alignas(32) float o[8];
    std::memcpy(g, gate + i, rest);
    std::memcpy(u, up + i, rest);
    _mm256_store_ps(o, gelu_mul8(_mm256_load_ps(g), _mm256_load_ps(u)));
    std::memcpy(out + i, o, rest);
  }
}
#else
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float inner = -2.0f * kSqrt2OverPi * (g + 0.044715f * g * g * g);
    out[i] = g / (1.0f + std::exp(inner)) * up[i];
  }
}
#endif

}  // namespace kvscope
