// EngineSnapshot -> JSON (see snapshot_json.h).
#include "snapshot_json.h"

#include <algorithm>
#include <vector>

namespace kvscope::server {
namespace {

using Json = nlohmann::ordered_json;

char block_char(const BlockSnapshot& b) {
  switch (b.state) {
    case BlockState::Used: return b.shared() ? 'S' : 'U';
    case BlockState::CachedFree: return 'C';
    default: return '.';
  }
}

Json step_json(const StepStats& s) {
  return {{"step", s.step},
          {"num_prefill_tokens", s.num_prefill_tokens},
          {"num_decode_tokens", s.num_decode_tokens},
          {"num_seqs", s.num_seqs},
          {"step_time_s", s.step_time_s},
          {"attention_time_s", s.attention_time_s},
          {"device_time_s", s.device_time_s},  // a GPU's own time in the step; 0 on the CPU
          {"num_used_blocks", s.num_used_blocks},
          {"num_total_blocks", s.num_total_blocks},
          {"num_cascade_groups", s.num_cascade_groups},
          {"rank_forward_s", std::vector<double>(s.rank_forward_s.begin(),
                                                 s.rank_forward_s.begin() + std::clamp(s.num_ranks, 0, StepStats::kMaxRanks))}};
}


Json kv_json(const KvStats& kv) {
  return {{"num_blocks", kv.num_blocks},
          {"num_used_blocks", kv.num_used_blocks},
          {"num_cached_free_blocks", kv.num_cached_free_blocks},
          {"num_free_blocks", kv.num_free_blocks},
          {"num_swap_blocks", kv.num_swap_blocks},
          {"num_used_swap_blocks", kv.num_used_swap_blocks},
          {"waste_percent", kv.waste_percent()},
          {"num_prefix_queried_tokens", kv.num_prefix_queried_tokens},
          {"num_prefix_hit_tokens", kv.num_prefix_hit_tokens},
          {"prefix_hit_rate", kv.prefix_hit_rate()},
          {"num_evictions", kv.num_evictions},
          {"num_copy_on_writes", kv.num_copy_on_writes},
          {"num_preemptions", kv.num_preemptions},
          {"num_swapped_out_blocks", kv.num_swapped_out_blocks},
          {"num_swapped_in_blocks", kv.num_swapped_in_blocks}};
}

}  // namespace

Json tensor_parallel_json(const TensorParallelMemory& m) {
  Json ranks = Json::array();
  for (const RankMemory& r : m.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"q_head_begin", r.q_head_begin},
                     {"num_q_heads", r.num_q_heads},
                     {"kv_head_begin", r.kv_head_begin},
                     {"num_kv_heads", r.num_kv_heads},
                     {"weight_bytes", r.weight_bytes},
                     {"kv_bytes", r.kv_bytes},
                     {"workspace_bytes", r.workspace_bytes}});
  }
  return {{"tp", m.tp},
          {"tp_reduce", m.deterministic ? "deterministic" : "fast"},
          {"num_kv_heads", m.num_kv_heads},
          {"num_kv_head_slots", m.num_kv_head_slots},
          {"kv_heads_replicated", m.kv_heads_replicated},
          {"ranks", ranks}};
}

Json snapshot_json(const EngineSnapshot& snap) {
  Json sequences = Json::array();
  for (const SequenceSnapshot& s : snap.sequences) {
    sequences.push_back({{"id", s.id},
                         {"index", s.index},
                         {"state", sequence_state_name(s.state)},
                         {"num_prompt_tokens", s.num_prompt_tokens},
                         {"num_tokens", s.tokens.size()},
                         {"num_computed_tokens", s.num_computed_tokens},
                         {"num_cached_tokens", s.num_cached_tokens},
                         {"num_preemptions", s.num_preemptions},
                         {"block_table", s.block_table}});
  }
  std::string blocks(snap.blocks.size(), '.');
  for (size_t i = 0; i < snap.blocks.size(); ++i) blocks[i] = block_char(snap.blocks[i]);
  return {{"step", snap.step},
          {"time_s", snap.time_s},
          {"block_size", snap.block_size},
          {"num_waiting", snap.num_waiting},
          {"num_running", snap.num_running},
          {"num_swapped", snap.num_swapped},
          {"sequences", sequences},
          {"kv", kv_json(snap.kv)},
          {"last_step", step_json(snap.last_step)},
          {"num_cascade_groups", snap.cascade_groups.size()},
          {"tensor_parallel", tensor_parallel_json(snap.tensor_parallel)},
          {"blocks", blocks}};
}

}  // namespace kvscope::server
