// Engine::Impl: what the engine owns. Split over engine.cpp (creation,
// submission, accessors), engine_step.cpp (one iteration) and
// engine_snapshot.cpp (the inspector's picture).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kvscope/backend_choice.h"
#include "kvscope/engine.h"
#include "kvscope/kv_plan.h"
#include "model/model_loader.h"
#include "model/model_weights.h"
#include "parallel/tensor_parallel_runner.h"
#include "runtime/backend.h"
#include "runtime/cpu_backend.h"
#include "runtime/step_batch.h"
#include "scheduler/scheduler.h"
#include "spec/model_proposer.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "trace/event_log.h"

namespace kvscope {

// What the engine sizes from its config: built whole, then swapped in, so a
// failure leaves the engine as it was (reconfigure). The KV pools are either
// inside new backends (a new tp split, a new draft model) or new pools for
// the running backends, handed over with Backend::use_kv_pool.
struct KvSetup {
  std::unique_ptr<Backend> backend;           // a new backend owning its pool, or null
  std::unique_ptr<KvBlockStore> kv;           // else a new pool for the running backend
  std::unique_ptr<Backend> draft_backend;     // spec = draft: a new draft backend, or null
  std::unique_ptr<KvBlockStore> draft_kv;     // else a new pool for the running one (same blocks as kv)
  std::unique_ptr<KvCacheManager> manager;
  std::unique_ptr<Scheduler> scheduler;
};

// spec = early_exit: the layers the draft runs (spec_early_exit_layer, 0: half the model's).
int32_t resolved_early_exit_layers(const EngineConfig& config, int32_t num_layers);
// Why spec_early_exit_layer does not fit a model of num_layers layers; empty when it does.
std::string early_exit_problem(const EngineConfig& config, int32_t num_layers);
// Loads spec_draft_model, refusing a file that does not load or whose
// vocabulary differs from the model's (size or any token's text), naming both.
Result<LoadedModel> load_draft_model(const std::string& draft_path, const std::string& model_path,
                                     const std::vector<std::string>& model_tokens, int32_t model_vocab_size);

struct Engine::Impl {
  using Clock = std::chrono::steady_clock;

  EngineConfig config;     // as resolved (max_model_len from the plan)
  EngineConfig requested;  // as create or the last reconfigure was given it
  // Once new backends hold their copies of the weights (packed on the CPU,
  // on the device): drops the model files' pages from this process's memory
  // (ModelWeights::release_file_pages).
  void release_file_pages() const;
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ChatTemplate> chat_template;
  ModelInfo info;
  Clock::time_point created_at = Clock::now();

  std::unique_ptr<ThreadPool> pool;
  EventLog events;
  std::unique_ptr<KvCacheManager> kv_manager;
  // What runs the model and holds its KV pool (runtime/backend.h), and why
  // it was chosen (EngineConfig::backend). Steps go through backend only.
  BackendChoice backend_choice;
  std::optional<DeviceMemory> device;  // the GPU's memory when the pool was last planned (CUDA), else none
  std::unique_ptr<Backend> backend;
  // The CPU backend's runner (owned by backend; set with it by set_backend):
  // a plain ModelRunner inside for tp = 1 with the fast reduction, else the
  // tp ranks' shards. For figures per rank (plan, timings), not for steps.
  // Null on the CUDA backend.
  TensorParallelRunner* runner = nullptr;
  std::unique_ptr<Scheduler> scheduler;
  // Speculative decoding with a draft model (spec = draft), else empty.
  std::string draft_path;
  std::vector<std::string> vocab_tokens;  // the model's, for a draft model loaded by reconfigure
  std::shared_ptr<const ModelWeights> draft_weights;
  // The draft model's own backend (its weights and K/V, on the model's device).
  std::unique_ptr<Backend> draft_backend;
  std::vector<DraftSequence> draft_seqs;  // this step's part of a model proposer's call
  std::vector<int32_t> draft_fed_end;     // [work] positions the draft model fed up to (-1: none)
  // A model proposer's cost, exponentially weighted: seconds per draft
  // token, and seconds per target row (forward time / (rows + f/r)).
  double draft_s_per_token_ema = 0.0;
  double target_s_per_row_ema = 0.0;

