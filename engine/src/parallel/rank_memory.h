// rank_memory: a ShardPlan's per-rank memory (kvscope/rank_memory.h) from the
// plan, the weights it slices and the KV pool's size. The weight bytes are
// those of the slices pack_layer_shard / pack_head_shard take; the KV bytes
// are the rank's storage layers of kv_storage_shape, so the ranks' KV bytes
// add up to KvStorage::num_bytes().
//   tested by tests/engine/parallel/rank_memory_test.cpp
#pragma once

#include "kernels/cpu/kv_cache_type.h"
#include "kvscope/rank_memory.h"
#include "model/model_weights.h"
#include "parallel/shard_plan.h"

namespace kvscope {

TensorParallelMemory rank_memory(const ShardPlan& plan, const ModelWeights& weights, int64_t num_blocks,
                                 int32_t block_size, KvCacheType kv_type);

}  // namespace kvscope
