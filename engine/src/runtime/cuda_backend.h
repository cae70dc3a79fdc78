// CudaBackend: the Backend (runtime/backend.h) of one NVIDIA GPU, over the
// kernels of kernels/cuda/ (docs/cuda.md). Compiled only with KVSCOPE_CUDA=ON.
//
// What it runs: the Llama family (SmolLM2, the default model) with Q4_1 /
// Q8_0 matrices, on device 0, tp = 1; cuda_unsupported() (runtime/
// cuda_weights.h) names everything else and the engine refuses it (or, with
// backend = auto, runs it on the CPU and says why). Weights are uploaded once
// and stay quantised; the KV pool is a DeviceKvPool (kv/device_kv_pool.h).
//
// One step, every row of the batch together:
//   embedding -> per layer: RMSNorm, Q/K/V matmuls, rotary on Q and K and K/V
//   written through the slot mapping (one launch), paged attention (the mixed prefill /
//   decode kernel, with the step's cascade groups), output matmul, residual
//   add + RMSNorm (fused), gate and up matmuls, SiLU-and-mul, down matmul,
//   residual add + the next norm -> the head for the rows that want logits
//   -> for the rows of batch.draws (gpu_sampling), penalties and sampling on
//   the device (kernels/cuda/penalties.cuh, sample_tokens.cuh), so only
//   their token ids come back; the other rows' logits are copied to the
//   host, where the engine's sampler reads them.
//
// Launches: one by one on the legacy default stream, or (Options::graphs) the
// embedding-to-head part of a step replayed as a CUDA graph captured when a
// step with the same launch key (runtime/cuda_graph_cache.h) ran before;
// sampling and the copies back always run outside it.
//
// Invariance: every kernel of the step computes a row's bits from that row
// (and its sequence's K/V) alone, so block size, batch composition, chunked
// prefill, prefix hits and cascade give bitwise-identical logits. That holds
// because every matmul row goes through matvec_q (the same dot-product order
// for one row or thousands) and every attention row through the prefill
// kernel (decode rows too: the split-KV decode kernel folds keys in another
// order, so choosing it per batch would make a row's bits depend on its
// neighbours). Options::gemm_prefill trades that for tensor cores.
//   tested by tests/engine/runtime/cuda_backend_test.cpp (label gpu)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/matvec_q.cuh"
#include "kernels/cuda/paged_prefill.cuh"
#include "kernels/cuda/penalties.cuh"
#include "kernels/cuda/sample_tokens.cuh"
#include "kv/device_kv_pool.h"
#include "runtime/backend.h"
#include "runtime/cuda_graph_cache.h"
#include "runtime/cuda_weights.h"
#include "runtime/device_array.h"
#include "runtime/attention_timing_sampler.h"
#include "runtime/norm_fusion.h"

namespace kvscope {

class CudaBackend final : public Backend {
 public:
  // With Options::time_attention, one whole-model pass in this many is timed
  // (runtime/attention_timing_sampler.h has the rule and why).
  static constexpr int32_t kAttentionTimingInterval = AttentionTimingSampler::kInterval;
  struct Options {
    // Sequences with more than gemm_min_rows rows in a step multiply through
    // dequantise-to-bf16 tiles + cuBLAS (kernels/cuda/gemm_bf16.cuh) instead
    // of matvec_q: faster prefill, but bf16-rounded, and a row's bits then
    // depend on how many rows its sequence has in the step (chunking, prefix
    // hits) and on cuBLAS's choice of algorithm for that shape. The setting
    // gpu_prefill_gemm (off by default; docs/cuda.md has the measurement).
    bool gemm_prefill = false;
    int32_t gemm_min_rows = 16;
    // A step's model launches (embedding to head) replayed as one CUDA graph
    // when a step with the same launch key ran before (runtime/
    // cuda_graph_cache.h): the same kernels with the same arguments, so the
    // same bits. The setting gpu_graphs (on by default).
    bool graphs = true;
    // How every matvec_q launch multiplies (kernels/cuda/matvec_q.cuh): f32
    // FMA chains, or f16 tensor-core products with f32 sums. One math for
    // every row, so the invariance holds under either; the two differ from
    // each other in the last bits. The setting gpu_matmul (f32 by default;
    // docs/cuda.md has the H100 measurement).
    cuda::MatvecMath matvec_math = cuda::MatvecMath::kF32;
    // Kernels scheduled while their predecessor finishes (kernels/cuda/
    // overlapped_launch.h): the same bits. Process-wide: create() sets it for
    // every launch of the process, as the one engine's setting
    // gpu_overlap_launches (on by default) says.
    bool overlap_launches = true;
    // A pair of events around each layer's attention in one step of every
    // kAttentionTimingInterval, read after that step
    // (last_attention_stats().time_s). Off, and in the other steps: no events
    // between the step's kernels, and the attention time is 0. The setting
    // gpu_attention_timing.
    bool time_attention = true;
    // Where the norms are folded into the matmuls after them (matvec_q.cuh's
    // InputNorm), and the residual adds into the matmuls before them
    // (MatvecOutput::add_to_y): 7 launches per layer instead of 9, with the
    // same bits (row_norm.cuh). runtime/norm_fusion.h's fuses_norms decides
    // each step; a step with GEMM rows (gemm_prefill) keeps the separate
    // norms, the GEMM reading normalised rows. The setting gpu_norm_fusion.
    GpuNormFusion norm_fusion = GpuNormFusion::Auto;
  };

