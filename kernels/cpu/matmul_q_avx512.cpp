// AVX-512 VNNI integer matmul for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights.
//
// One step covers two weight blocks (64 elements) of R rows: each row's pair
// is unpacked to 64 unsigned bytes once and multiplied with TT tokens'
// activations by one vpdpbusd each. Per block the dot is
//   d_w * d_x * sum(q_w * q_x) + m_w * s_x      (s_x = d_x * sum(q_x)),
// where Q4_0 / Q5_0 / Q8_0 use m_w = -8 / -16 / -128 * d_w (Q8_0 weights are
// made unsigned by adding 128). The int32 lanes are converted to f32 and
// accumulated with a per-lane scale into one zmm per output; the m terms in
// one xmm. Every output sees the same sequence of operations whatever R/TT
// tile it is computed in, which makes results batch-invariant.
// GCC 12 warns about the deliberately undefined upper lanes inside its own
// AVX-512 intrinsics (_mm512_undefined_*, used by casts and reductions).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// The Fmt tables describe every field of each block format, also the ones a
// given kernel does not read; clang warns about those unread constants.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunused-const-variable"
#endif
#include "kernels/cpu/matmul_internal.h"

#include <immintrin.h>

#include "kernels/reference/half.h"

namespace kvscope::detail {
namespace {

template <TensorType T>
struct Fmt;
template <>
struct Fmt<TensorType::Q4_0> {
  static constexpr int kBytes = 18, kQs = 2, kQh = -1;
  static constexpr float kMin = -8.0f;  // m = kMin * d
};
template <>
struct Fmt<TensorType::Q4_1> {
  static constexpr int kBytes = 20, kQs = 4, kQh = -1;
  static constexpr float kMin = 0.0f;  // 0: m stored after d
};
template <>
struct Fmt<TensorType::Q5_0> {
  static constexpr int kBytes = 22, kQs = 6, kQh = 2;
  static constexpr float kMin = -16.0f;
};
template <>
struct Fmt<TensorType::Q5_1> {
  static constexpr int kBytes = 24, kQs = 8, kQh = 4;
  static constexpr float kMin = 0.0f;
};
template <>
struct Fmt<TensorType::Q8_0> {
  static constexpr int kBytes = 34, kQs = 2, kQh = -1;
  static constexpr float kMin = -128.0f;
};

// 64 unsigned weight bytes of blocks b0 and b1 (b1 absent when kTail), in the
// order the activations are stored (ActLayout::kPairHalves for 4/5-bit types,
// natural for Q8_0).
template <TensorType T, bool kTail>
inline __m512i unpack_weights(const uint8_t* b0, const uint8_t* b1) {
  using F = Fmt<T>;
  if constexpr (T == TensorType::Q8_0) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + F::kQs));
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    if constexpr (kTail) {
      return _mm512_zextsi256_si512(_mm256_xor_si256(lo, flip));
    } else {
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + F::kQs));
      return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1),
                              _mm512_set1_epi8(static_cast<char>(0x80)));
    }
  } else {
    const __m128i n0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + F::kQs));
    __m256i y;
    if constexpr (kTail) {
      y = _mm256_zextsi128_si256(n0);
    } else {
      y = _mm256_inserti128_si256(_mm256_castsi128_si256(n0),
                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + F::kQs)), 1);
    }
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(y), _mm256_srli_epi16(y, 4), 1);
    z = _mm512_and_si512(z, _mm512_set1_epi8(0x0f));
    if constexpr (F::kQh >= 0) {
      const uint64_t h0 = load_u32(b0 + F::kQh);
      const uint64_t h1 = kTail ? 0 : load_u32(b1 + F::kQh);
      const uint64_t mask = (h0 & 0xffff) | ((h1 & 0xffff) << 16) | ((h0 >> 16) << 32) | ((h1 >> 16) << 48);
      z = _mm512_mask_add_epi8(z, static_cast<__mmask64>(mask), z, _mm512_set1_epi8(16));
    }
    return z;
  }
}

