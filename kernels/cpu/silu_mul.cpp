// silu_mul; see silu_mul.h. The tail goes through a padded 8-lane buffer so
// every element takes the same vector code path.
#include "kernels/cpu/silu_mul.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/vec_exp.h"

namespace kvscope {

#if defined(__x86_64__) || defined(_M_X64)
namespace {
inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 e = detail::exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}
}  // namespace

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, silu_mul8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
    alignas(32) float g[8] = {};
    alignas(32) float u[8] = {};
    alignas(32) float o[8];
    std::memcpy(g, gate + i, rest);
    std::memcpy(u, up + i, rest);
    _mm256_store_ps(o, silu_mul8(_mm256_load_ps(g), _mm256_load_ps(u)));
    std::memcpy(out + i, o, rest);
  }
}
#else
void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}
#endif

}  // namespace kvscope