  // A device pool of `spec` for `weights`' keys (DeviceKvPool::create).
  static Result<std::unique_ptr<DeviceKvPool>> make_pool(const KvPoolSpec& spec,
                                                         std::shared_ptr<const ModelWeights> weights);
  // Uploads `weights` to device 0 and runs over `pool` (made first, so that a
  // budget that cannot work fails before the upload). Errors: what
  // cuda_unsupported() says, a failed allocation, no device.
  static Result<std::unique_ptr<CudaBackend>> create(std::shared_ptr<const ModelWeights> weights,
                                                     std::unique_ptr<DeviceKvPool> pool, const Options& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  BackendKind kind() const override { return BackendKind::Cuda; }
  const ModelConfig& model_config() const override { return weights_->config; }
  bool forward(const StepBatch& batch, std::vector<float>& logits, const std::atomic<bool>* interrupt = nullptr,
               int32_t num_layers = 0) override;
  const std::vector<int32_t>& drawn_tokens() const override { return drawn_; }
  BackendAttentionStats last_attention_stats() const override { return attention_stats_; }
  bool last_forward_graphed() const override { return last_forward_graphed_; }
  double last_device_time_s() const override { return device_time_s_; }
  void reserve(int32_t max_tokens) override;
  Result<std::unique_ptr<KvBlockStore>> make_kv_pool(const KvPoolSpec& spec) override;
  void use_kv_pool(std::unique_ptr<KvBlockStore> pool) override;
  KvBlockStore& kv_blocks() override { return *pool_; }
  void set_thread_pool(ThreadPool&) override {}  // the host side is one thread
  BackendMemory memory() const override;

 private:
  CudaBackend() = default;
  // Activation buffers for num_tokens rows and the step's index arrays, uploaded.
  void prepare_step(const StepBatch& batch);
  // The step's model launches, embedding to head, on stream_; false if
  // interrupt was set between two layers.
  bool enqueue_model(const StepBatch& batch, int32_t layers_run, const std::atomic<bool>* interrupt);
  // Replays (capturing it first if its key was seen before) the step's graph;
  // false when the step should run launch by launch instead.
  bool run_graphed(const StepBatch& batch, int32_t layers_run);
  CudaGraphCache::Key launch_key(const StepBatch& batch, int32_t layers_run) const;
  void record_event(cudaEvent_t event);
  // The input of a matmul that follows the norm `weight`: h_, which an
  // rms_norm launch wrote, or with fused norms x_ and the norm for the
  // matmul to apply.
  struct NormedInput {
    const float* x;
    cuda::InputNorm norm;
  };
  NormedInput after_norm(const float* weight) const;
  // y[t * ld] = w x[t] for every row of the step (ld 0: w.num_rows), routed
  // as Options says; `add_to_y` adds instead of writing (matvec rows only).
  void linear(const DeviceMatrix& w, NormedInput in, int32_t num_tokens, float* y, int64_t ld = 0,
              bool add_to_y = false);
  void matvec_rows(const DeviceMatrix& w, NormedInput in, int32_t begin, int32_t end, float* y, int64_t ld,
                   bool add_to_y);
  // x_ += w in for every row, then h_ = the norm `next_norm` of x_ (with
  // fused norms, the matmul adds into x_ and the next matmul normalises).
  void add_to_residual(const DeviceMatrix& w, const float* in, int32_t num_tokens, const float* next_norm);
  // qkv_ = [q | k | v] per token: one matvec_q_multi launch when the three
  // matrices share a type and no row goes through the GEMM, else three.
  void project_qkv(const DeviceLayerWeights& layer, int32_t num_tokens);
  // gate_ = silu(gate) * up per token: one matvec_q_glu launch likewise, else
  // the two projections and silu_mul.
  void project_gate_up(const DeviceLayerWeights& layer, int32_t num_tokens);
  void attention(int32_t layer, const StepBatch& batch);
  // batch.draws: penalties, then sampling, on logits_ in place; the ids are
  // copied into drawn_ (in stream order, before the step's synchronisation).
  void draw_tokens(const StepBatch& batch);
  // The logits rows not drawn, copied into `logits` (drawn rows left as they are).
  void copy_logits_back(const StepBatch& batch, std::vector<float>& logits);
  void collect_attention_stats(int32_t layers_run);

  std::shared_ptr<const ModelWeights> weights_;
  std::unique_ptr<CudaWeights> device_weights_;
  std::unique_ptr<DeviceKvPool> pool_;
  Options options_;
  std::string device_name_;
  cublasHandle_t cublas_ = nullptr;  // only with gemm_prefill

  // Activations, [capacity_][width] each; qkv_ holds a token's q, k and v
  // side by side (q_size + 2 kv_size floats), gate_ SiLU(gate) * up (and the
  // gate before that on the unfused path, with up_).
  int32_t capacity_ = 0;
  DeviceArray<float> x_, h_, qkv_, attn_, o_, gate_, up_;
  DeviceArray<float> head_in_, logits_;  // [logits rows][hidden], [logits rows][vocab]
  // The step's logits rows are consecutive rows of h_ (x_ with fused norms;
  // prepare_step): the head reads them in place, else gathers them into head_in_.
  bool logits_consecutive_ = true;
  // The step's index arrays: token ids, positions, query_start,
  // block_table_start, block ids (one upload, offsets below), and slots.
  std::vector<int32_t> host_ints_;
  DeviceArray<int32_t> ints_;
  size_t positions_at_ = 0, query_start_at_ = 0, table_start_at_ = 0, block_ids_at_ = 0;
  DeviceArray<int64_t> slots_;
  cuda::PrefillPlan plan_;
  DeviceArray<int32_t> plan_data_;
  DeviceArray<float> attention_workspace_;
  size_t attention_workspace_floats_ = 0;
  // Row ranges of this step: [begin, end) runs through matvec_q, and the
  // sequences that go through the GEMM (gemm_prefill only).
  std::vector<std::pair<int32_t, int32_t>> matvec_runs_, gemm_seqs_;
  // Options::norm_fusion for this step (fuses_norms): off when a sequence
  // goes through the GEMM.
  bool fuse_norms_ = false;
  // Whether this pass's attention is timed (Options::time_attention, sampled
  // in forward).
  AttentionTimingSampler attention_sampler_{false};  // create() sets it from the options
  bool time_attention_ = false;
  DeviceArray<uint16_t> gemm_workspace_;  // bf16 activations, then one bf16 weight tile
  // Device sampling (draw_tokens): per draw its source logits row, then the
  // penalty entry starts and ids (one int32 upload), counts, parameters,
  // random numbers, and the drawn ids.
  std::vector<int32_t> drawn_, host_draw_ints_;
  std::vector<float> host_draw_counts_;
  std::vector<cuda::DeviceSamplingParams> host_draw_params_;
  std::vector<cuda::DevicePenalties> host_penalty_params_;
  std::vector<double> host_uniforms_;
  DeviceArray<int32_t> draw_ints_, draw_ids_;
  DeviceArray<float> draw_counts_, draw_workspace_;
  DeviceArray<cuda::DeviceSamplingParams> draw_params_;
  DeviceArray<cuda::DevicePenalties> penalty_params_;
  DeviceArray<double> uniforms_;
  // Attention timing: an event before and after each layer's attention.
  std::vector<cudaEvent_t> events_;
  BackendAttentionStats attention_stats_;
  // The step's device time: an event before its first kernel, one after
  // its last copy back (last_device_time_s).
  cudaEvent_t step_begin_ = nullptr, step_end_ = nullptr;
  double device_time_s_ = 0.0;
  // Where launches go: the legacy default stream, or the graph cache's
  // capture stream while a graph is being captured.
  cudaStream_t stream_ = nullptr;
  bool capturing_ = false;
  CudaGraphCache graphs_;
  bool last_forward_graphed_ = false;
};

}  // namespace kvscope
