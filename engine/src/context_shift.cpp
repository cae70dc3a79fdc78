// Context overflow; see context_shift.h.
#include "context_shift.h"

#include <algorithm>
#include <cassert>

namespace kvscope {

ContextShiftPlan plan_context_shift(int32_t num_computed, int32_t block_size, int32_t context_keep,
                                    int32_t max_model_len) {
  ContextShiftPlan plan;
  // Whole blocks kept, so their keys are untouched (and a shared system
  // prompt stays shared); at most half the context, so a shift frees room.
  const int32_t keep_tokens = std::clamp(context_keep, 0, max_model_len / 2);
  plan.keep_blocks = (keep_tokens + block_size - 1) / block_size;
  // A quarter of the context per shift: a shift re-rotates what follows the
  // dropped blocks, so it should be rare, not every token.
  const int32_t quarter_blocks = (max_model_len / 4 + block_size - 1) / block_size;
  const int32_t full_blocks = num_computed / block_size;
  plan.drop_blocks = std::max(0, std::min(std::max(1, quarter_blocks), full_blocks - plan.keep_blocks));
  return plan;
}

int32_t shift_context(Sequence& s, const ContextShiftPlan& plan, KvCacheManager& kv, KvBlockStore& blocks,
                      ContextShiftSnapshot* record) {
  if (plan.drop_blocks <= 0) return 0;
  const int32_t bs = kv.block_size();
  const int32_t first = plan.keep_blocks;
  const int32_t num_dropped = plan.drop_blocks * bs;
  assert((first + plan.drop_blocks) * bs <= s.num_computed && "shift_context: drops uncomputed tokens");
  const int32_t num_after = s.num_computed - num_dropped;
  const auto dropped_begin = s.table.blocks().begin() + first;
  const std::vector<int32_t> dropped(dropped_begin, dropped_begin + plan.drop_blocks);  // read before the drop
  if (!kv.drop_blocks(s.table, first, plan.drop_blocks, num_after, s.id, s.index)) return 0;
  if (record) {
    *record = ContextShiftSnapshot{};
    record->request_id = s.id;
    record->index = s.index;
    record->dropped_from = first * bs;
    record->num_dropped_tokens = num_dropped;
    // Freed: nobody holds it after the drop (the copies drop_blocks made of
    // shared moved blocks may have taken a just-freed block again).
    for (int32_t i = 0; i < plan.drop_blocks; ++i) {
      const int32_t b = dropped[static_cast<size_t>(i)];
      if (kv.pool().ref_count(b) != 0) continue;
      record->freed_blocks.push_back(b);
      record->freed_from.push_back((first + i) * bs);
    }
  }
  for (int32_t i = first; i * bs < num_after; ++i) {
    blocks.rerotate_keys(s.table.block(i), std::min(bs, num_after - i * bs), -num_dropped);
  }
  const auto from = s.tokens.begin() + static_cast<std::ptrdiff_t>(first) * bs;
  s.tokens.erase(from, from + num_dropped);
  s.num_computed = num_after;
  // A draft model's K/V of the moved blocks is at the old positions: it
  // recomputes them from the kept prefix on (spec/model_proposer.h).
  s.draft_num_computed = std::min(s.draft_num_computed, first * bs);
  s.num_shifted_out_tokens += num_dropped;
  ++s.num_context_shifts;
  s.pending_shift_dropped = num_dropped;
  s.pending_shift_from = first * bs;
  return num_dropped;
}

std::vector<int32_t> truncate_middle(const std::vector<int32_t>& prompt, int32_t max_tokens, int32_t context_keep) {
  const int32_t size = static_cast<int32_t>(prompt.size());
  if (size <= max_tokens || max_tokens <= 0) return prompt;
  const int32_t head = std::clamp(context_keep, 0, max_tokens / 2);
  const int32_t tail = max_tokens - head;
  std::vector<int32_t> out(prompt.begin(), prompt.begin() + head);
  out.insert(out.end(), prompt.end() - tail, prompt.end());
  return out;
}

}  // namespace kvscope
