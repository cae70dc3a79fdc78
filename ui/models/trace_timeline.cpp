// TraceTimeline (see trace_timeline.h).
#include "models/trace_timeline.h"

#include <algorithm>
#include <cmath>

namespace kvscope::ui {

void TraceTimeline::append(std::span<const EngineEvent> events) {
  // No reserve(size + k) here: with a batch 20 times a second it reallocated
  // and copied the whole log every time (push_back's doubling is amortised).
  for (const EngineEvent& e : events) {
    // A time that runs backwards is a new engine counting from zero: carry on
    // from where the last one stopped. A non-finite time (only a hand-edited
    // file has one) stays where the previous event was.
    const double raw = std::isfinite(e.time_s) ? e.time_s : last_raw_time_;
    if (!events_.empty() && raw < last_raw_time_) time_offset_ += last_raw_time_ - raw;
    last_raw_time_ = raw;
    double t = raw + time_offset_;
    if (!times_.empty()) t = std::max(t, times_.back());  // rounding in the offset
    events_.push_back(e);
    times_.push_back(t);
    add(e, t);
    step_of_event_.push_back(steps_.empty() ? -1 : static_cast<int64_t>(steps_.size()) - 1);
  }
}

TraceRequestSpan& TraceTimeline::span_of(const EngineEvent& e, double t) {
  const CompletionKey key{e.request, e.index};
  if (const auto it = open_spans_.find(key); it != open_spans_.end()) return spans_[it->second];
  TraceRequestSpan span;
  span.request = e.request;
  span.index = e.index;
  span.begin_s = t;
  if (e.type == EngineEventType::CacheHit) {
    span.num_cached_tokens = e.value;
  } else if (e.index != 0) {
    // A forked sibling: the first completion's prompt, so its cache hit.
    if (const auto first = open_spans_.find({e.request, 0}); first != open_spans_.end())
      span.num_cached_tokens = spans_[first->second].num_cached_tokens;
  }
  open_spans_.emplace(key, spans_.size());
  spans_.push_back(span);
  return spans_.back();
}

void TraceTimeline::add(const EngineEvent& e, double t) {
  using T = EngineEventType;
  switch (e.type) {
    case T::StepBegin:
      // A step left open (no StepEnd) stays with ended == false.
      open_step_ = steps_.size();
      steps_.push_back({.step = e.value, .begin_s = t, .end_s = t});
      break;
    case T::StepEnd:
      // Without an open step this ends one begun before the recording: no row.
      if (open_step_) {
        TraceStep& step = steps_[*open_step_];
        step.end_s = t;
        step.num_tokens = e.value;
        step.num_seqs = e.value2;
        step.ended = true;
        open_step_.reset();
      }
      break;
    case T::KvUsage: kv_samples_.push_back({t, e.value, e.value2}); break;
    case T::RankForward:
      if (e.value >= 0 && e.value < kMaxRanks) {
        const int32_t rank = static_cast<int32_t>(e.value);
        const double duration_s = static_cast<double>(std::max<int64_t>(e.value2, 0)) / 1e9;
        rank_spans_.push_back({.rank = rank,
                               .begin_s = t,
                               .end_s = t + duration_s,
                               .step_index = steps_.empty() ? -1 : static_cast<int64_t>(steps_.size()) - 1});
        num_ranks_ = std::max(num_ranks_, rank + 1);
      }
      break;
    default: break;
  }

  bool counted = true;
  switch (e.type) {
    case T::Admit: ++totals_.num_admits; break;
    case T::Finish: ++totals_.num_finishes; break;
    case T::Preempt: ++totals_.num_preemptions; break;
    case T::CacheHit:
      ++totals_.num_cache_hits;
      totals_.num_cached_tokens += e.value;
      break;
    case T::CopyOnWrite: ++totals_.num_copy_on_writes; break;
    case T::Evict: totals_.num_evicted_blocks += e.value; break;
    case T::SwapOut: ++totals_.num_swap_outs; break;
    case T::SwapIn: ++totals_.num_swap_ins; break;
    default: counted = false; break;
  }
  if (counted) {
    // One entry per distinct time: counts_at(t) takes everything at t.
    if (!count_changes_.empty() && count_changes_.back().first == t) {
      count_changes_.back().second = totals_;
    } else {
      count_changes_.emplace_back(t, totals_);
    }
  }

  if (e.request == 0) return;  // not about one request
  TraceRequestSpan& span = span_of(e, t);
  switch (e.type) {
    case T::Admit:
      if (span.num_prompt_tokens == 0) span.num_prompt_tokens = e.value;
      break;
    case T::Preempt:
      ++span.num_preemptions;
      if (e.value == 1) ++span.num_swap_preemptions;
      break;
    case T::Finish:
      span.finished = true;
      span.end_s = t;
      span.finish_value = e.value;
      open_spans_.erase({e.request, e.index});
      break;
    default: break;
  }
}

bool TraceTimeline::operator==(const TraceTimeline& o) const {
  const auto same_event = [](const EngineEvent& a, const EngineEvent& b) {
    return a.time_s == b.time_s && a.type == b.type && a.request == b.request && a.index == b.index &&
           a.value == b.value && a.value2 == b.value2;
  };
  return std::equal(events_.begin(), events_.end(), o.events_.begin(), o.events_.end(), same_event) &&
         times_ == o.times_ && step_of_event_ == o.step_of_event_ && time_offset_ == o.time_offset_ &&
         last_raw_time_ == o.last_raw_time_ && steps_ == o.steps_ && open_step_ == o.open_step_ &&
         kv_samples_ == o.kv_samples_ && spans_ == o.spans_ && open_spans_ == o.open_spans_ &&
         totals_ == o.totals_ && count_changes_ == o.count_changes_ && rank_spans_ == o.rank_spans_ &&
         num_ranks_ == o.num_ranks_;
}

std::pair<size_t, size_t> TraceTimeline::rank_spans_of_step(size_t step) const {
  const int64_t index = static_cast<int64_t>(step);
  const auto first = std::lower_bound(rank_spans_.begin(), rank_spans_.end(), index,
                                      [](const TraceRankSpan& s, int64_t i) { return s.step_index < i; });
  const auto last = std::upper_bound(first, rank_spans_.end(), index,
                                     [](int64_t i, const TraceRankSpan& s) { return i < s.step_index; });
  return {static_cast<size_t>(first - rank_spans_.begin()), static_cast<size_t>(last - rank_spans_.begin())};
}

std::optional<size_t> TraceTimeline::step_at(double t) const {
  const auto it = std::upper_bound(steps_.begin(), steps_.end(), t,
                                   [](double time, const TraceStep& s) { return time < s.begin_s; });
  if (it == steps_.begin()) return std::nullopt;
  return static_cast<size_t>(it - steps_.begin()) - 1;
}

std::vector<size_t> TraceTimeline::requests_active_at(double t) const {
  // Spans are stored in the order they opened: only those before the bound
  // can have begun by t.
  const auto bound = std::upper_bound(spans_.begin(), spans_.end(), t,
                                      [](double time, const TraceRequestSpan& s) { return time < s.begin_s; });
  std::vector<size_t> active;
  for (auto it = spans_.begin(); it != bound; ++it)
    if (it->active_at(t)) active.push_back(static_cast<size_t>(it - spans_.begin()));
  return active;
}

std::optional<TraceKvSample> TraceTimeline::kv_usage_at(double t) const {
  const auto it = std::upper_bound(kv_samples_.begin(), kv_samples_.end(), t,
                                   [](double time, const TraceKvSample& s) { return time < s.time_s; });
  if (it == kv_samples_.begin()) return std::nullopt;
  return *std::prev(it);
}

TraceCounts TraceTimeline::counts_at(double t) const {
  const auto it = std::upper_bound(count_changes_.begin(), count_changes_.end(), t,
                                   [](double time, const auto& change) { return time < change.first; });
  if (it == count_changes_.begin()) return {};
  return std::prev(it)->second;
}

size_t TraceTimeline::num_events_until(double t) const {
  return static_cast<size_t>(std::upper_bound(times_.begin(), times_.end(), t) - times_.begin());
}

std::pair<size_t, size_t> TraceTimeline::events_between(double t0, double t1) const {
  const auto first = std::lower_bound(times_.begin(), times_.end(), t0);
  const auto last = std::upper_bound(first, times_.end(), t1);
  return {static_cast<size_t>(first - times_.begin()), static_cast<size_t>(std::max(first, last) - times_.begin())};
}

std::pair<size_t, size_t> TraceTimeline::events_around(double t, size_t before, size_t after) const {
  const size_t until = num_events_until(t);
  return {until - std::min(until, before), std::min(events_.size(), until + after)};
}

}  // namespace kvscope::ui
