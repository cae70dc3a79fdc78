// AVX-512 VNNI kernel for PackedWeight (layout: packed_matmul_internal.h).
// Every layout unpacks to the same 8 unsigned-byte vectors per block
// (kFiveBit: nibbles, then bit v of the high plane into vector v's bit 4), so
// the arithmetic below is the same for all of them.
//
// Lane i of every vector is row i of a 16-row group. Per 32-element block,
// group and token:
//   dp   = sum_j vpdpbusd(w_j, broadcast(q_x[4j..4j+3]))   (8 x, int32, exact)
//   acc  = fma(cvt(dp), d_w * d_x, acc)
//   acc  = fma(m_w, s_x, acc)        (m_w = d_w and s_x pre-scaled by the
//                                     offset for types without a min)
// and after the last block the 16 lanes are stored as y[t][16g .. 16g+15].
// A tile holds RG groups x TT tokens; the unpacked weights of a block are
// reused for the TT tokens, and RG groups give independent chains at 1 token.
// Each output lane sees the same sequence of operations in every tile shape
// (dp is an exact integer sum), so results are batch- and thread-invariant.
// GCC 12 warns about the deliberately undefined upper lanes inside its own
// AVX-512 intrinsics (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "kernels/cpu/byte_vectors_avx512.h"
#include "kernels/cpu/packed_matmul_internal.h"
#include "kernels/cpu/thread_scratch.h"

namespace kvscope::detail {
namespace {

using namespace avx512;

// The 8 unsigned-byte vectors of one packed block; vector j pairs with the
// activation bytes 4j..4j+3.
template <PackedQuants K>
inline void load_quants(const uint8_t* blk, __m512i (&wv)[8]) {
  if constexpr (K == PackedQuants::kNibbles || K == PackedQuants::kFiveBit) {
    const __m512i lo4 = _mm512_set1_epi8(0x0f);
    for (int k = 0; k < 4; ++k) {
      const __m512i raw = _mm512_load_si512(blk + 64 * k);
      wv[k] = _mm512_and_si512(raw, lo4);
      wv[k + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), lo4);
    }
    if constexpr (K == PackedQuants::kFiveBit) {
      const __m512i h = _mm512_load_si512(blk + 256);
      add_high_bit_plane(h, wv);
    }
  } else {
    for (int j = 0; j < 8; ++j) wv[j] = _mm512_load_si512(blk + 64 * j);
  }
}

template <PackedQuants K, bool kMin, int RG, int TT>
void tile(const uint8_t* w, const PackedGroupLayout& l, int64_t num_blocks, const int8_t* q, int64_t q_stride,
          const float* ds, int64_t ds_stride, float* y, int64_t y_stride, const __mmask16 (&masks)[RG]) {
  constexpr size_t kQuantBytes = packed_quant_bytes(K);
  __m512 acc[RG][TT];
  for (int g = 0; g < RG; ++g) {
    for (int t = 0; t < TT; ++t) acc[g][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < num_blocks; ++b) {
    for (int g = 0; g < RG; ++g) {
      const uint8_t* wg = w + g * l.bytes;
      if constexpr (TT == 1) {
        // One token streams the weights from L3 (model >> L2) with several
        // streams per group, faster than the hardware prefetchers fetch
        // them: prefetch kAhead blocks ahead (~+20% at 1 token). Near a
        // group's end this touches the next region or group, or past the
        // allocation, which is harmless for a prefetch.
        constexpr int64_t kAhead = 4;
        const auto* pq = reinterpret_cast<const char*>(wg + (b + kAhead) * kQuantBytes);
        for (size_t off = 0; off < kQuantBytes; off += 64) _mm_prefetch(pq + off, _MM_HINT_T0);
        if ((b & 1) == 0) {
          _mm_prefetch(reinterpret_cast<const char*>(wg + l.d + 32 * (b + kAhead)), _MM_HINT_T0);
          if constexpr (kMin) _mm_prefetch(reinterpret_cast<const char*>(wg + l.m + 32 * (b + kAhead)), _MM_HINT_T0);
        }
      }
      __m512i wv[8];
      load_quants<K>(wg + b * kQuantBytes, wv);
      const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(wg + l.d + 32 * b)));
      __m512 mw = dw;
      if constexpr (kMin) mw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(wg + l.m + 32 * b)));
      for (int t = 0; t < TT; ++t) {
        const int8_t* qt = q + t * q_stride + 32 * b;
        __m512i dp = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[0], bcast_i32(qt));
        for (int j = 1; j < 8; ++j) dp = _mm512_dpbusd_epi32(dp, wv[j], bcast_i32(qt + 4 * j));
        const float* dst = ds + t * ds_stride + 2 * b;
        acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(dw, _mm512_set1_ps(dst[0])), acc[g][t]);
        acc[g][t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(dst[1]), acc[g][t]);
      }
    }
  }
  for (int g = 0; g < RG; ++g) {
    for (int t = 0; t < TT; ++t) _mm512_mask_storeu_ps(y + t * y_stride + 16 * g, masks[g], acc[g][t]);
  }
}

