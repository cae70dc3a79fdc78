// CudaBackend; see cuda_backend.h. Every launch and copy goes on the legacy
// default stream (nullptr), which also orders them with the KV pool's block
// copies between steps; the one synchronisation of a step is the copy of
// the logits (and drawn tokens) back to the host. A step's model launches
// may instead replay as one CUDA graph (runtime/cuda_graph_cache.h), launched on
// that same legacy stream; graphs are captured on a stream of their own,
// since the legacy stream cannot be captured.
#include "runtime/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstdio>

#include "kernels/cpu/kv_cache_type.h"
#include "kernels/cuda/act_and_mul.cuh"
#include "kernels/cuda/overlapped_launch.h"
#include "kernels/cuda/dequantize_bf16.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/gemm_bf16.cuh"
#include "kernels/cuda/matvec_q.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope_write_kv.cuh"

namespace kvscope {
namespace {

constexpr int32_t kMaxMatvecRows = static_cast<int32_t>(cuda::kMaxMatvecTokens);
constexpr int64_t kGemmTileRows = 2048;    // weight rows dequantised to bf16 at a time

// A token's row of qkv_: q, then k, then v.
int64_t qkv_width(const ModelConfig& c) { return c.q_size() + 2 * static_cast<int64_t>(c.kv_size()); }

AttentionShape attention_shape(const ModelConfig& c) {
  AttentionShape s;
  s.num_heads = c.num_heads;
  s.num_kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.scale = c.softmax_scale();
  return s;  // no softcap, no sliding window: cuda_unsupported() refuses them
}

// What the attention launches of a step take from its plan besides device
// data: their grids and the plan's offsets (paged_prefill.cuh).
std::vector<int64_t> attention_plan_key(const cuda::PrefillPlan& p) {
  return {p.num_tokens,  p.rows_per_block, p.num_items,    p.num_shared_items, p.num_partition_items,
          p.num_combine_rows, p.items_at,  p.shared_at,    p.rows_at,          p.row_prefix_at,
          p.partition_at, p.combine_at};
}

}  // namespace

Result<std::unique_ptr<DeviceKvPool>> CudaBackend::make_pool(const KvPoolSpec& spec,
                                                             std::shared_ptr<const ModelWeights> weights) {
  return DeviceKvPool::create(spec, std::move(weights));
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(std::shared_ptr<const ModelWeights> weights,
                                                         std::unique_ptr<DeviceKvPool> pool,
                                                         const Options& options) {
  assert(pool && "CudaBackend::create: no KV pool");
  if (std::string why = cuda_unsupported(*weights, EngineConfig{}); !why.empty()) {
    return Error{fmt::format("the CUDA backend cannot run this model: {}", why)};
  }
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, 0); e != cudaSuccess) {
    return Error{fmt::format("no CUDA device: cudaGetDeviceProperties: {}", cudaGetErrorString(e))};
  }
  auto uploaded = CudaWeights::upload(*weights);
  if (!uploaded.ok()) return Error{uploaded.error()};
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  b->weights_ = std::move(weights);
  b->device_weights_ = std::move(uploaded).value();
  b->pool_ = std::move(pool);
  b->options_ = options;
  b->attention_sampler_ = AttentionTimingSampler(options.time_attention);
  cuda::set_overlapped_launches(options.overlap_launches);
  b->device_name_ = prop.name;
  if (options.gemm_prefill) {
    if (cublasCreate(&b->cublas_) != CUBLAS_STATUS_SUCCESS) return Error{"cublasCreate failed"};
  }
  const int32_t num_layers = b->weights_->config.num_layers;
  b->events_.resize(static_cast<size_t>(2 * num_layers));
  for (cudaEvent_t& e : b->events_) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
  cuda_check(cudaEventCreate(&b->step_begin_), "cudaEventCreate");
  cuda_check(cudaEventCreate(&b->step_end_), "cudaEventCreate");
  return b;
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  if (step_begin_) cudaEventDestroy(step_begin_);
  if (step_end_) cudaEventDestroy(step_end_);
  if (cublas_) cublasDestroy(cublas_);
}

