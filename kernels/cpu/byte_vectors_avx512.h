// AVX-512 helpers shared by the integer matmul kernels (packed_matmul_avx512.cpp,
// kquant_matmul_avx512.cpp and their AMX versions): byte broadcasts, the 5-bit
// high-plane unpack that Q5_0/Q5_1 packed blocks and Q5_K share, and the lane
// mask of a 16-row group. Include only from translation
// units compiled for AVX-512 (kernels/cpu/CMakeLists.txt).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace kvscope::detail::avx512 {

// The 4 bytes at p broadcast to every 32-bit lane.
inline __m512i bcast_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// wv | (shifted & mask) in one instruction.
inline __m512i or_masked(__m512i wv, __m512i shifted, __m512i mask) {
  return _mm512_ternarylogic_epi32(wv, shifted, mask, 0xF8);
}

// Bit v of each byte of the high plane h becomes bit 4 of vector v's byte
// (the 16-bit shifts move bits across bytes; the mask keeps bit 4 only).
inline void add_high_bit_plane(__m512i h, __m512i (&wv)[8]) {
  const __m512i bit4 = _mm512_set1_epi8(0x10);
  wv[0] = or_masked(wv[0], _mm512_slli_epi16(h, 4), bit4);
  wv[1] = or_masked(wv[1], _mm512_slli_epi16(h, 3), bit4);
  wv[2] = or_masked(wv[2], _mm512_slli_epi16(h, 2), bit4);
  wv[3] = or_masked(wv[3], _mm512_slli_epi16(h, 1), bit4);
  wv[4] = or_masked(wv[4], h, bit4);
  wv[5] = or_masked(wv[5], _mm512_srli_epi16(h, 1), bit4);
  wv[6] = or_masked(wv[6], _mm512_srli_epi16(h, 2), bit4);
  wv[7] = or_masked(wv[7], _mm512_srli_epi16(h, 3), bit4);
}

// The lanes of 16-row group g that hold rows of a num_rows-row matrix (the
// last group may be partly padding). g < ceil(num_rows / 16).
inline __mmask16 group_row_mask(int64_t g, int64_t num_rows) {
  const int64_t valid = num_rows - 16 * g;
  return valid >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << valid) - 1u);
}

}  // namespace kvscope::detail::avx512
