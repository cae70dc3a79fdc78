// TensorParallelRunner: the model runner the engine calls, over N ranks that
// are threads of this process (docs/tensor-parallel.md). It owns one
// ModelRunner shard per rank (ModelRunner::create_shard), an InProcessGroup
// for their collectives, a thread pool per rank (the engine's thread count
// divided between ranks) and a thread per rank beyond the first; forward()
// runs rank 0 on the caller and the others on their threads, and returns the
// same logits layout as ModelRunner::forward.
//
// With one rank and the fast reduction it is a plain ModelRunner on the
// engine's pool and KV layout (plan.is_plain()): nothing changes for tp = 1.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel/in_process_communicator.h"
#include "parallel/shard_plan.h"
#include "runtime/model_runner.h"

namespace kvscope {

class TensorParallelRunner {
 public:
  using RepackProgress = ModelRunner::RepackProgress;
  using AttentionStats = ModelRunner::AttentionStats;

  // kv: laid out as kv_storage_shape(plan, ...) says. pool: the engine's;
  // used directly with one rank, else only its thread count is read.
  // nullptr when progress returned false.
  static std::unique_ptr<TensorParallelRunner> create(std::shared_ptr<const ModelWeights> weights,
                                                      const ShardPlan& plan, KvStorage& kv, ThreadPool& pool,
                                                      const RepackProgress& progress);
  ~TensorParallelRunner();
  TensorParallelRunner(const TensorParallelRunner&) = delete;
  TensorParallelRunner& operator=(const TensorParallelRunner&) = delete;

  const ShardPlan& plan() const { return plan_; }
  const ModelConfig& config() const { return shards_[0]->config(); }
  int32_t world_size() const { return plan_.world_size; }

  void set_kv_storage(KvStorage& kv);
  // Re-divides pool.num_threads() between the ranks (at least one each).
  void set_thread_pool(ThreadPool& pool);
  void reserve(int32_t max_tokens);
  size_t workspace_bytes() const;

  // As ModelRunner::forward; every rank computes the same logits, rank 0's are returned.
  bool forward(const StepBatch& batch, std::vector<float>& logits, const std::atomic<bool>* interrupt = nullptr,
               int32_t num_layers = 0);
  const AttentionStats& last_attention_stats() const { return shards_[0]->last_attention_stats(); }

  // When each rank's part of the last forward() began and ended, stamped by
  // the rank's own thread: [world_size] (one rank for a plain plan). A rank
  // that waits in a collective for a slower one counts the wait: the spans
  // show who waited for whom.
  struct RankTiming {
    std::chrono::steady_clock::time_point begin, end;
    double seconds() const { return std::chrono::duration<double>(end - begin).count(); }
  };
  const std::vector<RankTiming>& last_rank_timings() const { return rank_timings_; }

 private:
  TensorParallelRunner() = default;
  void worker(int32_t rank);

  ShardPlan plan_;
  std::unique_ptr<InProcessGroup> group_;
  std::vector<std::unique_ptr<ThreadPool>> pools_;  // [world_size] when world_size > 1
  std::vector<std::unique_ptr<ModelRunner>> shards_;
  std::vector<std::vector<float>> rank_logits_;  // [world_size] ranks 1.. write theirs here
  std::vector<RankTiming> rank_timings_;         // [world_size] each rank writes its own

  // The job the worker threads run: one forward() call.
  struct Job {
    const StepBatch* batch = nullptr;
    const std::atomic<bool>* interrupt = nullptr;
    int32_t num_layers = 0;
  };
  std::mutex mutex_;
  std::condition_variable job_ready_, job_done_;
  Job job_;
  uint64_t job_generation_ = 0;
  int32_t num_done_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // ranks 1..world_size-1
};

}  // namespace kvscope
