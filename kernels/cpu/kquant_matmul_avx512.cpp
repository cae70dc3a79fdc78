// AVX-512 VNNI kernel for packed Q2_K..Q6_K (layout and arithmetic:
// kquant_packed.h). Lane i of every vector is row i of a 16-row group; per
// sub-block of 32 the 8 weight vectors (unsigned 4..6-bit quants, unpacked
// from the nibble and high-bit planes) go through vpdpbusd against broadcast
// activation bytes, then the scale / min terms as in the header. A tile is
// RG groups x TT tokens; each lane sees the same operations in every tile
// shape, so results are batch- and thread-invariant.
// GCC 12 warns about the deliberately undefined upper lanes inside its own
// AVX-512 intrinsics (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/byte_vectors_avx512.h"
#include "kernels/cpu/kquant_packed.h"
#include "kernels/cpu/kquant_unpack_avx512.h"

namespace kvscope::detail {
namespace {

using namespace avx512;

template <TensorType K, int RG, int TT>
void tile(const uint8_t* w, size_t group_bytes, const KquantLayout& l, int64_t num_sb, const KquantActs& a,
          int64_t t0, float* y, int64_t y_stride, const __mmask16 (&masks)[RG]) {
  __m512 acc[RG][TT];
  for (int g = 0; g < RG; ++g) {
    for (int t = 0; t < TT; ++t) acc[g][t] = _mm512_setzero_ps();
  }
  const int8_t* q = a.acts.q + t0 * a.acts.q_stride;
  const float* ds = a.acts.ds + t0 * a.acts.ds_stride;
  for (int64_t sb = 0; sb < num_sb; ++sb) {
    for (int g = 0; g < RG; ++g) {
      const uint8_t* s = w + g * group_bytes + sb * l.bytes;
      const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s + l.d)));
      __m512 dmin = d;
      if constexpr (K == TensorType::Q2_K || K == TensorType::Q4_K || K == TensorType::Q5_K) {
        dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s + l.dmin)));
      }
      for (int j = 0; j < 8; ++j) {
        if constexpr (TT == 1) {
          // One token streams the weights: fetch the next super-block's
          // eighth j ahead of its use (harmless past the end).
          const size_t chunk = (l.bytes / 8 + 63) / 64 * 64;
          const char* next = reinterpret_cast<const char*>(s + l.bytes + chunk * static_cast<size_t>(j));
          for (size_t off = 0; off < chunk; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
        }
        __m512i wv[8];
        kquant_load_quants<K>(s, l, j, wv);
        const int64_t b = 8 * sb + j;
        if constexpr (kquant_per16(K)) {
          const __m512i sc0 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.sc + 32 * j)));
          const __m512i sc1 =
              _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.sc + 32 * j + 16)));
          __m512i mn0 = sc0;
          __m512i mn1 = sc1;
          if constexpr (K == TensorType::Q2_K) {
            mn0 = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.mn + 32 * j)));
            mn1 = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.mn + 32 * j + 16)));
          }
          for (int t = 0; t < TT; ++t) {
            const int8_t* qt = q + t * a.acts.q_stride + 32 * b;
            __m512i dp0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[0], bcast_i32(qt));
            __m512i dp1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[4], bcast_i32(qt + 16));
            for (int v = 1; v < 4; ++v) {
              dp0 = _mm512_dpbusd_epi32(dp0, wv[v], bcast_i32(qt + 4 * v));
              dp1 = _mm512_dpbusd_epi32(dp1, wv[v + 4], bcast_i32(qt + 16 + 4 * v));
            }
            const int32_t* hs = a.half_sums + (t0 + t) * a.hs_stride + 2 * b;
            if constexpr (kquant_offset(K) != 0) {
              dp0 = _mm512_sub_epi32(dp0, _mm512_set1_epi32(kquant_offset(K) * hs[0]));
              dp1 = _mm512_sub_epi32(dp1, _mm512_set1_epi32(kquant_offset(K) * hs[1]));
            }
            const __m512i isum = _mm512_add_epi32(_mm512_mullo_epi32(sc0, dp0), _mm512_mullo_epi32(sc1, dp1));
            const __m512 dx = _mm512_set1_ps(ds[t * a.acts.ds_stride + 2 * b]);
            acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, dx), acc[g][t]);
            if constexpr (K == TensorType::Q2_K) {
              const __m512i msum = _mm512_add_epi32(_mm512_mullo_epi32(mn0, _mm512_set1_epi32(hs[0])),
                                                    _mm512_mullo_epi32(mn1, _mm512_set1_epi32(hs[1])));
              acc[g][t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, dx), acc[g][t]);
            }
          }
        } else {
          const __m512 sf = _mm512_mul_ps(
              _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.sc + 16 * j)))),
              d);
          const __m512 mf = _mm512_mul_ps(
              _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.mn + 16 * j)))),
              dmin);
          for (int t = 0; t < TT; ++t) {
            const int8_t* qt = q + t * a.acts.q_stride + 32 * b;
            __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[0], bcast_i32(qt));
            for (int v = 1; v < 8; ++v) dp = _mm512_dpbusd_epi32(dp, wv[v], bcast_i32(qt + 4 * v));
            const float* dst = ds + t * a.acts.ds_stride + 2 * b;
            acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(sf, _mm512_set1_ps(dst[0])), acc[g][t]);
            acc[g][t] = _mm512_fnmadd_ps(mf, _mm512_set1_ps(dst[1]), acc[g][t]);
          }
        }
      }
    }
  }
  for (int g = 0; g < RG; ++g) {
    for (int t = 0; t < TT; ++t) _mm512_mask_storeu_ps(y + t * y_stride + 16 * g, masks[g], acc[g][t]);
  }
}

