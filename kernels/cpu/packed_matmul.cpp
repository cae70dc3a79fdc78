// PackedWeight::pack (scalar, once at load time) and matmul_packed(): quantise
// the activations once, split the 16-row groups over the pool in contiguous
// chunks (never the reduction dimension), run the AVX-512 VNNI kernel (Q5_0 and
// Q5_1 below AVX-512: the AVX2 one; K-quants: the AVX-512 or AVX2 kernel of
// kquant_packed.h). Types or CPU levels without such a kernel run matmul() per
// part. Row packing and the chunk count: packed_layout.cpp. See
// packed_matmul.h.
#include "kernels/cpu/packed_matmul.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/huge_pages.h"
#include "kernels/cpu/kquant_packed.h"
#include "kernels/cpu/packed_matmul_internal.h"

namespace kvscope {
namespace {

using detail::kGroupRows;

bool has_packed_kernel(TensorType t) {
#if defined(__x86_64__) || defined(_M_X64)
  // K-quants (Q2_K..Q6_K) have an AVX2 kernel too (same bits as the AVX-512 one).
  if (detail::is_packed_kquant(t)) return cpu_level() != CpuLevel::kScalar;
  // The 5-bit layout (Q5_0, Q5_1) too; the others only at AVX-512 (their
  // AVX2 path is matmul() on the GGUF blocks).
  if (t == TensorType::Q5_0 || t == TensorType::Q5_1) return cpu_level() != CpuLevel::kScalar;
  return cpu_level() == CpuLevel::kAvx512 && (t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q8_0);
#else
  (void)t;
  return false;
#endif
}

}  // namespace

void PackedWeight::Free::operator()(uint8_t* p) const { release_huge_page_backed(p); }

PackedWeight PackedWeight::pack(TensorType type, int64_t row_len, std::span<const WeightPart> parts) {
  assert(is_supported_weight_type(type) && "PackedWeight::pack: unsupported weight type");
  assert(row_len > 0 && row_len % traits_of(type).block_elems == 0 && "PackedWeight::pack: bad row_len");
  PackedWeight pw;
  pw.type_ = type;
  pw.row_len_ = row_len;
  for (const WeightPart& p : parts) {
    assert(p.num_rows >= 0 && "PackedWeight::pack: negative num_rows");
    pw.num_rows_ += p.num_rows;
  }
  if (!has_packed_kernel(type) || pw.num_rows_ == 0) {
    pw.parts_.assign(parts.begin(), parts.end());
    return pw;
  }
  if (detail::is_packed_kquant(type)) {
    PackedWeight::pack_kquant(type, row_len, parts, &pw);
    return pw;
  }
  const detail::PackedFormat f = detail::packed_format(type);
  const int64_t num_blocks = row_len / 32;
  const detail::PackedGroupLayout layout = detail::packed_group_layout(f, num_blocks);
  const int64_t num_groups = (pw.num_rows_ + kGroupRows - 1) / kGroupRows;
  pw.packed_bytes_ = static_cast<size_t>(num_groups) * layout.bytes;
  // Zeroed (padding rows get zero quants and scales; their lanes are never
  // stored), on huge pages: decode streams these bytes once per token.
  pw.packed_.reset(static_cast<uint8_t*>(allocate_huge_page_backed(pw.packed_bytes_)));
  const size_t src_row_bytes = row_bytes(type, row_len);
  int64_t r = 0;  // stacked row index
  for (const WeightPart& p : parts) {
    const auto* src = static_cast<const uint8_t*>(p.data);
    for (int64_t pr = 0; pr < p.num_rows; ++pr, ++r) {
      detail::packed_pack_row(type, f, layout, src + pr * src_row_bytes, row_len, static_cast<int>(r % kGroupRows),
                              pw.packed_.get() + static_cast<size_t>(r / kGroupRows) * layout.bytes);
    }
  }
  return pw;
}

void matmul_packed(const PackedWeight& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool,
                   MatmulScratch& scratch) {
  const int64_t num_rows = w.num_rows_;
  const int64_t row_len = w.row_len_;
  if (num_rows <= 0 || num_tokens <= 0) return;
  if (!w.is_packed()) {
    if (w.parts_.size() == 1) {
      matmul(w.type_, w.parts_[0].data, num_rows, row_len, x, num_tokens, y, pool, scratch);
      return;
    }
    // Stacked parts: each part into a buffer, then into its output columns.
    std::vector<float> part_y;
    int64_t r0 = 0;
    for (const WeightPart& p : w.parts_) {
      if (p.num_rows == 0) continue;
      part_y.resize(static_cast<size_t>(p.num_rows * num_tokens));
      matmul(w.type_, p.data, p.num_rows, row_len, x, num_tokens, part_y.data(), pool, scratch);
      for (int64_t t = 0; t < num_tokens; ++t) {
        std::copy_n(part_y.data() + t * p.num_rows, p.num_rows, y + t * num_rows + r0);
      }
      r0 += p.num_rows;
    }
    return;
  }
#if defined(__x86_64__) || defined(_M_X64)
  if (detail::is_packed_kquant(w.type_)) {
    PackedWeight::matmul_packed_kquant(w, x, num_tokens, y, pool, scratch);
    return;
  }
  // Activations: per token, 8-bit blocks of 32 in natural order (as matmul()).
  const int64_t num_padded = detail::padded_blocks(row_len);
  const int64_t q_stride = num_padded * 32;
  const int64_t ds_stride = num_padded * 2;
  const size_t q_bytes = static_cast<size_t>(num_tokens * q_stride);
  auto* base = static_cast<uint8_t*>(scratch.get(q_bytes + static_cast<size_t>(num_tokens * ds_stride) * 4 + 64));
  int8_t* q = reinterpret_cast<int8_t*>(base);
  float* ds = reinterpret_cast<float*>(base + (q_bytes + 63) / 64 * 64);
  const detail::PackedFormat f = detail::packed_format(w.type_);
  auto quantize = [&](int64_t t0, int64_t t1) {
    detail::quantize_acts_avx2(x, row_len, t0, t1, detail::ActLayout::kNatural, q, q_stride, ds, ds_stride);
    if (f.has_min) return;
    // m = offset * d: fold the (power of two, so exact) offset into s_x.
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t b = 0; b < row_len / 32; ++b) ds[t * ds_stride + 2 * b + 1] *= f.offset;
    }
  };
  if (num_tokens * row_len >= 16384) {
    pool.parallel_for(num_tokens, quantize);
  } else {
    quantize(0, num_tokens);
  }
  const detail::QuantizedActs acts{q, ds, q_stride, ds_stride};
  const detail::PackedGroupLayout layout = detail::packed_group_layout(f, row_len / 32);
  const int64_t num_groups = (num_rows + kGroupRows - 1) / kGroupRows;
  // Below AVX-512 only the 5-bit layout is packed (has_packed_kernel).
  const bool avx512 = cpu_level() == CpuLevel::kAvx512;
  const int num_chunks = detail::packed_row_chunks(pool.num_threads(), num_groups, layout.bytes);
  pool.parallel_for_chunks(num_groups, num_chunks, [&](int64_t g0, int64_t g1) {
    if (avx512) {
      detail::matmul_packed_groups_avx512(f, w.packed_.get(), layout, g0, g1, num_rows, row_len, acts, num_tokens,
                                          y, num_rows);
    } else {
      detail::matmul_packed_groups_avx2(f, w.packed_.get(), layout, g0, g1, num_rows, row_len, acts, num_tokens, y,
                                        num_rows);
    }
  });
