// AVX2 kernel for packed Q2_K..Q6_K (layout and arithmetic:
// kquant_packed.h). Each 16-row group is two halves of 8 lanes (bytes 0..31
// and 32..63 of every 64-byte vector of the layout). The integer dot of a
// sub-block is maddubs (u8 x s8 -> pairs summed in i16; u <= 63 and
// |q_x| <= 127, so two pairs of products stay below 2^15: exact) and madd
// with ones to i32, the same integer vpdpbusd gives; the float operations are
// the AVX-512 kernel's in the same order, so both give the same bits.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/byte_vectors_avx2.h"
#include "kernels/cpu/kquant_packed.h"

namespace kvscope::detail {
namespace {

using namespace avx2;

// Half h (lanes 8h..8h+7) of the 8 weight vectors of sub-block j.
template <TensorType K>
inline void load_quants(const uint8_t* s, const KquantLayout& l, int j, int h, __m256i (&wv)[8]) {
  const __m256i lo4 = _mm256_set1_epi8(0x0f);
  for (int k = 0; k < 4; ++k) {
    const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(s + l.lo + 256 * j + 64 * k + 32 * h));
    wv[k] = _mm256_and_si256(raw, lo4);
    wv[k + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4);
  }
  if constexpr (K == TensorType::Q5_K) {
    const __m256i hb = _mm256_load_si256(reinterpret_cast<const __m256i*>(s + l.hi + 64 * j + 32 * h));
    add_high_bit_plane(hb, wv);
  } else if constexpr (K == TensorType::Q6_K) {
    const __m256i bits45 = _mm256_set1_epi8(0x30);
    for (int kk = 0; kk < 2; ++kk) {
      const __m256i hb =
          _mm256_load_si256(reinterpret_cast<const __m256i*>(s + l.hi + 128 * j + 64 * kk + 32 * h));
      wv[4 * kk + 0] = or_masked(wv[4 * kk + 0], _mm256_slli_epi16(hb, 4), bits45);
      wv[4 * kk + 1] = or_masked(wv[4 * kk + 1], _mm256_slli_epi16(hb, 2), bits45);
      wv[4 * kk + 2] = or_masked(wv[4 * kk + 2], hb, bits45);
      wv[4 * kk + 3] = or_masked(wv[4 * kk + 3], _mm256_srli_epi16(hb, 2), bits45);
    }
  }
}

// Integer dot of vectors [v0, v0 + 4) with activation bytes qt[4 v0 ..].
inline __m256i dot4(const __m256i* wv, const int8_t* qt) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(wv[0], bcast_i32(qt)),
                                       _mm256_maddubs_epi16(wv[1], bcast_i32(qt + 4)));
  const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(wv[2], bcast_i32(qt + 8)),
                                       _mm256_maddubs_epi16(wv[3], bcast_i32(qt + 12)));
  return _mm256_add_epi32(_mm256_madd_epi16(p01, ones), _mm256_madd_epi16(p23, ones));
}

