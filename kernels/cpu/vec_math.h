// Small vector helpers shared by CPU kernels. Each has one fixed reduction
// order (eight lanes, then a fixed horizontal sum), so a given input always
// gives the same bits, whatever calls it.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace kvscope {

inline float dot_f32(const float* a, const float* b, int32_t n) {
  int32_t i = 0;
  float tail = 0.0f;
#if defined(__AVX2__) && defined(__FMA__)
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  const __m256 acc = _mm256_add_ps(acc0, acc1);
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 quad = _mm_add_ps(half, _mm_movehl_ps(half, half));
  tail = _mm_cvtss_f32(_mm_add_ss(quad, _mm_shuffle_ps(quad, quad, 1)));
#endif
  for (; i < n; ++i) tail += a[i] * b[i];
  return tail;
}

// y += w * x, elementwise (no reduction, so any vector width gives the same bits
// as long as FMA is used consistently).
inline void axpy_f32(float* y, float w, const float* x, int32_t n) {
  int32_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 vw = _mm256_set1_ps(w);
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vw, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] = std::fma(w, x[i], y[i]);
#else
  for (; i < n; ++i) y[i] += w * x[i];
#endif
}

}  // namespace kvscope
