#include "trace/event_log.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace kvscope {

const char* engine_event_type_name(EngineEventType type) {
  switch (type) {
    case EngineEventType::StepBegin: return "step_begin";
    case EngineEventType::StepEnd: return "step_end";
    case EngineEventType::Admit: return "admit";
    case EngineEventType::Schedule: return "schedule";
    case EngineEventType::Allocate: return "allocate";
    case EngineEventType::CacheHit: return "cache_hit";
    case EngineEventType::CopyOnWrite: return "copy_on_write";
    case EngineEventType::Preempt: return "preempt";
    case EngineEventType::SwapOut: return "swap_out";
    case EngineEventType::SwapIn: return "swap_in";
    case EngineEventType::Evict: return "evict";
    case EngineEventType::Finish: return "finish";
    case EngineEventType::KvUsage: return "kv_usage";
    case EngineEventType::Cascade: return "cascade";
    case EngineEventType::Verify: return "verify";
    case EngineEventType::RankForward: return "rank_forward";
  }
  return "unknown";
}

std::optional<EngineEventType> engine_event_type_from_name(std::string_view name) {
  for (int i = 0; i < kNumEngineEventTypes; ++i) {
    const auto type = static_cast<EngineEventType>(i);
    if (name == engine_event_type_name(type)) return type;
  }
  return std::nullopt;
}

EventLog::EventLog(size_t capacity) : start_(std::chrono::steady_clock::now()), capacity_(capacity) {
  assert(capacity > 0 && "an event log must hold at least one event");
}

double EventLog::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double EventLog::seconds_at(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double>(t - start_).count();
}

void EventLog::append(EngineEventType type, RequestId request, int32_t index, int64_t value,
                      int64_t value2) {
  append_at(now_s(), type, request, index, value, value2);
}

void EventLog::append_at(double time_s, EngineEventType type, RequestId request, int32_t index, int64_t value,
                         int64_t value2) {
  const EngineEvent event{time_s, type, request, index, value, value2};
  if (events_.size() < capacity_) {
    events_.push_back(event);
    return;
  }
  // Full: overwrite the oldest event and move the head past it.
  events_[head_] = event;
  head_ = (head_ + 1) % capacity_;
  ++num_dropped_;
}

std::vector<EngineEvent> EventLog::take() {
  std::vector<EngineEvent> out = std::move(events_);
  events_ = {};
  std::rotate(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(head_), out.end());
  head_ = 0;
  return out;
}

}  // namespace kvscope
