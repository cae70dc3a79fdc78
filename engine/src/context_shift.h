// Context overflow (docs/context-overflow.md): what happens when a sequence
// reaches max_model_len, and what a prompt that does not fit becomes.
//
// shift: the first context_keep tokens (rounded up to whole blocks, capped at
// half the context) stay where they are; the next whole blocks (a quarter of
// the context, at least one) are dropped; every later block moves down by the
// dropped tokens and its keys are re-rotated in place by that many positions
// (KvBlockStore::rerotate_keys: the backend's pool does it where the K/V live),
// every layer with its own rope base. Values are not rotated. Shared blocks are copied first and moved blocks leave the
// prefix cache (KvCacheManager::drop_blocks).
//   tested by tests/engine/runtime/context_overflow_test.cpp
#pragma once

#include <cstdint>
#include <vector>

#include "kvscope/engine_snapshot.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_block_store.h"
#include "scheduler/sequence.h"

namespace kvscope {

struct ContextShiftPlan {
  int32_t keep_blocks = 0;  // leading blocks kept untouched
  int32_t drop_blocks = 0;  // blocks dropped after them (0: no shift is possible)
};

// The shift of a sequence whose num_computed tokens have K/V. Drops only
// whole, computed blocks; drop_blocks 0 when context_keep leaves none.
ContextShiftPlan plan_context_shift(int32_t num_computed, int32_t block_size, int32_t context_keep,
                                    int32_t max_model_len);

// Shifts a running sequence per `plan`: drops the blocks, re-rotates the keys
// of the later blocks by -dropped tokens, and moves the sequence on (tokens,
// num_computed, draft-model K/V to recompute, the notice for its next token
// event). blocks: the pool the manager moves blocks in. Returns the tokens
// dropped; 0 (nothing changed) when the plan drops nothing or the
// copies of shared blocks found no free blocks. `record`, when given and the
// shift happened, gets the request, the dropped positions and the blocks the
// shift freed (its step and time are the caller's to set).
int32_t shift_context(Sequence& s, const ContextShiftPlan& plan, KvCacheManager& kv, KvBlockStore& blocks,
                      ContextShiftSnapshot* record = nullptr);

// truncate_middle: the prompt with its middle dropped so that at most
// `max_tokens` remain (the first min(context_keep, max_tokens / 2) tokens and
// the end). Unchanged when it already fits.
std::vector<int32_t> truncate_middle(const std::vector<int32_t>& prompt, int32_t max_tokens, int32_t context_keep);

}  // namespace kvscope