// Tokens [0, num_tokens) for groups [g, g + RG): TT-token tiles, then 1-token
// tiles for the rest (same per-lane operations).
template <PackedQuants K, bool kMin, int RG, int TT>
void token_tiles(const uint8_t* w, const PackedGroupLayout& l, int64_t g, int64_t num_rows, int64_t num_blocks,
                 const QuantizedActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  __mmask16 masks[RG];
  for (int i = 0; i < RG; ++i) masks[i] = group_row_mask(g + i, num_rows);
  const uint8_t* wg = w + g * l.bytes;
  float* yg = y + 16 * g;
  int64_t t = 0;
  for (; t + TT <= num_tokens; t += TT) {
    tile<K, kMin, RG, TT>(wg, l, num_blocks, a.q + t * a.q_stride, a.q_stride, a.ds + t * a.ds_stride,
                    a.ds_stride, yg + t * y_stride, y_stride, masks);
  }
  if constexpr (TT > 1) {
    for (; t < num_tokens; ++t) {
      for (int i = 0; i < RG; ++i) {
        const __mmask16 m1[1] = {masks[i]};
        tile<K, kMin, 1, 1>(wg + i * l.bytes, l, num_blocks, a.q + t * a.q_stride, a.q_stride,
                      a.ds + t * a.ds_stride, a.ds_stride, yg + t * y_stride + 16 * i, y_stride, m1);
      }
    }
  }
}

// The 5-bit layout at 4 or more tokens: the unpacking (~3 instructions per
// weight vector) would repeat for every 4-token tile, so each group is
// unpacked once into the one-byte layout (L1/L2-resident: 512 bytes per block)
// and the kBytes tiles run on that. Same unpacked vectors, same scales, same
// tile code: the same bits as the 5-bit tiles.
template <bool kMin>
void run_unpacked(const uint8_t* w, const PackedGroupLayout& l, int64_t g0, int64_t g1, int64_t num_rows,
                  int64_t row_len, const QuantizedActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  const int64_t nb = row_len / 32;
  const PackedGroupLayout lb = packed_group_layout({PackedQuants::kBytes, kMin, 0.0f}, nb);
  uint8_t* buf = thread_scratch(lb.bytes);  // one group in the one-byte layout
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* wg = w + g * l.bytes;
    for (int64_t b = 0; b < nb; ++b) {
      __m512i wv[8];
      load_quants<PackedQuants::kFiveBit>(wg + b * packed_quant_bytes(PackedQuants::kFiveBit), wv);
      for (int j = 0; j < 8; ++j) _mm512_store_si512(buf + b * packed_quant_bytes(PackedQuants::kBytes) + 64 * j, wv[j]);
    }
    std::memcpy(buf + lb.d, wg + l.d, static_cast<size_t>(nb) * 32);
    if constexpr (kMin) std::memcpy(buf + lb.m, wg + l.m, static_cast<size_t>(nb) * 32);
    // As group 0 of a matrix of the rows left from group g on.
    token_tiles<PackedQuants::kBytes, kMin, 1, 4>(buf, lb, 0, num_rows - 16 * g, nb, a, num_tokens, y + 16 * g,
                                                  y_stride);
  }
}

template <PackedQuants K, bool kMin>
void run(const uint8_t* w, const PackedGroupLayout& l, int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len,
         const QuantizedActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  if constexpr (K == PackedQuants::kFiveBit) {
    if (num_tokens >= 4) return run_unpacked<kMin>(w, l, g0, g1, num_rows, row_len, a, num_tokens, y, y_stride);
  }
  const int64_t nb = row_len / 32;
  int64_t g = g0;
  if (num_tokens < 4) {
    // Few tokens: 4 groups at once for independent dependency chains.
    for (; g + 4 <= g1; g += 4) token_tiles<K, kMin, 4, 1>(w, l, g, num_rows, nb, a, num_tokens, y, y_stride);
    for (; g < g1; ++g) token_tiles<K, kMin, 1, 1>(w, l, g, num_rows, nb, a, num_tokens, y, y_stride);
    return;
  }
  for (; g < g1; ++g) token_tiles<K, kMin, 1, 4>(w, l, g, num_rows, nb, a, num_tokens, y, y_stride);
}

}  // namespace

void matmul_packed_groups_avx512(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& l, int64_t g0,
                                 int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                                 int64_t num_tokens, float* y, int64_t y_stride) {
  constexpr PackedQuants kNib = PackedQuants::kNibbles;
  constexpr PackedQuants kFive = PackedQuants::kFiveBit;
  constexpr PackedQuants kByte = PackedQuants::kBytes;
  if (f.quants == kNib) {
    if (f.has_min) return run<kNib, true>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
    return run<kNib, false>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
  }
  if (f.quants == kFive) {
    if (f.has_min) return run<kFive, true>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
    return run<kFive, false>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
  }
  if (f.has_min) return run<kByte, true>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
  return run<kByte, false>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
}

}  // namespace kvscope::detail
