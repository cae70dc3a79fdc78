// The engine's memory plan as a pure function: from a model's shape and an
// EngineConfig to the KV pool's bytes per block, its number of blocks, the
// swap pool, the model runner's workspace — or why that does not fit.
// Engine::create and Engine::reconfigure size their pools with it,
// `kvscope-cli model-info` prints it, and the app's memory panel runs it on
// values the user is still editing ("what if"), so all of them agree by
// construction.
//   tested by tests/engine/settings/kv_plan_test.cpp and, against what the engine
//   really allocates, tests/engine/runtime/model_memory_info_test.cpp
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvscope/engine_config.h"
#include "kvscope/model_info.h"
#include "kvscope/setting_table.h"

namespace kvscope {

// What the plan needs to know of a model.
struct ModelShape {
  int32_t num_layers = 0;
  int32_t hidden_size = 0;
  int32_t ffn_size = 0;  // intermediate size of the MLP
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t vocab_size = 0;
  int32_t context_length = 0;  // trained maximum
  // Speculative decoding with a draft model (spec = draft): the draft's
  // layers and K/V width, whose K/V share each block (0: no draft model).
  int32_t draft_num_layers = 0;
  int32_t draft_num_kv_heads = 0;
  int32_t draft_head_dim = 0;

  // K and V of one token over every layer: 2 * layers * kv_heads * head_dim
  // elements of `type`.
  int64_t kv_bytes_per_token(KvCacheType type = KvCacheType::F32) const;
};

ModelShape model_shape(const ModelInfo& info);

struct KvPlan {
  std::vector<SettingProblem> problems;  // why the config does not fit; empty when it does
  std::vector<std::string> warnings;     // it fits, but a person should know (trained context exceeded)

  int32_t max_model_len = 0;  // resolved: the config's, or the model's context when 0
  // K and V of one token as the pool stores them: over every layer and every
  // stored KV head, which with tp > num_kv_heads is one copy per rank
  // (num_kv_head_slots heads, not num_kv_heads: docs/tensor-parallel.md).
  int64_t kv_bytes_per_token = 0;
  int32_t num_kv_head_slots = 0;  // KV heads stored per layer: the model's, or tp when tp > KV heads
  int64_t bytes_per_block = 0;  // (kv_bytes_per_token + the draft model's) * block_size
  // The draft model's share of bytes_per_block (spec = draft; else 0): its
  // K/V live in the same blocks, so the budget pays for both.
  int64_t draft_bytes_per_block = 0;
  // config.num_blocks, else floor(kv_budget / bytes_per_block), or on a
  // device with gpu_memory_percent what that share leaves for the pool.
  int64_t num_blocks = 0;
  // With preemption = swap: floor(swap_space / the target's bytes per
  // block), as a swapped block holds no draft K/V; else 0.
  int64_t num_swap_blocks = 0;
  int64_t pool_bytes = 0;  // num_blocks * bytes_per_block
  int64_t swap_bytes = 0;  // num_swap_blocks * (bytes_per_block - draft_bytes_per_block)
  // The model runners' activations for max_batched_tokens rows, one runner
  // per tensor-parallel rank (RankMemory::workspace_bytes summed over
  // config.tp ranks), plus the logits buffer (logits_buffer_floats): what
  // ModelInfo::workspace_bytes reports once the engine is created. Not
  // counted, at tp > 1: the buffers the ranks' collectives size on first use
  // (each rank's slice of the logits and the gathered whole, the other
  // ranks' logits, and with tp_reduce = deterministic the partial products).
  int64_t workspace_bytes = 0;

  bool ok() const { return problems.empty(); }
};

// machine_memory_bytes: the memory the pools and, on the CPU, the workspace
// must fit in (pages are committed lazily, so an oversized pool or a huge
// max_batched_tokens would otherwise fail later as an out-of-memory kill
// mid-generation); 0 skips that check. The config's own ranges are
// validate()'s business; plan_kv assumes they hold.
//
// device: the GPU the pool lives on (the CUDA backend), else null. Then the
// pool, the weights and the workspace must fit in its free memory, the
// machine's memory bounds the host swap space alone, and with
// gpu_memory_percent > 0 (and num_blocks 0) the pool is sized from that
// percent of the free memory, after the weights and the workspace, instead of
// from kv_budget.
struct DeviceMemory {
  int64_t free_bytes = 0;  // free on the device before the engine allocates there
  // What this engine already holds there (a reconfigure: weights, pool,
  // workspace), counted as free for gpu_memory_percent's share.
  int64_t held_bytes = 0;
  int64_t weight_bytes = 0;  // the weights as uploaded
  int64_t total_bytes = 0;   // the device's size (reported, not planned with)
};

KvPlan plan_kv(const ModelShape& model, const EngineConfig& config, int64_t machine_memory_bytes,
               const DeviceMemory* device = nullptr);

// With spec = early_exit, why spec_early_exit_layer does not fit a model of
// `num_layers` layers, or "": plan_kv reports it (so model-info and the
// settings dialog say it before a load) and Engine::create refuses it.
std::string early_exit_layer_problem(const EngineConfig& config, int32_t num_layers);

// The setting that sizes the pool, the one a message about its size names:
// "num_blocks" when set, else "gpu_memory_percent" when it applies (a pool
// planned on a GPU), else "kv_budget".
const char* pool_sizing_setting(const EngineConfig& config, bool on_gpu);

// Rows of logits one step asks for at most to sample tokens: one per
// sequence (max_seqs), and with speculative decoding 1 + spec_k per decoding
// sequence, the drafts' rows coming out of the step's token budget. Scored
// prompt rows come on top (max_scored_rows).
int64_t max_logits_rows(const EngineConfig& config);

// Prompt scoring (GenerationRequest::on_prompt_logits): the rows a step may
// score, at most: no more than a step computes (max_batched_tokens), and so
// few that their logits come to about 32 MB whatever the vocabulary (170
// rows of SmolLM2's 49,152 tokens, 32 of Gemma 3's 262,144).
inline constexpr int64_t kScoredLogitsPerStep = int64_t{8} << 20;  // floats
int32_t max_scored_rows(const EngineConfig& config, int32_t vocab_size);
// The floats of the engine's logits buffer, reserved up front and counted
// in the workspace: max_logits_rows rows of sampled tokens plus
// max_scored_rows of scored prompt rows.
int64_t logits_buffer_floats(const EngineConfig& config, int32_t vocab_size);

// This machine's physical memory in bytes (0 if unknown).
int64_t physical_memory_bytes();

}  // namespace kvscope
