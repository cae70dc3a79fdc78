#include "kvscope/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "trace/event_log.h"

namespace kvscope {
namespace {

using json = nlohmann::json;

constexpr int kPid = 1;
constexpr int kEngineTid = 1;
// Tensor parallelism: rank r's forward passes are on thread kRankTidBase + r
// ("rank r"), for ranks below kMaxRankLanes (a larger one is a garbled log).
constexpr int kRankTidBase = 10;
constexpr int64_t kMaxRankLanes = 64;

double to_us(double seconds) { return seconds * 1e6; }

// The verbatim EngineEvent, as read_chrome_trace() expects it.
json raw_record(const EngineEvent& e, size_t seq) {
  return json{{"seq", seq},         {"type", engine_event_type_name(e.type)},
              {"request", e.request}, {"index", e.index},
              {"value", e.value},   {"value2", e.value2},
              {"time", e.time_s}};
}

std::string request_name(RequestId request, int32_t index) {
  return index == 0 ? fmt::format("request {}", request) : fmt::format("request {}.{}", request, index);
}

// The step's display sums; a garbled log must not overflow them.
int64_t add_saturating(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

const char* finish_reason_of(int64_t value) {
  if (value < 0 || value > static_cast<int64_t>(FinishReason::Error)) return "unknown";
  return finish_reason_name(static_cast<FinishReason>(value));
}

// Builds the trace events in one pass over the log. Each output event keeps
// its timestamp and the seq of the log event that made it, the sort key.
class TraceBuilder {
 public:
  explicit TraceBuilder(const std::vector<EngineEvent>& events) : events_(events) {
    for (const EngineEvent& e : events) last_time_ = std::max(last_time_, e.time_s);
  }

  json build() {
    for (size_t seq = 0; seq < events_.size(); ++seq) add(events_[seq], seq);
    if (open_step_) close_step(*open_step_, last_time_, /*complete=*/false);
    size_t order = events_.size();
    for (const auto& [key, name] : open_spans_) {  // spans never finished in the log
      push(last_time_, order++,
           {{"ph", "e"}, {"cat", "request"}, {"name", name}, {"id", span_id(key.first, key.second)},
            {"args", {{"finish_reason", "unfinished"}}}});
    }
    std::stable_sort(out_.begin(), out_.end(), [](const Out& a, const Out& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.order < b.order;
    });

    json trace_events = json::array();
    trace_events.push_back(metadata("process_name", -1, "kvscope"));
    trace_events.push_back(metadata("thread_name", kEngineTid, "engine"));
    for (int64_t rank : rank_lanes_) {
      const int tid = kRankTidBase + static_cast<int>(rank);
      trace_events.push_back(metadata("thread_name", tid, fmt::format("rank {}", rank)));
      // The lanes below the engine's, in rank order.
      trace_events.push_back(
          {{"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", tid}}}});
    }
    for (Out& o : out_) trace_events.push_back(std::move(o.body));
    return json{{"traceEvents", std::move(trace_events)},
                {"displayTimeUnit", "ms"},
                {"otherData", {{"generator", "kvscope"}, {"num_events", events_.size()}}}};
  }

 private:
  struct Out {
    double ts;     // microseconds
    size_t order;  // seq of the log event that made it
    json body;
  };

  static std::string span_id(RequestId request, int32_t index) { return fmt::format("{}.{}", request, index); }

  static json metadata(const char* what, int tid, const std::string& name) {
    json m{{"ph", "M"}, {"pid", kPid}, {"name", what}, {"args", {{"name", name}}}};
    if (tid >= 0) m["tid"] = tid;
    return m;
  }

  size_t push(double time_s, size_t order, json body, int tid = kEngineTid) {
    body["pid"] = kPid;
    body["tid"] = tid;
    body["ts"] = to_us(time_s);
    out_.push_back({to_us(time_s), order, std::move(body)});
    return out_.size() - 1;
  }

