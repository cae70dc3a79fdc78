// Prometheus text for /metrics (see metrics.h).
#include "metrics.h"

#include <fmt/format.h>

#include "kvscope/engine.h"

namespace kvscope::server {

int64_t TokenRate::second_of(Clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::seconds>(t - start_).count();
}

void TokenRate::add(int64_t num_tokens, Clock::time_point now) {
  const int64_t s = second_of(now);
  std::lock_guard lock(mutex_);
  Bucket& b = buckets_[static_cast<size_t>(s % kWindowSeconds)];
  if (b.second != s) b = {s, 0};
  b.num_tokens += num_tokens;
}

double TokenRate::per_second(Clock::time_point now) const {
  const int64_t s = second_of(now);
  int64_t sum = 0;
  {
    std::lock_guard lock(mutex_);
    for (const Bucket& b : buckets_) {
      if (b.second >= 0 && b.second > s - kWindowSeconds && b.second <= s) sum += b.num_tokens;
    }
  }
  // Right after start the window is shorter than kWindowSeconds.
  const double seconds =
      std::min<double>(kWindowSeconds, std::chrono::duration<double>(now - start_).count());
  return seconds > 0 ? static_cast<double>(sum) / std::max(seconds, 1.0) : 0.0;
}

void ServerMetrics::on_token() {
  ++num_generated_;
  rate_.add(1);
}

void ServerMetrics::on_finish(FinishReason reason, const RequestStats&) {
  const auto i = static_cast<size_t>(reason);
  if (i > 0 && i < num_finished_.size()) ++num_finished_[i];
}

void ServerMetrics::on_request_started(bool chat, int64_t num_prompt_tokens) {
  ++(chat ? num_chat_ : num_completion_);
  num_prompt_tokens_ += num_prompt_tokens;
  ++num_in_flight_;
}

void ServerMetrics::on_request_ended() { --num_in_flight_; }

ServerMetrics::Totals ServerMetrics::totals() const {
  Totals t;
  t.num_chat_requests = num_chat_;
  t.num_completion_requests = num_completion_;
  t.num_prompt_tokens = num_prompt_tokens_;
  t.num_generated_tokens = num_generated_;
  t.num_in_flight = num_in_flight_;
  for (size_t i = 0; i < t.num_finished.size(); ++i) t.num_finished[i] = num_finished_[i];
  return t;
}

EngineSample sample_engine(Engine& engine) {
  EngineSample s;
  const std::shared_ptr<const EngineSnapshot> snap = engine.snapshot();
  s.num_waiting = snap->num_waiting;
  s.num_running = snap->num_running;
  s.num_swapped = snap->num_swapped;
  s.num_steps = snap->step;
  s.kv = snap->kv;
  s.last_step = engine.last_step_stats();
  s.speculative = engine.config().spec != SpecMethod::Off;
  s.spec = snap->spec;
  return s;
}

namespace {

// One metric: its HELP and TYPE lines, then its sample(s).
void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, value);
}

}  // namespace

