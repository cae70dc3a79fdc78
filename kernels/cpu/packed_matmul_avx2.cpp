// AVX2 kernel for the 5-bit packed layout (Q5_0, Q5_1; layout and arithmetic:
// packed_matmul_internal.h). Each 16-row group is two halves of 8 lanes
// (bytes 0..31 and 32..63 of every 64-byte vector of the layout). The integer
// dot of a block is maddubs (u8 x s8 -> pairs summed in i16; u <= 31 and
// |q_x| <= 127, so the four products summed in i16 stay below 2^14: exact)
// and madd with ones to i32, the same integer vpdpbusd gives; the float
// operations are the AVX-512 kernel's in the same order, so both (and the
// scalar reference) give the same bits. Only the 5-bit layout: Q8_0's +128
// bytes would overflow maddubs' i16 pairs, and Q4_x keep matmul() at AVX2.
#include <immintrin.h>

#include <cassert>
#include <cstring>

#include "kernels/cpu/byte_vectors_avx2.h"
#include "kernels/cpu/packed_matmul_internal.h"

namespace kvscope::detail {
namespace {

using namespace avx2;

constexpr size_t kQuantBytes = packed_quant_bytes(PackedQuants::kFiveBit);

// Half h (lanes 8h..8h+7) of the 8 unsigned-byte vectors of one block: the
// nibbles, then bit v of the high plane into bit 4 of vector v.
inline void load_quants(const uint8_t* blk, int h, __m256i (&wv)[8]) {
  const __m256i lo4 = _mm256_set1_epi8(0x0f);
  for (int k = 0; k < 4; ++k) {
    const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + 64 * k + 32 * h));
    wv[k] = _mm256_and_si256(raw, lo4);
    wv[k + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4);
  }
  const __m256i hb = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + 256 + 32 * h));
  add_high_bit_plane(hb, wv);
}

// Integer dot of vectors [0, 4) with activation bytes qt[0..16).
inline __m256i dot4(const __m256i* wv, const int8_t* qt) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(wv[0], bcast_i32(qt)),
                                       _mm256_maddubs_epi16(wv[1], bcast_i32(qt + 4)));
  const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(wv[2], bcast_i32(qt + 8)),
                                       _mm256_maddubs_epi16(wv[3], bcast_i32(qt + 12)));
  return _mm256_add_epi32(_mm256_madd_epi16(p01, ones), _mm256_madd_epi16(p23, ones));
}

// Tokens [0, TT) of one group (wg) against the activations at q / ds; y
// points at the group's first output column of token 0.
template <bool kMin, int TT>
void tile(const uint8_t* wg, const PackedGroupLayout& l, int64_t num_blocks, const int8_t* q, int64_t q_stride,
          const float* ds, int64_t ds_stride, float* y, int64_t y_stride, int valid) {
  __m256 acc[TT][2];
  for (int t = 0; t < TT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* blk = wg + b * kQuantBytes;
    if constexpr (TT == 1) {
      // One token streams the weights: prefetch as the AVX-512 kernel does.
      constexpr int64_t kAhead = 4;
      const auto* pq = reinterpret_cast<const char*>(blk + kAhead * kQuantBytes);
      for (size_t off = 0; off < kQuantBytes; off += 64) _mm_prefetch(pq + off, _MM_HINT_T0);
      if ((b & 1) == 0) {
        _mm_prefetch(reinterpret_cast<const char*>(wg + l.d + 32 * (b + kAhead)), _MM_HINT_T0);
        if constexpr (kMin) _mm_prefetch(reinterpret_cast<const char*>(wg + l.m + 32 * (b + kAhead)), _MM_HINT_T0);
      }
    }
    for (int h = 0; h < 2; ++h) {
      __m256i wv[8];
      load_quants(blk, h, wv);
      const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(wg + l.d + 32 * b + 16 * h)));
      __m256 mw = dw;
      if constexpr (kMin) {
        mw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(wg + l.m + 32 * b + 16 * h)));
      }
      for (int t = 0; t < TT; ++t) {
        const int8_t* qt = q + t * q_stride + 32 * b;
        const __m256i dp = _mm256_add_epi32(dot4(wv, qt), dot4(wv + 4, qt + 16));
        const float* dst = ds + t * ds_stride + 2 * b;
        acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dp), _mm256_mul_ps(dw, _mm256_set1_ps(dst[0])), acc[t][h]);
        acc[t][h] = _mm256_fmadd_ps(mw, _mm256_set1_ps(dst[1]), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < TT; ++t) store_row_group(acc[t], valid, y + t * y_stride);
}

// Every group: 4-token tiles, then 1-token tiles (same per-lane operations).
template <bool kMin>
void run(const uint8_t* w, const PackedGroupLayout& l, int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len,
         const QuantizedActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  const int64_t nb = row_len / 32;
  for (int64_t g = g0; g < g1; ++g) {
    const int valid = static_cast<int>(num_rows - kGroupRows * g < kGroupRows ? num_rows - kGroupRows * g : kGroupRows);
    const uint8_t* wg = w + static_cast<size_t>(g) * l.bytes;
    float* yg = y + kGroupRows * g;
    int64_t t = 0;
    for (; t + 4 <= num_tokens; t += 4) {
      tile<kMin, 4>(wg, l, nb, a.q + t * a.q_stride, a.q_stride, a.ds + t * a.ds_stride, a.ds_stride,
                    yg + t * y_stride, y_stride, valid);
    }
    for (; t < num_tokens; ++t) {
      tile<kMin, 1>(wg, l, nb, a.q + t * a.q_stride, a.q_stride, a.ds + t * a.ds_stride, a.ds_stride,
                    yg + t * y_stride, y_stride, valid);
    }
  }
}

}  // namespace

void matmul_packed_groups_avx2(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& l, int64_t g0,
                               int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                               int64_t num_tokens, float* y, int64_t y_stride) {
  assert(f.quants == PackedQuants::kFiveBit && "matmul_packed_groups_avx2: 5-bit layout only");
  if (f.has_min) return run<true>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
  run<false>(w, l, g0, g1, num_rows, row_len, acts, num_tokens, y, y_stride);
}

}  // namespace kvscope::detail