void CudaBackend::reserve(int32_t max_tokens) {
  const ModelConfig& c = model_config();
  const size_t n = static_cast<size_t>(std::max(max_tokens, 1));
  for (DeviceArray<float>* a : {&x_, &h_, &qkv_, &attn_, &o_, &gate_, &up_}) a->release();
  capacity_ = static_cast<int32_t>(n);
  x_.reserve(n * c.hidden_size);
  h_.reserve(n * c.hidden_size);
  o_.reserve(n * c.hidden_size);
  qkv_.reserve(n * qkv_width(c));
  attn_.reserve(n * c.q_size());
  gate_.reserve(n * c.ffn_size);
  up_.reserve(n * c.ffn_size);
}

Result<std::unique_ptr<KvBlockStore>> CudaBackend::make_kv_pool(const KvPoolSpec& spec) {
  auto pool = make_pool(spec, weights_);
  if (!pool.ok()) return Error{pool.error()};
  return std::unique_ptr<KvBlockStore>(std::move(pool).value());
}

void CudaBackend::use_kv_pool(std::unique_ptr<KvBlockStore> pool) {
  auto* device = dynamic_cast<DeviceKvPool*>(pool.get());
  assert(device && "CudaBackend::use_kv_pool: a pool this backend did not make");
  pool.release();
  pool_.reset(device);
}

BackendMemory CudaBackend::memory() const {
  BackendMemory m;
  m.device_name = device_name_;
  m.weight_bytes = device_weights_->bytes();
  m.kv_pool_bytes = pool_->pool_bytes();
  for (const DeviceArray<float>* a : {&x_, &h_, &qkv_, &attn_, &o_, &gate_, &up_, &head_in_, &logits_,
                                      &attention_workspace_}) {
    m.workspace_bytes += a->bytes();
  }
  m.workspace_bytes += ints_.bytes() + slots_.bytes() + plan_data_.bytes() + gemm_workspace_.bytes();
  m.workspace_bytes += draw_ints_.bytes() + draw_ids_.bytes() + draw_counts_.bytes() + draw_workspace_.bytes() +
                       draw_params_.bytes() + penalty_params_.bytes() + uniforms_.bytes();
  m.swap_bytes = pool_->swap_bytes();
  return m;
}

