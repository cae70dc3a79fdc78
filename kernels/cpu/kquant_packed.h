// K-quant weights (Q2_K..Q6_K) in the 16-row interleaved layout of
// packed_matmul_internal.h, and the integer kernels that multiply them with
// 8-bit activations. Shared by PackedWeight::pack / matmul_packed
// (packed_matmul.cpp), the AVX-512 VNNI and AVX2 kernels and the tests.
//
// Activations: the same blocks of 32 as Q4_0..Q8_0 (quantize_acts_avx2,
// ActLayout::kNatural: d_x and s_x = d_x * sum(q_x) per block), not
// llama.cpp's Q8_K (one scale per 256). Why: a K-quant sub-block (32 for
// Q4_K/Q5_K, 16 for Q2_K/Q3_K/Q6_K) never straddles a block of 32, so the
// mins term is m * s_x with the per-32 sum the quantiser already makes (the
// 16-element types use sums over each 16, made once per call); one
// activation quantisation serves every weight type of a LinearGroup; and a
// per-32 scale is more precise. The price, a convert and one or two f32 FMAs
// per 32 elements, 16 rows and token instead of per 256, is small next to the
// 8 vpdpbusd and the unpacking they share (kernel_bench times both paths).
//
// Group layout: rows in groups of 16 (last padded with zero rows); a group is
// row_len / 256 super-blocks, each KquantLayout::bytes long (a multiple of
// 64), holding for its 8 sub-blocks of 32 (j = 0..7), lane i = row i:
//   lo[8][4][64]  nibbles as PackedQuants::kNibbles: byte 4i+c of vector k
//                 = element 4k+c (low nibble) and 16+4k+c (high nibble);
//                 all of u for Q2_K (0..3), Q3_K (0..7), Q4_K; its low 4 bits
//                 for Q5_K and Q6_K
//   hi            Q5_K: [8][64], bit v of byte 4i+c = 5th bit of element 4v+c
//                 Q6_K: [8][2][64], bits 2s..2s+1 of byte 4i+c of vector kk
//                       = bits 4..5 of element 4(4kk+s)+c
//   sc[units][16] Q4_K/Q5_K: 8 uint8 six-bit scales; Q2_K/Q3_K/Q6_K: 16 int8
//                 scales, one per 16 elements (Q3_K's already minus 32)
//   mn[units][16] Q2_K/Q4_K/Q5_K: uint8 mins
//   d[16], dmin[16]  f16 super-block scales as in GGUF (dmin: with mins)
// so the packed matrix takes ~the GGUF bytes for the types that matter
// (bytes per row and super-block, packed / GGUF: Q4_K 148 / 144, Q5_K
// 180 / 176, Q6_K 212 / 210). Q3_K (148 / 110) and Q2_K (164 / 84) keep
// their 2-3 bit quants in whole nibbles: one kernel path, more bytes; they
// are rare in practice (Q3_K_*/Q2_K files).
//
// Arithmetic, per row, token and block b of 32 (sub-block j of super-block sb);
// u = unsigned quant (Q6_K: value u - 32), dp = integer dot of u with q_x:
//   Q4_K/Q5_K: acc = fma(float(dp), (float(sc_j) * d) * d_x, acc)
//              acc = fma(-(float(mn_j) * dmin), s_x, acc)
//   per-16:    isum = sc_2j (dp_lo - o S_lo) + sc_2j+1 (dp_hi - o S_hi)
//              acc = fma(float(isum), d * d_x, acc)
//              (Q6_K o = 32, Q3_K o = 4, Q2_K o = 0), and for Q2_K also
//              msum = mn_2j S_lo + mn_2j+1 S_hi
//              acc = fma(-float(msum), dmin * d_x, acc)
// (S_lo / S_hi: sums of q_x over the block's two halves of 16.) float(sc) * d
// is the reference dequantiser's own product, every integer is exact
// (|isum| < 2^24), and each output lane runs this sequence in this order in
// every tile shape, so AVX-512, AVX2 and kquant_groups_scalar give the same
// bits, whatever num_tokens or thread count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/tensor_type.h"

namespace kvscope::detail {

constexpr bool is_packed_kquant(TensorType t) {
  return t == TensorType::Q2_K || t == TensorType::Q3_K || t == TensorType::Q4_K || t == TensorType::Q5_K ||
         t == TensorType::Q6_K;
}

// Scales per super-block: 8 (one per 32: Q4_K, Q5_K) or 16 (one per 16).
constexpr int kquant_scale_units(TensorType t) {
  return t == TensorType::Q4_K || t == TensorType::Q5_K ? 8 : 16;
}
// Types with mins (and dmin): weight = d * sc * u - dmin * m.
constexpr bool kquant_has_min(TensorType t) {
  return t == TensorType::Q2_K || t == TensorType::Q4_K || t == TensorType::Q5_K;
}
// Whether scales (and, with mins, mins) come one per 16 elements.
constexpr bool kquant_per16(TensorType t) { return kquant_scale_units(t) == 16; }
// Offset of the per-16 types without mins: weight = d * sc * (u - offset).
constexpr int kquant_offset(TensorType t) {
  return t == TensorType::Q6_K ? 32 : t == TensorType::Q3_K ? 4 : 0;
}

// Byte offsets inside one packed super-block of a 16-row group.
struct KquantLayout {
  size_t lo = 0;
  size_t hi = 0;
  size_t sc = 0;
  size_t mn = 0;
  size_t d = 0;
  size_t dmin = 0;
  size_t bytes = 0;  // the whole super-block, a multiple of 64
};

KquantLayout kquant_layout(TensorType t);

// Bytes of one packed 16-row group of row_len elements.
inline size_t kquant_group_bytes(TensorType t, int64_t row_len) {
  return static_cast<size_t>(row_len / 256) * kquant_layout(t).bytes;
}

// Writes row `src_row` (row_len elements of t, GGUF blocks) into lane `lane`
// of the zeroed packed group at `group`.
void kquant_pack_row(TensorType t, const uint8_t* src_row, int64_t row_len, int lane, uint8_t* group);

// Per token, the sums of q_x over each 16 elements (per-16 types' offset / min):
// half_sums[t * hs_stride + h] for h < row_len / 16.
void kquant_half_sums(const QuantizedActs& acts, int64_t row_len, int64_t num_tokens, int32_t* half_sums,
                      int64_t hs_stride);

struct KquantActs {
  QuantizedActs acts;
  const int32_t* half_sums = nullptr;  // per-16 types only
  int64_t hs_stride = 0;
};

// Row groups [g0, g1) of a packed K-quant matrix (w points at group 0)
// against all tokens: y[t * y_stride + 16g + i] for 16g + i < num_rows.
void kquant_groups_avx512(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows,
                          int64_t row_len, const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride);
// The same with AMX tiles (kquant_matmul_amx.cpp) for Q4_K, Q5_K and Q6_K in
// whole tiles of 16 tokens, the rest through kquant_groups_avx512: bitwise
// equal. Only when amx_enabled() (amx.h).
void kquant_groups_amx(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len,
                       const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride);
void kquant_groups_avx2(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows,
                        int64_t row_len, const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride);
// Scalar reference of the same arithmetic (tests): bitwise equal to both.
void kquant_groups_scalar(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows,
                          int64_t row_len, const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride);

}  // namespace kvscope::detail
