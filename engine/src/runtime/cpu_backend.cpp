// CpuBackend; see cpu_backend.h.
#include "runtime/cpu_backend.h"

#include <cassert>
#include <fmt/format.h>
#include <new>

#include "kernels/cpu/cpu_description.h"
#include "runtime/token_draw.h"

namespace kvscope {

Result<std::unique_ptr<HostKvPool>> CpuBackend::make_pool(const KvPoolSpec& spec,
                                                          std::shared_ptr<const ModelWeights> weights) {
  try {
    return std::make_unique<HostKvPool>(spec, std::move(weights));
  } catch (const std::bad_alloc&) {
    const size_t bytes = KvStorage::bytes_per_block(spec.num_layers, spec.block_size, spec.kv_size, spec.type) *
                         static_cast<size_t>(spec.num_blocks + spec.num_swap_blocks);
    return Error{fmt::format("cannot reserve {} MiB for the KV pool; lower the KV budget", bytes >> 20)};
  }
}

std::unique_ptr<CpuBackend> CpuBackend::create(std::shared_ptr<const ModelWeights> weights, const ShardPlan& plan,
                                               std::unique_ptr<HostKvPool> pool, ThreadPool& threads,
                                               const RepackProgress& progress) {
  assert(pool && "CpuBackend::create: no KV pool");
  std::unique_ptr<CpuBackend> b(new CpuBackend());
  b->weights_ = weights;
  b->pool_ = std::move(pool);
  b->threads_ = &threads;
  b->runner_ = TensorParallelRunner::create(std::move(weights), plan, b->pool_->storage(), threads, progress);
  if (!b->runner_) return nullptr;
  b->device_name_ = fmt::format("CPU ({})", describe_cpu().model_name);
  return b;
}

bool CpuBackend::forward(const StepBatch& batch, std::vector<float>& logits, const std::atomic<bool>* interrupt,
                         int32_t num_layers) {
  drawn_.clear();
  if (!runner_->forward(batch, logits, interrupt, num_layers)) return false;
  if (!batch.draws.empty())
    draw_tokens_on_host(batch, logits.data(), weights_->config.vocab_size, drawn_, threads_);
  return true;
}

BackendAttentionStats CpuBackend::last_attention_stats() const {
  const TensorParallelRunner::AttentionStats& s = runner_->last_attention_stats();
  return BackendAttentionStats{s.time_s, s.cascade_kv_bytes_saved};
}

Result<std::unique_ptr<KvBlockStore>> CpuBackend::make_kv_pool(const KvPoolSpec& spec) {
  auto pool = make_pool(spec, weights_);
  if (!pool.ok()) return Error{pool.error()};
  return std::unique_ptr<KvBlockStore>(std::move(pool).value());
}

void CpuBackend::use_kv_pool(std::unique_ptr<KvBlockStore> pool) {
  // Only make_kv_pool's pools reach here: the runner needs their KvStorage.
  auto* host = dynamic_cast<HostKvPool*>(pool.get());
  assert(host && "CpuBackend::use_kv_pool: a pool this backend did not make");
  runner_->set_kv_storage(host->storage());
  pool.release();
  pool_.reset(host);
}

BackendMemory CpuBackend::memory() const {
  BackendMemory m;
  m.device_name = device_name_;
  m.weight_bytes = weights_->matrix_bytes();
  m.kv_pool_bytes = pool_->pool_bytes();
  m.workspace_bytes = runner_->workspace_bytes();
  m.swap_bytes = pool_->swap_bytes();
  return m;
}

}  // namespace kvscope