void CudaBackend::prepare_step(const StepBatch& batch) {
  const int32_t T = batch.num_tokens;
  if (T > capacity_) reserve(std::max(T, 2 * capacity_));
  // One upload for the int32 arrays the kernels read.
  host_ints_.clear();
  auto append = [&](const std::vector<int32_t>& v) {
    const size_t at = host_ints_.size();
    host_ints_.insert(host_ints_.end(), v.begin(), v.end());
    return at;
  };
  append(batch.token_ids);
  positions_at_ = append(batch.positions);
  query_start_at_ = append(batch.query_start);
  table_start_at_ = append(batch.block_table_start);
  block_ids_at_ = append(batch.block_ids);
  ints_.upload(host_ints_.data(), host_ints_.size());
  slots_.upload(batch.slot_mapping.data(), batch.slot_mapping.size());

  // Attention is planned once for every layer (FlashInfer's plan step).
  const AttentionShape shape = attention_shape(model_config());
  const PagedAttentionBatch host_batch{batch.num_seqs, batch.query_start.data(), batch.positions.data(),
                                       batch.block_table_start.data(), batch.block_ids.data()};
  const CascadeGroups cascade{batch.num_cascade_groups(), batch.cascade_prefix_len.data(),
                              batch.cascade_seq_start.data(), batch.cascade_seqs.data()};
  cuda_check(cuda::plan_paged_prefill(shape, host_batch, cascade, &plan_), "plan_paged_prefill");
  plan_data_.upload(plan_.data.data(), plan_.data.size());
  attention_workspace_floats_ = cuda::paged_prefill_workspace_floats(plan_, shape);
  attention_workspace_.reserve(attention_workspace_floats_);

  // Which rows multiply how (cuda_backend.h, Options::gemm_prefill).
  matvec_runs_.clear();
  gemm_seqs_.clear();
  for (int32_t s = 0; s < batch.num_seqs; ++s) {
    const int32_t begin = batch.query_start[s], end = batch.query_start[s + 1];
    if (options_.gemm_prefill && end - begin > options_.gemm_min_rows) {
      gemm_seqs_.emplace_back(begin, end);
    } else if (!matvec_runs_.empty() && matvec_runs_.back().second == begin) {
      matvec_runs_.back().second = end;  // adjacent rows: one launch
    } else {
      matvec_runs_.emplace_back(begin, end);
    }
  }
  fuse_norms_ = gemm_seqs_.empty() &&
                fuses_norms(options_.norm_fusion, options_.matvec_math == cuda::MatvecMath::kTensorCores, T);
  // The head's buffers, here because a graph capture may not allocate.
  const ModelConfig& mc = model_config();
  const size_t num_logits = batch.logits_rows.size();
  logits_consecutive_ = true;
  for (size_t i = 1; i < num_logits; ++i) {
    logits_consecutive_ = logits_consecutive_ && batch.logits_rows[i] == batch.logits_rows[0] + static_cast<int32_t>(i);
  }
  if (num_logits > 0) {
    logits_.reserve(num_logits * static_cast<size_t>(mc.vocab_size));
    if (!logits_consecutive_) head_in_.reserve(num_logits * static_cast<size_t>(mc.hidden_size));
  }
  if (!gemm_seqs_.empty()) {
    const ModelConfig& c = model_config();
    const int64_t k_max = std::max<int64_t>({c.hidden_size, c.q_size(), c.ffn_size});
    gemm_workspace_.reserve(static_cast<size_t>((T + kGemmTileRows) * k_max));
  }
}

CudaBackend::NormedInput CudaBackend::after_norm(const float* weight) const {
  if (!fuse_norms_) return {h_.data(), {}};
  return {x_.data(), {weight, model_config().rms_eps}};
}

void CudaBackend::matvec_rows(const DeviceMatrix& w, NormedInput in, int32_t begin, int32_t end, float* y, int64_t ld,
                              bool add_to_y) {
  for (int32_t r = begin; r < end; r += kMaxMatvecRows) {
    const int32_t n = std::min(end - r, kMaxMatvecRows);
    const cuda::MatvecOutput out{w.data, w.num_rows, y + r * ld, ld, add_to_y};
    cuda_check(cuda::matvec_q_multi(w.type, &out, 1, w.row_len, in.x + r * w.row_len, n, stream_,
                                    options_.matvec_math, cuda::TensorCoreSplit::kAuto, in.norm),
               "matvec_q");
  }
}

void CudaBackend::linear(const DeviceMatrix& w, NormedInput in, int32_t num_tokens, float* y, int64_t ld,
                         bool add_to_y) {
  if (ld == 0) ld = w.num_rows;
  if (gemm_seqs_.empty()) {
    matvec_rows(w, in, 0, num_tokens, y, ld, add_to_y);
    return;
  }
  // Only the unfused path has GEMM rows (prepare_step), and it never adds.
  assert(in.norm.weight == nullptr && !add_to_y);
  const float* x = in.x;
  for (const auto& [begin, end] : matvec_runs_) matvec_rows(w, in, begin, end, y, ld, add_to_y);
  // Each GEMM sequence on its own (its row count is then the GEMM's M
  // whatever else the step holds), every tile dequantised once for all of them.
  const int64_t K = w.row_len, N = w.num_rows;
  uint16_t* x_bf16 = gemm_workspace_.data();
  uint16_t* tile = x_bf16 + static_cast<int64_t>(num_tokens) * K;
  cuda_check(cuda::f32_to_bf16(x, num_tokens * K, x_bf16, stream_), "f32_to_bf16");
  for (int64_t r0 = 0; r0 < N; r0 += kGemmTileRows) {
    const int64_t rows = std::min(kGemmTileRows, N - r0);
    cuda_check(cuda::dequantize_rows_bf16(w.type, w.data, K, r0, rows, tile, stream_), "dequantize_rows_bf16");
    for (const auto& [begin, end] : gemm_seqs_) {
      cuda_check(cuda::gemm_bf16(cublas_, tile, rows, K, x_bf16 + begin * K, end - begin, y + begin * ld + r0, ld,
                                 stream_),
                 "gemm_bf16");
    }
  }
}

