// ModelRunner: runs the transformer forward pass for one StepBatch on the CPU.
// One implementation serves the Llama family and Gemma 3; ModelConfig switches
// the differences (biases, Q/K norms, post-norms, activation, rope style,
// sliding window). It writes each row's K/V into its slot, attends through the
// block tables, and returns logits only for the rows that asked for them.
//
// Building one repacks every weight matrix (the slow part of loading a model);
// the KV storage and thread pool it uses can be swapped afterwards, so that
// Engine::reconfigure keeps the repacked weights.
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
  // Repacks every weight group into linears_ and head_; false when cancelled.
  bool pack_weights(const RepackProgress& progress);
  void resize_activations(int32_t capacity);
  void ensure_capacity(int32_t num_tokens);
  void attention_block(int32_t layer, const StepBatch& batch);
  void ffn_block(int32_t layer, int32_t num_tokens);

  // Per layer: Q|K|V, output projection, gate|up, down; then the head.
  struct LayerLinears {
    LinearGroup qkv, wo, gate_up, down;
  };

  std::shared_ptr<const ModelWeights> weights_;
  std::vector<LayerLinears> linears_;
  LinearGroup head_;
  KvStorage* kv_;     // not owned
  ThreadPool* pool_;  // not owned
  MatmulScratch scratch_;
  AttentionStats attention_stats_;
  int32_t capacity_ = 0;
  // Activations, [capacity_][width] each.
  // qkv_ holds Q|K|V side by side per token; q_ is Q alone (what attention reads).
  std::vector<float> x_, h_, qkv_, q_, attn_, o_, gate_up_, act_;
};

}  // namespace kvscope
