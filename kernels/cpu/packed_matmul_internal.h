// The interleaved weight layout shared by PackedWeight::pack (packed_matmul.cpp,
// packed_layout.cpp), the AVX-512 VNNI kernel (packed_matmul_avx512.cpp), the
// AVX2 kernel of the 5-bit layout (packed_matmul_avx2.cpp) and the scalar
// reference (packed_layout.cpp).
//
// Rows come in groups of kGroupRows = 16 (the last group padded with zero
// rows). A group of nb = row_len / 32 blocks stores
//   quants[nb]: kNibbles: 4 x 64 bytes per block; vector k, lane i (bytes
//                 4i..4i+3) = row i's qs[4k..4k+3] as in Q4_0/Q4_1 (low
//                 nibble = element 4k+c, high nibble = element 16+4k+c), so
//                 the low-nibble plane of vector k holds elements 4k..4k+3 and
//                 the high one 16+4k..
//               kFiveBit: 5 x 64 bytes per block (Q5_0, Q5_1): the low 4
//                 bits of every element as kNibbles, then one high-bit
//                 vector: bit v of byte 4i+c = bit 4 of row i's element
//                 4v+c (v = 0..7), as Q5_K's hi plane (kquant_packed.h)
//               kBytes: 8 x 64 bytes per block; vector j, lane i = row i's
//                 elements 4j..4j+3 as unsigned bytes (Q8_0 + 128)
//   d[nb][16]   f16 scale per block and row
//   m[nb][16]   f16 min per block and row (Q4_1, Q5_1 only)
// padded to a multiple of 64 bytes. Unpacked, every quants layout gives the
// same 8 vectors (vector j, lane i = row i's elements 4j..4j+3 as unsigned
// bytes), so the arithmetic does not depend on the layout: Q5_0 packed at
// one byte per weight (kBytes, as before the 5-bit layout) and at 5 bits give
// the same bits (tested). Block dot = d * d_x * sum(u_w * q_x) +
// m * s_x with s_x = d_x * sum(q_x); types without a min use m = offset * d
// (Q4_0 -8, Q5_0 -16, Q8_0 -128), computed as d * (offset * s_x), which is
// the same number since offset is a power of two. Per row, token and block,
// in block order:
//   acc = fma(float(dp), d_w * d_x, acc);  acc = fma(m_w, s_x, acc)
// (dp the exact integer dot; m_w = d_w without a min). Every kernel and the
// scalar reference run this sequence, so they agree bitwise.
// Scales stay f16 so Q4_x, Q5_x and Q8_0 take the same bytes as in GGUF
// (Q5_0: 22 per 32 weights, not the 34 of kBytes): at one token the kernel
// streams the weights from L3 at ~25 GB/s per core, so bytes matter as much as
// instructions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/tensor_type.h"

namespace kvscope::detail {

constexpr int64_t kGroupRows = 16;

enum class PackedQuants {
  kNibbles,  // Q4_0, Q4_1
  kFiveBit,  // Q5_0, Q5_1: nibbles + one high-bit plane
  kBytes,    // Q8_0
};

// How one type is packed.
struct PackedFormat {
  PackedQuants quants = PackedQuants::kBytes;
  bool has_min = false;  // m[] stored (else m = offset * d)
  float offset = 0.0f;   // weight value offset of types without a min
};

inline PackedFormat packed_format(TensorType t) {
  switch (t) {
    case TensorType::Q4_0: return {PackedQuants::kNibbles, false, -8.0f};
    case TensorType::Q4_1: return {PackedQuants::kNibbles, true, 0.0f};
    case TensorType::Q5_0: return {PackedQuants::kFiveBit, false, -16.0f};
    case TensorType::Q5_1: return {PackedQuants::kFiveBit, true, 0.0f};
    default: return {PackedQuants::kBytes, false, -128.0f};  // Q8_0
  }
}

// Bytes of one block's quants for 16 rows.
constexpr size_t packed_quant_bytes(PackedQuants k) {
  return k == PackedQuants::kNibbles ? 256 : k == PackedQuants::kFiveBit ? 320 : 512;
}

// Byte offsets inside one group of num_blocks blocks.
struct PackedGroupLayout {
  size_t quants = 0;  // block b's quants at quants + b * packed_quant_bytes
  size_t d = 0;       // block b's 16 f16 scales at d + 32 b
  size_t m = 0;       // block b's 16 f16 mins at m + 32 b (== d when no min)
  size_t bytes = 0;   // whole group, a multiple of 64
};

inline PackedGroupLayout packed_group_layout(const PackedFormat& f, int64_t num_blocks) {
  PackedGroupLayout l;
  l.d = static_cast<size_t>(num_blocks) * packed_quant_bytes(f.quants);
  l.m = f.has_min ? l.d + static_cast<size_t>(num_blocks) * 32 : l.d;
  l.bytes = ((f.has_min ? l.m : l.d) + static_cast<size_t>(num_blocks) * 32 + 63) / 64 * 64;
  return l;
}

// Writes row `src_row` (row_len elements of `type`, GGUF blocks) into lane
// `lane` of the zeroed packed group at `group`, in format f (normally
// packed_format(type); tests also pack Q5_0/Q5_1 as kBytes, the old layout).
void packed_pack_row(TensorType type, const PackedFormat& f, const PackedGroupLayout& layout,
                     const uint8_t* src_row, int64_t row_len, int lane, uint8_t* group);

// How many chunks matmul_packed splits num_groups row groups of group_bytes
// each into over num_threads threads: one per thread for the usual matrices;
// for a matrix of many MiB (Gemma 3's 262144 x 640 Q8_0 head: 178 MB, ~10 ms
// per token) chunks of about kPackedChunkBytes, so that a thread descheduled
// on a shared machine holds back at most one chunk while the others take the
// rest. Chunks split output rows only: no row's arithmetic depends on them.
constexpr size_t kPackedChunkBytes = size_t{16} << 20;
int packed_row_chunks(int num_threads, int64_t num_groups, size_t group_bytes);

// Row groups [g0, g1) of a packed matrix against all tokens:
// y[t * y_stride + 16g + i] for the valid rows (16g + i < num_rows).
// acts: ActLayout::kNatural, with s_x already multiplied by f.offset for
// types without a min. w points at group 0.
void matmul_packed_groups_avx512(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& layout,
                                 int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                                 int64_t num_tokens, float* y, int64_t y_stride);
// The same with AMX tiles (packed_matmul_amx.cpp) for the tokens in whole
// tiles of 16, the rest (and the 5-bit layout) through the VNNI kernel:
// bitwise equal. Only when amx_enabled() (amx.h).
void matmul_packed_groups_amx(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& layout,
                              int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                              int64_t num_tokens, float* y, int64_t y_stride);
// The same for the 5-bit layout (Q5_0, Q5_1) with AVX2: bitwise equal.
void matmul_packed_groups_avx2(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& layout,
                               int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                               int64_t num_tokens, float* y, int64_t y_stride);
// Scalar reference of the same arithmetic, any layout (tests): bitwise equal
// to both kernels.
void matmul_packed_groups_scalar(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& layout,
                                 int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                                 int64_t num_tokens, float* y, int64_t y_stride);

}  // namespace kvscope::detail
