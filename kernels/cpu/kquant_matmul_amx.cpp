// AMX kernel for packed Q4_K, Q5_K and Q6_K (layout and arithmetic:
// kquant_packed.h) at 16 tokens or more; only called when amx_enabled().
// The same idea as packed_matmul_amx.cpp: the tile unit computes the exact
// integer dot products for 16 tokens x 16 rows, and the scale / min terms
// are the VNNI kernel's own sequence (kquant_matmul_avx512.cpp), so the two
// give the same bits (tested) and tokens past the last whole 16 go through
// the VNNI kernel. Per sub-block of 32:
//   Q4_K / Q5_K: one tdpbsud over the 32 bytes (tiles 0, 1 -> 2);
//   Q6_K (scales per 16): one tdpbsud per half (tiles 3, 4 -> 2 and 5), then
//     isum = sc0 (dp0 - 32 S_lo) + sc1 (dp1 - 32 S_hi) in int32 lanes.
// Each group's sub-blocks are unpacked once (kquant_load_quants) into a
// per-thread buffer, 512 bytes each, and reused by every 16-token tile.
// Q2_K and Q3_K (rare) stay on the VNNI kernel.
// GCC 12 warns about the deliberately undefined upper lanes inside its own
// AVX-512 intrinsics (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/byte_vectors_avx512.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/cpu/kquant_packed.h"
#include "kernels/cpu/kquant_unpack_avx512.h"

namespace kvscope::detail {
namespace {

constexpr int kTileTokens = 16;
constexpr size_t kSubBlockBytes = 512;  // 8 unpacked weight vectors of 64 bytes

// One group (16 rows) against tokens [0, num_tokens), a multiple of 16.
// unpacked: sub-block b's 8 vectors at unpacked + 512 b; wg: the packed group
// (scales, mins, d, dmin).
template <TensorType K>
void group_tiles(const uint8_t* unpacked, const uint8_t* wg, const KquantLayout& l, int64_t num_sb, __mmask16 mask,
                 const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  alignas(64) int32_t dp[kTileTokens][16];
  alignas(64) int32_t dp_hi[kTileTokens][16];
  const int64_t q_stride = a.acts.q_stride, ds_stride = a.acts.ds_stride;
  for (int64_t t0 = 0; t0 < num_tokens; t0 += kTileTokens) {
    __m512 acc[kTileTokens];
    for (int t = 0; t < kTileTokens; ++t) acc[t] = _mm512_setzero_ps();
    const int8_t* q = a.acts.q + t0 * q_stride;
    const float* ds = a.acts.ds + t0 * ds_stride;
    for (int64_t sb = 0; sb < num_sb; ++sb) {
      const uint8_t* s = wg + sb * l.bytes;
      const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s + l.d)));
      for (int j = 0; j < 8; ++j) {
        const int64_t b = 8 * sb + j;
        const uint8_t* wb = unpacked + b * kSubBlockBytes;
        if constexpr (K == TensorType::Q6_K) {
          _tile_loadd(3, q + 32 * b, q_stride);
          _tile_loadd(4, wb, 64);
          _tile_zero(2);
          _tile_dpbsud(2, 3, 4);
          _tile_loadd(3, q + 32 * b + 16, q_stride);
          _tile_loadd(4, wb + 256, 64);
          _tile_zero(5);
          _tile_dpbsud(5, 3, 4);
          _tile_stored(2, dp, 64);
          _tile_stored(5, dp_hi, 64);
          const __m512i sc0 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.sc + 32 * j)));
          const __m512i sc1 =
              _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.sc + 32 * j + 16)));
          for (int t = 0; t < kTileTokens; ++t) {
            const int32_t* hs = a.half_sums + (t0 + t) * a.hs_stride + 2 * b;
            const __m512i dp0 = _mm512_sub_epi32(_mm512_load_si512(dp[t]), _mm512_set1_epi32(kquant_offset(K) * hs[0]));
            const __m512i dp1 =
                _mm512_sub_epi32(_mm512_load_si512(dp_hi[t]), _mm512_set1_epi32(kquant_offset(K) * hs[1]));
            const __m512i isum = _mm512_add_epi32(_mm512_mullo_epi32(sc0, dp0), _mm512_mullo_epi32(sc1, dp1));
            const __m512 dx = _mm512_set1_ps(ds[t * ds_stride + 2 * b]);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, dx), acc[t]);
          }
        } else {
          _tile_loadd(0, q + 32 * b, q_stride);
          _tile_loadd(1, wb, 64);
          _tile_zero(2);
          _tile_dpbsud(2, 0, 1);
          _tile_stored(2, dp, 64);
          const __m512 dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s + l.dmin)));
          const __m512 sf = _mm512_mul_ps(
              _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.sc + 16 * j)))),
              d);
          const __m512 mf = _mm512_mul_ps(
              _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s + l.mn + 16 * j)))),
              dmin);
          for (int t = 0; t < kTileTokens; ++t) {
            const float* dst = ds + t * ds_stride + 2 * b;
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(dp[t])), _mm512_mul_ps(sf, _mm512_set1_ps(dst[0])),
                                     acc[t]);
            acc[t] = _mm512_fnmadd_ps(mf, _mm512_set1_ps(dst[1]), acc[t]);
          }
        }
      }
    }
    for (int t = 0; t < kTileTokens; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * y_stride, mask, acc[t]);
  }
}

