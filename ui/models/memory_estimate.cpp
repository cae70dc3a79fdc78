// Memory arithmetic for the memory panel (see memory_estimate.h).
#include "memory_estimate.h"

#include <algorithm>

namespace kvscope::ui {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

double percentOf(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

double toMiB(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

MemoryBreakdown memoryBreakdown(const ModelInfo& info, const EngineConfig& config) {
  MemoryBreakdown m;
  // All the weights held (the embedding table and norms too), as model-info
  // counts them; an engine that did not say, its matrices.
  m.weight_bytes = static_cast<int64_t>(info.weight_memory_bytes > 0 ? info.weight_memory_bytes : info.weight_bytes);
  m.kv_pool_bytes = static_cast<int64_t>(info.kv_pool_bytes);
  if (m.kv_pool_bytes == 0 && info.num_kv_blocks > 0) {
    // Older engines report only the pool's shape; its size follows from it
    // exactly (bytes per block = kv_bytes_per_token * block_size).
    m.kv_pool_bytes = static_cast<int64_t>(info.kv_bytes_per_token) * info.block_size * info.num_kv_blocks;
    m.kv_pool_derived = m.kv_pool_bytes > 0;
  }
  m.workspace_bytes = static_cast<int64_t>(info.workspace_bytes);
  m.swap_enabled = config.preemption == PreemptionMode::Swap;
  m.swap_bytes = m.swap_enabled ? static_cast<int64_t>(info.swap_pool_bytes) : 0;
  return m;
}

KvSplit kvSplit(const KvStats& kv, int64_t kv_pool_bytes) {
  KvSplit s;
  if (kv.num_blocks <= 0 || kv_pool_bytes <= 0) return s;
  const auto share = [&](int64_t blocks) {
    blocks = std::clamp<int64_t>(blocks, 0, kv.num_blocks);
    return kv_pool_bytes / kv.num_blocks * blocks;
  };
  s.used_bytes = share(kv.num_used_blocks);
  s.cached_free_bytes = share(kv.num_cached_free_blocks);
  // num_free_blocks counts cached-free blocks too.
  s.free_bytes = share(int64_t{kv.num_free_blocks} - kv.num_cached_free_blocks);
  return s;
}

WhatIfResult estimateWhatIf(const WhatIfInput& in) {
  WhatIfResult r;
  if (in.model.kv_bytes_per_token() <= 0) {
    r.error = "no model loaded: the bytes per token of KV are unknown";
    return r;
  }
  if (const std::vector<SettingProblem> problems = in.config.validate(); !problems.empty()) {
    r.error = problems.front().message;
    return r;
  }
  const KvPlan plan = plan_kv(in.model, in.config, in.machine_memory_bytes);
  if (!plan.ok()) {
    r.error = plan.problems.front().message;
    return r;
  }
  if (in.prompt_tokens < 1) {
    r.error = "the prompt needs at least one token";
    return r;
  }
  if (in.output_tokens < 0 || in.max_tokens < 1) {
    r.error = "output tokens must be >= 0 and max tokens >= 1";
    return r;
  }
  if (in.output_tokens > in.max_tokens) {
    r.error = "a request generates at most max tokens; raise max tokens or lower the output";
    return r;
  }
  r.max_model_len = plan.max_model_len;
  if (in.prompt_tokens >= plan.max_model_len) {
    r.error = "the prompt does not fit the context (max model length " + std::to_string(plan.max_model_len) + ")";
    return r;
  }
  const int64_t bs = in.config.block_size;
  r.bytes_per_block = plan.bytes_per_block;
  r.num_blocks = plan.num_blocks;
  r.token_capacity = r.num_blocks * bs;

  const int64_t cap = plan.max_model_len;
  r.seq_tokens = std::min<int64_t>(cap, int64_t{in.prompt_tokens} + in.output_tokens);
  r.paged_blocks_per_seq = ceilDiv(r.seq_tokens, bs);
  r.num_paged_seqs = r.num_blocks / r.paged_blocks_per_seq;
  r.paged_waste_slots = r.paged_blocks_per_seq * bs - r.seq_tokens;
  r.paged_waste_percent = percentOf(r.paged_waste_slots, r.paged_blocks_per_seq * bs);

  r.contiguous_reserved_tokens = std::min<int64_t>(cap, int64_t{in.prompt_tokens} + in.max_tokens);
  r.contiguous_blocks_per_seq = ceilDiv(r.contiguous_reserved_tokens, bs);
  r.num_contiguous_seqs = r.num_blocks / r.contiguous_blocks_per_seq;
  r.contiguous_waste_slots = r.contiguous_blocks_per_seq * bs - r.seq_tokens;
  r.contiguous_waste_percent = percentOf(r.contiguous_waste_slots, r.contiguous_blocks_per_seq * bs);
  return r;
}

}  // namespace kvscope::ui
