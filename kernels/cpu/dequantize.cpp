// Fast dequantisation; see dequantize.h. The common embedding / fallback
// types get F16C / AVX2 loops; the rest use the reference code (which is what
// "bit-identical" needs anyway).
#include "kernels/cpu/dequantize.h"

#include "kernels/reference/dequantize.h"
#include "kernels/reference/half.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace kvscope {

void dequantize_row_fast(TensorType type, const void* src, float* dst, int64_t n) {
#if defined(__x86_64__) || defined(_M_X64)
  const auto* p = static_cast<const uint8_t*>(src);
  if (type == TensorType::F16) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i))));
    }
    for (; i < n; ++i) dst[i] = fp16_to_f32(load_u16(p + 2 * i));
    return;
  }
  if (type == TensorType::Q8_0) {
    for (int64_t b = 0; b < n / 32; ++b) {
      const uint8_t* blk = p + 34 * b;
      const __m256 d = _mm256_set1_ps(fp16_to_f32(load_u16(blk)));
      for (int j = 0; j < 4; ++j) {
        const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + 8 * j));
        // q * d, the same single rounding as the reference.
        _mm256_storeu_ps(dst + 32 * b + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d));
      }
    }
    return;
  }
#endif
  dequantize_row_ref(type, src, dst, n);
}

void embedding_row(TensorType type, const void* table, int64_t row, int64_t row_len, float* out) {
  const auto* p = static_cast<const uint8_t*>(table) + static_cast<size_t>(row) * row_bytes(type, row_len);
  dequantize_row_fast(type, p, out, row_len);
}

}  // namespace kvscope