template <TensorType K>
void run(const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len, const KquantActs& a,
         int64_t num_tokens, float* y, int64_t y_stride) {
  configure_amx_tiles();
  const KquantLayout l = kquant_layout(K);
  const size_t group_bytes = kquant_group_bytes(K, row_len);
  const int64_t num_sb = row_len / 256;
  uint8_t* buf = thread_scratch(static_cast<size_t>(num_sb) * 8 * kSubBlockBytes);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* wg = w + g * group_bytes;
    for (int64_t sb = 0; sb < num_sb; ++sb) {
      for (int j = 0; j < 8; ++j) {
        __m512i wv[8];
        kquant_load_quants<K>(wg + sb * l.bytes, l, j, wv);
        uint8_t* dst = buf + (8 * sb + j) * kSubBlockBytes;
        for (int v = 0; v < 8; ++v) _mm512_store_si512(dst + 64 * v, wv[v]);
      }
    }
    const __mmask16 mask = avx512::group_row_mask(g, num_rows);
    group_tiles<K>(buf, wg, l, num_sb, mask, a, num_tokens, y + 16 * g, y_stride);
  }
}

}  // namespace

void kquant_groups_amx(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len,
                       const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  const bool tiles = t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K;
  const int64_t tiled = tiles ? num_tokens / kTileTokens * kTileTokens : 0;
  if (tiled > 0) {
    switch (t) {
      case TensorType::Q4_K: run<TensorType::Q4_K>(w, g0, g1, num_rows, row_len, a, tiled, y, y_stride); break;
      case TensorType::Q5_K: run<TensorType::Q5_K>(w, g0, g1, num_rows, row_len, a, tiled, y, y_stride); break;
      default: run<TensorType::Q6_K>(w, g0, g1, num_rows, row_len, a, tiled, y, y_stride); break;
    }
  }
  if (tiled < num_tokens) {  // the last tokens, and Q2_K / Q3_K: the VNNI kernel, the same bits
    const QuantizedActs rest{a.acts.q + tiled * a.acts.q_stride, a.acts.ds + tiled * a.acts.ds_stride,
                             a.acts.q_stride, a.acts.ds_stride};
    const KquantActs rest_k{rest, a.half_sums ? a.half_sums + tiled * a.hs_stride : nullptr, a.hs_stride};
    kquant_groups_avx512(t, w, g0, g1, num_rows, row_len, rest_k, num_tokens - tiled, y + tiled * y_stride, y_stride);
  }
}

}  // namespace kvscope::detail
