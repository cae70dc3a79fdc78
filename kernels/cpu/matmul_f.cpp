// AVX2 and scalar matmul for F32 / F16 / BF16 weights with f32 activations.
// AVX2: one 8-lane FMA chain per output, the tail zero-padded through a small
// buffer; scalar: one sequential f32 sum per output. Either way each output
// sees the same operations in every tile (batch-invariant).
#include <cstring>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/reference/half.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace kvscope::detail {
namespace {

template <TensorType T>
inline float load1(const uint8_t* row, int64_t i) {
  if constexpr (T == TensorType::F32) {
    return bits_to_f32(load_u32(row + 4 * i));
  } else if constexpr (T == TensorType::F16) {
    return fp16_to_f32(load_u16(row + 2 * i));
  } else {
    return bf16_to_f32(load_u16(row + 2 * i));
  }
}

template <TensorType T>
void run_scalar(const uint8_t* w, size_t w_stride, int64_t num_rows, int64_t n, const float* x,
                int64_t num_tokens, float* y, int64_t y_stride) {
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + r * w_stride;
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* xt = x + t * n;
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) sum += load1<T>(row, i) * xt[i];
      y[t * y_stride + r] = sum;
    }
  }
}

#if defined(__x86_64__) || defined(_M_X64)

template <TensorType T>
inline __m256 load8(const uint8_t* row, int64_t i) {
  if constexpr (T == TensorType::F32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == TensorType::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <TensorType T, int R, int TT>
void tile(const uint8_t* w, size_t w_stride, int64_t n, const float* x, float* y, int64_t y_stride) {
  __m256 acc[R][TT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = load8<T>(w + r * w_stride, i);
    for (int t = 0; t < TT; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * n + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (i < n) {  // tail: zero-padded copies
    alignas(32) float wt[R][8] = {};
    for (int r = 0; r < R; ++r) {
      for (int64_t j = i; j < n; ++j) wt[r][j - i] = load1<T>(w + r * w_stride, j);
    }
    for (int t = 0; t < TT; ++t) {
      alignas(32) float xt[8] = {};
      std::memcpy(xt, x + t * n + i, static_cast<size_t>(n - i) * sizeof(float));
      const __m256 xv = _mm256_load_ps(xt);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(_mm256_load_ps(wt[r]), xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TT; ++t) {
      __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[r][t]), _mm256_extractf128_ps(acc[r][t], 1));
      s = _mm_add_ps(s, _mm_movehl_ps(s, s));
      s = _mm_add_ss(s, _mm_movehdup_ps(s));
      y[t * y_stride + r] = _mm_cvtss_f32(s);
    }
  }
}

template <TensorType T>
void run_avx2(const uint8_t* w, size_t w_stride, int64_t num_rows, int64_t n, const float* x,
              int64_t num_tokens, float* y, int64_t y_stride) {
  int64_t r = 0;
  for (; r + 4 <= num_rows; r += 4) {
    int64_t t = 0;
    for (; t + 2 <= num_tokens; t += 2) {
      tile<T, 4, 2>(w + r * w_stride, w_stride, n, x + t * n, y + t * y_stride + r, y_stride);
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

#endif  // x86-64

}  // namespace

#if defined(__x86_64__) || defined(_M_X64)
void matmul_f_tile_avx2(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                        int64_t row_len, const float* x, int64_t num_tokens, float* y,
                        int64_t y_stride) {
  switch (type) {
    case TensorType::F32: return run_avx2<TensorType::F32>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    case TensorType::F16: return run_avx2<TensorType::F16>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    case TensorType::BF16: return run_avx2<TensorType::BF16>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    default: return;
  }
}
#endif

void matmul_f_tile_scalar(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                          int64_t row_len, const float* x, int64_t num_tokens, float* y,
                          int64_t y_stride) {
  switch (type) {
    case TensorType::F32: return run_scalar<TensorType::F32>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    case TensorType::F16: return run_scalar<TensorType::F16>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    case TensorType::BF16: return run_scalar<TensorType::BF16>(w, w_stride, num_rows, row_len, x, num_tokens, y, y_stride);
    default: return;
  }
}

}  // namespace kvscope::detail
