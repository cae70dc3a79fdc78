// PackedWeight::pack (scalar, once at load time), matmul_packed() and
// matmul_packed_stacked(): quantise the activations once (with the input's
// RMSNorm folded in, if given), split the 16-row groups of every weight over
// the pool in contiguous chunks of one parallel_for (never the reduction
// dimension), run the AVX-512 VNNI kernel (Q5_0 and Q5_1 below AVX-512: the
// AVX2 one; K-quants: the AVX-512 or AVX2 kernel of kquant_packed.h). Types or
// CPU levels without such a kernel run matmul() per part. Row packing and the
// chunk count: packed_layout.cpp. See packed_matmul.h.
#include "kernels/cpu/packed_matmul.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/cpu/amx.h"
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
    // Copied as they are, on huge pages (decode streams them once per token).
    const size_t src_row_bytes = row_bytes(type, row_len);
    if (pw.num_rows_ > 0) {
      pw.part_copies_.reset(
          static_cast<uint8_t*>(allocate_huge_page_backed(static_cast<size_t>(pw.num_rows_) * src_row_bytes)));
      if (!pw.part_copies_) throw std::bad_alloc();
    }
    uint8_t* at = pw.part_copies_.get();
    for (const WeightPart& p : parts) {
      const size_t n = static_cast<size_t>(p.num_rows) * src_row_bytes;
      if (n > 0) std::memcpy(at, p.data, n);
      pw.parts_.push_back({at, p.num_rows});
      at += n;
    }
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
  if (!pw.packed_) throw std::bad_alloc();
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
  if (w.is_packed()) {
    const PackedWeight* one = &w;
    matmul_packed_stacked(std::span<const PackedWeight* const>(&one, 1), x, num_tokens, y, pool, scratch);
    return;
  }
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

