// Cascade planning: which sequences of a step attend to a shared prefix in
// one pass (kernels/cpu/paged_attention.h, CascadeGroups). Read from the
// block tables alone: sequences whose tables start with the same physical
// blocks share that prefix's K/V, whatever put it there (prefix caching,
// parallel sampling). Pure function of the StepBatch, run once per step.
//   tested by tests/engine/runtime/cascade_plan_test.cpp
#pragma once

#include <cstdint>

#include "kvscope/engine_config.h"
#include "runtime/step_batch.h"

namespace kvscope {

// When a shared prefix gets its own pass.
struct CascadeRule {
  int32_t min_shared_tokens = 0;  // the shared pass covers at least this many positions
  int32_t min_seqs = 2;           // ... for at least this many sequences
};

// CascadeMode::Auto's thresholds (kAutoCascadeMinSharedTokens,
// kAutoCascadeMinSeqs, in kvscope/engine_config.h where the app reads them
// too), from measurements (docs/cascade.md): one decode step of attention, 2
// threads, SmolLM2 shapes. With 2 sequences the shared pass costs up to 10%
// (its rows split into fewer tasks than the flat pass's); from 4 sequences
// and 128 shared tokens it saves 6% and more, 15% at 8 x 128, 1.9x at 32 x
// 2,000.

// The rule of CascadeMode::On (any shared tile, two sequences) and of Auto
// (where the measured saving beats the cost: see docs/cascade.md).
CascadeRule cascade_rule(CascadeMode mode);

// Clears and fills batch.cascade_*. Sequences are grouped by the first
// physical block of their table; a group's prefix is the blocks all its
// members have in common, capped at the first query row of each member (so
// every row sees the whole prefix and it was computed in an earlier step),
// rounded down to whole attention tiles. Groups are in order of their first
// member, members in batch order.
void plan_cascade(StepBatch& batch, CascadeMode mode, int32_t block_size);

}  // namespace kvscope