  std::mutex inbox_mutex;
  std::vector<std::unique_ptr<Sequence>> inbox;  // submitted, not yet seen by step()
  std::vector<RequestId> cancels;
  std::atomic<RequestId> next_id{1};
  std::atomic<int32_t> num_pending{0};  // sequences in the inbox or the scheduler
  std::atomic<bool> interrupted{false};  // interrupt(): set from any thread, never cleared

  StepBatch batch;
  // [rows wanting logits][vocab_size]; reserved for max_seqs rows (parallel-
  // sampling siblings can add rows: it then grows).
  std::vector<float> logits;
  std::vector<int64_t> slots;
  std::vector<int32_t> row_tokens;  // [1 + k] a verifying sequence's rows: its last token, then the draft
  // Grammar-constrained decoding: the vocabulary's bytes as a trie, built
  // on the first constrained request (engine_step.cpp, constraint_trie()).
  std::shared_ptr<const TokenTrie> token_trie;
  StepStats stats;
  SpecStats spec_totals;  // speculative decoding since creation
  // Mean forward time of recent plain decode steps (no drafts, no prefill),
  // exponentially weighted: prices a request's verified tokens when it had
  // no plain decode step of its own (RequestStats::spec_speedup_estimate).
  double plain_decode_forward_ema_s = 0.0;
  std::vector<CascadeGroupSnapshot> last_cascade;  // the last step's shared passes
  uint64_t num_steps = 0;
  std::shared_ptr<const EngineSnapshot> last_snapshot;
  std::vector<StepStats> steps_since_snapshot;  // handed to the next snapshot
  std::vector<ContextShiftSnapshot> recent_shifts;  // the last EngineSnapshot::kMaxRecentShifts shifts

  // Threads for the kernels: config.num_threads, or one per core.
  static int32_t thread_count(const EngineConfig& config);
  // What has to be said about a config that loads (plan_kv's warnings, a
  // thread count lowered to the CPUs there are).
  static std::vector<std::string> config_warnings(const EngineConfig& config, const KvPlan& plan);
  // How `config` splits the model over config.tp ranks; errors name tp and
  // what does not divide.
  Result<ShardPlan> shard_plan(const EngineConfig& config) const;
  // Builds what `plan` (plan_kv of `resolved`, which has max_model_len filled
  // in) describes: every KV pool first, then a new backend where there is
  // none yet or resolved's tp / tp_reduce differ from config's (repacking the
  // weights on `threads`, reporting `progress`), a new draft backend for a
  // new draft model, and the manager and scheduler over the pools. `draft`:
  // the draft model (spec = draft), else nullptr. Errors say which setting
  // to change; kLoadCancelledMessage when progress returned false.
  // choice: settle_backend's answer for resolved; a new backend is also
  // built when it names another kind than the running one.
  Result<KvSetup> make_kv_setup(const EngineConfig& resolved, const KvPlan& plan,
                                const std::shared_ptr<const ModelWeights>& draft, ThreadPool& threads,
                                const BackendChoice& choice, const CpuBackend::RepackProgress& progress = {});
  // choose_backend's answer for config, settled against the model: when
  // auto chose CUDA for a model the CUDA backend cannot run, the CPU with
  // that reason; backend = cuda then fails, naming it. Called before plan_kv,
  // which needs to know whether the pool goes to a GPU.
  Result<BackendChoice> settle_backend(const EngineConfig& config) const;
  // The GPU's free memory (and what this engine holds there already) for
  // plan_kv when `choice` is CUDA; nullopt on the CPU. Creates the CUDA
  // context, which the CUDA backend is about to need anyway.
  std::optional<DeviceMemory> device_memory(const BackendChoice& choice) const;
  // Makes `b` the backend, and runner its runner when it is a CpuBackend (else null).
  void set_backend(std::unique_ptr<Backend> b);
  // The shape plan_kv needs: the model's, and the draft model's when `draft` is given.
  ModelShape plan_shape(const ModelConfig* draft) const;
  // Points the scheduler's model proposer (if any) at the backend that drafts.
  void attach_model_proposer();
  // A model proposer's drafts for this step's speculating sequences (and,
  // for a draft model, its K/V for every row of the step), in one batched
  // call; false when interrupted.
  bool draft_with_model(const std::vector<ScheduledSequence>& work, StepStats& stats);
  // After commit: how far each sequence's draft-model K/V is complete.
  void note_draft_kv(const std::vector<ScheduledSequence>& work);
  // Fills the pool and workspace sizes of `info` from what is allocated now.
  void update_memory_info();