// Groups [g, g + RG) against every token: TT-token tiles, then 4-token tiles
// (TT > 4), then 1-token tiles.
template <TensorType K, int RG, int TT>
void token_tiles(const uint8_t* w, size_t group_bytes, const KquantLayout& l, int64_t g, int64_t num_rows,
                 int64_t num_sb, const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  __mmask16 masks[RG];
  for (int i = 0; i < RG; ++i) masks[i] = group_row_mask(g + i, num_rows);
  const uint8_t* wg = w + g * group_bytes;
  float* yg = y + 16 * g;
  int64_t t = 0;
  for (; t + TT <= num_tokens; t += TT) {
    tile<K, RG, TT>(wg, group_bytes, l, num_sb, a, t, yg + t * y_stride, y_stride, masks);
  }
  if constexpr (TT > 4) {
    for (; t + 4 <= num_tokens; t += 4) {
      for (int i = 0; i < RG; ++i) {
        const __mmask16 m1[1] = {masks[i]};
        tile<K, 1, 4>(wg + i * group_bytes, group_bytes, l, num_sb, a, t, yg + t * y_stride + 16 * i, y_stride, m1);
      }
    }
  }
  if constexpr (TT > 1) {
    for (; t < num_tokens; ++t) {
      for (int i = 0; i < RG; ++i) {
        const __mmask16 m1[1] = {masks[i]};
        tile<K, 1, 1>(wg + i * group_bytes, group_bytes, l, num_sb, a, t, yg + t * y_stride + 16 * i, y_stride, m1);
      }
    }
  }
}

template <TensorType K>
void run(TensorType type, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len,
         const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  const KquantLayout l = kquant_layout(type);
  const size_t group_bytes = kquant_group_bytes(type, row_len);
  const int64_t num_sb = row_len / 256;
  int64_t g = g0;
  if (num_tokens < 4) {
    for (; g + 4 <= g1; g += 4) token_tiles<K, 4, 1>(w, group_bytes, l, g, num_rows, num_sb, a, num_tokens, y, y_stride);
    for (; g < g1; ++g) token_tiles<K, 1, 1>(w, group_bytes, l, g, num_rows, num_sb, a, num_tokens, y, y_stride);
    return;
  }
  // Many tokens: 8 per tile (then 4, then 1) so a group's unpacked weights
  // serve 8 tokens; 8 accumulators + 8 weight vectors fit the 32 registers.
  for (; g < g1; ++g) token_tiles<K, 1, 8>(w, group_bytes, l, g, num_rows, num_sb, a, num_tokens, y, y_stride);
}

}  // namespace

void kquant_groups_avx512(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows,
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
