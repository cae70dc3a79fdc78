// Workload: a fixed list of generation requests, and what one run of it
// through an Engine measured (wall time, tokens, time to first token, batch
// occupancy, KV waste sampled after every step). Used by `bench-seeds`
// (seed_bench_command.cpp); everything here is deterministic except the clock.
//
// A request declares max_tokens (what a contiguous reservation must hold, as a
// server's max_tokens does) and may end earlier, after reply_tokens, the way a
// reply ends at its end-of-sequence token. Greedy decoding with ignore_eos plus
// that fixed cut gives every run the same lengths whatever the model says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvscope/engine.h"

namespace kvscope::cli {

struct WorkloadRequest {
  std::vector<int32_t> prompt;  // [num_prompt_tokens]
  int32_t max_tokens = 0;       // declared maximum (what contiguous mode reserves for)
  int32_t reply_tokens = 0;     // generated before the reply ends; 1..max_tokens
  std::string cache_salt;
};

// n ids drawn uniformly from [lo, hi) by a seeded mt19937_64 (its sequence is
// fixed by the C++ standard; the mapping to the range is ours, so the ids are
// the same on every platform). Precondition: lo < hi.
std::vector<int32_t> seeded_ids(uint64_t seed, int32_t n, int32_t lo, int32_t hi);

// n request lengths in [lo, hi], same generator.
std::vector<int32_t> seeded_lengths(uint64_t seed, int32_t n, int32_t lo, int32_t hi);

// The range of "ordinary" token ids for random prompts: above the control
// tokens at the start of a vocabulary, below the tail of rare merges.
struct TokenRange {
  int32_t lo = 0;
  int32_t hi = 0;
};
TokenRange ordinary_token_range(int32_t vocab_size);

struct RunMetrics {
  int32_t num_requests = 0;
  int64_t num_prompt_tokens = 0;
  int64_t num_generated_tokens = 0;  // counted from the token events
  int32_t num_errors = 0;
  std::string first_error;

  double wall_s = 0;            // first submit -> last request finished
  // CPU time of this process over the run (all threads). On a shared machine
  // cpu_s / (wall_s * threads) well below 1 means others took the cores.
  double cpu_s = 0;
  double throughput_tok_s = 0;  // generated tokens / wall_s
  // Aggregate decode rate: decode rows over the time of steps that did no
  // prefill (what batching buys once every sequence is decoding).
  double decode_tok_s = 0;
  double mean_ttft_s = 0;       // submit -> first token, our clock
  double median_ttft_s = 0;
  double max_ttft_s = 0;
  double mean_latency_s = 0;    // submit -> last token, per request

  int64_t num_steps = 0;
  int32_t max_running = 0;      // most sequences in one step (admitted at once)
  double mean_running = 0;      // sequences per step, mean over steps with work
  // KV waste: reserved but unwritten slots in percent of reserved slots
  // (KvStats::waste_percent), sampled after each step.
  double mean_waste_percent = 0;      // over steps with reserved slots
  double peak_waste_percent = 0;      // at the step with the most reserved slots
  int64_t peak_reserved_slots = 0;
  int64_t peak_written_slots = 0;
  int32_t peak_used_blocks = 0;
  int32_t num_blocks = 0;
  // Counter deltas over the run (KvStats).
  int64_t num_preemptions = 0;
  int64_t num_prefix_queried_tokens = 0;
  int64_t num_prefix_hit_tokens = 0;
  int64_t num_cached_prompt_tokens = 0;  // from the finishing events' RequestStats
};

// Submits every request at once, steps the engine until idle and measures.
// Errors: a request the engine refuses (the message names which).
Result<RunMetrics> run_workload(Engine& engine, const std::vector<WorkloadRequest>& requests);

// One tiny request so that the timed run does not pay for first-touch page
// faults and thread start-up. Salted, so it shares no prefix with anything.
Status warm_up(Engine& engine, int32_t vocab_size);

nlohmann::ordered_json to_json(const RunMetrics& m);

}  // namespace kvscope::cli
