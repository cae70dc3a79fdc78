// EngineSnapshot: an immutable picture of the engine after one step, for the
// inspector (GUI) and for tests. Plain values only, so it can cross threads
// and be kept while the engine moves on.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/cpu/kv_cache_type.h"
#include "kvscope/rank_memory.h"
#include "kvscope/request.h"

namespace kvscope {

enum class BlockState : uint8_t {
  Free,        // never used, or its prefix hash was evicted
  Used,        // reference count > 0
  CachedFree,  // reference count 0 but still findable by its prefix hash
};

enum class SequenceState : uint8_t { Waiting, Running, Swapped, Finished };

const char* block_state_name(BlockState state);
const char* sequence_state_name(SequenceState state);

struct BlockSnapshot {
  BlockState state = BlockState::Free;
  int32_t ref_count = 0;
  int32_t fill = 0;           // token slots written (0..block_size)
  uint64_t hash = 0;          // prefix hash of a full block; 0: none
  int32_t owners_begin = 0;   // [owners_begin, owners_end) in EngineSnapshot::block_owners
  int32_t owners_end = 0;
  bool shared() const { return ref_count > 1; }
};

struct SequenceSnapshot {
  RequestId id = 0;
  int32_t index = 0;  // which of the request's n completions
  SequenceState state = SequenceState::Waiting;
  int32_t num_prompt_tokens = 0;
  int32_t num_computed_tokens = 0;  // tokens whose K/V are in the cache
  int32_t num_cached_tokens = 0;    // prompt tokens served by the prefix cache at its first admission
  int32_t num_preemptions = 0;
  // Speculative decoding so far (docs/speculative.md).
  int32_t num_draft_tokens = 0;     // tokens proposed and verified
  int32_t num_accepted_tokens = 0;  // of those, accepted
  int32_t num_context_shifts = 0;   // context overflow = shift (docs/context-overflow.md)
  int32_t num_dropped_tokens = 0;   // tokens shifts dropped from the middle of the context
  bool spec_paused = false;         // its speculation is switched off for now (it did not pay)
  std::vector<int32_t> tokens;       // prompt + generated (less what shifts dropped)
  // Logical -> physical block ids; while state == Swapped, ids of the host
  // swap space (the same numbers name other blocks of the pool).
  std::vector<int32_t> block_table;
};

struct KvStats {
  int32_t num_blocks = 0;
  int32_t num_used_blocks = 0;
  int32_t num_cached_free_blocks = 0;
  int32_t num_free_blocks = 0;   // includes cached-free
  int32_t num_swap_blocks = 0;
  int32_t num_used_swap_blocks = 0;
  int64_t num_reserved_slots = 0;  // slots in blocks held by sequences
  int64_t num_written_slots = 0;   // of those, slots holding a token's K/V
  int64_t num_prefix_queried_tokens = 0;  // prompt tokens looked up in the prefix cache
  int64_t num_prefix_hit_tokens = 0;
  int64_t num_evictions = 0;
  int64_t num_copy_on_writes = 0;
  int64_t num_preemptions = 0;
  int64_t num_swapped_out_blocks = 0;
  int64_t num_swapped_in_blocks = 0;
  // Reserved but unwritten slots, in percent of reserved slots.
  double waste_percent() const {
    return num_reserved_slots ? 100.0 * static_cast<double>(num_reserved_slots - num_written_slots) /
                                    static_cast<double>(num_reserved_slots)
                              : 0.0;
  }
  double prefix_hit_rate() const {
    return num_prefix_queried_tokens
               ? static_cast<double>(num_prefix_hit_tokens) / static_cast<double>(num_prefix_queried_tokens)
               : 0.0;
  }
};

struct StepStats {
  uint64_t step = 0;
  int32_t num_prefill_tokens = 0;
  int32_t num_decode_tokens = 0;
  int32_t num_seqs = 0;  // sequences in the batch
  // Tokens the backend drew itself (gpu_sampling: only their ids came back);
  // the rest of the step's tokens were sampled by the engine from logits.
  int32_t num_backend_draws = 0;
  // The backend replayed a captured graph of the step's launches (gpu_graphs).
  bool graph_replayed = false;
  double step_time_s = 0.0;
  // Where step_time_s went: the backend's forward pass (on a GPU until its
  // logits or drawn tokens are on the host), then sampling and publishing the
  // tokens; the rest is scheduling and bookkeeping on the host.
  double forward_time_s = 0.0;
  // Of forward_time_s, the device's own time from its first kernel to its
  // last copy back (Backend::last_device_time_s); 0 on the CPU backend.
  double device_time_s = 0.0;
  double sample_time_s = 0.0;
  int32_t num_used_blocks = 0;
  int32_t num_total_blocks = 0;
  // Attention kernels, all layers, this step (wall time on the stepping thread).
  double attention_time_s = 0.0;
  // Cascade attention in this step (CascadeGroupSnapshot has the detail).
  int32_t num_cascade_groups = 0;
  int32_t num_cascade_seqs = 0;        // sequences whose shared prefix had a cascade pass
  int32_t num_cascade_tokens = 0;      // shared prefix tokens, summed over groups
  int64_t cascade_kv_bytes_saved = 0;  // K/V bytes not read because members shared one read
  // Speculative decoding in this step. A verifying sequence has 1 + drafts
  // query rows: its one decode row (in num_decode_tokens) and its drafts
  // (num_draft_tokens); the batch's rows are prefill + decode + draft tokens.
  int32_t num_spec_seqs = 0;          // sequences that verified a proposal
  int32_t num_draft_tokens = 0;       // draft rows
  int32_t num_accepted_tokens = 0;    // drafts accepted
  int32_t num_verify_rows = 0;        // rows of the verifying sequences (1 + drafts each)
  int32_t num_rolled_back_blocks = 0; // blocks released because they held only rejected drafts
  int32_t num_spec_pauses = 0;        // sequences whose speculation switched itself off (did not pay)
  double propose_time_s = 0.0;        // the proposer's time (scheduling; a model proposer's draft passes)
  // A model proposer (spec = draft, early_exit): its forward passes this
  // step and their query rows (a draft model's include every target row).
  int32_t num_draft_forwards = 0;
  int32_t num_draft_forward_rows = 0;
  // Tensor parallelism: each rank's part of the forward pass, wall time on
  // its own thread ([num_ranks]; 0 ranks when the step ran no forward pass).
  // The Chrome trace has the same as one lane per rank (EngineEventType::RankForward).
  static constexpr int kMaxRanks = 8;  // the tp setting's maximum
  int32_t num_ranks = 0;
  std::array<double, kMaxRanks> rank_forward_s{};
  int32_t num_batch_tokens() const { return num_prefill_tokens + num_decode_tokens + num_draft_tokens; }
};

// Speculative decoding since the engine was created (docs/speculative.md).
struct SpecStats {
  std::string method;               // the proposer: "ngram", "draft", "early_exit"; empty when off
  int32_t draft_layers = 0;         // layers a model proposer's draft runs (early exit: L; draft: its model's)
  int64_t draft_kv_bytes = 0;       // the draft model's share of the KV pool (spec = draft), in bytes
  int64_t num_drafts = 0;           // proposals verified
  int64_t num_draft_tokens = 0;     // tokens proposed (each a query row)
  int64_t num_accepted_tokens = 0;  // of those, accepted
  int64_t num_pauses = 0;           // times a sequence switched its speculation off (spec/spec_tracker.h)
  // By draft position i (0: the first draft token): drafts that reached
  // position i and were judged there, and of those the ones accepted. A draft
  // is judged up to its first rejection (or the request's end).
  std::vector<int64_t> num_judged_at;    // [max k seen]
  std::vector<int64_t> num_accepted_at;  // [max k seen]
  double acceptance_rate() const {  // accepted / proposed tokens
    return num_draft_tokens ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens) : 0.0;
  }
  double mean_accepted_length() const {  // accepted tokens per proposal; + 1 = tokens per verification
    return num_drafts ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_drafts) : 0.0;
  }
  double acceptance_at(size_t i) const {  // P(accepted | judged at position i)
    return i < num_judged_at.size() && num_judged_at[i]
               ? static_cast<double>(num_accepted_at[i]) / static_cast<double>(num_judged_at[i])
               : 0.0;
  }
};