void CudaBackend::project_qkv(const DeviceLayerWeights& L, int32_t num_tokens) {
  const ModelConfig& c = model_config();
  const int64_t width = qkv_width(c);
  float* q = qkv_.data();
  float* k = q + c.q_size();
  float* v = k + c.kv_size();
  const NormedInput in = after_norm(L.attn_norm);
  const float* x = in.x;
  const bool fused = gemm_seqs_.empty() && L.wk.type == L.wq.type && L.wv.type == L.wq.type &&
                     L.wk.row_len == L.wq.row_len && L.wv.row_len == L.wq.row_len;
  if (!fused) {
    linear(L.wq, in, num_tokens, q, width);
    linear(L.wk, in, num_tokens, k, width);
    linear(L.wv, in, num_tokens, v, width);
    return;
  }
  for (int32_t r = 0; r < num_tokens; r += kMaxMatvecRows) {
    const int32_t n = std::min(num_tokens - r, kMaxMatvecRows);
    const cuda::MatvecOutput outs[3] = {{L.wq.data, L.wq.num_rows, q + r * width, width},
                                        {L.wk.data, L.wk.num_rows, k + r * width, width},
                                        {L.wv.data, L.wv.num_rows, v + r * width, width}};
    cuda_check(cuda::matvec_q_multi(L.wq.type, outs, 3, L.wq.row_len, x + r * L.wq.row_len, n, stream_,
                                    options_.matvec_math, cuda::TensorCoreSplit::kAuto, in.norm),
               "matvec_q_multi (q, k, v)");
  }
}

void CudaBackend::project_gate_up(const DeviceLayerWeights& L, int32_t num_tokens) {
  const ModelConfig& c = model_config();
  const int64_t F = c.ffn_size;
  const NormedInput in = after_norm(L.ffn_norm);
  const float* x = in.x;
  if (!gemm_seqs_.empty() || L.w_up.type != L.w_gate.type || L.w_up.row_len != L.w_gate.row_len) {
    linear(L.w_gate, in, num_tokens, gate_.data());
    linear(L.w_up, in, num_tokens, up_.data());
    cuda_check(cuda::silu_mul(gate_.data(), up_.data(), num_tokens * F, gate_.data(), stream_), "silu_mul");
    return;
  }
  for (int32_t r = 0; r < num_tokens; r += kMaxMatvecRows) {
    const int32_t n = std::min(num_tokens - r, kMaxMatvecRows);
    cuda_check(cuda::matvec_q_glu(L.w_gate.type, L.w_gate.data, L.w_up.data, L.w_gate.num_rows, L.w_gate.row_len,
                                  x + r * L.w_gate.row_len, n, cuda::GluActivation::Silu, gate_.data() + r * F, F,
                                  stream_, options_.matvec_math, cuda::TensorCoreSplit::kAuto, in.norm),
               "matvec_q_glu (gate, up)");
  }
}

