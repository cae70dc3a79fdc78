// GenerationJob: what one HTTP request asked the engine for. It submits one
// engine request per prompt (n completions each) and queues the events the
// stepping thread reports, as ChoiceEvents numbered by their place in the
// response (`choices[prompt * n + completion]`), for the HTTP handler thread
// to take with wait_events(). With logprobs it also turns each token's raw
// logits into log-probabilities on the stepping thread (logprobs.h), and
// with echo too each prompt token's (prompt_logprobs).
//
// The engine's callbacks hold the job by shared_ptr, so it outlives a handler
// that has gone (a client that disconnected): cancel() then ends its requests
// and the engine frees their blocks at the next step.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api_error.h"
#include "engine_driver.h"
#include "logprobs.h"
#include "request_parser.h"

namespace kvscope::server {

struct ChoiceEvent {
  int32_t choice = 0;  // index into the response's choices
  int32_t token = -1;  // -1: no new token (a finish)
  std::string text;    // newly complete text
  std::optional<TokenLogprob> logprob;  // with logprobs, for a new token
  FinishReason finish = FinishReason::None;
  std::string error;   // finish == Error
  RequestStats stats;  // on the finishing event
};

// What the job counts as it runs (read by the server's metrics).
struct JobCounters {
  virtual ~JobCounters() = default;
  // Required. Called on the stepping thread for each generated token.
  virtual void on_token() = 0;
  // Required. Called on the stepping thread when a choice finishes.
  virtual void on_finish(FinishReason reason, const RequestStats& stats) = 0;
};

class GenerationJob {
 public:
  using Start = std::variant<std::shared_ptr<GenerationJob>, ApiError>;

  // Submits every prompt of `request`. An engine refusal (a prompt longer
  // than the context, more KV than the pool) cancels what was already
  // submitted and comes back as a 400 with the engine's message. `counters`
  // may be null; the job shares it, since the engine may report a
  // cancelled request's end after the server is gone.
  static Start start(EngineDriver& driver, const ParsedRequest& request, std::shared_ptr<JobCounters> counters);

  ~GenerationJob();
  GenerationJob(const GenerationJob&) = delete;
  GenerationJob& operator=(const GenerationJob&) = delete;

  // Waits up to `timeout` for events and moves out all that have arrived
  // (none on timeout), oldest first.
  std::vector<ChoiceEvent> wait_events(std::chrono::milliseconds timeout);
  // Ends every request of the job that is still running. Idempotent, any thread.
  void cancel();

  int32_t num_choices() const { return num_choices_; }
  // Prompt tokens of each prompt, as the engine ran them (BOS included when added).
  const std::vector<std::vector<int32_t>>& prompt_tokens() const { return prompt_tokens_; }
  // Warnings Engine::submit gave about the prompts' text.
  const std::vector<std::string>& warnings() const { return warnings_; }
  RequestId first_request_id() const { return ids_.empty() ? 0 : ids_.front(); }
  // Completions with echo and logprobs: prompt `prompt`'s entries, its first
  // token's (unscored) first. Whole once an event of one of its choices has
  // come out of wait_events(): the engine scores a prompt before any of them.
  std::vector<TokenLogprob> prompt_logprobs(int32_t prompt);

 private:
  // Per choice, touched only on the stepping thread: the last logits row.
  struct LogitsRow {
    std::vector<float> logits;  // [vocab]
    float log_sum_exp = 0.0f;
    bool fresh = false;  // set by on_logits, used by the next token event
  };

  GenerationJob(EngineDriver& driver, int32_t num_choices, int32_t top_logprobs, bool logprobs,
                std::shared_ptr<JobCounters> counters);
  void on_event(int32_t prompt_index, const TokenEvent& ev);
  void on_logits(int32_t prompt_index, int32_t completion, const float* logits, int32_t vocab);
  void on_prompt_logits(int32_t prompt_index, int32_t token, const float* logits, int32_t vocab);
  TokenLogprob make_logprob(LogitsRow& row, int32_t token) const;
  // `token`'s entry in a row of raw logits whose log-sum-exp is `lse`.
  TokenLogprob logprob_entry(const float* logits, int32_t vocab, float lse, int32_t token) const;

  EngineDriver& driver_;
  const int32_t num_choices_;
  int32_t n_ = 1;
  const int32_t top_logprobs_;
  const bool logprobs_;
  std::shared_ptr<JobCounters> counters_;
  std::vector<LogitsRow> rows_;  // [num_choices] when logprobs
  std::vector<int32_t> num_counted_;  // [num_choices] tokens given to counters_ (the stepping thread's)

  std::vector<RequestId> ids_;  // written in start() before the job is handed out
  std::vector<std::vector<int32_t>> prompt_tokens_;
  std::vector<std::string> warnings_;

  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<ChoiceEvent> events_;
  std::vector<std::vector<TokenLogprob>> scored_prompts_;  // [num prompts] with echo and logprobs: positions 1..
  bool cancelled_ = false;
};

// The jobs a server is answering, so that stopping it can cancel them all.
class JobRegistry {
 public:
  // False once close_and_cancel_all ran: the job is not taken (the caller
  // cancels it and answers 503), so that none starts after the server
  // began to stop and is then cut off without an error.
  bool add(const std::shared_ptr<GenerationJob>& job);
  void remove(const std::shared_ptr<GenerationJob>& job);
  void close_and_cancel_all();
  bool closed() const;
  void reopen();  // takes jobs again (a server started after a stop)
  // Waits up to `timeout` for every job to be removed; false if some remain.
  bool wait_empty(std::chrono::milliseconds timeout);
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable emptied_;
  std::vector<std::shared_ptr<GenerationJob>> jobs_;
  bool closed_ = false;
};

}  // namespace kvscope::server