// One shared-prefix pass of cascade attention in the last step: the sequences
// whose first `num_shared_tokens` positions live in the same physical blocks
// attended to them together.
struct CascadeGroupSnapshot {
  int32_t num_shared_tokens = 0;      // a multiple of the attention tile (32)
  std::vector<int32_t> blocks;        // the physical blocks the shared pass read
  std::vector<RequestId> request_ids;  // [members] with the completion index beside
  std::vector<int32_t> indices;
};

// One context shift (context_overflow = shift, docs/context-overflow.md):
// the whole blocks it dropped after the kept prefix that went back to the
// pool, so the block map can mark them for a moment.
struct ContextShiftSnapshot {
  RequestId request_id = 0;
  int32_t index = 0;             // which of the request's n completions
  uint64_t step = 0;             // the step after which it shifted
  double time_s = 0.0;           // when, since the engine was created
  int32_t dropped_from = 0;      // positions [dropped_from, dropped_from + num_dropped_tokens),
  int32_t num_dropped_tokens = 0;  // counted in the context as it was before the shift
  // The dropped blocks whose reference count reached 0 (a block another
  // sequence still holds is not freed; one a copy of a shared moved block
  // took again at once is not free either), by position.
  std::vector<int32_t> freed_blocks;  // [freed] physical block ids
  std::vector<int32_t> freed_from;    // [freed] first position each held (block_size positions)
};