std::string prometheus_text(const ServerMetrics::Totals& t, double tokens_per_second, const EngineSample& e) {
  std::string out;
  const KvStats& kv = e.kv;
  metric(out, "kvscope_requests_running", "gauge", "Sequences in the engine's running batch.", e.num_running);
  metric(out, "kvscope_requests_waiting", "gauge", "Sequences waiting to be scheduled.", e.num_waiting);
  metric(out, "kvscope_requests_swapped", "gauge", "Sequences swapped out to host memory.", e.num_swapped);
  metric(out, "kvscope_http_requests_in_flight", "gauge", "Generation requests the server is answering.",
         static_cast<double>(t.num_in_flight));
  out += "# HELP kvscope_http_requests_total Generation requests accepted, by endpoint.\n"
         "# TYPE kvscope_http_requests_total counter\n";
  out += fmt::format("kvscope_http_requests_total{{endpoint=\"chat_completions\"}} {}\n", t.num_chat_requests);
  out += fmt::format("kvscope_http_requests_total{{endpoint=\"completions\"}} {}\n", t.num_completion_requests);
  out += "# HELP kvscope_choices_finished_total Completions (choices) finished, by reason.\n"
         "# TYPE kvscope_choices_finished_total counter\n";
  for (FinishReason r : {FinishReason::Stop, FinishReason::Length, FinishReason::ContextFull,
                         FinishReason::Cancelled, FinishReason::Error}) {
    out += fmt::format("kvscope_choices_finished_total{{reason=\"{}\"}} {}\n", finish_reason_name(r),
                       t.num_finished[static_cast<size_t>(r)]);
  }
  metric(out, "kvscope_prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
         static_cast<double>(t.num_prompt_tokens));
  metric(out, "kvscope_generated_tokens_total", "counter", "Tokens generated for the server's requests.",
         static_cast<double>(t.num_generated_tokens));
  metric(out, "kvscope_generated_tokens_per_second", "gauge", "Generated tokens per second over the last 10 s.",
         tokens_per_second);
  metric(out, "kvscope_kv_blocks_total", "gauge", "KV blocks in the pool.", kv.num_blocks);
  metric(out, "kvscope_kv_blocks_used", "gauge", "KV blocks held by sequences.", kv.num_used_blocks);
  metric(out, "kvscope_kv_blocks_cached_free", "gauge", "Free KV blocks still findable by the prefix cache.",
         kv.num_cached_free_blocks);
  metric(out, "kvscope_kv_usage_ratio", "gauge", "Used KV blocks over all blocks.",
         kv.num_blocks ? static_cast<double>(kv.num_used_blocks) / kv.num_blocks : 0.0);
  metric(out, "kvscope_prefix_cache_queried_tokens_total", "counter", "Prompt tokens looked up in the prefix cache.",
         static_cast<double>(kv.num_prefix_queried_tokens));
  metric(out, "kvscope_prefix_cache_hit_tokens_total", "counter", "Prompt tokens served by the prefix cache.",
         static_cast<double>(kv.num_prefix_hit_tokens));
  metric(out, "kvscope_prefix_cache_hit_rate", "gauge", "Prefix-cache hit tokens over queried tokens, since start.",
         kv.prefix_hit_rate());
  metric(out, "kvscope_preemptions_total", "counter", "Sequences preempted for lack of KV blocks.",
         static_cast<double>(kv.num_preemptions));
  metric(out, "kvscope_evictions_total", "counter", "Cached-free blocks evicted from the prefix cache.",
         static_cast<double>(kv.num_evictions));
  metric(out, "kvscope_copy_on_writes_total", "counter", "Shared KV blocks copied before a write.",
         static_cast<double>(kv.num_copy_on_writes));
  metric(out, "kvscope_engine_steps_total", "counter", "Engine steps run.", static_cast<double>(e.num_steps));
  metric(out, "kvscope_engine_last_step_seconds", "gauge", "Wall time of the last engine step.",
         e.last_step.step_time_s);
  metric(out, "kvscope_engine_last_step_tokens", "gauge",
         "Query rows in the last step: prefill, decode and speculative draft tokens.",
         e.last_step.num_batch_tokens());
  if (e.speculative) {
    metric(out, "kvscope_spec_drafts_total", "counter", "Speculative proposals verified.",
           static_cast<double>(e.spec.num_drafts));
    metric(out, "kvscope_spec_draft_tokens_total", "counter", "Draft tokens proposed.",
           static_cast<double>(e.spec.num_draft_tokens));
    metric(out, "kvscope_spec_accepted_tokens_total", "counter", "Draft tokens accepted.",
           static_cast<double>(e.spec.num_accepted_tokens));
    metric(out, "kvscope_spec_acceptance_rate", "gauge", "Accepted over proposed draft tokens, since start.",
           e.spec.acceptance_rate());
  }
  return out;
}

}  // namespace kvscope::server
