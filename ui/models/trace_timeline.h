// TraceTimeline: the engine's event log (EngineEvent, kvscope/engine_event.h)
// turned into what the Trace panel draws and asks about: one row per step
// (time, step number, batch tokens, sequences, duration), the KV usage
// samples, one span per request completion (admission to finish, with finish
// reason, preemptions and prefix-cache hit), one span per tensor-parallel
// rank's part of a forward pass (RankForward, tp > 1), and queries at a time
// t answered by binary search (the step at t, requests active at t, KV usage
// at t, cumulative counts at t, the events around t).
//
// Built in one go from a loaded trace or grown batch by batch while recording:
// append() costs O(k log r) for k new events and r open requests, never a
// rebuild, and gives the same result as building from all events at once
// (tests/ui/trace_timeline_test.cpp checks both).
//
// Times: events() keeps the log verbatim (so a save is exact); everything else
// uses a timeline time that never runs backwards. A new engine counts from
// zero again, so when an event's time_s falls below the previous one the rest
// of the log is shifted to continue from where the previous engine stopped.
//
// Plain C++ on purpose (no Qt): the model and the panel read it; tests need
// nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kvscope/engine_event.h"
#include "kvscope/request.h"

namespace kvscope::ui {

struct TraceStep {
  int64_t step = 0;        // the engine's step number (StepBegin value)
  double begin_s = 0.0;    // timeline time of StepBegin
  double end_s = 0.0;      // of StepEnd; begin_s while the step is open
  int64_t num_tokens = 0;  // batch tokens (StepEnd value)
  int64_t num_seqs = 0;    // sequences in the batch (StepEnd value2)
  bool ended = false;      // StepEnd seen
  double duration_s() const { return end_s - begin_s; }
  bool operator==(const TraceStep&) const = default;
};

struct TraceKvSample {
  double time_s = 0.0;
  int64_t num_used_blocks = 0;
  int64_t num_cached_free_blocks = 0;  // free, but still holding a cached prefix
  bool operator==(const TraceKvSample&) const = default;
};

// One completion of a request, from the first event that names it to its
// Finish. That first event is usually the prefix-cache lookup or the block
// allocation the scheduler does just before Admit; a parallel-sampling sibling
// is forked rather than admitted, and a request already running when the
// recording started shows up first with a Schedule.
struct TraceRequestSpan {
  RequestId request = 0;
  int32_t index = 0;
  double begin_s = 0.0;
  double end_s = 0.0;  // Finish time; meaningful when finished
  bool finished = false;
  int64_t finish_value = 0;  // the raw FinishReason value from the log
  int64_t num_prompt_tokens = 0;
  int32_t num_preemptions = 0;
  int32_t num_swap_preemptions = 0;  // of those, by swap (the rest by recompute)
  // Prompt tokens served by the prefix cache when the span opened (a sibling
  // shares its first completion's prompt and so its hit).
  int64_t num_cached_tokens = 0;
  // Admitted at or before t and not yet finished at t.
  bool active_at(double t) const { return begin_s <= t && (!finished || end_s > t); }
  bool operator==(const TraceRequestSpan&) const = default;
};

// One tensor-parallel rank's part of a step's forward pass (a RankForward
// event: the rank began at the event's time and took value2 nanoseconds).
struct TraceRankSpan {
  int32_t rank = 0;
  double begin_s = 0.0;  // timeline time
  double end_s = 0.0;    // begin_s + the rank's duration
  int64_t step_index = -1;  // steps() index of the step it ran in; -1 before any step
  double duration_s() const { return end_s - begin_s; }
  bool operator==(const TraceRankSpan&) const = default;
};

// Running totals since the start of the trace.
struct TraceCounts {
  int64_t num_admits = 0;  // re-admissions after a recompute preemption included
  int64_t num_finishes = 0;
  int64_t num_preemptions = 0;
  int64_t num_cache_hits = 0;
  int64_t num_cached_tokens = 0;  // summed over the hits
  int64_t num_copy_on_writes = 0;
  int64_t num_evicted_blocks = 0;
  int64_t num_swap_outs = 0;
  int64_t num_swap_ins = 0;
  bool operator==(const TraceCounts&) const = default;
};

class TraceTimeline {
 public:
  TraceTimeline() = default;
  explicit TraceTimeline(std::span<const EngineEvent> events) { append(events); }

