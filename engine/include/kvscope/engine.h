// Engine: the public face of kvscope's inference engine.
//
// One thread calls step() (or run_until_idle()); submit() and cancel() may be
// called from any thread: they post into an inbox drained at the start of each
// step. Each step is one iteration of continuous batching: schedule, allocate
// KV blocks, build the StepBatch, run the model, sample, publish.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/engine_config.h"
#include "kvscope/model_info.h"
#include "kvscope/request.h"
#include "kvscope/result.h"

namespace kvscope {

struct StepStats {
  int32_t num_prefill_tokens = 0;
  int32_t num_decode_tokens = 0;
  int32_t num_seqs = 0;
  double step_time_s = 0.0;
  int32_t num_used_blocks = 0;
  int32_t num_total_blocks = 0;
};

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
