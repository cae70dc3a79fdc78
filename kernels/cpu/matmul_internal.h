// Tile kernels behind matmul() (matmul.cpp dispatches). Each computes a tile
// of consecutive weight rows against all tokens:
//   y[t * y_stride + r] for r in [0, num_rows), t in [0, num_tokens),
// with w pointing at the first row of the tile. Every output is accumulated in
// one fixed order, whichever row/token sub-tile the kernel puts it in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/rms_norm.h"
#include "kernels/tensor_type.h"

namespace kvscope::detail {

// Order of the 8-bit activations inside each pair of blocks.
enum class ActLayout {
  kNatural,     // block b at bytes [32b, 32b + 32)
  kPairHalves,  // blocks 2k, 2k+1: x0[0:16] x1[0:16] x0[16:32] x1[16:32]
};

// Quantised activations: per token, num_blocks rounded up to even blocks
// (padding zero). q: [num_tokens][q_stride] int8; ds: [num_tokens][ds_stride]
// floats, (d, d * sum(q)) per block.
struct QuantizedActs {
  const int8_t* q = nullptr;
  const float* ds = nullptr;
  int64_t q_stride = 0;
  int64_t ds_stride = 0;
};

// Padded block count used by QuantizedActs for a row of row_len.
inline int64_t padded_blocks(int64_t row_len) { return (row_len / 32 + 1) / 2 * 2; }

// Quantises tokens [t0, t1) of x (x row stride row_len) into q / ds (strides as
// in QuantizedActs). x86-64 only (AVX2); row_len a multiple of 32. With a
// norm, each row is quantised as the RMS-normed row (rms_norm.h RowNorm: the
// same floats rms_norm() writes), read straight from x.
void quantize_acts_avx2(const float* x, int64_t row_len, int64_t t0, int64_t t1, ActLayout layout,
                        int8_t* q, int64_t q_stride, float* ds, int64_t ds_stride, const RowNorm* norm = nullptr);

// The activation layout each integer kernel expects for `type`.
ActLayout act_layout_avx512(TensorType type);
ActLayout act_layout_avx2(TensorType type);

// Integer kernels for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights.
void matmul_q_tile_avx512(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                          int64_t row_len, const QuantizedActs& acts, int64_t num_tokens, float* y,
                          int64_t y_stride);
void matmul_q_tile_avx2(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                        int64_t row_len, const QuantizedActs& acts, int64_t num_tokens, float* y,
                        int64_t y_stride);

// Float kernels for F32, F16, BF16 weights; x: [num_tokens][row_len].
void matmul_f_tile_avx512(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                          int64_t row_len, const float* x, int64_t num_tokens, float* y,
                          int64_t y_stride);
void matmul_f_tile_avx2(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                        int64_t row_len, const float* x, int64_t num_tokens, float* y,
                        int64_t y_stride);
void matmul_f_tile_scalar(TensorType type, const uint8_t* w, size_t w_stride, int64_t num_rows,
                          int64_t row_len, const float* x, int64_t num_tokens, float* y,
                          int64_t y_stride);

}  // namespace kvscope::detail
