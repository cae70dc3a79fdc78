#include "runtime/linear_group.h"

#include <cassert>
#include <cstring>

namespace kvscope {

LinearGroup::LinearGroup(const std::vector<const WeightMatrix*>& parts)
    : LinearGroup(parts, 0, parts.empty() ? 0 : parts[0]->row_len) {}

LinearGroup::LinearGroup(const std::vector<const WeightMatrix*>& parts, int64_t k_begin, int64_t k_size) {
  assert(!parts.empty());
  row_len_ = k_size;
  const bool whole_rows = k_begin == 0 && k_size == parts[0]->row_len;
  // Each part as the rows to pack: the original data, or a gathered K slice
  // (read only here: every PackedWeight holds its own copy).
  std::vector<WeightMatrix> views;
  std::vector<std::vector<uint8_t>> slices;
  bool same_type = true;
  for (const WeightMatrix* p : parts) {
    assert(p->present() && p->row_len == parts[0]->row_len);
    same_type = same_type && p->type == parts[0]->type;
    part_rows_.push_back(p->num_rows);
    num_rows_ += p->num_rows;
    WeightMatrix view = *p;
    if (!whole_rows) {
      const int64_t block = traits_of(p->type).block_elems;
      assert(k_begin >= 0 && k_size > 0 && k_begin + k_size <= p->row_len);
      assert(k_begin % block == 0 && k_size % block == 0);
      (void)block;
      const size_t src_stride = row_bytes(p->type, p->row_len), offset = row_bytes(p->type, k_begin);
      const size_t dst_stride = row_bytes(p->type, k_size);
      std::vector<uint8_t>& slice = slices.emplace_back(dst_stride * static_cast<size_t>(p->num_rows));
      const auto* src = static_cast<const uint8_t*>(p->data);
      for (int64_t r = 0; r < p->num_rows; ++r) {
        std::memcpy(slice.data() + r * dst_stride, src + r * src_stride + offset, dst_stride);
      }
      view.data = slice.data();
      view.row_len = k_size;
    }
    views.push_back(view);
  }
  if (same_type) {
    std::vector<WeightPart> wp;
    for (const WeightMatrix& v : views) wp.push_back(WeightPart{v.data, v.num_rows});
    packed_.push_back(PackedWeight::pack(views[0].type, k_size, wp));
  } else {
    for (const WeightMatrix& v : views) {
      const WeightPart wp{v.data, v.num_rows};
      packed_.push_back(PackedWeight::pack(v.type, k_size, std::span<const WeightPart>(&wp, 1)));
    }
  }
  all_packed_ = true;
  for (const PackedWeight& pw : packed_) all_packed_ = all_packed_ && pw.is_packed();
}

void LinearGroup::run(const float* x, int32_t num_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch,
                      const RowNorm* norm) {
  if (all_packed_) {
    stacked_.clear();
    for (const PackedWeight& pw : packed_) stacked_.push_back(&pw);
    matmul_packed_stacked(stacked_, x, num_tokens, y, pool, scratch, norm);
    return;
  }
  if (norm) {  // matmul() reads x as it is: norm it first
    // One buffer per thread, not per group: every layer's groups share it
    // (a tensor-parallel rank runs on its own thread).
    thread_local std::vector<float> normed;
    normed.resize(static_cast<size_t>(num_tokens * row_len_));
    rms_norm(x, norm->weight, num_tokens, row_len_, norm->eps, normed.data());
    x = normed.data();
  }
  if (packed_.size() == 1) {
    matmul_packed(packed_[0], x, num_tokens, y, pool, scratch);
    return;
  }
  int64_t col = 0;
  for (size_t i = 0; i < packed_.size(); ++i) {
    const int64_t rows = part_rows_[i];
    part_out_.resize(static_cast<size_t>(num_tokens * rows));
    matmul_packed(packed_[i], x, num_tokens, part_out_.data(), pool, scratch);
    for (int32_t t = 0; t < num_tokens; ++t) {
      std::memcpy(y + t * num_rows_ + col, part_out_.data() + t * rows, static_cast<size_t>(rows) * sizeof(float));
    }
    col += rows;
  }
}

}  // namespace kvscope