namespace {

// At most this many weights share one activation quantisation (a LinearGroup
// has at most three parts); more are run in batches of it.
constexpr size_t kMaxStacked = 4;

// What one packed weight's kernel reads besides the shared 8-bit quants:
// s_x times the type's offset (types without a min: packed_matmul_internal.h;
// 0 = s_x as quantised), and the sums over each 16 (per-16 K-quants).
struct ActNeeds {
  float fold = 0.0f;
  bool half_sums = false;
};

ActNeeds act_needs(TensorType t) {
  if (detail::is_packed_kquant(t)) return {0.0f, detail::kquant_scale_units(t) == 16};
  const detail::PackedFormat f = detail::packed_format(t);
  return {f.has_min ? 0.0f : f.offset, false};
}

size_t group_bytes_of(TensorType t, int64_t row_len) {
  if (detail::is_packed_kquant(t)) return detail::kquant_group_bytes(t, row_len);
  return detail::packed_group_layout(detail::packed_format(t), row_len / 32).bytes;
}

size_t round_up_64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

void matmul_packed_stacked(std::span<const PackedWeight* const> ws, const float* x, int64_t num_tokens, float* y,
                           ThreadPool& pool, MatmulScratch& scratch, const RowNorm* norm) {
  int64_t y_stride = 0;
  for (const PackedWeight* w : ws) y_stride += w->num_rows();
  int64_t col = 0;
  for (size_t i = 0; i < ws.size(); i += kMaxStacked) {
    const std::span<const PackedWeight* const> batch = ws.subspan(i, std::min(kMaxStacked, ws.size() - i));
    PackedWeight::run_stacked(batch, x, num_tokens, y + col, y_stride, pool, scratch, norm);
    for (const PackedWeight* w : batch) col += w->num_rows();
  }
}

void PackedWeight::run_stacked(std::span<const PackedWeight* const> ws, const float* x, int64_t num_tokens,
                               float* y, int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch,
                               const RowNorm* norm) {
#if defined(__x86_64__) || defined(_M_X64)
  const size_t num_parts = ws.size();
  if (num_parts == 0 || num_tokens <= 0) return;
  assert(num_parts <= kMaxStacked);
  const int64_t row_len = ws[0]->row_len_;
  // The s_x variants the parts need (variant 0 is the one the quantiser
  // writes; the others start as its copy), and which one each part reads.
  std::array<float, kMaxStacked> folds{};
  std::array<int, kMaxStacked> part_fold{};
  int num_folds = 0;
  bool half_sums = false;
  for (size_t i = 0; i < num_parts; ++i) {
    assert(ws[i]->is_packed() && ws[i]->row_len_ == row_len && "matmul_packed_stacked: precondition");
    const ActNeeds needs = act_needs(ws[i]->type_);
    half_sums = half_sums || needs.half_sums;
    int v = 0;
    while (v < num_folds && folds[static_cast<size_t>(v)] != needs.fold) ++v;
    if (v == num_folds) folds[static_cast<size_t>(num_folds++)] = needs.fold;
    part_fold[i] = v;
  }
  // Activations: per token, 8-bit blocks of 32 in natural order (as matmul()),
  // then one s_x array per variant and the per-16 sums.
  const int64_t num_padded = detail::padded_blocks(row_len);
  const int64_t q_stride = num_padded * 32;
  const int64_t ds_stride = num_padded * 2;
  const int64_t hs_stride = num_padded * 2;
  const size_t q_bytes = round_up_64(static_cast<size_t>(num_tokens * q_stride));
  const size_t ds_bytes = round_up_64(static_cast<size_t>(num_tokens * ds_stride) * 4);
  const size_t hs_bytes = half_sums ? static_cast<size_t>(num_tokens * hs_stride) * 4 : 0;
  auto* base = static_cast<uint8_t*>(scratch.get(q_bytes + static_cast<size_t>(num_folds) * ds_bytes + hs_bytes));
  int8_t* q = reinterpret_cast<int8_t*>(base);
  auto ds_of = [&](int v) { return reinterpret_cast<float*>(base + q_bytes + static_cast<size_t>(v) * ds_bytes); };
  int32_t* hs = reinterpret_cast<int32_t*>(base + q_bytes + static_cast<size_t>(num_folds) * ds_bytes);
  auto quantize = [&](int64_t t0, int64_t t1) {
    float* ds0 = ds_of(0);
    detail::quantize_acts_avx2(x, row_len, t0, t1, detail::ActLayout::kNatural, q, q_stride, ds0, ds_stride, norm);
    for (int v = 1; v < num_folds; ++v) std::copy(ds0 + t0 * ds_stride, ds0 + t1 * ds_stride, ds_of(v) + t0 * ds_stride);
    for (int v = 0; v < num_folds; ++v) {
      const float offset = folds[static_cast<size_t>(v)];
      if (offset == 0.0f) continue;
      // m = offset * d: fold the (power of two, so exact) offset into s_x.
      float* ds = ds_of(v);
      for (int64_t t = t0; t < t1; ++t) {
        for (int64_t b = 0; b < row_len / 32; ++b) ds[t * ds_stride + 2 * b + 1] *= offset;
      }
    }
    if (!half_sums) return;
    const detail::QuantizedActs part{q + t0 * q_stride, ds0, q_stride, ds_stride};
    detail::kquant_half_sums(part, row_len, t1 - t0, hs + t0 * hs_stride, hs_stride);
  };
  if (num_tokens * row_len >= 16384) {
    pool.parallel_for(num_tokens, quantize);
  } else {
    quantize(0, num_tokens);
  }
  // Every part split into the chunks matmul_packed() would give it alone
  // (packed_row_chunks: balanced by bytes within the part), all of them one
  // job whose chunks the threads claim: one barrier for all parts.
  std::array<int64_t, kMaxStacked> num_groups{};
  std::array<int, kMaxStacked + 1> chunk_begin{};
  std::array<int64_t, kMaxStacked> col{};
  for (size_t i = 0; i < num_parts; ++i) {
    num_groups[i] = (ws[i]->num_rows_ + kGroupRows - 1) / kGroupRows;
    const int num_chunks =
        num_groups[i] == 0 ? 0 : detail::packed_row_chunks(pool.num_threads(), num_groups[i],
                                                           group_bytes_of(ws[i]->type_, row_len));
    chunk_begin[i + 1] = chunk_begin[i] + num_chunks;
    if (i > 0) col[i] = col[i - 1] + ws[i - 1]->num_rows_;
  }
  const int total_chunks = chunk_begin[num_parts];
  if (total_chunks == 0) return;
  const bool avx512 = cpu_level() == CpuLevel::kAvx512;  // below it: only Q5_x and K-quants are packed
  // AMX tiles pay from one whole tile of 16 tokens (prefill); same bits as VNNI.
  const bool amx = avx512 && num_tokens >= 16 && amx_enabled();
  pool.parallel_for_chunks(total_chunks, total_chunks, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      size_t i = 0;
      while (c >= chunk_begin[i + 1]) ++i;
      // Chunk k of part i: groups [k n / C, (k + 1) n / C), as ThreadPool splits.
      const int64_t k = c - chunk_begin[i], C = chunk_begin[i + 1] - chunk_begin[i];
      const int64_t g0 = num_groups[i] * k / C, g1 = num_groups[i] * (k + 1) / C;
      if (g0 >= g1) continue;
      const PackedWeight& w = *ws[i];
      const detail::QuantizedActs acts{q, ds_of(part_fold[i]), q_stride, ds_stride};
      float* yi = y + col[i];
      if (detail::is_packed_kquant(w.type_)) {
        const detail::KquantActs kacts{acts, hs, hs_stride};
        if (amx) {
          detail::kquant_groups_amx(w.type_, w.packed_.get(), g0, g1, w.num_rows_, row_len, kacts, num_tokens, yi,
                                    y_stride);
        } else if (avx512) {
          detail::kquant_groups_avx512(w.type_, w.packed_.get(), g0, g1, w.num_rows_, row_len, kacts, num_tokens, yi,
                                       y_stride);
        } else {
          detail::kquant_groups_avx2(w.type_, w.packed_.get(), g0, g1, w.num_rows_, row_len, kacts, num_tokens, yi,
                                     y_stride);
        }
        continue;
      }
      const detail::PackedFormat f = detail::packed_format(w.type_);
      const detail::PackedGroupLayout layout = detail::packed_group_layout(f, row_len / 32);
      if (amx) {
        detail::matmul_packed_groups_amx(f, w.packed_.get(), layout, g0, g1, w.num_rows_, row_len, acts, num_tokens,
                                         yi, y_stride);
      } else if (avx512) {
        detail::matmul_packed_groups_avx512(f, w.packed_.get(), layout, g0, g1, w.num_rows_, row_len, acts,
                                            num_tokens, yi, y_stride);
      } else {
        detail::matmul_packed_groups_avx2(f, w.packed_.get(), layout, g0, g1, w.num_rows_, row_len, acts, num_tokens,
                                          yi, y_stride);
      }
    }
  });
#else
  (void)ws, (void)x, (void)num_tokens, (void)y, (void)y_stride, (void)pool, (void)scratch, (void)norm;
#endif
}

}  // namespace kvscope
