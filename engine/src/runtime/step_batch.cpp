#include "runtime/step_batch.h"

#include <cassert>

namespace kvscope {

void StepBatch::clear() {
  num_tokens = 0;
  num_seqs = 0;
  token_ids.clear();
  positions.clear();
  slot_mapping.clear();
  query_start.assign(1, 0);
  block_table_start.assign(1, 0);
  block_ids.clear();
  logits_rows.clear();
  cascade_prefix_len.clear();
  cascade_seq_start.assign(1, 0);
  cascade_seqs.clear();
  draws.clear();
  penalty_start.assign(1, 0);
  penalty_ids.clear();
  penalty_counts.clear();
}

void StepBatch::add_sequence(const int32_t* tokens, int32_t num_rows, int32_t first_pos,
                             const int64_t* slots, const std::vector<int32_t>& table,
                             int32_t num_logits) {
  assert(num_logits >= 0 && num_logits <= num_rows && "add_sequence: more logits rows than rows");
  if (query_start.empty()) query_start.push_back(0);
  if (block_table_start.empty()) block_table_start.push_back(0);
  for (int32_t i = 0; i < num_rows; ++i) {
    token_ids.push_back(tokens[i]);
    positions.push_back(first_pos + i);
    slot_mapping.push_back(slots[i]);
  }
  num_tokens += num_rows;
  ++num_seqs;
  query_start.push_back(num_tokens);
  block_ids.insert(block_ids.end(), table.begin(), table.end());
  block_table_start.push_back(static_cast<int32_t>(block_ids.size()));
  for (int32_t r = num_tokens - num_logits; r < num_tokens; ++r) logits_rows.push_back(r);
}

void StepBatch::add_draw(const TokenDraw& draw, std::span<const int32_t> ids, std::span<const float> counts) {
  assert(ids.size() == counts.size() && "add_draw: one count per penalised id");
  assert(draw.logits_row >= 0 && draw.logits_row < static_cast<int32_t>(logits_rows.size()) &&
         "add_draw: not a logits row");
  if (penalty_start.empty()) penalty_start.push_back(0);
  draws.push_back(draw);
  penalty_ids.insert(penalty_ids.end(), ids.begin(), ids.end());
  penalty_counts.insert(penalty_counts.end(), counts.begin(), counts.end());
  penalty_start.push_back(static_cast<int32_t>(penalty_ids.size()));
}

}  // namespace kvscope
