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
#include "kvscope/model_info.h"
#include "kvscope/request.h"
#include "kvscope/result.h"

namespace kvscope {

class Engine {
 public:
  // Loads the model and sizes the KV pool. Errors say what is wrong with the
  // file or the settings.
  static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Validates the request (sampling parameters, prompt length
  // against max_model_len and the KV pool) and queues it.
  Result<RequestId> submit(GenerationRequest request);
  // Thread-safe. The request finishes with FinishReason::Cancelled at the next step.
  void cancel(RequestId id);

  bool has_work() const;
  void step();
  void run_until_idle();

  const ModelInfo& model_info() const;
  const EngineConfig& config() const;
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

  // Tokenizer access for front ends (no state change).
  std::vector<int32_t> tokenize(std::string_view text, bool parse_special) const;
  std::string detokenize(const std::vector<int32_t>& ids) const;
  std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvscope
