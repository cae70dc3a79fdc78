#include "runtime/cascade_plan.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/paged_attention.h"

namespace kvscope {

CascadeRule cascade_rule(CascadeMode mode) {
  switch (mode) {
    case CascadeMode::Off: return {};
    case CascadeMode::On: return {kAttentionTile, 2};
    case CascadeMode::Auto: return {kAutoCascadeMinSharedTokens, kAutoCascadeMinSeqs};
  }
  return {};
}

void plan_cascade(StepBatch& batch, CascadeMode mode, int32_t block_size) {
  batch.cascade_prefix_len.clear();
  batch.cascade_seq_start.assign(1, 0);
  batch.cascade_seqs.clear();
  if (mode == CascadeMode::Off) return;
  const CascadeRule rule = cascade_rule(mode);

  auto table_of = [&](int32_t s) {
    return batch.block_ids.data() + batch.block_table_start[static_cast<size_t>(s)];
  };
  auto table_len = [&](int32_t s) {
    return batch.block_table_start[static_cast<size_t>(s) + 1] - batch.block_table_start[static_cast<size_t>(s)];
  };
  auto first_position = [&](int32_t s) {
    return batch.positions[static_cast<size_t>(batch.query_start[static_cast<size_t>(s)])];
  };

  // Candidates: sequences with at least one whole tile computed before this step.
  std::vector<char> grouped(static_cast<size_t>(batch.num_seqs), 0);
  std::vector<int32_t> members;
  for (int32_t lead = 0; lead < batch.num_seqs; ++lead) {
    if (grouped[static_cast<size_t>(lead)] || table_len(lead) == 0 || first_position(lead) < kAttentionTile) continue;
    members.assign(1, lead);
    int32_t common_blocks = table_len(lead);
    int32_t min_first = first_position(lead);
    for (int32_t s = lead + 1; s < batch.num_seqs; ++s) {
      if (grouped[static_cast<size_t>(s)] || table_len(s) == 0 || first_position(s) < kAttentionTile ||
          table_of(s)[0] != table_of(lead)[0]) {
        continue;
      }
      const int32_t limit = std::min(common_blocks, table_len(s));
      int32_t same = 0;
      while (same < limit && table_of(s)[same] == table_of(lead)[same]) ++same;
      common_blocks = same;
      min_first = std::min(min_first, first_position(s));
      members.push_back(s);
    }
    for (int32_t s : members) grouped[static_cast<size_t>(s)] = 1;
    const int64_t shared = std::min<int64_t>(static_cast<int64_t>(common_blocks) * block_size, min_first);
    const int32_t prefix = static_cast<int32_t>(shared / kAttentionTile * kAttentionTile);
    if (prefix == 0 || prefix < rule.min_shared_tokens || static_cast<int32_t>(members.size()) < rule.min_seqs) {
      continue;
    }
    batch.cascade_prefix_len.push_back(prefix);
    batch.cascade_seqs.insert(batch.cascade_seqs.end(), members.begin(), members.end());
    batch.cascade_seq_start.push_back(static_cast<int32_t>(batch.cascade_seqs.size()));
  }
}

}  // namespace kvscope
