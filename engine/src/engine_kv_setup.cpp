// Engine::Impl::make_kv_setup: what the engine builds from a config and its
// KV plan (kv_plan.h), whole, before any of it is used: the KV pools, new
// backends where the config needs them (runtime/backend.h), the KV cache
// manager over the pools and the scheduler over the manager. Engine::create
// installs it; Engine::reconfigure swaps it in only once nothing can fail.
//   tested by tests/engine/runtime/reconfigure_test.cpp and backend_seam_test.cpp
#include <fmt/format.h>

#include "engine_impl.h"
#include "runtime/backend_select.h"
#include "spec/proposer.h"
#if KVSCOPE_HAVE_CUDA
#include "runtime/cuda_backend.h"
#endif

namespace kvscope {

Result<KvSetup> Engine::Impl::make_kv_setup(const EngineConfig& c, const KvPlan& plan,
                                            const std::shared_ptr<const ModelWeights>& draft, ThreadPool& threads,
                                            const BackendChoice& choice, const CpuBackend::RepackProgress& progress) {
  const ModelConfig& mc = weights->config;
#if KVSCOPE_HAVE_CUDA
  const bool cuda = choice.kind == BackendKind::Cuda;  // settled against the model (settle_backend)
#endif
  // Tensor parallelism lays the ranks' KV heads out as layers of one storage
  // (kv_storage_shape), so the manager's copy-on-write and swap cover every rank.
  auto shards = shard_plan(c);
  if (!shards.ok()) return Error{shards.error()};
  const KvStorageShape shape = kv_storage_shape(*shards, mc);
  KvPoolSpec spec;
  spec.num_layers = shape.num_layers;
  spec.kv_size = shape.kv_size;
  spec.num_blocks = static_cast<int32_t>(plan.num_blocks);
  spec.block_size = c.block_size;
  spec.num_swap_blocks = static_cast<int32_t>(plan.num_swap_blocks);
  spec.type = c.kv_cache_type;
#if KVSCOPE_HAVE_CUDA
  if (cuda) {  // one GPU: one storage layer per model layer, whatever tp_reduce says
    spec.num_layers = mc.num_layers;
    spec.kv_size = mc.kv_size();
  }
#endif
  // spec = draft: the draft model's K/V in the same blocks, never swapped.
  const bool with_draft = draft && c.spec == SpecMethod::Draft;
  KvPoolSpec draft_spec = spec;
  if (with_draft) {
    draft_spec.num_layers = draft->config.num_layers;
    draft_spec.kv_size = draft->config.kv_size();
    draft_spec.num_swap_blocks = 0;
  }
  // Every pool before any repacking, so that a budget that cannot work fails at once.
  const bool new_backend = !backend || backend->kind() != choice.kind || c.tp != config.tp ||
                           c.tp_reduce != config.tp_reduce ||
                           (choice.kind == BackendKind::Cuda &&
                            (c.gpu_prefill_gemm != config.gpu_prefill_gemm || c.gpu_graphs != config.gpu_graphs ||
                             c.gpu_matmul != config.gpu_matmul ||
                             c.gpu_overlap_launches != config.gpu_overlap_launches ||
                             c.gpu_attention_timing != config.gpu_attention_timing ||
                             c.gpu_norm_fusion != config.gpu_norm_fusion));
  const bool new_draft_backend = with_draft && (!draft_backend || draft != draft_weights);
  KvSetup setup;
  std::unique_ptr<HostKvPool> host_pool, draft_host_pool;
#if KVSCOPE_HAVE_CUDA
  std::unique_ptr<DeviceKvPool> device_pool;
  if (new_backend && cuda) {
    auto made = CudaBackend::make_pool(spec, weights);
    if (!made.ok()) return Error{made.error()};
    device_pool = std::move(made).value();
  } else
#endif
  if (new_backend) {
    auto made = CpuBackend::make_pool(spec, weights);
    if (!made.ok()) return Error{made.error()};
    host_pool = std::move(made).value();
  } else {
    auto made = backend->make_kv_pool(spec);
    if (!made.ok()) return Error{made.error()};
    setup.kv = std::move(made).value();
  }
  if (new_draft_backend) {
    auto made = CpuBackend::make_pool(draft_spec, draft);
    if (!made.ok()) return Error{made.error()};
    draft_host_pool = std::move(made).value();
  } else if (with_draft) {
    auto made = draft_backend->make_kv_pool(draft_spec);
    if (!made.ok()) return Error{made.error()};
    setup.draft_kv = std::move(made).value();
  }
  const Error cancelled{std::string(kLoadCancelledMessage)};
#if KVSCOPE_HAVE_CUDA
  if (new_backend && cuda) {
    // No repacking: the weights are uploaded as they are (one step of progress).
    CudaBackend::Options options;
    options.gemm_prefill = c.gpu_prefill_gemm;
    options.graphs = c.gpu_graphs;
    options.matvec_math =
        c.gpu_matmul == GpuMatmul::TensorCores ? cuda::MatvecMath::kTensorCores : cuda::MatvecMath::kF32;
    options.overlap_launches = c.gpu_overlap_launches;
    options.time_attention = c.gpu_attention_timing;
    options.norm_fusion = c.gpu_norm_fusion;
    auto made = CudaBackend::create(weights, std::move(device_pool), options);
    if (!made.ok()) return Error{made.error()};
    setup.backend = std::move(made).value();
    if (progress && !progress(1.0)) return cancelled;
  } else
#endif
  if (new_backend) {
    setup.backend = CpuBackend::create(weights, *shards, std::move(host_pool), threads, progress);
    if (!setup.backend) return cancelled;
  }
  if (new_draft_backend) {
    // Small beside the model, so no progress of its own; one rank (plain).
    auto draft_shards = plan_shards(*draft, 1, false);
    if (!draft_shards.ok()) return Error{fmt::format("the draft model: {}", draft_shards.error())};
    setup.draft_backend = CpuBackend::create(draft, *draft_shards, std::move(draft_host_pool), threads, {});
    if (!setup.draft_backend) return cancelled;
  }

  KvCacheConfig kc;
  kc.block_size = c.block_size;
  kc.num_blocks = spec.num_blocks;
  kc.num_swap_blocks = spec.num_swap_blocks;
  kc.prefix_caching = c.prefix_caching;
  kc.contiguous = !c.paged;
  setup.manager = std::make_unique<KvCacheManager>(kc, setup.backend ? setup.backend->kv_blocks() : *setup.kv, events);
  if (with_draft) {
    setup.manager->set_draft_blocks(setup.draft_backend ? &setup.draft_backend->kv_blocks() : setup.draft_kv.get());
  }
  SchedulerConfig sc;
  sc.max_seqs = c.max_seqs;
  sc.max_batched_tokens = c.max_batched_tokens;
  sc.policy = c.policy;
  sc.preemption = c.preemption;
  sc.spec_k = c.spec_k;
  sc.spec_never_pause = c.spec_never_pause;
  sc.max_scored_rows = max_scored_rows(c, mc.vocab_size);  // within the logits buffer the plan counts
  setup.scheduler = std::make_unique<Scheduler>(sc, *setup.manager, events, make_proposer(c));
  return setup;
}

Result<BackendChoice> Engine::Impl::settle_backend(const EngineConfig& c) const {
  auto choice = choose_backend(c.backend);
  if (!choice.ok()) return choice;
  return kvscope::settle_backend(std::move(choice).value(), *weights, c);
}

std::optional<DeviceMemory> Engine::Impl::device_memory(const BackendChoice& choice) const {
  std::optional<DeviceMemory> d = probe_device_memory(choice, static_cast<int64_t>(weights->matrix_bytes()));
  if (d && backend && backend->kind() == BackendKind::Cuda) {
    const BackendMemory held = backend->memory();
    d->held_bytes = static_cast<int64_t>(held.weight_bytes + held.kv_pool_bytes + held.workspace_bytes);
  }
  return d;
}

void Engine::Impl::set_backend(std::unique_ptr<Backend> b) {
  auto* cpu = dynamic_cast<CpuBackend*>(b.get());
  runner = cpu ? &cpu->runner() : nullptr;
  backend = std::move(b);
}

}  // namespace kvscope
