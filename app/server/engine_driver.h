// EngineDriver: how the server reaches an engine that some other thread
// steps. Engine::step() must be called from one thread only, so the server
// never steps: it submits and cancels (thread-safe in Engine) through this
// interface and asks the stepping thread to run anything else between two
// steps. kvscope-cli serve drives the engine with a StepLoop (step_loop.h);
// the desktop app can implement this over its own engine worker.
#pragma once

#include <functional>

#include "kvscope/engine.h"

namespace kvscope::server {

class EngineDriver {
 public:
  virtual ~EngineDriver() = default;

  // Required. Thread-safe: Engine::submit, and the stepping thread is woken
  // so that the request runs.
  virtual Result<RequestId> submit(GenerationRequest request, SubmittedPrompt* submitted) = 0;
  // Required. Thread-safe: Engine::cancel; the request finishes (Cancelled)
  // and frees its blocks at the next step.
  virtual void cancel(RequestId id) = 0;
  // Required. Thread-safe: runs `fn` on the stepping thread between two steps
  // (where Engine::kv_stats, snapshot, model_info may be called) and returns
  // when it has run; false, without running it, once the driver has stopped.
  virtual bool run_between_steps(const std::function<void(Engine&)>& fn) = 0;
  // Required. The engine's tokenizer, which is safe from any thread
  // (Engine::token_bytes, tokenize, detokenize: no state change).
  virtual const Engine& engine() const = 0;
};

}  // namespace kvscope::server
