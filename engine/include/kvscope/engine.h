// Engine: the public face of kvscope's inference engine.
//
// One thread calls step() (or run_until_idle()); submit() and cancel() may be
// called from any thread: they post into an inbox drained at the start of each
// step. Each step is one iteration of continuous batching: schedule, allocate
// KV blocks, build the StepBatch, run the model, sample, publish.
#pragma once

#include <memory>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/engine_config.h"
#include "kvscope/engine_event.h"
#include "kvscope/engine_snapshot.h"
#include "kvscope/load_progress.h"
#include "kvscope/model_info.h"
#include "kvscope/request.h"
#include "kvscope/result.h"
#include "kvscope/tool_calls.h"

namespace kvscope {

class Engine {
 public:
  // Loads the model and sizes the KV pool. Errors say what is wrong with the
  // file or the settings.
  static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
  // The same, reporting progress (load_progress.h) on the calling thread; when
  // `progress` returns false, nothing is kept and the error is
  // kLoadCancelledMessage ("loading cancelled").
  static Result<std::unique_ptr<Engine>> create(const EngineConfig& config, const LoadProgress& progress);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Builds the prompt's ids from token ids, raw text or chat
  // messages (request.h says how), validates the request (sampling
  // parameters, prompt length against max_model_len and the KV pool) and
  // queues it. When `submitted` is given and the request is queued, it
  // receives the prompt ids that run and any warnings about the text.
  Result<RequestId> submit(GenerationRequest request, SubmittedPrompt* submitted = nullptr);
  // Thread-safe. The request finishes with FinishReason::Cancelled at the next step.
  void cancel(RequestId id);

  // False once interrupt() was called.
  bool has_work() const;
  void step();
  void run_until_idle();
  // Thread-safe, for a front end about to destroy the engine (a window
  // closed mid-generation): the step in flight returns at its next layer
  // boundary without sampling or committing anything, and every later step()
  // returns at once. A step of a long prefill takes seconds; this bounds the
  // wait to one layer. Irreversible: the engine is then only fit for its
  // destructor.
  void interrupt();

  // Call from the stepping thread, between steps. Applies new settings
  // without reloading the weights or the tokenizer: the KV pool (block size,
  // budget or num_blocks, paged, prefix caching, swap space), the scheduler
  // (max_seqs, max_batched_tokens, max_model_len, policy, preemption) and the
  // thread pool are rebuilt.
  //  - An invalid config returns validate()'s message; a different
  //    model_path returns an error (a new model needs Engine::create). The
  //    engine is then unchanged and usable.
  //  - A config that differs only in settings each step reads
  //    (applies_in_place: cascade) or in record_snapshots changes them in
  //    place: nothing below happens (no request is re-queued, the prefix
  //    cache and the counters stay), and the next step uses them.
  //  - Unfinished requests (waiting, running, swapped, and those submitted
  //    but not yet stepped) are kept: like a recompute preemption, each is
  //    re-queued with its tokens so far (prompt + generated) and computed
  //    again in the new pool, keeping its callback and sampling state (RNG,
  //    penalties, stop strings, partial UTF-8), so its stream continues with
  //    no token lost or repeated. One that held KV counts one more preemption
  //    in its RequestStats. One that no longer fits (more KV blocks than the
  //    new pool has, or tokens beyond the new max_model_len) finishes with
  //    FinishReason::Error and a message saying why.
  //  - The prefix cache starts empty. KvStats counters (prefix hits,
  //    evictions, copy-on-writes, swaps, preemptions) start again from zero
  //    with the new pool. Step numbers and request ids continue;
  //    last_step_stats() still describes the last step run (in the old pool);
  //    model_info() describes the new pool; the trace keeps its events.
  Status reconfigure(const EngineConfig& config);

  // Reflects the current pool (updated by reconfigure). Stepping thread.
  const ModelInfo& model_info() const;
  const EngineConfig& config() const;  // as resolved: max_model_len from the plan
  // As create or the last reconfigure was given it (what applies_in_place
  // compares a new config with).
  const EngineConfig& requested_config() const;
  // What a person should know about the settings in force that is not an
  // error: a thread count lowered to the CPUs there are, a max model length
  // above the model's trained context. Updated by reconfigure. Stepping thread.
  const std::vector<std::string>& warnings() const;
  StepStats last_step_stats() const;
  KvStats kv_stats() const;

  // The state after the last step. With config.record_snapshots it was built
  // by step(); otherwise it is built now. Call from the stepping thread.
  std::shared_ptr<const EngineSnapshot> snapshot();

  // Event tracing (admit, schedule, cache hit, copy-on-write, preempt, swap,
  // evict, finish, steps). Off by default; events accumulate while on.
  void set_tracing(bool on);
  // Moves the recorded events out (oldest first).
  std::vector<EngineEvent> take_events();

  // Tokenizer access for front ends (no state change). `warning`, when
  // given, says what of the text has no token (bytes that are not UTF-8,
  // characters the vocabulary lacks); empty when all of it has.
  std::vector<int32_t> tokenize(std::string_view text, bool parse_special, std::string* warning = nullptr) const;
  std::string detokenize(const std::vector<int32_t>& ids) const;
  // The token a text prompt starts with when the vocabulary asks for one
  // (tokenizer.ggml.add_bos_token), else -1.
  int32_t prompt_bos() const;
  // The raw bytes token `id` stands for, as the chat's detokeniser sees them:
  // byte-level BPE pieces decoded to their bytes, SentencePiece "▁" as a
  // space and <0xNN> byte-fallback tokens as that byte. One token may hold
  // part of a UTF-8 character only. Control and unknown tokens give "" unless
  // render_special, then their text ("<|im_start|>"); out-of-range ids give
  // "". The bytes of a prompt's ids concatenated are the prompt's text, with
  // SentencePiece's dummy-prefix space in front when the vocabulary adds one
  // (the streaming detokeniser strips it from a reply's first token).
  std::string token_bytes(int32_t id, bool render_special = false) const;
  std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // How the model's chat template has the model write tool calls
  // (kvscope/tool_calls.h); None when it offers no tools.
  ToolCallFormat tool_call_format() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvscope
