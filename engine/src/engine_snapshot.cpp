// The inspector's picture of the engine (EngineSnapshot) and the KV counters.
// Built on the stepping thread from the scheduler's queues and the block
// metadata; the result is immutable and shared with whoever reads it.
#include <algorithm>

#include "engine_impl.h"

namespace kvscope {

const char* block_state_name(BlockState state) {
  switch (state) {
    case BlockState::Free: return "free";
    case BlockState::Used: return "used";
    case BlockState::CachedFree: return "cached";
  }
  return "unknown";
}

const char* sequence_state_name(SequenceState state) {
  switch (state) {
    case SequenceState::Waiting: return "waiting";
    case SequenceState::Running: return "running";
    case SequenceState::Swapped: return "swapped";
    case SequenceState::Finished: return "finished";
  }
  return "unknown";
}

const char* scheduling_policy_name(SchedulingPolicy policy) {
  return policy == SchedulingPolicy::Static ? "static" : "continuous";
}

const char* cascade_mode_name(CascadeMode mode) {
  switch (mode) {
    case CascadeMode::Off: return "off";
    case CascadeMode::Auto: return "auto";
    case CascadeMode::On: return "on";
  }
  return "unknown";
}

const char* preemption_mode_name(PreemptionMode mode) {
  return mode == PreemptionMode::Swap ? "swap" : "recompute";
}

KvStats Engine::Impl::kv_stats() const {
  KvStats s = kv_manager->stats();
  s.num_preemptions = scheduler->num_preemptions();
  return s;
}

std::shared_ptr<const EngineSnapshot> Engine::Impl::build_snapshot() {
  auto snap = std::make_shared<EngineSnapshot>();
  const BlockPool& pool = kv_manager->pool();
  snap->step = num_steps;
  snap->time_s = now_s();
  snap->block_size = config.block_size;
  snap->kv_cache_type = config.kv_cache_type;
  snap->kv_bytes_per_token = static_cast<int64_t>(info.kv_bytes_per_token);
  snap->num_waiting = scheduler->num_waiting();
  snap->num_running = scheduler->num_running();
  snap->num_swapped = scheduler->num_swapped();
  snap->last_step = stats;
  snap->recent_steps = std::move(steps_since_snapshot);
  steps_since_snapshot.clear();
  snap->kv = kv_stats();
  snap->cascade_groups = last_cascade;
  snap->recent_shifts = recent_shifts;
  snap->spec = spec_totals;
  if (config.spec != SpecMethod::Off) snap->spec.method = spec_method_name(config.spec);
  if (const auto* proposer = dynamic_cast<const ModelProposer*>(scheduler->proposer())) {
    snap->spec.draft_layers = proposer->num_layers() > 0 ? proposer->num_layers() : draft_weights->config.num_layers;
  }
  snap->spec.draft_kv_bytes = draft_backend ? static_cast<int64_t>(draft_backend->kv_blocks().pool_bytes()) : 0;
  snap->tensor_parallel = info.tensor_parallel;
  snap->backend_reason = info.backend_reason;

  // Who holds each device block (swapped tables hold swap ids: not device
  // blocks), as (block, request) in the order the sequences come, then
  // grouped by block in that order by a counting sort: a pool can have
  // 100,000+ blocks on a GPU, and a list per block cost a snapshot 1.6 ms
  // there (snapshot_bench).
  const int32_t num_blocks = pool.num_blocks();
  std::vector<std::pair<int32_t, RequestId>> holds;
  scheduler->for_each([&](const Sequence& s) {
    SequenceSnapshot q;
    q.id = s.id;
    q.index = s.index;
    q.state = s.state;
    q.num_prompt_tokens = s.num_prompt_tokens;
    q.num_computed_tokens = s.num_computed;
    q.num_cached_tokens = s.num_cached_tokens;
    q.num_preemptions = s.num_preemptions;
    q.num_draft_tokens = s.spec.num_draft_tokens();
    q.num_accepted_tokens = s.spec.num_accepted_tokens();
    q.spec_paused = s.spec.paused();
    q.num_context_shifts = s.num_context_shifts;
    q.num_dropped_tokens = s.num_shifted_out_tokens;
    q.tokens = s.tokens;
    q.block_table = s.table.blocks();
    if (s.state != SequenceState::Swapped) {
      for (int32_t b : q.block_table) holds.emplace_back(b, s.id);
    }
    snap->sequences.push_back(std::move(q));
  });
  std::vector<int32_t> first_hold(static_cast<size_t>(num_blocks) + 1, 0);  // block b's holds start here
  for (const auto& [b, id] : holds) ++first_hold[static_cast<size_t>(b) + 1];
  for (size_t b = 0; b < static_cast<size_t>(num_blocks); ++b) first_hold[b + 1] += first_hold[b];
  std::vector<RequestId> holders(holds.size());
  {
    std::vector<int32_t> next(first_hold.begin(), first_hold.end() - 1);
    for (const auto& [b, id] : holds) holders[static_cast<size_t>(next[static_cast<size_t>(b)]++)] = id;
  }
  snap->blocks.resize(static_cast<size_t>(num_blocks));
  snap->block_owners.reserve(holders.size());
  for (int32_t b = 0; b < num_blocks; ++b) {
    BlockSnapshot& out = snap->blocks[static_cast<size_t>(b)];
    out.ref_count = pool.ref_count(b);
    out.hash = pool.hash_of(b);
    out.fill = pool.fill(b);
    out.state = out.ref_count > 0 ? BlockState::Used : out.hash != 0 ? BlockState::CachedFree : BlockState::Free;
    out.owners_begin = static_cast<int32_t>(snap->block_owners.size());
    // Each request once, where it first came (a request's completions share blocks).
    for (int32_t k = first_hold[static_cast<size_t>(b)]; k < first_hold[static_cast<size_t>(b) + 1]; ++k) {
      const RequestId id = holders[static_cast<size_t>(k)];
      const auto mine = snap->block_owners.begin() + out.owners_begin;
      if (std::find(mine, snap->block_owners.end(), id) == snap->block_owners.end()) snap->block_owners.push_back(id);
    }
    out.owners_end = static_cast<int32_t>(snap->block_owners.size());
  }
  return snap;
}

}  // namespace kvscope
