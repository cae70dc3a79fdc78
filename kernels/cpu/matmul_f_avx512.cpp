// AVX-512 matmul for F32 / F16 / BF16 weights with f32 activations: each
// output is one 16-lane FMA chain over the row (masked loads for the tail),
// reduced with _mm512_reduce_add_ps. R x TT register tiles reuse each weight
// load for TT tokens; the per-output sequence is the same in every tile.
// GCC 12 warns about the deliberately undefined upper lanes inside its own
// AVX-512 intrinsics (_mm512_undefined_*, used by casts and reductions).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "kernels/cpu/matmul_internal.h"

namespace kvscope::detail {
namespace {

template <TensorType T>
inline __m512 load16(const uint8_t* row, int64_t i) {
  if constexpr (T == TensorType::F32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == TensorType::F16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i)));
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <TensorType T>
inline __m512 load16_masked(const uint8_t* row, int64_t i, __mmask16 m) {
  if constexpr (T == TensorType::F32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == TensorType::F16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * i));
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, row + 2 * i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <TensorType T, int R, int TT>
void tile(const uint8_t* w, size_t w_stride, int64_t n, const float* x, float* y, int64_t y_stride) {
  __m512 acc[R][TT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = load16<T>(w + r * w_stride, i);
    for (int t = 0; t < TT; ++t) {
      const __m512 xv = _mm512_loadu_ps(x + t * n + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = load16_masked<T>(w + r * w_stride, i, m);
    for (int t = 0; t < TT; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + t * n + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) y[t * y_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

template <TensorType T>
void run(const uint8_t* w, size_t w_stride, int64_t num_rows, int64_t n, const float* x,
         int64_t num_tokens, float* y, int64_t y_stride) {
  int64_t r = 0;
  if (num_tokens == 1) {  // decode: more rows per tile for independent FMA chains
    for (; r + 8 <= num_rows; r += 8) tile<T, 8, 1>(w + r * w_stride, w_stride, n, x, y + r, y_stride);
  }
  for (; r + 4 <= num_rows; r += 4) {
    int64_t t = 0;
    for (; t + 4 <= num_tokens; t += 4) {
      tile<T, 4, 4>(w + r * w_stride, w_stride, n, x + t * n, y + t * y_stride + r, y_stride);
    }
    for (; t < num_tokens; ++t) {
      tile<T, 4, 1>(w + r * w_stride, w_stride, n, x + t * n, y + t * y_stride + r, y_stride);
    }
  }
  for (; r < num_rows; ++r) {
    for (int64_t t = 0; t < num_tokens; ++t) {
      tile<T, 1, 1>(w + r * w_stride, w_stride, n, x + t * n, y + t * y_stride + r, y_stride);
    }
  }
}

}  // namespace

void matmul_f_tile_avx512(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                          int64_t row_len, const float* x, int64_t num_tokens, float* y,
                          int64_t y_stride) {
  switch (type) {
    case TensorType::F32: return run<TensorType::F32>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    case TensorType::F16: return run<TensorType::F16>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    case TensorType::BF16: return run<TensorType::BF16>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    default: return;
  }
}

}  // namespace kvscope::detail