#endif
}

void PackedWeight::pack_kquant(TensorType type, int64_t row_len, std::span<const WeightPart> parts,
                               PackedWeight* pw) {
  const size_t group_bytes = detail::kquant_group_bytes(type, row_len);
  const int64_t num_groups = (pw->num_rows_ + kGroupRows - 1) / kGroupRows;
  pw->packed_bytes_ = static_cast<size_t>(num_groups) * group_bytes;
  // Zeroed (padding rows: zero quants and scales), on huge pages as above.
  pw->packed_.reset(static_cast<uint8_t*>(allocate_huge_page_backed(pw->packed_bytes_)));
  const size_t src_row_bytes = row_bytes(type, row_len);
  int64_t r = 0;  // stacked row index
  for (const WeightPart& p : parts) {
    const auto* src = static_cast<const uint8_t*>(p.data);
    for (int64_t pr = 0; pr < p.num_rows; ++pr, ++r) {
      detail::kquant_pack_row(type, src + pr * src_row_bytes, row_len, static_cast<int>(r % kGroupRows),
                              pw->packed_.get() + static_cast<size_t>(r / kGroupRows) * group_bytes);
    }
  }
}

void PackedWeight::matmul_packed_kquant(const PackedWeight& w, const float* x, int64_t num_tokens, float* y,
                                        ThreadPool& pool, MatmulScratch& scratch) {
#if defined(__x86_64__) || defined(_M_X64)
  const int64_t num_rows = w.num_rows_;
  const int64_t row_len = w.row_len_;
  // Activations as for the other types (blocks of 32, natural order), plus
  // sums over each 16 for the per-16 types (kquant_packed.h says why not Q8_K).
  const int64_t num_padded = detail::padded_blocks(row_len);
  const int64_t q_stride = num_padded * 32;
  const int64_t ds_stride = num_padded * 2;
  const int64_t hs_stride = num_padded * 2;
  const size_t q_bytes = (static_cast<size_t>(num_tokens * q_stride) + 63) / 64 * 64;
  const size_t ds_bytes = (static_cast<size_t>(num_tokens * ds_stride) * 4 + 63) / 64 * 64;
  const size_t hs_bytes = static_cast<size_t>(num_tokens * hs_stride) * 4;
  auto* base = static_cast<uint8_t*>(scratch.get(q_bytes + ds_bytes + hs_bytes));
  int8_t* q = reinterpret_cast<int8_t*>(base);
  float* ds = reinterpret_cast<float*>(base + q_bytes);
  int32_t* hs = reinterpret_cast<int32_t*>(base + q_bytes + ds_bytes);
  const bool per16 = detail::kquant_scale_units(w.type_) == 16;
  const detail::QuantizedActs acts{q, ds, q_stride, ds_stride};
  auto quantize = [&](int64_t t0, int64_t t1) {
    detail::quantize_acts_avx2(x, row_len, t0, t1, detail::ActLayout::kNatural, q, q_stride, ds, ds_stride);
    if (!per16) return;
    const detail::QuantizedActs part{q + t0 * q_stride, ds, q_stride, ds_stride};
    detail::kquant_half_sums(part, row_len, t1 - t0, hs + t0 * hs_stride, hs_stride);
  };
  if (num_tokens * row_len >= 16384) {
    pool.parallel_for(num_tokens, quantize);
  } else {
    quantize(0, num_tokens);
  }
  const detail::KquantActs kacts{acts, hs, hs_stride};
  const bool avx512 = cpu_level() == CpuLevel::kAvx512;
  const int64_t num_groups = (num_rows + kGroupRows - 1) / kGroupRows;
  const size_t group_bytes = detail::kquant_group_bytes(w.type_, row_len);
  const int num_chunks = detail::packed_row_chunks(pool.num_threads(), num_groups, group_bytes);
  pool.parallel_for_chunks(num_groups, num_chunks, [&](int64_t g0, int64_t g1) {
    if (avx512) {
      detail::kquant_groups_avx512(w.type_, w.packed_.get(), g0, g1, num_rows, row_len, kacts, num_tokens, y,
                                   num_rows);
    } else {
      detail::kquant_groups_avx2(w.type_, w.packed_.get(), g0, g1, num_rows, row_len, kacts, num_tokens, y,
                                 num_rows);
    }
  });
#else
  (void)w, (void)x, (void)num_tokens, (void)y, (void)pool, (void)scratch;
#endif
}

}  // namespace kvscope
