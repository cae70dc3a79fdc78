// The unpacking of a packed K-quant sub-block into its 8 unsigned-byte weight
// vectors (layout: kquant_packed.h), shared by the AVX-512 VNNI kernel
// (kquant_matmul_avx512.cpp) and the AMX kernel (kquant_matmul_amx.cpp) so
// that both multiply the same bytes. Include only from AVX-512 files.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/byte_vectors_avx512.h"
#include "kernels/cpu/kquant_packed.h"

namespace kvscope::detail {

// The 8 unsigned-byte weight vectors of sub-block j (vector v pairs with
// activation bytes 4v..4v+3).
template <TensorType K>
inline void kquant_load_quants(const uint8_t* s, const KquantLayout& l, int j, __m512i (&wv)[8]) {
  const __m512i lo4 = _mm512_set1_epi8(0x0f);
  for (int k = 0; k < 4; ++k) {
    const __m512i raw = _mm512_load_si512(s + l.lo + 256 * j + 64 * k);
    wv[k] = _mm512_and_si512(raw, lo4);
    wv[k + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), lo4);
  }
  if constexpr (K == TensorType::Q5_K) {
    const __m512i h = _mm512_load_si512(s + l.hi + 64 * j);
    avx512::add_high_bit_plane(h, wv);
  } else if constexpr (K == TensorType::Q6_K) {
    const __m512i bits45 = _mm512_set1_epi8(0x30);
    for (int kk = 0; kk < 2; ++kk) {
      const __m512i h = _mm512_load_si512(s + l.hi + 128 * j + 64 * kk);
      wv[4 * kk + 0] = avx512::or_masked(wv[4 * kk + 0], _mm512_slli_epi16(h, 4), bits45);
      wv[4 * kk + 1] = avx512::or_masked(wv[4 * kk + 1], _mm512_slli_epi16(h, 2), bits45);
      wv[4 * kk + 2] = avx512::or_masked(wv[4 * kk + 2], h, bits45);
      wv[4 * kk + 3] = avx512::or_masked(wv[4 * kk + 3], _mm512_srli_epi16(h, 2), bits45);
    }
  }
}

}  // namespace kvscope::detail
