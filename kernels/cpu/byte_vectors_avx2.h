// AVX2 helpers shared by the integer matmul kernels (packed_matmul_avx2.cpp,
// kquant_matmul_avx2.cpp): byte broadcasts, the 5-bit high-plane unpack that
// Q5_0/Q5_1 packed blocks and Q5_K share, and the store of one 16-row group.
// Include only from translation units compiled for AVX2 (kernels/cpu/CMakeLists.txt).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace kvscope::detail::avx2 {

// The 4 bytes at p broadcast to every 32-bit lane.
inline __m256i bcast_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i or_masked(__m256i wv, __m256i shifted, __m256i mask) {
  return _mm256_or_si256(wv, _mm256_and_si256(shifted, mask));
}

// Bit v of each byte of the high plane hb becomes bit 4 of vector v's byte
// (the 16-bit shifts move bits across bytes; the mask keeps bit 4 only).
inline void add_high_bit_plane(__m256i hb, __m256i (&wv)[8]) {
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  wv[0] = or_masked(wv[0], _mm256_slli_epi16(hb, 4), bit4);
  wv[1] = or_masked(wv[1], _mm256_slli_epi16(hb, 3), bit4);
  wv[2] = or_masked(wv[2], _mm256_slli_epi16(hb, 2), bit4);
  wv[3] = or_masked(wv[3], _mm256_slli_epi16(hb, 1), bit4);
  wv[4] = or_masked(wv[4], hb, bit4);
  wv[5] = or_masked(wv[5], _mm256_srli_epi16(hb, 1), bit4);
  wv[6] = or_masked(wv[6], _mm256_srli_epi16(hb, 2), bit4);
  wv[7] = or_masked(wv[7], _mm256_srli_epi16(hb, 3), bit4);
}

// y[0, valid) = the 16 row results of one token held as two 8-lane halves
// (a group's last rows past num_rows are not written).
inline void store_row_group(const __m256 (&acc)[2], int64_t valid, float* y) {
  if (valid >= 16) {
    _mm256_storeu_ps(y, acc[0]);
    _mm256_storeu_ps(y + 8, acc[1]);
  } else {
    alignas(32) float lanes[16];
    _mm256_store_ps(lanes, acc[0]);
    _mm256_store_ps(lanes + 8, acc[1]);
    std::memcpy(y, lanes, static_cast<size_t>(valid) * sizeof(float));
  }
}

}  // namespace kvscope::detail::avx2
