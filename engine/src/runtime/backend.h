// Backend: where a model runs. The engine runs each step through a Backend
// that owns the weights' copy on its device, the KV pool (the blocks'
// contents) and the op calls; the scheduler, the KV cache manager's block
// metadata, StepBatch, snapshots and the app never see which one it is.
// runtime/cpu_backend.h is the CPU one (the model runner, under tensor
// parallelism or not); a CUDA one implements the same methods over device
// memory. Which one a config gets is runtime/backend_select.h's business.
//
// The draft model of spec = draft is a second Backend of its own (over the
// draft's weights, with a pool of the draft's shape indexed by the same block
// ids): it then lives on the same device as the model, its K/V follow the
// model's through the manager's copy-on-write (KvCacheManager::
// set_draft_blocks), and ModelProposer drafts through forward() as the target
// does. Early-exit self-speculation drafts through the model's own Backend
// (forward with num_layers = L): it reads and writes the model's K/V, so it
// must run where they are.
//   tested by tests/engine/runtime/backend_seam_test.cpp
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kv/kv_block_store.h"
#include "kvscope/engine_config.h"
#include "kvscope/result.h"
#include "model/model_config.h"
#include "runtime/step_batch.h"

namespace kvscope {

// What a backend holds, in bytes, on the device it names.
struct BackendMemory {
  std::string device_name;     // "CPU (13th Gen Intel Core i7-13700)", "NVIDIA H100 80GB HBM3"
  size_t weight_bytes = 0;     // the weights as the backend holds them (repacked, quantised or not)
  size_t kv_pool_bytes = 0;    // the KV pool in use (KvBlockStore::pool_bytes)
  size_t workspace_bytes = 0;  // activation buffers sized by reserve()
  size_t swap_bytes = 0;       // host swap space for preemption = swap
};

// The attention kernels of the last forward(), all layers.
struct BackendAttentionStats {
  double time_s = 0.0;                 // wall time in paged attention
  int64_t cascade_kv_bytes_saved = 0;  // K/V bytes a shared pass read once instead of once per member
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Which backend this is (BackendKind::Cpu or Cuda, never Auto).
  virtual BackendKind kind() const = 0;
  // The model it runs (its shape: layers, heads, vocabulary).
  virtual const ModelConfig& model_config() const = 0;

  // Runs the model over one step: writes each row's K/V into its slot of the
  // pool in use, attends through batch's block tables, and fills logits with
  // [batch.logits_rows.size()][vocab_size] (resized here). num_layers: run
  // layers [0, num_layers) then the final norm and head (early-exit drafts);
  // 0: all. Returns false, logits unset, when `interrupt` is set at a layer
  // boundary. Precondition: a pool is in use (create or use_kv_pool). Rows of
  // batch.draws are sampled here (drawn_tokens).
  virtual bool forward(const StepBatch& batch, std::vector<float>& logits,
                       const std::atomic<bool>* interrupt = nullptr, int32_t num_layers = 0) = 0;
  // [batch.draws.size()] the tokens the last forward() drew for batch.draws,
  // in order, by the rule of runtime/token_draw.h (-1 where the row's logits
  // were not finite: the host's draws; the GPU's sampling kernels do not look);
  // the logits of those rows are then unspecified (a GPU copies back only the
  // others).
  virtual const std::vector<int32_t>& drawn_tokens() const = 0;
  // What the last forward()'s attention cost.
  virtual BackendAttentionStats last_attention_stats() const = 0;
  // Whether the last forward() replayed a captured graph of launches (the
  // CUDA backend's gpu_graphs) instead of launching kernel by kernel.
  virtual bool last_forward_graphed() const { return false; }
  // The device's own time for the last forward(): from its first kernel to
  // the end of its last copy back, on the device's clock. The rest of a
  // step's wall time the device had nothing queued (the host prepared
  // inputs, sampled, scheduled): what overlapping the host with the device
  // could hide. 0 for a backend without a device of its own (the CPU).
  virtual double last_device_time_s() const { return 0.0; }

  // Sizes the workspace for exactly max_tokens query rows per forward(),
  // releasing any excess (forward() grows it if a batch is ever larger).
  virtual void reserve(int32_t max_tokens) = 0;

  // A new KV pool of `spec` in this backend's memory, not yet in use: the
  // engine builds a manager over it and, once nothing else can fail, hands it
  // over with use_kv_pool (Engine::reconfigure changes nothing on failure).
  // The error says how much memory it wanted and which setting to lower.
  virtual Result<std::unique_ptr<KvBlockStore>> make_kv_pool(const KvPoolSpec& spec) = 0;
  // From the next forward() on, K/V live in `pool`, which this backend now
  // owns (the previous pool is freed). Precondition: `pool` came from this
  // backend's make_kv_pool.
  virtual void use_kv_pool(std::unique_ptr<KvBlockStore> pool) = 0;
  // The pool in use: the KV cache manager's and context shift's block
  // operations (copy-on-write, swap, key re-rotation) go through it.
  virtual KvBlockStore& kv_blocks() = 0;

  // Which CPU threads run the host side from the next forward() on (the
  // kernels themselves on the CPU backend). Not owned.
  virtual void set_thread_pool(ThreadPool& pool) = 0;

  // What this backend holds now, and on which device.
  virtual BackendMemory memory() const = 0;
};

}  // namespace kvscope
