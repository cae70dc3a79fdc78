// Per-rank memory of a tensor-parallel split (rank_memory.h, kvscope/rank_memory.h).
#include "parallel/rank_memory.h"

#include <algorithm>

#include "model/model_loader.h"

namespace kvscope {
namespace {

// Bytes of rows [.., + num_rows) of m.
int64_t rows_bytes(const WeightMatrix& m, int64_t num_rows) {
  return m.present() ? num_rows * static_cast<int64_t>(row_bytes(m.type, m.row_len)) : 0;
}

// Bytes of a K slice of num_cols columns of every row of m (row-parallel;
// plan_shards cuts K on the type's blocks, so the slice's rows are whole blocks).
int64_t cols_bytes(const WeightMatrix& m, int64_t num_cols) {
  return m.present() ? m.num_rows * static_cast<int64_t>(row_bytes(m.type, num_cols)) : 0;
}

}  // namespace

int64_t TensorParallelMemory::total_weight_bytes() const {
  int64_t total = 0;
  for (const RankMemory& r : ranks) total += r.weight_bytes;
  return total;
}

int64_t TensorParallelMemory::total_kv_bytes() const {
  int64_t total = 0;
  for (const RankMemory& r : ranks) total += r.kv_bytes;
  return total;
}

int64_t TensorParallelMemory::total_workspace_bytes() const {
  int64_t total = 0;
  for (const RankMemory& r : ranks) total += r.workspace_bytes;
  return total;
}

int64_t activation_floats_per_row(int64_t num_ranks, int64_t hidden, int64_t q_width, int64_t kv_width, int64_t ffn) {
  return num_ranks * 3 * hidden + (q_width + 2 * kv_width) + 2 * q_width + 3 * ffn;
}

TensorParallelMemory rank_memory(const ShardPlan& plan, const ModelWeights& weights, int64_t num_blocks,
                                 int32_t block_size, KvCacheType kv_type, int32_t max_batched_tokens) {
  const ModelConfig& c = weights.config;
  TensorParallelMemory out;
  out.tp = plan.world_size;
  out.deterministic = plan.deterministic;
  out.num_kv_heads = c.num_kv_heads;
  out.num_kv_head_slots = plan.num_kv_slots;
  out.kv_heads_replicated = plan.num_kv_slots > c.num_kv_heads;
  const int64_t hd = c.head_dim;
  for (const RankShard& s : plan.ranks) {
    RankMemory r;
    r.rank = s.rank;
    r.q_head_begin = s.q_head_begin;
    r.num_q_heads = s.num_q_heads;
    r.kv_head_begin = s.kv_head_begin;
    r.num_kv_heads = s.num_kv_heads;
    r.weight_bytes = rows_bytes(weights.output, s.vocab_size);
    for (const LayerWeights& L : weights.layers) {
      r.weight_bytes += rows_bytes(L.wq, s.num_q_heads * hd) + rows_bytes(L.wk, s.num_kv_heads * hd) +
                        rows_bytes(L.wv, s.num_kv_heads * hd) + cols_bytes(L.wo, s.num_q_heads * hd) +
                        rows_bytes(L.w_gate, s.ffn_size) + rows_bytes(L.w_up, s.ffn_size) +
                        cols_bytes(L.w_down, s.ffn_size);
    }
    // The rank's storage layers: a plain plan's whole layers, else one per
    // (layer, KV head) of head_dim (kv_storage_shape).
    const KvStorageShape shape = plan.is_plain() ? kv_storage_shape(plan, c)
                                                 : KvStorageShape{c.num_layers * s.num_kv_heads, c.head_dim};
    r.kv_bytes = num_blocks * kv_block_bytes(shape, block_size, kv_type);
    const int64_t rows = std::max(max_batched_tokens, 1);  // ModelRunner::reserve
    r.workspace_bytes = rows * activation_floats_per_row(1, c.hidden_size, s.num_q_heads * hd, s.num_kv_heads * hd,
                                                         s.ffn_size) *
                        static_cast<int64_t>(sizeof(float));
    out.ranks.push_back(r);
  }
  return out;
}

Result<TensorParallelMemory> tensor_parallel_memory(const EngineConfig& config, int64_t num_blocks) {
  auto model = load_model(config.model_path);
  if (!model.ok()) return Error{model.error()};
  auto plan = plan_shards(*model->weights, config.tp, config.tp_reduce == TpReduce::Deterministic);
  if (!plan.ok()) return Error{plan.error()};
  return rank_memory(*plan, *model->weights, num_blocks, config.block_size, config.kv_cache_type,
                     config.max_batched_tokens);
}

}  // namespace kvscope
