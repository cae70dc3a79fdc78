// Packing of Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 rows into the interleaved
// layout (packed_pack_row), the scalar reference of the packed kernels'
// arithmetic (matmul_packed_groups_scalar), which the tests hold the AVX-512
// and AVX2 kernels to bitwise, and how many chunks a packed matrix is split
// into over the threads (packed_row_chunks). Layout and arithmetic:
// packed_matmul_internal.h.
// The GGUF block decoding follows kernels/reference/dequantize.cpp.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/cpu/packed_matmul_internal.h"
#include "kernels/reference/half.h"

namespace kvscope::detail {
namespace {

// One source block of `type` -> 32 unsigned quants (element order) and the
// f16 bits of d and (Q4_1, Q5_1) m.
void decode_block(TensorType type, const uint8_t* b, uint8_t (&u)[32], uint16_t* d, uint16_t* m) {
  *d = load_u16(b);
  *m = 0;
  switch (type) {
    case TensorType::Q8_0:
      for (int e = 0; e < 32; ++e) u[e] = static_cast<uint8_t>(b[2 + e] ^ 0x80);
      return;
    case TensorType::Q4_0:
    case TensorType::Q4_1: {
      const uint8_t* qs = b + (type == TensorType::Q4_0 ? 2 : 4);
      for (int e = 0; e < 16; ++e) {
        u[e] = qs[e] & 15;
        u[e + 16] = qs[e] >> 4;
      }
      if (type == TensorType::Q4_1) *m = load_u16(b + 2);
      return;
    }
    case TensorType::Q5_0:
    case TensorType::Q5_1: {
      const bool q50 = type == TensorType::Q5_0;
      const uint32_t qh = load_u32(b + (q50 ? 2 : 4));
      const uint8_t* qs = b + (q50 ? 6 : 8);
      for (int e = 0; e < 16; ++e) {
        u[e] = static_cast<uint8_t>((qs[e] & 15) | (((qh >> e) & 1u) << 4));
        u[e + 16] = static_cast<uint8_t>((qs[e] >> 4) | (((qh >> (e + 16)) & 1u) << 4));
      }
      if (!q50) *m = load_u16(b + 2);
      return;
    }
    default:
      assert(false && "decode_block: no packed layout for this type");
  }
}

// Writes lane i (row i of its group) of block b into a packed group.
void write_lane(const PackedFormat& f, const PackedGroupLayout& l, int64_t b, const uint8_t (&u)[32], uint16_t d,
                uint16_t m, int i, uint8_t* group) {
  uint8_t* quants = group + l.quants + static_cast<size_t>(b) * packed_quant_bytes(f.quants);
  if (f.quants == PackedQuants::kBytes) {
    for (int j = 0; j < 8; ++j) std::memcpy(quants + 64 * j + 4 * i, u + 4 * j, 4);
  } else {
    // Vector k, byte 4i+c: element 4k+c (low nibble), 16+4k+c (high nibble).
    for (int k = 0; k < 4; ++k) {
      for (int c = 0; c < 4; ++c) {
        const int e = 4 * k + c;
        quants[64 * k + 4 * i + c] = static_cast<uint8_t>((u[e] & 15) | ((u[e + 16] & 15) << 4));
      }
    }
    if (f.quants == PackedQuants::kFiveBit) {
      // High-bit vector, byte 4i+c, bit v: bit 4 of element 4v+c.
      for (int c = 0; c < 4; ++c) {
        uint8_t h = 0;
        for (int v = 0; v < 8; ++v) h = static_cast<uint8_t>(h | (((u[4 * v + c] >> 4) & 1) << v));
        quants[256 + 4 * i + c] = h;
      }
    }
  }
  std::memcpy(group + l.d + 32 * b + 2 * i, &d, 2);
  if (f.has_min) std::memcpy(group + l.m + 32 * b + 2 * i, &m, 2);
}

// Unsigned quant of element e of row i in a packed block (the kernels'
// unpacking, written per element).
int packed_quant(PackedQuants k, const uint8_t* quants, int i, int e) {
  const int c = e % 4;
  const int v = e / 4;  // the unpacked vector that holds e
  if (k == PackedQuants::kBytes) return quants[64 * v + 4 * i + c];
  const uint8_t nib = quants[64 * (v % 4) + 4 * i + c];
  int u = v < 4 ? nib & 15 : nib >> 4;
  if (k == PackedQuants::kFiveBit) u |= ((quants[256 + 4 * i + c] >> v) & 1) << 4;
  return u;
}

}  // namespace

void packed_pack_row(TensorType type, const PackedFormat& f, const PackedGroupLayout& layout, const uint8_t* src_row,
                     int64_t row_len, int lane, uint8_t* group) {
  assert(f.quants != PackedQuants::kNibbles || type == TensorType::Q4_0 || type == TensorType::Q4_1);
  assert(f.quants != PackedQuants::kFiveBit || type == TensorType::Q5_0 || type == TensorType::Q5_1);
  const size_t src_block_bytes = static_cast<size_t>(traits_of(type).block_bytes);
  for (int64_t b = 0; b < row_len / 32; ++b) {
    uint8_t u[32] = {};
    uint16_t d = 0;
    uint16_t m = 0;
    decode_block(type, src_row + b * src_block_bytes, u, &d, &m);
    write_lane(f, layout, b, u, d, m, lane, group);
  }
}

// Measured on Gemma's head, 2 threads, shared 2-CPU Xeon (docs/benchmarks/
// 2026-11-26_q5_0_5bit_packed_intel_xeon_cpu1t.json, "head_chunks"): 16 MiB
// chunks (10 for the head) 2.6-4.5% faster than 2 chunks in median, 4 MiB and
// 1 MiB no better than 16. At least 4 groups per chunk.
int packed_row_chunks(int num_threads, int64_t num_groups, size_t group_bytes) {
  const int64_t by_bytes = static_cast<int64_t>(static_cast<size_t>(num_groups) * group_bytes / kPackedChunkBytes);
  const int64_t most = std::max<int64_t>(num_threads, num_groups / 4);
  return static_cast<int>(std::clamp<int64_t>(by_bytes, num_threads, most));
}

void matmul_packed_groups_scalar(const PackedFormat& f, const uint8_t* w, const PackedGroupLayout& layout,
                                 int64_t g0, int64_t g1, int64_t num_rows, int64_t row_len, const QuantizedActs& acts,
                                 int64_t num_tokens, float* y, int64_t y_stride) {
  const size_t quant_bytes = packed_quant_bytes(f.quants);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* wg = w + static_cast<size_t>(g) * layout.bytes;
    for (int i = 0; i < kGroupRows && kGroupRows * g + i < num_rows; ++i) {
      for (int64_t t = 0; t < num_tokens; ++t) {
        const int8_t* qx = acts.q + t * acts.q_stride;
        const float* ds = acts.ds + t * acts.ds_stride;
        float acc = 0.0f;
        for (int64_t b = 0; b < row_len / 32; ++b) {
          const uint8_t* quants = wg + layout.quants + static_cast<size_t>(b) * quant_bytes;
          int32_t dp = 0;
          for (int e = 0; e < 32; ++e) dp += packed_quant(f.quants, quants, i, e) * qx[32 * b + e];
          const float dw = fp16_to_f32(load_u16(wg + layout.d + 32 * b + 2 * i));
          const float mw = f.has_min ? fp16_to_f32(load_u16(wg + layout.m + 32 * b + 2 * i)) : dw;
          acc = std::fma(static_cast<float>(dp), dw * ds[2 * b], acc);
          acc = std::fma(mw, ds[2 * b + 1], acc);
        }
        y[t * y_stride + kGroupRows * g + i] = acc;
      }
    }
  }
}

}  // namespace kvscope::detail
