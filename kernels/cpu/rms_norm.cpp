// rms_norm; see rms_norm.h. Sum of squares in 8 f32 lanes (+ a scalar tail in
// a fixed order), then one scale per row.
#include "kernels/cpu/rms_norm.h"

#include <cmath>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace kvscope {
namespace {

float sum_squares(const float* x, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#if defined(__x86_64__) || defined(_M_X64)
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i);
    const __m256 b = _mm256_loadu_ps(x + i + 8);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
    acc1 = _mm256_fmadd_ps(b, b, acc1);
  }
  const __m256 acc = _mm256_add_ps(acc0, acc1);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  sum = _mm_cvtss_f32(s);
#endif
  for (; i < n; ++i) sum += x[i] * x[i];
  return sum;
}

}  // namespace

float rms_norm_scale(const float* x, int64_t n, float eps) {
  return 1.0f / std::sqrt(sum_squares(x, n) / static_cast<float>(n) + eps);
}

void rms_norm(const float* x, const float* weight, int64_t num_tokens, int64_t n, float eps, float* out) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* xt = x + t * n;
    float* ot = out + t * n;
    const float scale = rms_norm_scale(xt, n, eps);
    for (int64_t i = 0; i < n; ++i) ot[i] = xt[i] * scale * weight[i];
  }
}

}  // namespace kvscope
