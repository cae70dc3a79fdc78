// ShardPlan: how a model is split over `tp` tensor-parallel ranks (Megatron:
// column-parallel Q|K|V and gate|up, row-parallel wo and down, a vocabulary
// slice of the head), and the canonical K-chunks of the row-parallel
// matmuls that make the deterministic reduction independent of tp.
// A pure function of the model's shape and weight types; plan_shards()
// refuses a split that cannot work, saying why. docs/tensor-parallel.md.
//
// Heads: a rank holds a contiguous range of query heads and the KV heads they
// read. With tp <= num_kv_heads the KV head groups are dealt out (uneven
// allowed: 3 groups over 2 ranks = 2 + 1); with more ranks than KV heads each
// group's query heads are split between several ranks, each of which keeps a
// copy of the group's KV head (replication: K/V of that head is computed and
// stored once per rank holding it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/kv_cache_type.h"
#include "kvscope/result.h"
#include "model/model_weights.h"

namespace kvscope {

// The canonical number of K-chunks of the FFN's down projection: fixed, so
// that tp = 1, 2, 4, 8 all cut it at the same places (tp must be <= this).
inline constexpr int32_t kDownChunks = 8;

struct RankShard {
  int32_t rank = 0;
  int32_t q_head_begin = 0, num_q_heads = 0;    // query heads [begin, begin + num)
  int32_t kv_head_begin = 0, num_kv_heads = 0;  // the KV heads those read
  int32_t kv_slot_begin = 0;  // index of this rank's first KV head among all ranks' (KV storage layers)
  int32_t wo_chunk_begin = 0, wo_chunk_end = 0;      // canonical wo chunks [begin, end)
  int32_t down_chunk_begin = 0, down_chunk_end = 0;  // canonical down chunks [begin, end)
  int64_t ffn_begin = 0, ffn_size = 0;               // FFN rows (gate|up) = down's K range
  int64_t vocab_begin = 0, vocab_size = 0;           // rows of the head
};

struct ShardPlan {
  int32_t world_size = 1;
  bool deterministic = false;
  int32_t heads_per_wo_chunk = 1;  // wo's K is cut every heads_per_wo_chunk * head_dim
  int32_t num_wo_chunks = 0;
  std::vector<int64_t> down_chunk_start;  // [kDownChunks + 1] K offsets into ffn
  int32_t num_kv_slots = 0;        // KV heads over all ranks (> num_kv_heads when replicated)
  int64_t max_vocab_size = 0;      // the largest rank's head slice (all_gather pads to it)
  int32_t max_wo_chunks = 0;       // the most wo chunks one rank holds
  int32_t max_down_chunks = 0;     // the most down chunks one rank holds
  std::vector<RankShard> ranks;    // [world_size]
  std::vector<std::string> notes;  // what a log should say (replicated KV heads)

  // The whole model as one rank, no chunking: what a plain ModelRunner runs.
  static ShardPlan whole(const ModelConfig& config);
  // One rank, fast reduction: a plain ModelRunner, KV laid out as ever.
  bool is_plain() const { return world_size == 1 && !deterministic; }
};

// The KV storage a plan's runner writes: a plain runner's (num_layers layers
// of num_kv_heads * head_dim), else one layer per (model layer, KV head slot)
// of head_dim, so that every rank's heads share one storage and one block
// pool (ModelRunner::create_shard).
struct KvStorageShape {
  int32_t num_layers = 0;
  int32_t kv_size = 0;
};
KvStorageShape kv_storage_shape(const ShardPlan& plan, const ModelConfig& config);
// KV heads stored over all ranks for a split plan_shards accepts: the
// model's, or one per rank when there are more ranks than KV heads (each
// rank then holds one group's head, a copy of it). Equals ShardPlan::num_kv_slots.
int32_t num_kv_head_slots(int32_t num_kv_heads, int32_t tp);
// The same layout before any plan exists (plan_kv sizes blocks from a
// model's shape and the config's tp): what kv_storage_shape(plan, ...) gives
// for the plan of (tp, deterministic).
KvStorageShape kv_storage_shape(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t tp,
                                bool deterministic);

// Bytes one block takes in a KV storage of `shape`: K and V of block_size
// slots in every storage layer (KvStorage's arithmetic; plan_kv and the
// per-rank figures size the pool with it).
int64_t kv_block_bytes(const KvStorageShape& shape, int32_t block_size, KvCacheType type);

// K alignment a row-parallel slice of `type` needs: the quantisation block
// (32 for Q4_0/Q4_1/Q5_x/Q8_0, 256 for K-quants), and at least 32 so that
// the activation quantisation blocks of a slice are those of the whole row.
int64_t k_alignment(TensorType type);

// Errors name tp and the model dimension that does not divide.
Result<ShardPlan> plan_shards(const ModelWeights& weights, int32_t tp, bool deterministic);

}  // namespace kvscope
