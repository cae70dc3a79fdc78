// /metrics: the server's own counters (requests, tokens, finishes, a
// tokens-per-second window) and the engine's state between two steps
// (queues, KV blocks, prefix-cache hits, speculative decoding's acceptance
// when it is on), written in Prometheus' text format.
// docs/server.md lists every metric.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "generation_job.h"
#include "kvscope/engine_snapshot.h"

namespace kvscope::server {

// Generated tokens per second over a sliding window of whole seconds.
class TokenRate {
 public:
  static constexpr int kWindowSeconds = 10;
  using Clock = std::chrono::steady_clock;

  explicit TokenRate(Clock::time_point start = Clock::now()) : start_(start) {}
  void add(int64_t num_tokens, Clock::time_point now = Clock::now());
  // Tokens in the last kWindowSeconds (fewer right after start) per second.
  double per_second(Clock::time_point now = Clock::now()) const;

 private:
  struct Bucket {
    int64_t second = -1;  // whole seconds since start_
    int64_t num_tokens = 0;
  };
  int64_t second_of(Clock::time_point t) const;

  Clock::time_point start_;
  mutable std::mutex mutex_;
  std::array<Bucket, kWindowSeconds> buckets_{};
};

class ServerMetrics final : public JobCounters {
 public:
  struct Totals {
    int64_t num_chat_requests = 0;
    int64_t num_completion_requests = 0;
    int64_t num_prompt_tokens = 0;
    int64_t num_generated_tokens = 0;
    // Finished choices, by FinishReason (Stop, Length, ContextFull, Cancelled, Error).
    std::array<int64_t, 6> num_finished{};
    int64_t num_in_flight = 0;  // generation requests being answered
  };

  void on_token() override;
  void on_finish(FinishReason reason, const RequestStats& stats) override;
  // A generation request was accepted (its prompts submitted) / answered.
  void on_request_started(bool chat, int64_t num_prompt_tokens);
  void on_request_ended();

  Totals totals() const;
  double tokens_per_second() const { return rate_.per_second(); }

 private:
  std::atomic<int64_t> num_chat_{0}, num_completion_{0}, num_prompt_tokens_{0}, num_generated_{0}, num_in_flight_{0};
  std::array<std::atomic<int64_t>, 6> num_finished_{};
  TokenRate rate_;
};

// What /metrics reads from the engine, on its stepping thread.
struct EngineSample {
  int32_t num_waiting = 0;
  int32_t num_running = 0;
  int32_t num_swapped = 0;
  uint64_t num_steps = 0;
  KvStats kv;
  StepStats last_step;
  bool speculative = false;  // the engine runs speculative decoding: its metrics are written
  SpecStats spec;
};

EngineSample sample_engine(Engine& engine);

std::string prometheus_text(const ServerMetrics::Totals& totals, double tokens_per_second,
                            const EngineSample& engine);

}  // namespace kvscope::server
