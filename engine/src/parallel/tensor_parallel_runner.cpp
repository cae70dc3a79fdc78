#include "parallel/tensor_parallel_runner.h"

#include <algorithm>

namespace kvscope {
namespace {

// Rank r's share of num_threads threads (at least one each).
int32_t rank_threads(int32_t num_threads, int32_t world, int32_t rank) {
  const int32_t share = num_threads / world + (rank < num_threads % world ? 1 : 0);
  return std::max(share, 1);
}

}  // namespace

std::unique_ptr<TensorParallelRunner> TensorParallelRunner::create(std::shared_ptr<const ModelWeights> weights,
                                                                   const ShardPlan& plan, KvStorage& kv,
                                                                   ThreadPool& pool, const RepackProgress& progress) {
  std::unique_ptr<TensorParallelRunner> tp(new TensorParallelRunner());
  tp->plan_ = plan;
  const int32_t world = plan.world_size;
  tp->rank_timings_.resize(static_cast<size_t>(world));
  if (plan.is_plain()) {
    auto runner = ModelRunner::create(std::move(weights), kv, pool, progress);
    if (!runner) return nullptr;
    tp->shards_.push_back(std::move(runner));
    return tp;
  }
  tp->group_ = std::make_unique<InProcessGroup>(world);
  for (int32_t r = 0; r < world; ++r) {
    tp->pools_.push_back(std::make_unique<ThreadPool>(rank_threads(pool.num_threads(), world, r)));
  }
  // Ranks are packed one after the other; progress spans all of them.
  for (int32_t r = 0; r < world; ++r) {
    RepackProgress rank_progress;
    if (progress) {
      rank_progress = [&, r](double done) { return progress((r + done) / world); };
    }
    Communicator* comm = world > 1 ? &tp->group_->communicator(r) : nullptr;
    auto shard = ModelRunner::create_shard(weights, plan, r, comm, kv, *tp->pools_[static_cast<size_t>(r)],
                                           rank_progress);
    if (!shard) return nullptr;
    tp->shards_.push_back(std::move(shard));
  }
  tp->rank_logits_.resize(static_cast<size_t>(world));
  for (int32_t r = 1; r < world; ++r) tp->threads_.emplace_back([p = tp.get(), r] { p->worker(r); });
  return tp;
}

TensorParallelRunner::~TensorParallelRunner() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  job_ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void TensorParallelRunner::set_kv_storage(KvStorage& kv) {
  for (auto& s : shards_) s->set_kv_storage(kv);
}

void TensorParallelRunner::set_thread_pool(ThreadPool& pool) {
  if (plan_.is_plain()) {
    shards_[0]->set_thread_pool(pool);
    return;
  }
  for (int32_t r = 0; r < plan_.world_size; ++r) {
    const int32_t n = rank_threads(pool.num_threads(), plan_.world_size, r);
    auto& p = pools_[static_cast<size_t>(r)];
    if (p->num_threads() == n) continue;
    p = std::make_unique<ThreadPool>(n);
    shards_[static_cast<size_t>(r)]->set_thread_pool(*p);
  }
}

void TensorParallelRunner::reserve(int32_t max_tokens) {
  for (auto& s : shards_) s->reserve(max_tokens);
}

size_t TensorParallelRunner::workspace_bytes() const {
  size_t bytes = 0;
  for (const auto& s : shards_) bytes += s->workspace_bytes();
  for (const auto& l : rank_logits_) bytes += l.capacity() * sizeof(float);
  return bytes;
}

bool TensorParallelRunner::forward(const StepBatch& batch, std::vector<float>& logits,
                                   const std::atomic<bool>* interrupt, int32_t num_layers) {
  using Clock = std::chrono::steady_clock;
  if (shards_.size() == 1) {
    rank_timings_[0].begin = Clock::now();
    const bool ok = shards_[0]->forward(batch, logits, interrupt, num_layers);
    rank_timings_[0].end = Clock::now();
    return ok;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = Job{&batch, interrupt, num_layers};
    num_done_ = 0;
    ++job_generation_;
  }
  job_ready_.notify_all();
  // Every rank reaches the same decision at each layer boundary (the stop
  // flag is broadcast from rank 0), so all return the same value.
  rank_timings_[0].begin = Clock::now();
  const bool ok = shards_[0]->forward(batch, logits, interrupt, num_layers);
  rank_timings_[0].end = Clock::now();
  std::unique_lock lock(mutex_);
  job_done_.wait(lock, [&] { return num_done_ == plan_.world_size - 1; });
  return ok;
}

void TensorParallelRunner::worker(int32_t rank) {
  uint64_t seen = 0;
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      job_ready_.wait(lock, [&] { return stopping_ || job_generation_ != seen; });
      if (stopping_) return;
      seen = job_generation_;
      job = job_;
    }
    // Read by forward()'s caller once num_done_ says this rank is done (under mutex_).
    RankTiming& timing = rank_timings_[static_cast<size_t>(rank)];
    timing.begin = std::chrono::steady_clock::now();
    shards_[static_cast<size_t>(rank)]->forward(*job.batch, rank_logits_[static_cast<size_t>(rank)], job.interrupt,
                                                job.num_layers);
    timing.end = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(mutex_);
      ++num_done_;
    }
    job_done_.notify_one();
  }
}

}  // namespace kvscope
