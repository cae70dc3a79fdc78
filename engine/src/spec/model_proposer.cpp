#include "spec/model_proposer.h"

#include <algorithm>
#include <cassert>

namespace kvscope {
namespace {

// The greedy draft token: the first of the largest logits (deterministic).
int32_t argmax(const float* row, int32_t vocab) {
  return static_cast<int32_t>(std::max_element(row, row + vocab) - row);
}

}  // namespace

bool ModelProposer::draft(std::span<DraftSequence> seqs, const std::atomic<bool>* interrupt) {
  assert(backend_ && "ModelProposer::draft before attach");
  const int32_t vocab = backend_->model_config().vocab_size;
  last_num_forwards_ = 0;
  last_num_rows_ = 0;
  int32_t max_draft = 0;
  for (DraftSequence& d : seqs) {
    d.draft->clear();
    max_draft = std::max(max_draft, d.num_draft);
  }
  // Forward 0: every sequence's rows, logits of the drafting ones' last row.
  batch_.clear();
  for (const DraftSequence& d : seqs) {
    const int32_t num_rows = d.end_row - d.first_row;
    if (num_rows <= 0) continue;
    assert(d.num_draft == 0 || d.end_row == static_cast<int32_t>(d.tokens.size()));
    slots_.resize(static_cast<size_t>(num_rows));
    for (int32_t i = 0; i < num_rows; ++i) slots_[static_cast<size_t>(i)] = d.table->slot(d.first_row + i);
    batch_.add_sequence(d.tokens.data() + d.first_row, num_rows, d.first_row, slots_.data(), d.table->blocks(),
                        d.num_draft > 0 ? 1 : 0);
  }
  if (batch_.num_tokens == 0) return true;
  for (int32_t j = 0;; ++j) {
    if (!backend_->forward(batch_, logits_, interrupt, num_layers_)) return false;
    ++last_num_forwards_;
    last_num_rows_ += batch_.num_tokens;
    size_t row = 0;
    for (DraftSequence& d : seqs) {
      if (d.num_draft > j) d.draft->push_back(argmax(logits_.data() + row++ * static_cast<size_t>(vocab), vocab));
    }
    if (j + 1 >= max_draft) break;
    // Forward j + 1: one row per sequence still drafting, its newest draft token.
    batch_.clear();
    for (DraftSequence& d : seqs) {
      if (d.num_draft <= j + 1) continue;
      const int32_t pos = d.end_row + j;  // the position of draft token j
      const int64_t slot = d.table->slot(pos);
      batch_.add_sequence(&d.draft->back(), 1, pos, &slot, d.table->blocks(), 1);
    }
  }
  return true;
}

}  // namespace kvscope