  void push_instant(const EngineEvent& e, size_t seq, json args) {
    if (e.request != 0 || e.type == EngineEventType::Finish) {
      args["request"] = e.request;
      args["index"] = e.index;
    }
    args["kvscope"] = json::array({raw_record(e, seq)});
    push(e.time_s, seq,
         {{"ph", "i"}, {"s", "t"}, {"cat", "event"}, {"name", engine_event_type_name(e.type)},
          {"args", std::move(args)}});
  }

  void push_counter(double time_s, size_t seq, const char* name, json series) {
    // No "kvscope" record here: viewers plot every arg of a counter.
    push(time_s, seq, {{"ph", "C"}, {"name", name}, {"args", std::move(series)}});
  }

  void close_step(size_t at, double end_s, bool complete) {
    json& x = out_[at].body;
    x["dur"] = std::max(0.0, to_us(end_s) - out_[at].ts);
    if (!complete) x["args"]["incomplete"] = true;
    last_step_ = at;
    open_step_.reset();
  }

  // Schedule, Allocate and KvUsage records ride on the step they belong to
  // (the open one, else the last one); before any step, on an instant.
  bool attach_to_step(const EngineEvent& e, size_t seq) {
    const std::optional<size_t> step = open_step_ ? open_step_ : last_step_;
    if (!step) return false;
    json& args = out_[*step].body["args"];
    if (e.type == EngineEventType::Schedule) {
      args["scheduled"] = args["scheduled"].get<int64_t>() + 1;
      args["scheduled_rows"] = add_saturating(args["scheduled_rows"].get<int64_t>(), e.value);
    } else if (e.type == EngineEventType::Allocate) {
      args["allocated_blocks"] = add_saturating(args["allocated_blocks"].get<int64_t>(), e.value);
    }
    args["kvscope"].push_back(raw_record(e, seq));
    return true;
  }

