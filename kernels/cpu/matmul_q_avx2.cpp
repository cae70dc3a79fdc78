// AVX2 integer matmul for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights (the x86-64
// baseline; matmul_q_avx512.cpp is the fast path). One step is one block of 32:
// the weight block is unpacked to 32 unsigned bytes (Q8_0: |w| with the sign
// moved onto x) and multiplied by maddubs + madd into 8 int32 lanes, then
//   acc += f32(lanes) * (d_w * d_x),   macc += m_w * s_x,
// with m_w = -8 / -16 * d_w for Q4_0 / Q5_0, 0 for Q8_0. The same per-output
// sequence runs in every R x TT tile, so results are batch-invariant.
// The Fmt tables describe every field of each block format, also the ones a
// given kernel does not read; clang warns about those unread constants.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunused-const-variable"
#endif
#include "kernels/cpu/matmul_internal.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "kernels/reference/half.h"

namespace kvscope::detail {
namespace {

template <TensorType T>
struct Fmt;
template <>
struct Fmt<TensorType::Q4_0> {
  static constexpr int kBytes = 18, kQs = 2, kQh = -1;
  static constexpr float kMin = -8.0f;
  static constexpr bool kHasM = false;
};
template <>
struct Fmt<TensorType::Q4_1> {
  static constexpr int kBytes = 20, kQs = 4, kQh = -1;
  static constexpr float kMin = 0.0f;
  static constexpr bool kHasM = true;
};
template <>
struct Fmt<TensorType::Q5_0> {
  static constexpr int kBytes = 22, kQs = 6, kQh = 2;
  static constexpr float kMin = -16.0f;
  static constexpr bool kHasM = false;
};
template <>
struct Fmt<TensorType::Q5_1> {
  static constexpr int kBytes = 24, kQs = 8, kQh = 4;
  static constexpr float kMin = 0.0f;
  static constexpr bool kHasM = true;
};
template <>
struct Fmt<TensorType::Q8_0> {
  static constexpr int kBytes = 34, kQs = 2, kQh = -1;
  static constexpr float kMin = 0.0f;  // signed weights: no offset term
  static constexpr bool kHasM = false;
};

// The block's 32 weights in natural order: unsigned for 4/5-bit types, raw
// signed bytes for Q8_0.
template <TensorType T>
inline __m256i load_weights(const uint8_t* b) {
  using F = Fmt<T>;
  if constexpr (T == TensorType::Q8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + F::kQs));
  } else {
    const __m128i n = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + F::kQs));
    __m256i z = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(n, 4), n), _mm256_set1_epi8(0x0f));
    if constexpr (F::kQh >= 0) {
      // Spread the 32 high bits to bytes: byte j gets bit j of qh, as 0x10.
      const uint32_t qh = load_u32(b + F::kQh);
      const __m256i bytes = _mm256_shuffle_epi8(
          _mm256_set1_epi32(static_cast<int>(qh)),
          _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
      const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
      z = _mm256_or_si256(z, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
    }
    return z;
  }
}

// [d, m] of the block (m = kMin * d for types without a stored m).
template <TensorType T>
inline __m128 load_scales(const uint8_t* b) {
  using F = Fmt<T>;
  if constexpr (F::kHasM) {
    return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_u32(b))));
  } else {
    const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_u16(b) * 0x10001u)));
    return _mm_mul_ps(dd, _mm_setr_ps(1.0f, F::kMin, 0.0f, 0.0f));
  }
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <TensorType T, int R, int TT>
void tile(const uint8_t* w, size_t w_stride, int64_t num_blocks, const int8_t* q, int64_t q_stride,
          const float* ds, int64_t ds_stride, float* y, int64_t y_stride) {
  constexpr int kBytes = Fmt<T>::kBytes;
  __m256 acc[R][TT];
  __m128 macc[R][TT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) {
      acc[r][t] = _mm256_setzero_ps();
      macc[r][t] = _mm_setzero_ps();
    }
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t k = 0; k < num_blocks; ++k) {
    __m256i wq[R];
    __m128 dm[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* b = w + r * w_stride + k * kBytes;
      wq[r] = load_weights<T>(b);
      dm[r] = load_scales<T>(b);
    }
    for (int t = 0; t < TT; ++t) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + t * q_stride + k * 32));
      const __m128 xds = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(ds + t * ds_stride + 2 * k)));
      for (int r = 0; r < R; ++r) {
        __m256i p16;
        if constexpr (T == TensorType::Q8_0) {
          p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(wq[r], wq[r]), _mm256_sign_epi8(xq, wq[r]));
        } else {
          p16 = _mm256_maddubs_epi16(wq[r], xq);
        }
        const __m256i dp = _mm256_madd_epi16(p16, ones);
        const __m128 sc = _mm_mul_ps(dm[r], xds);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dp), _mm256_broadcastss_ps(sc), acc[r][t]);
        if constexpr (T != TensorType::Q8_0) macc[r][t] = _mm_add_ps(macc[r][t], sc);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) {
      alignas(16) float m[4];
      _mm_store_ps(m, macc[r][t]);
      y[t * y_stride + r] = hsum8(acc[r][t]) + m[1];
    }
  }
}

template <TensorType T>
void run(const uint8_t* w, size_t w_stride, int64_t num_rows, int64_t row_len, const QuantizedActs& a,
         int64_t num_tokens, float* y, int64_t y_stride) {
  const int64_t nb = row_len / 32;
  constexpr int kRows = 2;
  int64_t r = 0;
  for (; r + kRows <= num_rows; r += kRows) {
    const uint8_t* wr = w + r * w_stride;
    int64_t t = 0;
    for (; t + 2 <= num_tokens; t += 2) {
      tile<T, kRows, 2>(wr, w_stride, nb, a.q + t * a.q_stride, a.q_stride, a.ds + t * a.ds_stride,
                        a.ds_stride, y + t * y_stride + r, y_stride);
    }
    if (t < num_tokens) {
      tile<T, kRows, 1>(wr, w_stride, nb, a.q + t * a.q_stride, a.q_stride, a.ds + t * a.ds_stride,
                        a.ds_stride, y + t * y_stride + r, y_stride);
    }
  }
  for (; r < num_rows; ++r) {
    for (int64_t t = 0; t < num_tokens; ++t) {
      tile<T, 1, 1>(w + r * w_stride, w_stride, nb, a.q + t * a.q_stride, a.q_stride,
                    a.ds + t * a.ds_stride, a.ds_stride, y + t * y_stride + r, y_stride);
    }
  }
}

}  // namespace

ActLayout act_layout_avx2(TensorType) { return ActLayout::kNatural; }

void matmul_q_tile_avx2(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                        int64_t row_len, const QuantizedActs& acts, int64_t num_tokens, float* y,
                        int64_t y_stride) {
  switch (type) {
    case TensorType::Q4_0: return run<TensorType::Q4_0>(w, w_stride, num_rows, row_len, acts, num_tokens, y, y_stride);
    case TensorType::Q4_1: return run<TensorType::Q4_1>(w, w_stride, num_rows, row_len, acts, num_tokens, y, y_stride);
    case TensorType::Q5_0: return run<TensorType::Q5_0>(w, w_stride, num_rows, row_len, acts, num_tokens, y, y_stride);
    case TensorType::Q5_1: return run<TensorType::Q5_1>(w, w_stride, num_rows, row_len, acts, num_tokens, y, y_stride);
    case TensorType::Q8_0: return run<TensorType::Q8_0>(w, w_stride, num_rows, row_len, acts, num_tokens, y, y_stride);
    default: return;
  }
}

}  // namespace kvscope::detail

#endif  // x86-64
