// ModelRunner: runs the transformer forward pass for one StepBatch on the CPU.
// One implementation serves the Llama family and Gemma 3; ModelConfig switches
// the differences (biases, Q/K norms, post-norms, activation, rope style,
// sliding window). It writes each row's K/V into its slot, attends through the
// block tables, and returns logits only for the rows that asked for them.
//
// Building one repacks every weight matrix (the slow part of loading a model);
// the KV storage and thread pool it uses can be swapped afterwards, so that
// Engine::reconfigure keeps the repacked weights.
//
// A runner can also be one rank's shard of a tensor-parallel model
// (create_shard; parallel/tensor_parallel_runner.h runs N of them): it then
// holds only its slice of the weights (parallel/shard_plan.h), meets the other
// ranks through a Communicator after each row-parallel matmul and the head,
// and returns the same full logits on every rank.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "runtime/linear_group.h"
#include "kernels/cpu/thread_pool.h"
#include "kv/kv_storage.h"
#include "model/model_weights.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "parallel/shard_weights.h"
#include "runtime/step_batch.h"

namespace kvscope {

class ModelRunner {
 public:
  // Called after each weight group is repacked with the fraction of weight
  // bytes done (0..1]; returning false stops the repacking.
  using RepackProgress = std::function<bool(double fraction)>;

  ModelRunner(std::shared_ptr<const ModelWeights> weights, KvStorage& kv, ThreadPool& pool);
  // As the constructor, reporting progress; nullptr when progress returned false.
  static std::unique_ptr<ModelRunner> create(std::shared_ptr<const ModelWeights> weights, KvStorage& kv,
                                             ThreadPool& pool, const RepackProgress& progress);
  // Rank `rank` of `plan`. Its K/V go to `kv` laid out one layer per (model
  // layer, KV head slot): storage layer = layer * plan.num_kv_slots +
  // shard.kv_slot_begin + j, kv_size = head_dim (kv_storage_shape()), so
  // that every rank's heads live in one storage whose blocks the KV manager
  // copies and swaps whole. comm: the rank's communicator (world_size ranks).
  static std::unique_ptr<ModelRunner> create_shard(std::shared_ptr<const ModelWeights> weights, const ShardPlan& plan,
                                                   int32_t rank, Communicator* comm, KvStorage& kv, ThreadPool& pool,
                                                   const RepackProgress& progress);

  const ModelConfig& config() const { return weights_->config; }
  const ModelWeights& weights() const { return *weights_; }

  // Where K/V go and which threads run the kernels from the next forward() on.
  void set_kv_storage(KvStorage& kv) { kv_ = &kv; }
  void set_thread_pool(ThreadPool& pool) { pool_ = &pool; }
  // Sizes the activation buffers for exactly max_tokens query rows (forward()
  // grows them if a batch is ever larger), releasing any excess.
  void reserve(int32_t max_tokens);
  // Bytes of the activation buffers as allocated now (not counting the matmul
  // kernels' quantised copy of the input, a kernels/ internal grown on first
  // use and a few percent of this).
  size_t workspace_bytes() const;

  // logits: [batch.logits_rows.size()][vocab_size], resized here. Returns
  // false, with logits unset, when `interrupt` is set at a layer boundary.
  // num_layers: run layers [0, num_layers) only, then the final norm and the
  // head (early-exit self-speculation's draft); 0 or above the model's
  // layers: all of them. Only those layers' K/V are written.
  bool forward(const StepBatch& batch, std::vector<float>& logits, const std::atomic<bool>* interrupt = nullptr,
               int32_t num_layers = 0);

  // The attention kernels of the last forward(), all layers.
  struct AttentionStats {
    double time_s = 0.0;                 // wall time in paged_attention
    int64_t cascade_kv_bytes_saved = 0;  // K/V bytes a shared pass read once instead of once per member
  };
  const AttentionStats& last_attention_stats() const { return attention_stats_; }

 private:
  struct NoPacking {};
  ModelRunner(std::shared_ptr<const ModelWeights> weights, KvStorage& kv, ThreadPool& pool, NoPacking);
  // Repacks every weight group of the shard into linears_ and head_; false when cancelled.
  bool pack_weights(const RepackProgress& progress);
  void resize_activations(int32_t capacity);
  void ensure_capacity(int32_t num_tokens);
  // All ranks stop at the same layer: rank 0's reading of the flag is broadcast.
  bool should_stop(const std::atomic<bool>* interrupt);
  void attention_block(int32_t layer, const StepBatch& batch);
  void attend(int32_t layer, const StepBatch& batch);
  void ffn_block(int32_t layer, int32_t num_tokens);
  // y[T][hidden] = the full product of a row-parallel matmul whose local K
  // parts are `parts` (input x: [T][x_width], part i reading columns
  // kparts[i]), reduced over ranks: fast = local sum then all_reduce_sum;
  // deterministic = every canonical chunk's partial gathered, summed in
  // chunk order.
  void row_parallel(std::vector<LinearGroup>& parts, const std::vector<KPart>& kparts, bool is_down,
                    const float* x, int64_t x_width, int32_t T, float* y);
  // h: [num_rows][hidden]; with a norm, the head reads rms_norm(h) (folded
  // into its input quantisation, LinearGroup::run).
  void head(const float* h, int32_t num_rows, float* logits, const RowNorm* norm = nullptr);
  // This step's rotary cos/sin table for `base` ([T][head_dim], rope_cos_sin),
  // made by the first layer that asks for it and reused by every later one.
  const float* rope_table(float base, const StepBatch& batch);

  std::shared_ptr<const ModelWeights> weights_;
  ShardPlan plan_;
  RankShard shard_;
  Communicator* comm_ = nullptr;  // not owned; null: one rank
  bool split_kv_ = false;         // KV storage layers per KV head slot (create_shard)
  std::vector<ShardLinears> linears_;
  std::vector<KPart> wo_parts_, down_parts_;
  LinearGroup head_;
  std::vector<uint8_t> token_embd_;  // a copy of weights_->token_embd's bytes (pack_weights)
  KvStorage* kv_;     // not owned
  ThreadPool* pool_;  // not owned
  MatmulScratch scratch_;
  AttentionStats attention_stats_;
  int32_t capacity_ = 0;
  // Activations, [capacity_][width] each.
  // qkv_ holds Q|K|V side by side per token; q_ is Q alone (what attention reads).
  // Widths are the shard's: Q = its query heads, KV = its KV heads, F = its FFN rows.
  std::vector<float> x_, h_, qkv_, q_, attn_, o_, gate_up_, act_;
  // Row-parallel and head scratch (sized on use): a part's input columns,
  // [chunks][T][hidden] partial products, all ranks' partials, head slices.
  std::vector<float> part_in_, partials_, gathered_, head_local_, head_all_, q_head_, out_head_;
  // Rotary tables of the current forward(), one per distinct base (Gemma 3:
  // local and global layers); the first num_rope_tables_ are valid.
  struct RopeTable {
    float base = 0.0f;
    std::vector<float> cos_sin;  // [T][head_dim]
  };
  std::vector<RopeTable> rope_tables_;
  size_t num_rope_tables_ = 0;
};

}  // namespace kvscope