  void add(const EngineEvent& e, size_t seq) {
    switch (e.type) {
      case EngineEventType::StepBegin:
        if (open_step_) close_step(*open_step_, e.time_s, /*complete=*/false);  // StepEnd missing
        open_step_ = push(e.time_s, seq,
                          {{"ph", "X"}, {"cat", "step"}, {"name", fmt::format("step {}", e.value)},
                           {"dur", 0.0},
                           {"args", {{"step", e.value}, {"scheduled", 0}, {"scheduled_rows", 0},
                                     {"allocated_blocks", 0}, {"kvscope", json::array({raw_record(e, seq)})}}}});
        return;
      case EngineEventType::StepEnd:
        push_counter(e.time_s, seq, "batch", {{"tokens", e.value}, {"seqs", e.value2}});
        if (open_step_) {
          json& args = out_[*open_step_].body["args"];
          args["tokens"] = e.value;
          args["seqs"] = e.value2;
          args["kvscope"].push_back(raw_record(e, seq));
          close_step(*open_step_, e.time_s, /*complete=*/true);
        } else {
          push_instant(e, seq, {{"tokens", e.value}, {"seqs", e.value2}});
        }
        return;
      case EngineEventType::Admit: {
        const auto key = std::make_pair(e.request, e.index);
        if (open_spans_.count(key)) {  // admitted again after a preemption
          push_instant(e, seq, {{"prompt_tokens", e.value}});
          return;
        }
        const std::string name = request_name(e.request, e.index);
        open_spans_.emplace(key, name);
        push(e.time_s, seq,
             {{"ph", "b"}, {"cat", "request"}, {"name", name}, {"id", span_id(e.request, e.index)},
              {"args", {{"prompt_tokens", e.value}, {"kvscope", json::array({raw_record(e, seq)})}}}});
        return;
      }
      case EngineEventType::Finish: {
        const char* reason = finish_reason_of(e.value);
        push_instant(e, seq, {{"reason", reason}});
        const auto span = open_spans_.find(std::make_pair(e.request, e.index));
        if (span == open_spans_.end()) return;
        push(e.time_s, seq,
             {{"ph", "e"}, {"cat", "request"}, {"name", span->second}, {"id", span_id(e.request, e.index)},
              {"args", {{"finish_reason", reason}}}});
        open_spans_.erase(span);
        return;
      }
      case EngineEventType::CacheHit: push_instant(e, seq, {{"tokens", e.value}}); return;
      case EngineEventType::CopyOnWrite:
        push_instant(e, seq, {{"src_block", e.value}, {"new_block", e.value2}});
        return;
      case EngineEventType::Preempt:
        push_instant(e, seq, {{"mode", e.value == 1 ? "swap" : "recompute"}});
        return;
      case EngineEventType::SwapOut:
      case EngineEventType::SwapIn: push_instant(e, seq, {{"blocks", e.value}}); return;
      case EngineEventType::Evict: push_instant(e, seq, {{"block", e.value}}); return;
      case EngineEventType::KvUsage:
        push_counter(e.time_s, seq, "KV blocks", {{"used", e.value}, {"cached_free", e.value2}});
        if (!attach_to_step(e, seq)) push_instant(e, seq, {{"used", e.value}, {"cached_free", e.value2}});
        return;
      case EngineEventType::Cascade:
        push_instant(e, seq, {{"shared_tokens", e.value}, {"seqs", e.value2}});
        return;
      case EngineEventType::Verify:
        push_instant(e, seq, {{"accepted", e.value}, {"drafted", e.value2}});
        return;
      case EngineEventType::Schedule:
      case EngineEventType::Allocate:
        if (!attach_to_step(e, seq)) push_instant(e, seq, {{"value", e.value}});
        return;
      case EngineEventType::RankForward:
        if (e.value < 0 || e.value >= kMaxRankLanes) {
          push_instant(e, seq, {{"rank", e.value}, {"duration_ns", e.value2}});
          return;
        }
        // On the rank's own lane, as long as its own pass took.
        rank_lanes_.insert(e.value);
        push(e.time_s, seq,
             {{"ph", "X"}, {"cat", "rank"}, {"name", "forward"},
              {"dur", std::max<double>(0.0, static_cast<double>(e.value2) / 1e3)},
              {"args", {{"rank", e.value}, {"kvscope", json::array({raw_record(e, seq)})}}}},
             kRankTidBase + static_cast<int>(e.value));
        return;
    }
    push_instant(e, seq, {});  // a type added to the enum but not yet here
  }

