// Workload runs for bench-seeds (see workload.h).
#include "workload.h"

#include "bench_util.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <random>

#include <sys/resource.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// User + system CPU time of this process so far.
double process_cpu_s() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// What we saw of one request, from its token events.
struct Tracker {
  RequestId id = 0;
  int32_t max_tokens = 0;
  int32_t reply_tokens = 0;
  int32_t num_generated = 0;
  bool finished = false;
  FinishReason finish = FinishReason::None;
  std::string error;
  int32_t num_cached_prompt_tokens = 0;
  Clock::time_point first_token_at{};
  Clock::time_point last_token_at{};
};

GenerationRequest make_request(const WorkloadRequest& r) {
  GenerationRequest g;
  g.prompt_tokens = r.prompt;
  g.sampling.temperature = 0.0f;  // greedy: the same tokens in every mode
  g.sampling.ignore_eos = true;   // lengths fixed by the workload, not by the model
  g.sampling.max_tokens = r.max_tokens;
  g.sampling.seed = 1;            // unused when greedy; fixed so nothing random is drawn
  g.cache_salt = r.cache_salt;
  return g;
}

}  // namespace

std::vector<int32_t> seeded_ids(uint64_t seed, int32_t n, int32_t lo, int32_t hi) {
  assert(lo < hi);
  std::mt19937_64 rng(seed);
  const uint64_t span = static_cast<uint64_t>(hi - lo);
  std::vector<int32_t> ids(static_cast<size_t>(std::max(n, 0)));
  for (int32_t& id : ids) id = lo + static_cast<int32_t>(rng() % span);
  return ids;
}

std::vector<int32_t> seeded_lengths(uint64_t seed, int32_t n, int32_t lo, int32_t hi) {
  return seeded_ids(seed, n, lo, hi + 1);
}

TokenRange ordinary_token_range(int32_t vocab_size) {
  // Control and byte tokens sit at the start of the vocabularies we load
  // (SmolLM2: 0..16 special, then bytes); the last ids are the rarest merges.
  // A middle band is ordinary text in every vocabulary of a few thousand ids.
  if (vocab_size < 1024) return {vocab_size > 8 ? 4 : 0, std::max(vocab_size, 1)};
  return {vocab_size / 64 + 256, vocab_size - vocab_size / 8};
}