// [d0, m0, d1, m1] as f32 for blocks b0, b1 (zeros for b1 when kTail).
template <TensorType T, bool kTail>
inline __m128 unpack_scales(const uint8_t* b0, const uint8_t* b1) {
  using F = Fmt<T>;
  if constexpr (F::kMin == 0.0f) {  // d and m stored as two f16
    const uint32_t a = load_u32(b0);
    const uint32_t b = kTail ? 0u : load_u32(b1);
    return _mm_cvtph_ps(_mm_set_epi32(0, 0, static_cast<int>(b), static_cast<int>(a)));
  } else {
    const uint32_t a = load_u16(b0) * 0x10001u;
    const uint32_t b = kTail ? 0u : load_u16(b1) * 0x10001u;
    const __m128 dd = _mm_cvtph_ps(_mm_set_epi32(0, 0, static_cast<int>(b), static_cast<int>(a)));
    return _mm_mul_ps(dd, _mm_setr_ps(1.0f, F::kMin, 1.0f, F::kMin));
  }
}

template <TensorType T>
inline __m512i scale_index() {
  if constexpr (T == TensorType::Q8_0) {
    return _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
  } else {
    return _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2);
  }
}

template <TensorType T, int R, int TT, bool kTail>
inline void step(const uint8_t* w, size_t w_stride, int64_t k, const int8_t* q, int64_t q_stride,
                 const float* ds, int64_t ds_stride, __m512 (&acc)[R][TT], __m128 (&macc)[R][TT]) {
  constexpr int kBytes = Fmt<T>::kBytes;
  const __m512i idx = scale_index<T>();
  __m512i wq[R];
  __m128 dm[R];
  for (int r = 0; r < R; ++r) {
    const uint8_t* b0 = w + r * w_stride + k * kBytes;
    wq[r] = unpack_weights<T, kTail>(b0, b0 + kBytes);
    dm[r] = unpack_scales<T, kTail>(b0, b0 + kBytes);
  }
  for (int t = 0; t < TT; ++t) {
    const __m512i xq = _mm512_loadu_si512(q + t * q_stride + k * 32);
    const __m128 xds = _mm_loadu_ps(ds + t * ds_stride + 2 * k);
    for (int r = 0; r < R; ++r) {
      const __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[r], xq);
      const __m128 sc = _mm_mul_ps(dm[r], xds);
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp),
                                  _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(sc)), acc[r][t]);
      macc[r][t] = _mm_add_ps(macc[r][t], sc);
    }
  }
}

template <TensorType T, int R, int TT>
void tile(const uint8_t* w, size_t w_stride, int64_t num_blocks, const int8_t* q, int64_t q_stride,
          const float* ds, int64_t ds_stride, float* y, int64_t y_stride) {
  __m512 acc[R][TT];
  __m128 macc[R][TT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) {
      acc[r][t] = _mm512_setzero_ps();
      macc[r][t] = _mm_setzero_ps();
    }
  }
  int64_t k = 0;
  for (; k + 2 <= num_blocks; k += 2) step<T, R, TT, false>(w, w_stride, k, q, q_stride, ds, ds_stride, acc, macc);
  if (k < num_blocks) step<T, R, TT, true>(w, w_stride, k, q, q_stride, ds, ds_stride, acc, macc);
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) {
      alignas(16) float m[4];
      _mm_store_ps(m, macc[r][t]);
      y[t * y_stride + r] = _mm512_reduce_add_ps(acc[r][t]) + (m[1] + m[3]);
    }
  }
}

template <TensorType T>
void run(const uint8_t* w, size_t w_stride, int64_t num_rows, int64_t row_len, const QuantizedActs& a,
         int64_t num_tokens, float* y, int64_t y_stride) {
  const int64_t nb = row_len / 32;
  constexpr int kRows = 4;
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

ActLayout act_layout_avx512(TensorType type) {
  return type == TensorType::Q8_0 ? ActLayout::kNatural : ActLayout::kPairHalves;
}

void matmul_q_tile_avx512(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
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