  double now_s() const { return std::chrono::duration<double>(Clock::now() - created_at).count(); }
  void drain_inbox();
  void finish(Sequence& s, FinishReason reason, std::string error = {});
  // Samples s's next token from `logits` and publishes it (on_logits, the
  // token event); returns the token and why s must now finish (None: it goes
  // on), leaving finish() to the caller. Logits that are not finite publish
  // nothing: (-1, Error), and finish_not_finite says why.
  std::pair<int32_t, FinishReason> sample_token(Sequence& s, const float* logits, int32_t draft_token = -1);
  // Finishes s with an error: the model's logits for the token at
  // `position` (-1: its next one) were not finite (runtime/sampler.h
  // logits_not_finite). A scored prompt row is checked the same way.
  void finish_not_finite(Sequence& s, int32_t position = -1);
  // draft_token: the speculative draft at this position (-1: none); the token
  // event says whether the token is it (TokenEvent::from_draft).
  // The second half of sample_token: appends `token` to s and publishes it.
  std::pair<int32_t, FinishReason> publish_token(Sequence& s, int32_t token, int32_t draft_token = -1);
  // Whether the backend may draw s's next token itself (config.gpu_sampling,
  // and s needs nothing but the token: no grammar, no on_logits, no forks
  // pending); the caller also excludes speculative verification.
  bool backend_may_draw(const Sequence& s) const;
  // Adds a draw of s's next token from logits row `logits_row` to `batch`,
  // consuming s's next random number as sample() would.
  void add_draw(Sequence& s, int32_t logits_row);
  // Context overflow = shift: the sequences sample_token found full this
  // step, shifted (or finished, when no shift is possible) once every row
  // of the step is committed.
  std::vector<Sequence*> full_contexts;
  void shift_full_contexts();
  // token_trie, built now if this is the first constrained request.
  const TokenTrie& constraint_trie();
  // sample_token, then finish() when it says so.
  void sample_and_publish(Sequence& s, const float* logits);
  // Speculative verification: `rows` holds [1 + s.draft.size()][vocab]
  // logits, row j the distribution of the token after the j-th draft (row 0:
  // after s's last token). Emits tokens as plain decoding would, one row at
  // a time, while they equal the draft, then the first differing one (or the
  // bonus token after the whole draft), stopping early where the request
  // finishes. Returns the tokens emitted, which is also the rows whose K/V
  // stays (the last token's row and the accepted drafts').
  int32_t verify_and_publish(Sequence& s, const float* rows, StepStats& stats);
  // Adds the step's forward time to each sequence's speculative or plain
  // decode time, and to the engine's plain decode average.
  void note_forward_time(const std::vector<ScheduledSequence>& work, const StepStats& stats, double forward_s);
  double spec_speedup_estimate(const Sequence& s) const;  // RequestStats::spec_speedup_estimate
  // Fills batch's cascade groups (config.cascade) and last_cascade, and
  // counts them in stats.
  void plan_cascade_groups(const std::vector<ScheduledSequence>& work, StepStats& stats);
  // Parallel sampling: creates s's siblings, sharing its blocks.
  std::vector<Sequence*> fork_siblings(Sequence& s);
  // Also hands over (and clears) steps_since_snapshot.
  std::shared_ptr<const EngineSnapshot> build_snapshot();
  KvStats kv_stats() const;
};

}  // namespace kvscope
