// ModelRunner: runs the transformer forward pass for one StepBatch on the CPU.
// One implementation serves the Llama family and Gemma 3; ModelConfig switches
// the differences (biases, Q/K norms, post-norms, activation, rope style,
// sliding window). It writes each row's K/V into its slot, attends through the
// block tables, and returns logits only for the rows that asked for them.
#pragma once

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
  ModelRunner(std::shared_ptr<const ModelWeights> weights, KvStorage& kv, ThreadPool& pool);

  const ModelConfig& config() const { return weights_->config; }
  const ModelWeights& weights() const { return *weights_; }

  // logits: [batch.logits_rows.size()][vocab_size], resized here.
  void forward(const StepBatch& batch, std::vector<float>& logits);

 private:
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
  KvStorage& kv_;
  ThreadPool& pool_;
  MatmulScratch scratch_;
  int32_t capacity_ = 0;
  // Activations, [capacity_][width] each.
  // qkv_ holds Q|K|V side by side per token; q_ is Q alone (what attention reads).
  std::vector<float> x_, h_, qkv_, q_, attn_, o_, gate_up_, act_;
};

}  // namespace kvscope
