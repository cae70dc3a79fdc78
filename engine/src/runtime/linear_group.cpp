#include "runtime/linear_group.h"

#include <cassert>
#include <cstring>

namespace kvscope {

LinearGroup::LinearGroup(const std::vector<const WeightMatrix*>& parts) {
  assert(!parts.empty());
  bool same_type = true;
  for (const WeightMatrix* p : parts) {
    assert(p->present() && p->row_len == parts[0]->row_len);
    same_type = same_type && p->type == parts[0]->type;
    part_rows_.push_back(p->num_rows);
    num_rows_ += p->num_rows;
  }
  if (same_type) {
    std::vector<WeightPart> wp;
    for (const WeightMatrix* p : parts) wp.push_back(WeightPart{p->data, p->num_rows});
    packed_.push_back(PackedWeight::pack(parts[0]->type, parts[0]->row_len, wp));
  } else {
    for (const WeightMatrix* p : parts) {
      const WeightPart wp{p->data, p->num_rows};
      packed_.push_back(PackedWeight::pack(p->type, p->row_len, std::span<const WeightPart>(&wp, 1)));
    }
  }
}

void LinearGroup::run(const float* x, int32_t num_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch) {
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