struct EngineSnapshot {
  uint64_t step = 0;
  double time_s = 0.0;  // since the engine was created
  int32_t block_size = 0;
  KvCacheType kv_cache_type = KvCacheType::F32;
  int64_t kv_bytes_per_token = 0;  // K and V over every layer, in kv_cache_type
  std::vector<BlockSnapshot> blocks;     // [num_blocks] by physical id
  std::vector<RequestId> block_owners;   // owners of each block (CSR, see BlockSnapshot)
  std::vector<SequenceSnapshot> sequences;  // waiting, running and swapped
  int32_t num_waiting = 0;
  int32_t num_running = 0;
  int32_t num_swapped = 0;
  StepStats last_step;
  // Every step since the previous snapshot, oldest first (the last one is
  // last_step), at most kMaxRecentSteps: a viewer sampling at 20 Hz can
  // still plot each step's batch.
  static constexpr size_t kMaxRecentSteps = 1024;
  std::vector<StepStats> recent_steps;
  std::vector<CascadeGroupSnapshot> cascade_groups;  // last step's shared passes
  // The last kMaxRecentShifts context shifts, oldest first, kept from one
  // snapshot to the next (a viewer decides how long a shift stays news).
  static constexpr size_t kMaxRecentShifts = 16;
  std::vector<ContextShiftSnapshot> recent_shifts;
  KvStats kv;
  SpecStats spec;
  // Tensor parallelism (ModelInfo::tensor_parallel): each rank's heads,
  // weights, KV and workspace bytes. One block table serves every rank: a physical
  // block holds the K/V of every rank's KV heads.
  TensorParallelMemory tensor_parallel;
  std::string backend_reason;  // what runs the model and why (ModelInfo::backend_reason)

  // The steps this snapshot reports: recent_steps, or last_step alone when
  // the list is empty (a snapshot made by hand, or one that kept no list).
  std::span<const StepStats> steps_reported() const {
    return recent_steps.empty() ? std::span<const StepStats>(&last_step, 1) : std::span<const StepStats>(recent_steps);
  }
};

}  // namespace kvscope