  const std::vector<EngineEvent>& events_;
  double last_time_ = 0.0;
  std::vector<Out> out_;
  std::optional<size_t> open_step_;  // index in out_ of the step's "X"
  std::optional<size_t> last_step_;
  std::map<std::pair<RequestId, int32_t>, std::string> open_spans_;  // (request, index) -> span name
  std::set<int64_t> rank_lanes_;  // ranks that had a forward pass in the log
};

// One "kvscope" record back into an event; an error says which field is wrong.
Result<std::pair<uint64_t, EngineEvent>> parse_record(const json& r) {
  if (!r.is_object()) return Error{"not an object"};
  auto field = [&](const char* name) -> const json* {
    const auto it = r.find(name);
    return it == r.end() ? nullptr : &*it;
  };
  auto integer = [&](const char* name, int64_t lo, int64_t hi) -> Result<int64_t> {
    const json* f = field(name);
    if (!f || !f->is_number_integer()) return Error{fmt::format("\"{}\" is missing or not an integer", name)};
    if (f->is_number_unsigned() && f->get<uint64_t>() > static_cast<uint64_t>(hi))
      return Error{fmt::format("\"{}\" = {} is out of range", name, f->get<uint64_t>())};
    const int64_t v = f->get<int64_t>();
    if (v < lo || v > hi) return Error{fmt::format("\"{}\" = {} is out of range", name, v)};
    return v;
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

  const json* seq = field("seq");
  if (!seq || !seq->is_number_unsigned()) return Error{"\"seq\" is missing or not a non-negative integer"};
  const json* type = field("type");
  if (!type || !type->is_string()) return Error{"\"type\" is missing or not a string"};
  const std::optional<EngineEventType> t = engine_event_type_from_name(type->get_ref<const std::string&>());
  if (!t) return Error{fmt::format("unknown event type \"{}\"", type->get_ref<const std::string&>())};
  const json* request = field("request");
  if (!request || !request->is_number_unsigned())
    return Error{"\"request\" is missing or not a non-negative integer"};
  const json* time = field("time");
  if (!time || !time->is_number()) return Error{"\"time\" is missing or not a number"};
  auto index = integer("index", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  if (!index) return Error{index.error()};
  auto value = integer("value", kMin, kMax);
  if (!value) return Error{value.error()};
  auto value2 = integer("value2", kMin, kMax);
  if (!value2) return Error{value2.error()};

  EngineEvent e;
  e.time_s = time->get<double>();
  e.type = *t;
  e.request = request->get<uint64_t>();
  e.index = static_cast<int32_t>(*index);
  e.value = *value;
  e.value2 = *value2;
  return std::make_pair(seq->get<uint64_t>(), e);
}

}  // namespace

std::string to_chrome_trace_json(const std::vector<EngineEvent>& events) {
  return TraceBuilder(events).build().dump();
}

Status write_chrome_trace(const std::vector<EngineEvent>& events, const std::string& path) {
  const std::string text = to_chrome_trace_json(events);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error{fmt::format("cannot write trace to {}: {}", path, std::strerror(errno))};
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Error{fmt::format("writing trace to {} failed: {}", path, std::strerror(errno))};
  return Status::success();
}

Result<std::vector<EngineEvent>> parse_chrome_trace(const std::string& json_text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    // The library's own prefix ("[json.exception.parse_error.101] ") means
    // nothing to a user; the rest says where and what.
    std::string what = e.what();
    if (const size_t end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && end != std::string::npos) {
      what = what.substr(end + 2);
    }
    return Error{fmt::format("{} is not JSON ({}): not a trace file, or a damaged one", source, what)};
  }
  // The format allows a bare array of events as well as {"traceEvents": [...]}.
  const json* trace_events = nullptr;
  if (doc.is_array()) {
    trace_events = &doc;
  } else if (doc.is_object()) {
    const auto it = doc.find("traceEvents");
    if (it != doc.end() && it->is_array()) trace_events = &*it;
  }
  if (!trace_events) return Error{fmt::format("{} is not a Chrome trace: it has no \"traceEvents\" array", source)};

  std::vector<std::pair<uint64_t, EngineEvent>> records;
  for (size_t i = 0; i < trace_events->size(); ++i) {
    const json& te = (*trace_events)[i];
    if (!te.is_object()) continue;
    const auto args = te.find("args");
    if (args == te.end() || !args->is_object()) continue;
    const auto raw = args->find("kvscope");
    if (raw == args->end()) continue;
    if (!raw->is_array()) return Error{fmt::format("{}: trace event {}: \"kvscope\" is not an array", source, i)};
    for (size_t j = 0; j < raw->size(); ++j) {
      auto record = parse_record((*raw)[j]);
      if (!record) return Error{fmt::format("{}: trace event {}, kvscope record {}: {}", source, i, j, record.error())};
      records.push_back(std::move(*record));
    }
  }
  if (records.empty())
    return Error{fmt::format("{} holds no kvscope events (not written by kvscope, or the event log was empty)", source)};

  std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<EngineEvent> events;
  events.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0 && records[i].first == records[i - 1].first)
      return Error{fmt::format("{}: kvscope event seq {} appears twice", source, records[i].first)};
    events.push_back(records[i].second);
  }
  return events;
}

Result<std::vector<EngineEvent>> read_chrome_trace(const std::string& path) {
  // An ifstream opens a directory without complaint and reads nothing,
  // which would be reported as "not JSON".
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Error{fmt::format("{} is a directory, not a trace file", path)};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("cannot open trace {}: {}", path, std::strerror(errno))};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error{fmt::format("reading trace {} failed: {}", path, std::strerror(errno))};
  return parse_chrome_trace(text.str(), path);
}

}  // namespace kvscope