  // Adds events recorded after those already here (oldest first).
  void append(std::span<const EngineEvent> events);
  void clear() { *this = TraceTimeline(); }

  bool empty() const { return events_.empty(); }
  size_t num_events() const { return events_.size(); }
  const std::vector<EngineEvent>& events() const { return events_; }  // verbatim
  // Timeline time of event i (see the file comment).
  double event_time(size_t i) const { return times_[i]; }
  // The steps() index of the step event i happened in, or -1 before any step.
  int64_t step_index_of_event(size_t i) const { return step_of_event_[i]; }
  double start_time() const { return times_.empty() ? 0.0 : times_.front(); }
  double end_time() const { return times_.empty() ? 0.0 : times_.back(); }

  const std::vector<TraceStep>& steps() const { return steps_; }
  const std::vector<TraceKvSample>& kv_samples() const { return kv_samples_; }
  const std::vector<TraceRequestSpan>& requests() const { return spans_; }
  const TraceCounts& total_counts() const { return totals_; }
  // Every rank's forward passes in log order (begin time, step by step).
  // A rank outside [0, kMaxRanks) is a garbled log's and is left out.
  static constexpr int32_t kMaxRanks = 64;
  const std::vector<TraceRankSpan>& rank_spans() const { return rank_spans_; }
  // One more than the highest rank seen: the number of rank lanes (0: no
  // RankForward event, e.g. a tp = 1 trace).
  int32_t num_ranks() const { return num_ranks_; }
  // [first, last) indices in rank_spans() of the spans of steps()[step].
  std::pair<size_t, size_t> rank_spans_of_step(size_t step) const;

  // Index in steps() of the last step that began at or before t.
  std::optional<size_t> step_at(double t) const;
  // Indices in requests() of the spans active at t (TraceRequestSpan::active_at).
  std::vector<size_t> requests_active_at(double t) const;
  // The last KV sample at or before t.
  std::optional<TraceKvSample> kv_usage_at(double t) const;
  // Totals over the events at or before t.
  TraceCounts counts_at(double t) const;
  // Number of events at or before t; the event "at" t is the one before that.
  size_t num_events_until(double t) const;
  // [first, last) indices of the events with t0 <= time <= t1.
  std::pair<size_t, size_t> events_between(double t0, double t1) const;
  // [first, last): up to `before` events at or before t and `after` after it.
  std::pair<size_t, size_t> events_around(double t, size_t before, size_t after) const;

  // Same events (field by field: EngineEvent has no ==) and so the same
  // derived series and state.
  bool operator==(const TraceTimeline& other) const;

 private:
  using CompletionKey = std::pair<RequestId, int32_t>;

  void add(const EngineEvent& e, double t);
  // The open span of e's completion, opened at t if there is none.
  TraceRequestSpan& span_of(const EngineEvent& e, double t);

  std::vector<EngineEvent> events_;
  std::vector<double> times_;             // [num_events] timeline time, non-decreasing
  std::vector<int64_t> step_of_event_;    // [num_events] steps_ index or -1
  double time_offset_ = 0.0;              // added to time_s (engine restarts)
  double last_raw_time_ = 0.0;

  std::vector<TraceStep> steps_;
  std::optional<size_t> open_step_;
  std::vector<TraceKvSample> kv_samples_;
  std::vector<TraceRequestSpan> spans_;   // in the order they opened, so begin_s is sorted
  std::map<CompletionKey, size_t> open_spans_;  // not yet finished -> spans_ index
  std::vector<TraceRankSpan> rank_spans_;  // step_index non-decreasing
  int32_t num_ranks_ = 0;
  TraceCounts totals_;
  std::vector<std::pair<double, TraceCounts>> count_changes_;  // totals after each counted event
};

}  // namespace kvscope::ui
