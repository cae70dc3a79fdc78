// plan_kv: the engine's memory arithmetic in one pure function (kv_plan.h).
// Bytes per block are the KV storage's own (kv_block_bytes of the layout
// kv_storage_shape gives for the config's tp), so the pool's size is
// what Engine::create allocates at every tp.
#include "kvscope/kv_plan.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <string_view>
#include <unistd.h>

#include "parallel/rank_memory.h"
#include "parallel/shard_plan.h"

namespace kvscope {
namespace {

std::string mib(int64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

}  // namespace

int64_t ModelShape::kv_bytes_per_token(KvCacheType type) const {
  return int64_t{2} * num_layers * static_cast<int64_t>(kv_row_bytes(type, int64_t{num_kv_heads} * head_dim));
}

ModelShape model_shape(const ModelInfo& info) {
  ModelShape s;
  s.num_layers = info.num_layers;
  s.hidden_size = info.hidden_size;
  s.ffn_size = info.ffn_size;
  s.num_heads = info.num_heads;
  s.num_kv_heads = info.num_kv_heads;
  s.head_dim = info.head_dim;
  s.vocab_size = info.vocab_size;
  s.context_length = info.context_length;
  return s;
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? int64_t{pages} * page_size : 0;
}

int64_t max_logits_rows(const EngineConfig& c) {
  const int64_t seqs = c.max_seqs;
  if (c.spec == SpecMethod::Off) return seqs;
  return std::min(seqs * (1 + c.spec_k), std::max<int64_t>(seqs, c.max_batched_tokens));
}

int32_t max_scored_rows(const EngineConfig& c, int32_t vocab_size) {
  const int64_t by_memory = kScoredLogitsPerStep / std::max(vocab_size, 1);
  return static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>(by_memory, c.max_batched_tokens)));
}

int64_t logits_buffer_floats(const EngineConfig& c, int32_t vocab_size) {
  return (max_logits_rows(c) + max_scored_rows(c, vocab_size)) * int64_t{vocab_size};
}

const char* pool_sizing_setting(const EngineConfig& c, bool on_gpu) {
  if (c.num_blocks > 0) return "num_blocks";
  return on_gpu && c.gpu_memory_percent > 0 ? "gpu_memory_percent" : "kv_budget";
}

std::string early_exit_layer_problem(const EngineConfig& config, int32_t num_layers) {
  if (config.spec != SpecMethod::EarlyExit || config.spec_early_exit_layer <= num_layers) return {};
  return fmt::format("the early-exit layer {} is more than the model's {} layers; choose 1 to {} (0: half)",
                     config.spec_early_exit_layer, num_layers, num_layers);
}