void CudaBackend::add_to_residual(const DeviceMatrix& w, const float* in, int32_t num_tokens,
                                  const float* next_norm) {
  if (fuse_norms_) {
    linear(w, {in, {}}, num_tokens, x_.data(), 0, /*add_to_y=*/true);
    return;
  }
  const ModelConfig& c = model_config();
  linear(w, {in, {}}, num_tokens, o_.data());
  cuda_check(cuda::add_rms_norm(x_.data(), o_.data(), next_norm, num_tokens, c.hidden_size, c.rms_eps, h_.data(),
                                stream_),
             "add_rms_norm");
}

void CudaBackend::record_event(cudaEvent_t event) {
  // In a capture, an external event node: the graph records the event at
  // each replay, so the layer's attention time is read as in an eager step.
  cuda_check(capturing_ ? cudaEventRecordWithFlags(event, stream_, cudaEventRecordExternal)
                        : cudaEventRecord(event, stream_),
             "cudaEventRecord");
}

void CudaBackend::attention(int32_t layer, const StepBatch& batch) {
  const AttentionShape shape = attention_shape(model_config());
  const int32_t* ints = ints_.data();
  const cuda::PagedPrefillBatch device_batch{batch.num_seqs, ints + query_start_at_, ints + positions_at_,
                                             ints + table_start_at_, ints + block_ids_at_};
  if (time_attention_) record_event(events_[2 * static_cast<size_t>(layer)]);
  cuda_check(cuda::paged_prefill_attention(shape, pool_->layer_view(layer), device_batch, plan_, plan_data_.data(),
                                           qkv_.data(), attn_.data(), attention_workspace_.data(),
                                           attention_workspace_floats_, stream_, qkv_width(model_config())),
             "paged_prefill_attention");
  if (time_attention_) record_event(events_[2 * static_cast<size_t>(layer) + 1]);
}

bool CudaBackend::forward(const StepBatch& batch, std::vector<float>& logits, const std::atomic<bool>* interrupt,
                          int32_t num_layers) {
  const ModelConfig& c = model_config();
  assert(batch.num_tokens > 0 && static_cast<int32_t>(batch.positions.size()) == batch.num_tokens);
  assert(pool_->spec().num_layers == c.num_layers && "the CUDA backend's pool has one layer per model layer");
  attention_stats_ = {};
  drawn_.clear();
  last_forward_graphed_ = false;
  device_time_s_ = 0.0;
  prepare_step(batch);
  const int32_t layers_run = num_layers > 0 ? std::min(num_layers, c.num_layers) : c.num_layers;
  // A pass the caller cut short is a draft (early exit), even one that runs
  // every layer (spec_early_exit_layer = the model's layers): timing only the
  // engine's own passes keeps the sampled step the step the inspector shows.
  time_attention_ = attention_sampler_.next(/*whole_model=*/num_layers <= 0);
  const int32_t num_logits = static_cast<int32_t>(batch.logits_rows.size());
  logits.resize(static_cast<size_t>(num_logits) * c.vocab_size);
  // After the inputs' uploads, which the host queues as it prepares them: the
  // device time starts with the model's first kernel (a capture below runs
  // on a stream of its own, so this event stays outside any graph).
  cuda_check(cudaEventRecord(step_begin_, stream_), "cudaEventRecord");
  if (options_.graphs && gemm_seqs_.empty()) {
    // A graph runs its layers without looking at the interrupt: look once before.
    if (interrupt && interrupt->load(std::memory_order_relaxed)) return false;
    last_forward_graphed_ = run_graphed(batch, layers_run);
  }
  if (!last_forward_graphed_ && !enqueue_model(batch, layers_run, interrupt)) return false;
  if (num_logits > 0) {
    draw_tokens(batch);
    copy_logits_back(batch, logits);
  }
  cuda_check(cudaEventRecord(step_end_, stream_), "cudaEventRecord");
  cuda_check(cudaStreamSynchronize(stream_), "the step's kernels");
  // A figure for the bench and the inspector: one the runtime cannot give is
  // left at 0 (as collect_attention_stats does) rather than stopping the model.
  float device_ms = 0.0f;
  if (cudaEventElapsedTime(&device_ms, step_begin_, step_end_) == cudaSuccess) {
    device_time_s_ = device_ms * 1e-3;
  } else {
    cudaGetLastError();  // not the next launch's error
  }
  collect_attention_stats(layers_run);
  return true;
}

