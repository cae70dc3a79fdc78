// rank_memory: a ShardPlan's per-rank memory (kvscope/rank_memory.h) from the
// plan, the weights it slices and the KV pool's size. The weight bytes are
// those of the slices pack_layer_shard / pack_head_shard take; the KV bytes
// are the rank's storage layers of kv_storage_shape, so the ranks' KV bytes
// add up to KvStorage::num_bytes(); the workspace bytes are what the rank's
// ModelRunner::reserve(max_batched_tokens) allocates.
//   tested by tests/engine/parallel/rank_memory_test.cpp
#pragma once

#include "kernels/cpu/kv_cache_type.h"
#include "kvscope/rank_memory.h"
#include "model/model_weights.h"
#include "parallel/shard_plan.h"

namespace kvscope {

TensorParallelMemory rank_memory(const ShardPlan& plan, const ModelWeights& weights, int64_t num_blocks,
                                 int32_t block_size, KvCacheType kv_type, int32_t max_batched_tokens);

// Floats per token row of the activation buffers of num_ranks runners whose
// shards together hold q_width query columns, kv_width K (and as many V)
// columns and ffn FFN rows: what ModelRunner::resize_activations sizes
// (x, h, o of the full hidden width in every rank; Q|K|V; q; attn; gate|up;
// act). One rank's with num_ranks = 1 and its own widths; plan_kv's, with
// the sums over the ranks, is the same arithmetic summed.
int64_t activation_floats_per_row(int64_t num_ranks, int64_t hidden, int64_t q_width, int64_t kv_width, int64_t ffn);

}  // namespace kvscope