KvPlan plan_kv(const ModelShape& m, const EngineConfig& c, int64_t machine_memory_bytes, const DeviceMemory* device) {
  KvPlan p;
  if (std::string why = early_exit_layer_problem(c, m.num_layers); !why.empty() && m.num_layers > 0) {
    p.problems.push_back({"spec_early_exit_layer", std::move(why)});
  }
  p.max_model_len = c.max_model_len > 0 ? c.max_model_len : m.context_length;
  if (m.context_length > 0 && c.max_model_len > m.context_length) {
    p.warnings.push_back(fmt::format("max model length {} is above the model's trained context of {} tokens: "
                                     "replies past {} tokens are unlikely to make sense",
                                     c.max_model_len, m.context_length, m.context_length));
  }
  if (!kv_type_fits_head_dim(c.kv_cache_type, m.head_dim)) {
    p.problems.push_back({"kv_cache_type", fmt::format("the {} KV cache stores blocks of {} values per head; this "
                                                       "model's heads have {}: choose f16 or bf16",
                                                       kv_cache_type_name(c.kv_cache_type), kQ8BlockElems,
                                                       m.head_dim)});
    return p;
  }
  // What the storage allocates (kv_storage_shape): tensor parallelism keeps
  // one storage layer per KV head slot, and a rank beyond the model's KV
  // heads keeps its own copy of its group's head.
  const KvStorageShape stored = kv_storage_shape(m.num_layers, m.num_kv_heads, m.head_dim, std::max(c.tp, 1),
                                                 c.tp_reduce == TpReduce::Deterministic);
  if (m.num_kv_heads > 0 && m.head_dim > 0) {
    p.num_kv_head_slots = num_kv_head_slots(m.num_kv_heads, std::max(c.tp, 1));
    p.kv_bytes_per_token = kv_block_bytes(stored, 1, c.kv_cache_type);
  }
  if (p.kv_bytes_per_token <= 0 || c.block_size < 1) {
    p.problems.push_back({"", "the model's shape is unknown: no layers or KV heads"});
    return p;
  }
  if (c.spec == SpecMethod::Draft && m.draft_num_layers > 0) {
    if (!kv_type_fits_head_dim(c.kv_cache_type, m.draft_head_dim)) {
      p.problems.push_back({"kv_cache_type", fmt::format("the {} KV cache stores blocks of {} values per head; the "
                                                         "draft model's heads have {}: choose f16 or bf16",
                                                         kv_cache_type_name(c.kv_cache_type), kQ8BlockElems,
                                                         m.draft_head_dim)});
      return p;
    }
    const int64_t draft_per_token =
        int64_t{2} * m.draft_num_layers *
        static_cast<int64_t>(kv_row_bytes(c.kv_cache_type, int64_t{m.draft_num_kv_heads} * m.draft_head_dim));
    p.draft_bytes_per_block = draft_per_token * c.block_size;
  }
  p.bytes_per_block = p.kv_bytes_per_token * c.block_size + p.draft_bytes_per_block;

  // Every rank's ModelRunner::resize_activations (rank_memory.h) plus the
  // engine's logits buffer; model_memory_info_test and rank_memory_test hold
  // them equal. With tp ranks each keeps the full hidden width (x, h, o) and
  // the ranks' heads and FFN rows add up to the model's, but for a KV head
  // copied to several ranks (num_kv_head_slots heads in all).
  const int32_t ranks = std::max(c.tp, 1);
  const int64_t rows = std::max(c.max_batched_tokens, 1);
  const int64_t q = int64_t{m.num_heads} * m.head_dim;
  const int64_t kv = int64_t{p.num_kv_head_slots} * m.head_dim;
  const int64_t per_row = activation_floats_per_row(ranks, m.hidden_size, q, kv, m.ffn_size);
  const int64_t logits = logits_buffer_floats(c, m.vocab_size);
  p.workspace_bytes = (rows * per_row + logits) * static_cast<int64_t>(sizeof(float));

  // On a GPU with gpu_memory_percent, the pool gets that share of the free
  // memory (plus what this engine already holds there) after the weights
  // and the workspace.
  const char* pool_field = pool_sizing_setting(c, device != nullptr);
  const bool percent = std::string_view(pool_field) == "gpu_memory_percent";
  if (percent) {
    const int64_t share = (device->free_bytes + device->held_bytes) / 100 * c.gpu_memory_percent;
    const int64_t left = share - device->weight_bytes - p.workspace_bytes;
    p.num_blocks = left > 0 ? left / p.bytes_per_block : 0;
    if (p.num_blocks < 1) {
      p.problems.push_back({pool_field, fmt::format("{}% of the GPU's {} free leaves no KV block of {} bytes after "
                                                    "the weights ({}) and the workspace ({}); raise it",
                                                    c.gpu_memory_percent, mib(device->free_bytes + device->held_bytes),
                                                    p.bytes_per_block, mib(device->weight_bytes),
                                                    mib(p.workspace_bytes))});
      p.num_blocks = 0;
      return p;
    }
  } else {
    p.num_blocks = c.num_blocks > 0 ? c.num_blocks : c.kv_budget_bytes / p.bytes_per_block;
  }
  if (p.num_blocks < 1) {
    p.problems.push_back({pool_field, fmt::format("the KV budget of {} bytes holds no block of {} tokens ({} bytes "
                                                  "each); raise the budget or lower the block size",
                                                  c.kv_budget_bytes, c.block_size, p.bytes_per_block)});
    p.num_blocks = 0;
    return p;
  }
  if (p.num_blocks > std::numeric_limits<int32_t>::max()) {
    p.problems.push_back({pool_field, fmt::format("the KV budget of {} bytes makes {} blocks, more than the engine "
                                                  "can address; lower the budget or raise the block size",
                                                  c.kv_budget_bytes, p.num_blocks)});
    return p;
  }
  // A swapped-out block holds the target's K/V only: the draft model's are
  // dropped on swap-out and recomputed (engine_kv_setup.cpp).
  const int64_t swap_bytes_per_block = p.bytes_per_block - p.draft_bytes_per_block;
  p.num_swap_blocks = c.preemption == PreemptionMode::Swap ? c.swap_space_bytes / swap_bytes_per_block : 0;
  p.num_swap_blocks = std::min<int64_t>(p.num_swap_blocks, std::numeric_limits<int32_t>::max());
  p.pool_bytes = p.num_blocks * p.bytes_per_block;
  p.swap_bytes = p.num_swap_blocks * swap_bytes_per_block;
  if (c.preemption == PreemptionMode::Swap && p.num_swap_blocks == 0) {
    // Swap then always falls back to recompute: say so rather than let the
    // setting look in force.
    p.warnings.push_back(fmt::format("preemption = swap, but a swap space of {} bytes holds no block of {} bytes: "
                                     "every preemption recomputes; raise swap_space",
                                     c.swap_space_bytes, swap_bytes_per_block));
  }
  // Left to the model (max_model_len 0), the context is what one sequence
  // can fill: the trained context, or the pool when it holds less (Gemma 3's
  // 32k context at the default budget). Otherwise a request without a
  // max_tokens, which may run to the end of the context (the server's
  // default), would ask for more blocks than exist and be refused.
  const int64_t pool_tokens = p.num_blocks * c.block_size;
  const int32_t wanted_len = p.max_model_len;
  if (c.max_model_len == 0 && pool_tokens < p.max_model_len) p.max_model_len = static_cast<int32_t>(pool_tokens);
  // Legal, but a request longer than the pool is refused when it arrives:
  // say so when the settings are applied, not at the first prompt: for a
  // pool under a chat's worth (kSmallPoolTokens), or under a max model
  // length the user set.
  constexpr int64_t kSmallPoolTokens = 4096;
  if (pool_tokens < std::min<int64_t>(wanted_len, kSmallPoolTokens)) {
    p.warnings.push_back(
        c.max_model_len == 0
            ? fmt::format("the KV pool holds only {} tokens ({} block{} of {}), so no context is longer: a longer "
                          "prompt is refused and a reply stops there; raise {}",
                          pool_tokens, p.num_blocks, p.num_blocks == 1 ? "" : "s", c.block_size, pool_field)
            : fmt::format("the KV pool holds only {} tokens ({} block{} of {}): a request whose prompt and max "
                          "tokens need more is refused; raise {}",
                          pool_tokens, p.num_blocks, p.num_blocks == 1 ? "" : "s", c.block_size, pool_field));
  } else if (pool_tokens < p.max_model_len) {
    p.warnings.push_back(fmt::format("the KV pool holds {} tokens ({} blocks of {}), less than the max model "
                                     "length of {}: a request whose prompt and max tokens need more is refused; "
                                     "raise {} or lower max_model_len",
                                     pool_tokens, p.num_blocks, c.block_size, p.max_model_len, pool_field));
  }

  if (device) {
    // The pool sits on the GPU beside the weights and the workspace; the
    // swap space stays in host memory.
    const int64_t on_device = p.pool_bytes + device->weight_bytes + p.workspace_bytes;
    if (on_device > device->free_bytes + device->held_bytes) {
      p.problems.push_back({pool_field, fmt::format("a KV pool of {} with the weights ({}) and the workspace ({}) "
                                                    "does not fit in the GPU's {} free; lower it",
                                                    mib(p.pool_bytes), mib(device->weight_bytes),
                                                    mib(p.workspace_bytes),
                                                    mib(device->free_bytes + device->held_bytes))});
    }
    if (machine_memory_bytes > 0 && p.swap_bytes > machine_memory_bytes / 10 * 9) {
      p.problems.push_back({"swap_space", fmt::format("a swap space of {} does not fit in this machine's {} of "
                                                      "memory; lower it",
                                                      mib(p.swap_bytes), mib(machine_memory_bytes))});
    }
    return p;
  }
  // On the CPU the pool, the swap space and the workspace all live in this
  // machine's memory beside the weights (which no setting here changes); the
  // largest of the three is the setting to lower.
  const int64_t host_bytes = p.pool_bytes + p.swap_bytes + p.workspace_bytes;
  if (machine_memory_bytes > 0 && host_bytes > machine_memory_bytes / 10 * 9) {
    std::string field = pool_field;
    if (p.swap_bytes > p.pool_bytes && p.swap_bytes >= p.workspace_bytes) field = "swap_space";
    if (p.workspace_bytes > p.pool_bytes && p.workspace_bytes > p.swap_bytes) field = "max_batched_tokens";
    const std::string parts =
        p.swap_bytes > 0 ? fmt::format("a KV pool of {}, a swap space of {} and a workspace of {}", mib(p.pool_bytes),
                                       mib(p.swap_bytes), mib(p.workspace_bytes))
                         : fmt::format("a KV pool of {} and a workspace of {}", mib(p.pool_bytes),
                                       mib(p.workspace_bytes));
    p.problems.push_back({field, fmt::format("{} ({} in all) do not fit in this machine's {} of memory; lower {}",
                                             parts, mib(host_bytes), mib(machine_memory_bytes), field)});
  }
  return p;
}

}  // namespace kvscope
