// CpuBackend: the Backend (runtime/backend.h) of the CPU. It wraps what ran
// the model before the seam existed, unchanged: a TensorParallelRunner (a
// plain ModelRunner inside for tp = 1 with the fast reduction, else the tp
// ranks' shards) whose repacked weights live in host memory, over a
// HostKvPool (kv/host_kv_pool.h) whose KvStorage the runner reads and writes
// directly. Its forward() is the runner's, so logits are bitwise what they
// were.
//   tested by tests/engine/runtime/backend_seam_test.cpp and every engine test
#pragma once

#include <memory>

#include "kv/host_kv_pool.h"
#include "model/model_weights.h"
#include "parallel/shard_plan.h"
#include "parallel/tensor_parallel_runner.h"
#include "runtime/backend.h"

namespace kvscope {

class CpuBackend final : public Backend {
 public:
  using RepackProgress = TensorParallelRunner::RepackProgress;

  // A host pool of `spec` for `weights`' keys (its rope re-rotates them after
  // a context shift). The error names the memory it could not reserve.
  static Result<std::unique_ptr<HostKvPool>> make_pool(const KvPoolSpec& spec,
                                                       std::shared_ptr<const ModelWeights> weights);
  // Repacks `weights` as `plan` splits them, over `pool` (from make_pool, made
  // first so that a budget that cannot work fails before the slow part).
  // threads: the engine's; nullptr when progress returned false.
  static std::unique_ptr<CpuBackend> create(std::shared_ptr<const ModelWeights> weights, const ShardPlan& plan,
                                            std::unique_ptr<HostKvPool> pool, ThreadPool& threads,
                                            const RepackProgress& progress);

  // The runner inside, for figures per tensor-parallel rank (its plan, its
  // shards' workspace). The engine runs steps through forward(), not this.
  TensorParallelRunner& runner() { return *runner_; }
  const TensorParallelRunner& runner() const { return *runner_; }

  BackendKind kind() const override { return BackendKind::Cpu; }
  const ModelConfig& model_config() const override { return weights_->config; }
  bool forward(const StepBatch& batch, std::vector<float>& logits, const std::atomic<bool>* interrupt = nullptr,
               int32_t num_layers = 0) override;
  const std::vector<int32_t>& drawn_tokens() const override { return drawn_; }
  BackendAttentionStats last_attention_stats() const override;
  void reserve(int32_t max_tokens) override { runner_->reserve(max_tokens); }
  Result<std::unique_ptr<KvBlockStore>> make_kv_pool(const KvPoolSpec& spec) override;
  void use_kv_pool(std::unique_ptr<KvBlockStore> pool) override;
  KvBlockStore& kv_blocks() override { return *pool_; }
  void set_thread_pool(ThreadPool& pool) override {
    runner_->set_thread_pool(pool);
    threads_ = &pool;
  }
  BackendMemory memory() const override;

 private:
  CpuBackend() = default;

  std::shared_ptr<const ModelWeights> weights_;
  std::unique_ptr<HostKvPool> pool_;
  std::unique_ptr<TensorParallelRunner> runner_;
  std::string device_name_;
  // batch.draws, drawn on the host after the logits (runtime/token_draw.h),
  // on the engine's threads.
  std::vector<int32_t> drawn_;
  ThreadPool* threads_ = nullptr;
};

}  // namespace kvscope
