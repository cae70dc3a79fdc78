// Memory arithmetic for the memory panel (ui/memory_panel.h): where the
// engine's bytes go (weights, KV pool, workspace, swap), how the KV pool
// splits between used / cached-free / free blocks in a snapshot, and a
// "what if" for another block size, KV budget and request length: how many
// such requests fit at once paged versus contiguous, and how much of what
// they reserve is never written (internal fragmentation).
// Pure functions of plain values, tested in tests/ui/memory_estimate_test.cpp.
//
// The pool comes from the engine's own plan (kvscope/kv_plan.h: plan_kv, which
// Engine::create allocates by), and the checks from EngineConfig::validate();
// only the per-request arithmetic is this file's:
//   paged           : a sequence of L tokens holds ceil(L / block_size) blocks;
//   contiguous      : at admission a sequence reserves its maximum length,
//                     min(max_model_len, prompt + max_tokens), rounded up to
//                     whole blocks, as one run of consecutive blocks.
#pragma once

#include <cstdint>
#include <string>

#include "kvscope/engine_config.h"
#include "kvscope/engine_snapshot.h"
#include "kvscope/kv_plan.h"
#include "kvscope/model_info.h"

namespace kvscope::ui {

// The engine's memory by purpose. A size of 0 the engine did not report is
// kept as 0 and flagged, so the panel can show "—" instead of a made-up number.
struct MemoryBreakdown {
  int64_t weight_bytes = 0;
  int64_t kv_pool_bytes = 0;
  bool kv_pool_derived = false;  // not reported: num_kv_blocks * block_size * kv_bytes_per_token
  int64_t workspace_bytes = 0;   // 0: not reported
  bool swap_enabled = false;     // preemption by swap: a host swap pool exists
  int64_t swap_bytes = 0;        // 0 with swap_enabled: not reported
  int64_t total_bytes() const { return weight_bytes + kv_pool_bytes + workspace_bytes + swap_bytes; }
};

MemoryBreakdown memoryBreakdown(const ModelInfo& info, const EngineConfig& config);

// The KV pool's bytes split as a snapshot's block counts split it. Blocks are
// all the same size, so each part is pool_bytes * blocks / num_blocks.
struct KvSplit {
  int64_t used_bytes = 0;
  int64_t cached_free_bytes = 0;  // reusable by a prefix hit, evictable
  int64_t free_bytes = 0;         // free and holding nothing findable
};

KvSplit kvSplit(const KvStats& kv, int64_t kv_pool_bytes);

struct WhatIfInput {
  ModelShape model;     // model_shape(ModelInfo)
  EngineConfig config;  // the settings under consideration (block size, KV budget, ...)
  int64_t machine_memory_bytes = 0;  // passed to plan_kv; 0: not checked
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;  // tokens the request really generates
  int32_t max_tokens = 0;     // tokens it asks for: what contiguous mode reserves
};

struct WhatIfResult {
  std::string error;  // non-empty: the inputs make no pool; the rest is zero
  int64_t bytes_per_block = 0;
  int64_t num_blocks = 0;      // in the pool
  int64_t token_capacity = 0;  // num_blocks * block_size
  int32_t max_model_len = 0;   // the context cap in force (the config's or the model's)

  int64_t seq_tokens = 0;  // prompt + output, capped by max_model_len
  // Paged: blocks follow the tokens actually written.
  int64_t paged_blocks_per_seq = 0;
  int64_t num_paged_seqs = 0;      // floor(num_blocks / paged_blocks_per_seq)
  int64_t paged_waste_slots = 0;   // unwritten slots of the last block
  double paged_waste_percent = 0;  // of the slots reserved

  // Contiguous: the maximum length is reserved at admission.
  int64_t contiguous_reserved_tokens = 0;  // min(max_model_len, prompt + max_tokens)
  int64_t contiguous_blocks_per_seq = 0;
  int64_t num_contiguous_seqs = 0;  // at best: an empty pool, no gaps between runs
  int64_t contiguous_waste_slots = 0;
  double contiguous_waste_percent = 0;

  bool ok() const { return error.empty(); }
};

WhatIfResult estimateWhatIf(const WhatIfInput& in);

// MiB (2^20 bytes), the unit the panel shows.
double toMiB(int64_t bytes);

}  // namespace kvscope::ui