Result<RunMetrics> run_workload(Engine& engine, const std::vector<WorkloadRequest>& requests) {
  RunMetrics m;
  m.num_requests = static_cast<int32_t>(requests.size());
  std::vector<Tracker> trackers(requests.size());
  std::vector<size_t> to_end;  // replies that reached reply_tokens this step
  const KvStats before = engine.kv_stats();

  const double cpu0 = process_cpu_s();
  const Clock::time_point t0 = Clock::now();
  for (size_t i = 0; i < requests.size(); ++i) {
    const WorkloadRequest& r = requests[i];
    assert(r.reply_tokens >= 1 && r.reply_tokens <= r.max_tokens);
    Tracker& t = trackers[i];
    t.max_tokens = r.max_tokens;
    t.reply_tokens = r.reply_tokens;
    m.num_prompt_tokens += static_cast<int64_t>(r.prompt.size());
    GenerationRequest g = make_request(r);
    // Runs on this thread, inside step().
    g.on_event = [&t, &to_end, i](const TokenEvent& ev) {
      const Clock::time_point now = Clock::now();
      if (ev.token >= 0) {
        if (t.num_generated == 0) t.first_token_at = now;
        t.last_token_at = now;
        if (++t.num_generated == t.reply_tokens && t.reply_tokens < t.max_tokens) to_end.push_back(i);
      }
      if (ev.finish != FinishReason::None) {
        t.finished = true;
        t.finish = ev.finish;
        t.error = ev.error;
        t.num_cached_prompt_tokens = ev.stats.num_cached_prompt_tokens;
        if (t.num_generated == 0) t.first_token_at = t.last_token_at = now;
      }
    };
    auto id = engine.submit(std::move(g));
    if (!id.ok()) {
      // Leave the engine as we found it: end what was already queued.
      for (size_t j = 0; j < i; ++j) engine.cancel(trackers[j].id);
      engine.run_until_idle();
      return Error{fmt::format("request {} of {} ({} prompt tokens, max_tokens {}): {}", i + 1, requests.size(),
                               r.prompt.size(), r.max_tokens, id.error())};
    }
    t.id = *id;
  }

  double waste_sum = 0, running_sum = 0, decode_time = 0;
  int64_t num_waste_samples = 0, num_busy_steps = 0, num_decode_rows = 0;
  while (engine.has_work()) {
    engine.step();
    // A reply that reached its length ends here, as at an end-of-sequence
    // token: the engine frees its blocks at the next step.
    for (size_t i : to_end) engine.cancel(trackers[i].id);
    to_end.clear();

    const StepStats s = engine.last_step_stats();
    ++m.num_steps;
    if (s.num_seqs > 0) {
      ++num_busy_steps;
      running_sum += s.num_seqs;
      m.max_running = std::max(m.max_running, s.num_seqs);
    }
    if (s.num_prefill_tokens == 0 && s.num_decode_tokens > 0) {
      num_decode_rows += s.num_decode_tokens;
      decode_time += s.step_time_s;
    }
    const KvStats k = engine.kv_stats();
    m.peak_used_blocks = std::max(m.peak_used_blocks, k.num_used_blocks);
    if (k.num_reserved_slots > 0) {
      waste_sum += k.waste_percent();
      ++num_waste_samples;
      if (k.num_reserved_slots > m.peak_reserved_slots) {
        m.peak_reserved_slots = k.num_reserved_slots;
        m.peak_written_slots = k.num_written_slots;
        m.peak_waste_percent = k.waste_percent();
      }
    }
  }
  const Clock::time_point t1 = Clock::now();

  m.wall_s = seconds(t0, t1);
  m.cpu_s = process_cpu_s() - cpu0;
  std::vector<double> ttft;
  double latency_sum = 0;
  for (const Tracker& t : trackers) {
    m.num_generated_tokens += t.num_generated;
    m.num_cached_prompt_tokens += t.num_cached_prompt_tokens;
    if (t.finish == FinishReason::Error || !t.finished) {
      if (m.num_errors++ == 0) m.first_error = t.finished ? t.error : "the request never finished";
    }
    ttft.push_back(seconds(t0, t.first_token_at));
    latency_sum += seconds(t0, t.last_token_at);
  }
  if (!ttft.empty()) {
    for (double v : ttft) m.mean_ttft_s += v / static_cast<double>(ttft.size());
    m.median_ttft_s = median(ttft);
    m.max_ttft_s = *std::max_element(ttft.begin(), ttft.end());
    m.mean_latency_s = latency_sum / static_cast<double>(ttft.size());
  }
  m.throughput_tok_s = m.wall_s > 0 ? static_cast<double>(m.num_generated_tokens) / m.wall_s : 0;
  m.decode_tok_s = decode_time > 0 ? static_cast<double>(num_decode_rows) / decode_time : 0;
  m.mean_running = num_busy_steps ? running_sum / static_cast<double>(num_busy_steps) : 0;
  m.mean_waste_percent = num_waste_samples ? waste_sum / static_cast<double>(num_waste_samples) : 0;

  const KvStats after = engine.kv_stats();
  m.num_blocks = after.num_blocks;
  m.num_preemptions = after.num_preemptions - before.num_preemptions;
  m.num_prefix_queried_tokens = after.num_prefix_queried_tokens - before.num_prefix_queried_tokens;
  m.num_prefix_hit_tokens = after.num_prefix_hit_tokens - before.num_prefix_hit_tokens;
  return m;
}

Status warm_up(Engine& engine, int32_t vocab_size) {
  const TokenRange range = ordinary_token_range(vocab_size);
  WorkloadRequest r;
  r.prompt = seeded_ids(/*seed=*/7, 8, range.lo, range.hi);
  r.max_tokens = r.reply_tokens = 4;
  r.cache_salt = "bench-seeds warm-up";
  auto m = run_workload(engine, {r});
  if (!m.ok()) return Error{"warm-up: " + m.error()};
  if (m->num_errors) return Error{"warm-up: " + m->first_error};
  return Status::success();
}

nlohmann::ordered_json to_json(const RunMetrics& m) {
  return {
      {"num_requests", m.num_requests},
      {"num_prompt_tokens", m.num_prompt_tokens},
      {"num_generated_tokens", m.num_generated_tokens},
      {"num_errors", m.num_errors},
      {"first_error", m.first_error},
      {"latency_s", m.wall_s},
      {"cpu_s", m.cpu_s},
      {"throughput_tok_s", m.throughput_tok_s},
      {"decode_tok_s", m.decode_tok_s},
      {"mean_ttft_s", m.mean_ttft_s},
      {"median_ttft_s", m.median_ttft_s},
      {"max_ttft_s", m.max_ttft_s},
      {"mean_request_latency_s", m.mean_latency_s},
      {"num_steps", m.num_steps},
      {"max_running", m.max_running},
      {"mean_running", m.mean_running},
      {"mean_waste_percent", m.mean_waste_percent},
      {"peak_waste_percent", m.peak_waste_percent},
      {"peak_reserved_slots", m.peak_reserved_slots},
      {"peak_written_slots", m.peak_written_slots},
      {"peak_used_blocks", m.peak_used_blocks},
      {"num_blocks", m.num_blocks},
      {"num_preemptions", m.num_preemptions},
      {"num_prefix_queried_tokens", m.num_prefix_queried_tokens},
      {"num_prefix_hit_tokens", m.num_prefix_hit_tokens},
      {"num_cached_prompt_tokens", m.num_cached_prompt_tokens},
  };
}

}  // namespace kvscope::cli
