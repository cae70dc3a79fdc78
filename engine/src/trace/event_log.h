// EventLog: the engine's record of what it did (admissions, cache hits,
// copy-on-write, preemptions, ...), for the inspector's trace panel and for
// Chrome-trace export (chrome_trace.h).
//
// Off by default. When disabled, record() is one predictable branch and does
// nothing else, so the engine can call it unconditionally on the hot path.
// When enabled it keeps at most capacity() events in a ring: a long session
// drops its oldest events (counted in num_dropped()) instead of growing
// without bound.
//
// Not synchronised: record() and take() are called on the thread that runs
// Engine::step(); the engine hands the taken events to other threads by value.
//
// Tested by tests/engine/trace/event_log_test.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kvscope/engine_event.h"

namespace kvscope {

inline constexpr int kNumEngineEventTypes = static_cast<int>(EngineEventType::RankForward) + 1;

// Inverse of engine_event_type_name(); nullopt for a name no type has.
std::optional<EngineEventType> engine_event_type_from_name(std::string_view name);

class EventLog {
 public:
  // 1M events of 48 bytes: ~48 MiB at most, many minutes of a busy engine.
  static constexpr size_t kDefaultCapacity = size_t{1} << 20;

  // Precondition: capacity > 0. Times are measured from construction.
  explicit EventLog(size_t capacity = kDefaultCapacity);

  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }

  // Appends one event stamped with now_s(); does nothing while disabled.
  void record(EngineEventType type, RequestId request, int32_t index, int64_t value = 0,
              int64_t value2 = 0) {
    if (!enabled_) return;
    append(type, request, index, value, value2);
  }

  // Appends one event stamped with `time_s` (a time of this log's clock,
  // seconds_at()) for something measured elsewhere, such as a rank's forward
  // pass on its own thread; does nothing while disabled.
  void record_at(double time_s, EngineEventType type, RequestId request, int32_t index, int64_t value = 0,
                 int64_t value2 = 0) {
    if (!enabled_) return;
    append_at(time_s, type, request, index, value, value2);
  }

  // The held events, oldest first; leaves the log empty (still enabled or not).
  std::vector<EngineEvent> take();

  size_t size() const { return events_.size(); }
  size_t capacity() const { return capacity_; }
  // Events overwritten because the ring was full, since construction.
  uint64_t num_dropped() const { return num_dropped_; }

  // Seconds since construction on the steady clock: the time base of the events.
  double now_s() const;
  // The same time base for a moment stamped earlier on the steady clock.
  double seconds_at(std::chrono::steady_clock::time_point t) const;

 private:
  void append(EngineEventType type, RequestId request, int32_t index, int64_t value, int64_t value2);
  void append_at(double time_s, EngineEventType type, RequestId request, int32_t index, int64_t value,
                 int64_t value2);

  std::chrono::steady_clock::time_point start_;
  size_t capacity_;
  bool enabled_ = false;
  // Grows to capacity_, then is a ring whose oldest element is at head_.
  std::vector<EngineEvent> events_;  // [min(recorded, capacity_)]
  size_t head_ = 0;
  uint64_t num_dropped_ = 0;
};

}  // namespace kvscope