// Tokens [t0, t0 + TT) for one group; y points at the group's first column.
template <TensorType K, int TT>
void tile(const uint8_t* wg, const KquantLayout& l, int64_t num_sb, const KquantActs& a, int64_t t0, float* y,
          int64_t y_stride, int valid) {
  __m256 acc[TT][2];
  for (int t = 0; t < TT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  const int8_t* q = a.acts.q + t0 * a.acts.q_stride;
  const float* ds = a.acts.ds + t0 * a.acts.ds_stride;
  for (int64_t sb = 0; sb < num_sb; ++sb) {
    const uint8_t* s = wg + sb * l.bytes;
    for (int h = 0; h < 2; ++h) {
      const __m256 d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.d + 16 * h)));
      __m256 dmin = d;
      if constexpr (K == TensorType::Q2_K || K == TensorType::Q4_K || K == TensorType::Q5_K) {
        dmin = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.dmin + 16 * h)));
      }
      for (int j = 0; j < 8; ++j) {
        __m256i wv[8];
        load_quants<K>(s, l, j, h, wv);
        const int64_t b = 8 * sb + j;
        if constexpr (kquant_per16(K)) {
          const __m256i sc0 = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + l.sc + 32 * j + 8 * h)));
          const __m256i sc1 =
              _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + l.sc + 32 * j + 16 + 8 * h)));
          __m256i mn0 = sc0;
          __m256i mn1 = sc1;
          if constexpr (K == TensorType::Q2_K) {
            mn0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + l.mn + 32 * j + 8 * h)));
            mn1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + l.mn + 32 * j + 16 + 8 * h)));
          }
          for (int t = 0; t < TT; ++t) {
            const int8_t* qt = q + t * a.acts.q_stride + 32 * b;
            const int32_t* hs = a.half_sums + (t0 + t) * a.hs_stride + 2 * b;
            const __m256i dp0 = _mm256_sub_epi32(dot4(wv, qt), _mm256_set1_epi32(kquant_offset(K) * hs[0]));
            const __m256i dp1 = _mm256_sub_epi32(dot4(wv + 4, qt + 16), _mm256_set1_epi32(kquant_offset(K) * hs[1]));
            const __m256i isum = _mm256_add_epi32(_mm256_mullo_epi32(sc0, dp0), _mm256_mullo_epi32(sc1, dp1));
            const __m256 dx = _mm256_set1_ps(ds[t * a.acts.ds_stride + 2 * b]);
            acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, dx), acc[t][h]);
            if constexpr (K == TensorType::Q2_K) {
              const __m256i msum = _mm256_add_epi32(_mm256_mullo_epi32(mn0, _mm256_set1_epi32(hs[0])),
                                                    _mm256_mullo_epi32(mn1, _mm256_set1_epi32(hs[1])));
              acc[t][h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, dx), acc[t][h]);
            }
          }
        } else {
          const __m256 sf = _mm256_mul_ps(
              _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + l.sc + 16 * j + 8 * h)))),
              d);
          const __m256 mf = _mm256_mul_ps(
              _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + l.mn + 16 * j + 8 * h)))),
              dmin);
          for (int t = 0; t < TT; ++t) {
            const int8_t* qt = q + t * a.acts.q_stride + 32 * b;
            const __m256i dp = _mm256_add_epi32(dot4(wv, qt), dot4(wv + 4, qt + 16));
            const float* dst = ds + t * a.acts.ds_stride + 2 * b;
            acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dp), _mm256_mul_ps(sf, _mm256_set1_ps(dst[0])), acc[t][h]);
            acc[t][h] = _mm256_fnmadd_ps(mf, _mm256_set1_ps(dst[1]), acc[t][h]);
          }
        }
      }
    }
  }
  for (int t = 0; t < TT; ++t) store_row_group(acc[t], valid, y + t * y_stride);
}

template <TensorType K>
void run(TensorType type, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len,
         const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  const KquantLayout l = kquant_layout(type);
  const size_t group_bytes = kquant_group_bytes(type, row_len);
  const int64_t num_sb = row_len / 256;
  for (int64_t g = g0; g < g1; ++g) {
    const int valid = static_cast<int>(num_rows - 16 * g < 16 ? num_rows - 16 * g : 16);
    const uint8_t* wg = w + g * group_bytes;
    float* yg = y + 16 * g;
    int64_t t = 0;
    for (; t + 4 <= num_tokens; t += 4) tile<K, 4>(wg, l, num_sb, a, t, yg + t * y_stride, y_stride, valid);
    for (; t < num_tokens; ++t) tile<K, 1>(wg, l, num_sb, a, t, yg + t * y_stride, y_stride, valid);
  }
}

}  // namespace

void kquant_groups_avx2(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows,
                        int64_t row_len, const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  switch (t) {
    case TensorType::Q4_K: return run<TensorType::Q4_K>(t, w, g0, g1, num_rows, row_len, a, num_tokens, y, y_stride);
    case TensorType::Q5_K: return run<TensorType::Q5_K>(t, w, g0, g1, num_rows, row_len, a, num_tokens, y, y_stride);
    case TensorType::Q2_K: return run<TensorType::Q2_K>(t, w, g0, g1, num_rows, row_len, a, num_tokens, y, y_stride);
    case TensorType::Q3_K: return run<TensorType::Q3_K>(t, w, g0, g1, num_rows, row_len, a, num_tokens, y, y_stride);
    default: return run<TensorType::Q6_K>(t, w, g0, g1, num_rows, row_len, a, num_tokens, y, y_stride);
  }
}

}  // namespace kvscope::detail