bool CudaBackend::enqueue_model(const StepBatch& batch, int32_t layers_run, const std::atomic<bool>* interrupt) {
  const ModelConfig& c = model_config();
  const CudaWeights& w = *device_weights_;
  const int32_t T = batch.num_tokens;
  const int64_t H = c.hidden_size;
  const int32_t* positions = ints_.data() + positions_at_;

  cuda_check(cuda::embedding_lookup(w.token_embd.type, w.token_embd.data, w.token_embd.num_rows, H, ints_.data(), T,
                                    x_.data(), stream_),
             "embedding_lookup");
  if (!fuse_norms_) {
    cuda_check(cuda::rms_norm(x_.data(), w.layers[0].attn_norm, T, H, c.rms_eps, h_.data(), stream_), "rms_norm");
  }
  for (int32_t layer = 0; layer < layers_run; ++layer) {
    if (interrupt && interrupt->load(std::memory_order_relaxed)) {
      cuda_check(cudaStreamSynchronize(stream_), "synchronise after an interrupt");
      return false;
    }
    const DeviceLayerWeights& L = w.layers[static_cast<size_t>(layer)];
    // h holds this layer's attention norm of x (the previous step below), or
    // with fused norms the matmul normalises x itself.
    project_qkv(L, T);
    // Rotary on q's and k's heads, then k and v into their slots: one launch.
    const cuda::QkvRows rows{qkv_.data(), qkv_width(c), c.num_heads, c.num_kv_heads, c.head_dim};
    cuda_check(cuda::rope_and_write_kv(rows, T, positions, c.layer_rope_base(layer), c.rope_style,
                                       w.rope_freq_factors, slots_.data(), pool_->spec().type, pool_->k_layer(layer),
                                       pool_->v_layer(layer), pool_->num_slots(), stream_),
               "rope_and_write_kv");
    attention(layer, batch);
    // x += attention output; h = ffn_norm(x).
    add_to_residual(L.wo, attn_.data(), T, L.ffn_norm);
    project_gate_up(L, T);
    // x += FFN output; h = the next layer's attention norm of x, or the final norm.
    const float* next_norm =
        layer + 1 < layers_run ? w.layers[static_cast<size_t>(layer) + 1].attn_norm : w.output_norm;
    add_to_residual(L.w_down, gate_.data(), T, next_norm);
  }

  // The head for the rows whose logits are wanted (h holds their final norm;
  // with fused norms the head's matmul normalises x's rows).
  const int32_t num_logits = static_cast<int32_t>(batch.logits_rows.size());
  if (num_logits == 0) return true;
  const NormedInput final_rows = after_norm(w.output_norm);
  const float* head_in = final_rows.x + static_cast<int64_t>(batch.logits_rows[0]) * H;
  if (!logits_consecutive_) {
    for (int32_t i = 0; i < num_logits; ++i) {
      const float* row = final_rows.x + static_cast<int64_t>(batch.logits_rows[i]) * H;
      cuda_check(cudaMemcpyAsync(head_in_.data() + i * H, row, H * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
                 "gather of the logits rows");
    }
    head_in = head_in_.data();
  }
  const DeviceMatrix& out = w.output;
  // The head always through matvec_q: one row's logits never depend on the step.
  for (int32_t r = 0; r < num_logits; r += kMaxMatvecRows) {
    const int32_t n = std::min(num_logits - r, kMaxMatvecRows);
    cuda_check(cuda::matvec_q(out.type, out.data, out.num_rows, out.row_len, head_in + r * H, n,
                              logits_.data() + static_cast<int64_t>(r) * c.vocab_size, stream_, options_.matvec_math,
                              cuda::TensorCoreSplit::kAuto, final_rows.norm),
               "matvec_q (head)");
  }
  return true;
}

CudaGraphCache::Key CudaBackend::launch_key(const StepBatch& batch, int32_t layers_run) const {
  const auto address = [](const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)); };
  const bool consecutive = logits_consecutive_;
  CudaGraphCache::Key key = {
      layers_run, batch.num_tokens, batch.num_seqs,
      static_cast<int64_t>(positions_at_), static_cast<int64_t>(query_start_at_),
      static_cast<int64_t>(table_start_at_), static_cast<int64_t>(block_ids_at_),
      static_cast<int64_t>(attention_workspace_floats_),
      static_cast<int64_t>(batch.logits_rows.size()), batch.logits_rows.empty() ? -1 : batch.logits_rows[0],
      consecutive, fuse_norms_, time_attention_,
      // Every buffer a launch reads or writes, and the KV pool's.
      address(x_.data()), address(h_.data()), address(qkv_.data()), address(attn_.data()), address(o_.data()),
      address(gate_.data()), address(up_.data()), address(head_in_.data()), address(logits_.data()),
      address(ints_.data()), address(slots_.data()), address(plan_data_.data()),
      address(attention_workspace_.data()), address(pool_.get()), address(pool_->k_layer(0)),
      address(pool_->v_layer(0)), pool_->num_slots()};
  const std::vector<int64_t> plan = attention_plan_key(plan_);
  key.insert(key.end(), plan.begin(), plan.end());
  if (!consecutive) key.insert(key.end(), batch.logits_rows.begin(), batch.logits_rows.end());
  return key;
}

