// 8-bit quantisation of activation rows for the integer matmul kernels:
// blocks of 32, d = max|x| / 127, q = round-to-nearest-even(x / d), and
// s = d * sum(q) for the weights' offset / min term. Each token row is
// quantised on its own, so a row's result never depends on the batch.
// With a RowNorm the row's elements are scaled as rms_norm() scales them,
// (x * scale) * weight, two roundings in that order, before the block max:
// the quantised bytes equal those of the normed row rms_norm() would write.
#include "kernels/cpu/matmul_internal.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstring>

namespace kvscope::detail {

void quantize_acts_avx2(const float* x, int64_t row_len, int64_t t0, int64_t t1, ActLayout layout,
                        int8_t* q, int64_t q_stride, float* ds, int64_t ds_stride, const RowNorm* norm) {
  const int64_t num_blocks = row_len / 32;
  const int64_t num_padded = padded_blocks(row_len);
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256i pack_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * row_len;
    int8_t* qt = q + t * q_stride;
    float* dst = ds + t * ds_stride;
    const __m256 scale = _mm256_set1_ps(norm ? rms_norm_scale(xt, row_len, norm->eps) : 1.0f);
    for (int64_t b = 0; b < num_blocks; ++b) {
      const float* xb = xt + 32 * b;
      __m256 v[4];
      for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
      if (norm) {
        const float* wb = norm->weight + 32 * b;
        for (int i = 0; i < 4; ++i) v[i] = _mm256_mul_ps(_mm256_mul_ps(v[i], scale), _mm256_loadu_ps(wb + 8 * i));
      }
      __m256 amax = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign_mask, v[0]),
                                                _mm256_andnot_ps(sign_mask, v[1])),
                                  _mm256_max_ps(_mm256_andnot_ps(sign_mask, v[2]),
                                                _mm256_andnot_ps(sign_mask, v[3])));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
      const float max_abs = _mm_cvtss_f32(m4);
      const float d = max_abs / 127.0f;
      const float id = (max_abs > 0.0f) ? 127.0f / max_abs : 0.0f;
      const __m256 vid = _mm256_set1_ps(id);
      __m256i iv[4];
      for (int i = 0; i < 4; ++i) iv[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
      const __m256i sum4 = _mm256_add_epi32(_mm256_add_epi32(iv[0], iv[1]), _mm256_add_epi32(iv[2], iv[3]));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum4), _mm256_extracti128_si256(sum4, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
      const int qsum = _mm_cvtsi128_si32(s4);
      const __m256i p16a = _mm256_packs_epi32(iv[0], iv[1]);
      const __m256i p16b = _mm256_packs_epi32(iv[2], iv[3]);
      const __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b), pack_order);
      if (layout == ActLayout::kNatural) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qt + 32 * b), p8);
      } else {
        int8_t* pair = qt + 64 * (b / 2) + 16 * (b % 2);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(pair), _mm256_castsi256_si128(p8));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(pair + 32), _mm256_extracti128_si256(p8, 1));
      }
      dst[2 * b] = d;
      dst[2 * b + 1] = d * static_cast<float>(qsum);
    }
    for (int64_t b = num_blocks; b < num_padded; ++b) {  // zero padding block
      if (layout == ActLayout::kNatural) {
        std::memset(qt + 32 * b, 0, 32);
      } else {
        int8_t* pair = qt + 64 * (b / 2) + 16 * (b % 2);
        std::memset(pair, 0, 16);
        std::memset(pair + 32, 0, 16);
      }
      dst[2 * b] = 0.0f;
      dst[2 * b + 1] = 0.0f;
    }
  }
}

}  // namespace kvscope::detail

#endif  // x86-64
