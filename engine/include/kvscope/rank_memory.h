// Per-rank memory of a tensor-parallel split (docs/tensor-parallel.md): which
// query and KV heads each rank holds, the bytes of the weight slices it
// multiplies, the bytes of the KV pool that hold its KV heads and the bytes
// of its own activation buffers (each rank runs its own ModelRunner). Plain
// values: the engine fills them in ModelInfo and each EngineSnapshot, the
// app's memory panel and block map show them, `kvscope-cli model-info --tp N`
// prints them (tensor_parallel_memory below).
//   tested by tests/engine/parallel/rank_memory_test.cpp
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvscope/engine_config.h"
#include "kvscope/result.h"

namespace kvscope {

struct RankMemory {
  int32_t rank = 0;
  int32_t q_head_begin = 0, num_q_heads = 0;    // query heads [begin, begin + num)
  int32_t kv_head_begin = 0, num_kv_heads = 0;  // the model's KV heads it stores (its own copies when replicated)
  // Bytes of the model's matrices its slices cover, in the file's types: the
  // rows of Q|K|V, gate|up and the head, the columns of wo and down. Like
  // ModelInfo::weight_bytes, the embedding (only gathered from) is not
  // counted. What the rank reads per decode step, not its repacked copy.
  int64_t weight_bytes = 0;
  int64_t kv_bytes = 0;  // the pool's bytes of its KV heads: K and V, every layer, every block
  // Its runner's activation buffers for max_batched_tokens rows, as
  // ModelRunner::reserve sizes them: the residual stream's full width three
  // times (x, h, o) plus its own heads' Q|K|V, q and attention output and its
  // own FFN rows' gate|up and activation. plan_kv's workspace is these summed
  // over the ranks plus the engine's logits (kvscope/kv_plan.h says what
  // neither counts).
  int64_t workspace_bytes = 0;
};

struct TensorParallelMemory {
  int32_t tp = 1;
  bool deterministic = false;         // tp_reduce = deterministic
  bool kv_heads_replicated = false;   // tp > the model's KV heads: a KV head is stored once per rank reading it
  int32_t num_kv_heads = 0;           // the model's
  int32_t num_kv_head_slots = 0;      // KV heads stored over all ranks (> num_kv_heads when replicated)
  std::vector<RankMemory> ranks;      // [tp]

  int64_t total_weight_bytes() const;
  int64_t total_kv_bytes() const;
  int64_t total_workspace_bytes() const;
};

// The split Engine::create would make of the model at `config.model_path`
// for config.tp and config.tp_reduce, with a pool of num_blocks blocks of
// config.block_size and activations for config.max_batched_tokens rows:
// reads (maps) the file but repacks nothing. Errors: the
// file does not load, or the model cannot be split at that tp (the message
// names tp and the dimension).
Result<TensorParallelMemory> tensor_parallel_memory(const EngineConfig& config, int64_t num_blocks);

}  // namespace kvscope