bool CudaBackend::run_graphed(const StepBatch& batch, int32_t layers_run) {
  const CudaGraphCache::Key key = launch_key(batch, layers_run);
  cudaGraphExec_t exec = graphs_.find(key);
  if (!exec) {
    if (!graphs_.seen_before(key)) return false;  // a shape seen once runs launch by launch
    std::string error;
    capturing_ = true;
    exec = graphs_.capture(
        key,
        [&](cudaStream_t capture_stream) {
          stream_ = capture_stream;
          enqueue_model(batch, layers_run, nullptr);
          stream_ = nullptr;
        },
        &error);
    capturing_ = false;
    if (!exec) {
      // Graphs are an optimisation: without them every step runs as before.
      std::fprintf(stderr, "kvscope cuda backend: CUDA graphs turned off: %s\n", error.c_str());
      options_.graphs = false;
      return false;
    }
  }
  cuda_check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
  return true;
}

void CudaBackend::draw_tokens(const StepBatch& batch) {
  const int32_t num_draws = batch.num_draws();
  if (num_draws == 0) return;
  const int32_t V = model_config().vocab_size;
  host_draw_ints_.clear();
  host_draw_params_.clear();
  host_penalty_params_.clear();
  host_uniforms_.clear();
  for (const TokenDraw& d : batch.draws) {
    host_draw_ints_.push_back(d.logits_row);
    host_draw_params_.push_back({d.temperature, d.top_k, d.top_p, d.min_p});
    host_penalty_params_.push_back({d.repetition_penalty, d.presence_penalty, d.frequency_penalty});
    host_uniforms_.push_back(d.uniform);
  }
  const size_t entry_start_at = host_draw_ints_.size();
  host_draw_ints_.insert(host_draw_ints_.end(), batch.penalty_start.begin(), batch.penalty_start.end());
  const size_t ids_at = host_draw_ints_.size();
  host_draw_ints_.insert(host_draw_ints_.end(), batch.penalty_ids.begin(), batch.penalty_ids.end());
  draw_ints_.upload(host_draw_ints_.data(), host_draw_ints_.size());
  draw_params_.upload(host_draw_params_.data(), host_draw_params_.size());
  uniforms_.upload(host_uniforms_.data(), host_uniforms_.size());
  const int32_t* source_rows = draw_ints_.data();
  if (!batch.penalty_ids.empty()) {
    penalty_params_.upload(host_penalty_params_.data(), host_penalty_params_.size());
    draw_counts_.upload(batch.penalty_counts.data(), batch.penalty_counts.size());
    cuda_check(cuda::apply_penalties(logits_.data(), num_draws, V, source_rows, penalty_params_.data(),
                                     draw_ints_.data() + entry_start_at, draw_ints_.data() + ids_at,
                                     draw_counts_.data(), stream_),
               "apply_penalties");
  }
  const size_t workspace_floats = cuda::sample_tokens_workspace_floats(num_draws, V);
  draw_workspace_.reserve(workspace_floats);
  draw_ids_.reserve(static_cast<size_t>(num_draws));
  cuda_check(cuda::sample_tokens(logits_.data(), num_draws, V, draw_params_.data(), uniforms_.data(),
                                 draw_workspace_.data(), workspace_floats, draw_ids_.data(), stream_, source_rows),
             "sample_tokens");
  drawn_.resize(static_cast<size_t>(num_draws));
  cuda_check(cudaMemcpyAsync(drawn_.data(), draw_ids_.data(), drawn_.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                             stream_),
             "copy of the drawn tokens to the host");
}

