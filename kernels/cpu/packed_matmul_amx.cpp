// AMX kernel for PackedWeight at 16 tokens or more (layout:
// packed_matmul_internal.h). Only called when amx_enabled() (amx.h).
//
// The VNNI kernel (packed_matmul_avx512.cpp) spends 8 vpdpbusd and 8
// broadcasts per block, group and token on the integer dot products dp; a
// tile instruction computes them for 16 tokens x 16 rows at once:
//   A (tile 0) = 16 tokens x the block's 32 activation bytes (signed),
//   B (tile 1) = the block's 8 unpacked weight vectors (vector j, lane i =
//                row i's elements 4j..4j+3, unsigned): exactly AMX's
//                "4 consecutive K bytes per column" layout,
//   C (tile 2) = tdpbsud(A, B): C[t][i] = dp of token t and row i (exact int32).
// Then per token, as the VNNI kernel does with its dp:
//   acc = fma(cvt(dp), d_w * d_x, acc);  acc = fma(m_w, s_x, acc)
// dp is an exact integer either way, and the float sequence is the same, so
// this kernel and the VNNI kernel give the same bits (tested), and tokens
// beyond the last full 16 go through the VNNI kernel. Invariance holds.
//
// Nibble weights are unpacked once per group into a per-thread buffer
// (512 bytes per block, L2-resident) and reused by every 16-token tile;
// Q8_0's packed blocks are already in B's layout and load directly.
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
#include "kernels/cpu/packed_matmul_internal.h"

namespace kvscope::detail {
namespace {

constexpr int kTileTokens = 16;

// Block b's 8 weight vectors of one group, in B's layout (512 bytes per block).
void unpack_nibbles(const uint8_t* wg, int64_t num_blocks, uint8_t* out) {
  const __m512i lo4 = _mm512_set1_epi8(0x0f);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* blk = wg + b * packed_quant_bytes(PackedQuants::kNibbles);
    uint8_t* dst = out + b * packed_quant_bytes(PackedQuants::kBytes);
    for (int k = 0; k < 4; ++k) {
      const __m512i raw = _mm512_load_si512(blk + 64 * k);
      _mm512_store_si512(dst + 64 * k, _mm512_and_si512(raw, lo4));
      _mm512_store_si512(dst + 64 * (k + 4), _mm512_and_si512(_mm512_srli_epi16(raw, 4), lo4));
    }
  }
}

// One group (16 rows) against tokens [0, num_tokens), a multiple of 16.
// quants: block b's B tile at quants + 512 b.
template <bool kMin>
void group_tiles(const uint8_t* quants, const uint8_t* wg, const PackedGroupLayout& l, int64_t num_blocks,
                 __mmask16 mask, const QuantizedActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  alignas(64) int32_t dp[kTileTokens][16];
  for (int64_t t0 = 0; t0 < num_tokens; t0 += kTileTokens) {
    __m512 acc[kTileTokens];
    for (int t = 0; t < kTileTokens; ++t) acc[t] = _mm512_setzero_ps();
    const int8_t* q = a.q + t0 * a.q_stride;
    const float* ds = a.ds + t0 * a.ds_stride;
    for (int64_t b = 0; b < num_blocks; ++b) {
      _tile_loadd(0, q + 32 * b, a.q_stride);
      _tile_loadd(1, quants + b * packed_quant_bytes(PackedQuants::kBytes), 64);
      _tile_zero(2);
      _tile_dpbsud(2, 0, 1);
      _tile_stored(2, dp, 64);
      const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(wg + l.d + 32 * b)));
      __m512 mw = dw;
      if constexpr (kMin) mw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(wg + l.m + 32 * b)));
      for (int t = 0; t < kTileTokens; ++t) {
        const float* dst = ds + t * a.ds_stride + 2 * b;
        const __m512 dpf = _mm512_cvtepi32_ps(_mm512_load_si512(dp[t]));
        acc[t] = _mm512_fmadd_ps(dpf, _mm512_mul_ps(dw, _mm512_set1_ps(dst[0])), acc[t]);
        acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dst[1]), acc[t]);
      }
    }
    for (int t = 0; t < kTileTokens; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * y_stride, mask, acc[t]);
  }
}

template <bool kMin>
void run(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& l, int64_t g0, int64_t g1,
         int64_t num_rows, int64_t row_len, const QuantizedActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  configure_amx_tiles();
  const int64_t nb = row_len / 32;
  uint8_t* buf = f.quants == PackedQuants::kNibbles
                     ? thread_scratch(static_cast<size_t>(nb) * packed_quant_bytes(PackedQuants::kBytes))
                     : nullptr;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* wg = w + g * l.bytes;
    const uint8_t* quants = wg;
    if (buf) {
      unpack_nibbles(wg, nb, buf);
      quants = buf;
    }
    const __mmask16 mask = avx512::group_row_mask(g, num_rows);
    group_tiles<kMin>(quants, wg, l, nb, mask, a, num_tokens, y + 16 * g, y_stride);
  }
}

}  // namespace

void matmul_packed_groups_amx(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& l, int64_t g0,
                              int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                              int64_t num_tokens, float* y, int64_t y_stride) {
  const int64_t tiled = f.quants == PackedQuants::kFiveBit ? 0 : num_tokens / kTileTokens * kTileTokens;
  if (tiled > 0) {
    if (f.has_min) {
      run<true>(f, w, l, g0, g1, num_rows, row_len, acts, tiled, y, y_stride);
    } else {
      run<false>(f, w, l, g0, g1, num_rows, row_len, acts, tiled, y, y_stride);
    }
  }
  if (tiled < num_tokens) {  // the last tokens (and the 5-bit layout): the VNNI kernel, the same bits
    const QuantizedActs rest{acts.q + tiled * acts.q_stride, acts.ds + tiled * acts.ds_stride, acts.q_stride,
                             acts.ds_stride};
    matmul_packed_groups_avx512(f, w, l, g0, g1, num_rows, row_len, rest, num_tokens - tiled, y + tiled * y_stride,
                                y_stride);
  }
}

}  // namespace kvscope::detail