void CudaBackend::copy_logits_back(const StepBatch& batch, std::vector<float>& logits) {
  const size_t V = static_cast<size_t>(model_config().vocab_size);
  const int32_t num_logits = static_cast<int32_t>(batch.logits_rows.size());
  std::vector<char> drawn(static_cast<size_t>(num_logits), 0);
  for (const TokenDraw& d : batch.draws) drawn[static_cast<size_t>(d.logits_row)] = 1;
  // One copy per run of rows that are not drawn (one copy when none is).
  for (int32_t begin = 0; begin < num_logits;) {
    if (drawn[static_cast<size_t>(begin)]) {
      ++begin;
      continue;
    }
    int32_t end = begin + 1;
    while (end < num_logits && !drawn[static_cast<size_t>(end)]) ++end;
    const size_t at = static_cast<size_t>(begin) * V;
    cuda_check(cudaMemcpyAsync(logits.data() + at, logits_.data() + at, static_cast<size_t>(end - begin) * V * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_),
               "copy of the logits to the host");
    begin = end;
  }
}

void CudaBackend::collect_attention_stats(int32_t layers_run) {
  for (int32_t l = 0; time_attention_ && l < layers_run; ++l) {
    float ms = 0.0f;
    // A timing the runtime cannot give (it is only the inspector's figure)
    // leaves the step's attention time out rather than stopping the model.
    if (cudaEventElapsedTime(&ms, events_[2 * static_cast<size_t>(l)], events_[2 * static_cast<size_t>(l) + 1]) !=
        cudaSuccess) {
      cudaGetLastError();  // not the next launch's error
      attention_stats_.time_s = 0.0;
      break;
    }
    attention_stats_.time_s += ms * 1e-3;
  }
  // As the CPU backend counts it: each shared-pass item loads its prefix
  // once for its rows instead of once per row, per KV head and layer; a K
  // and a V row of head_dim elements per position, as the cache stores them.
  const ModelConfig& c = model_config();
  int64_t rows_saved = 0;
  for (int32_t i = 0; i < plan_.num_shared_items; ++i) {
    const int32_t* item = plan_.data.data() + plan_.shared_at + 4 * i;  // sequence, prefix_len, first, end
    rows_saved += static_cast<int64_t>(item[3] - item[2] - 1) * item[1];
  }
  attention_stats_.cascade_kv_bytes_saved =
      rows_saved * c.num_kv_heads * layers_run * 2 * static_cast<int64_t>(kv_row_bytes(pool_->spec().type, c.head_dim));
}

}  // namespace kvscope
