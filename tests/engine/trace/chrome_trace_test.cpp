// Chrome-trace export: valid JSON in the shape Perfetto / chrome://tracing
// read (balanced async spans, ordered steps, counters, time-sorted events),
// and an exact write -> read round trip; bad input gives errors, not crashes.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kvscope/chrome_trace.h"
#include "trace/event_log.h"

namespace kvscope {
namespace {

using json = nlohmann::json;
using T = EngineEventType;

// Three steps of a small session: request 1 (preempted by swap, admitted
// again, finishes), request 2 with n = 2 (index 0 finishes, index 1 never
// does), plus events outside any step.
std::vector<EngineEvent> session() {
  std::vector<EngineEvent> ev;
  double t = 0.001;
  auto add = [&](T type, RequestId request, int32_t index, int64_t value = 0, int64_t value2 = 0) {
    ev.push_back({t, type, request, index, value, value2});
    t += 0.000137;
  };
  add(T::Schedule, 9, 0, 1);  // before any step
  add(T::StepBegin, 0, 0, 0);
  add(T::Admit, 1, 0, 12);
  add(T::Admit, 2, 0, 40);
  add(T::Admit, 2, 1, 40);
  add(T::CacheHit, 2, 0, 32);
  add(T::Schedule, 1, 0, 12);
  add(T::Schedule, 2, 0, 8);
  add(T::Schedule, 2, 1, 8);
  add(T::Allocate, 1, 0, 1);
  add(T::KvUsage, 0, 0, 6, 2);
  add(T::StepEnd, 0, 0, 28, 3);
  add(T::KvUsage, 0, 0, 6, 2);  // after the step: rides on the last step
  add(T::StepBegin, 0, 0, 1);
  add(T::CopyOnWrite, 2, 1, 4, 7);
  add(T::Preempt, 1, 0, 1);
  add(T::SwapOut, 1, 0, 1);
  add(T::Evict, 0, 0, 5);
  add(T::Schedule, 2, 0, 1);
  add(T::StepEnd, 0, 0, 2, 2);
  add(T::StepBegin, 0, 0, 2);
  add(T::SwapIn, 1, 0, 1);
  add(T::Admit, 1, 0, 12);  // admitted again
  add(T::Finish, 2, 0, static_cast<int64_t>(FinishReason::Stop));
  add(T::Finish, 1, 0, static_cast<int64_t>(FinishReason::Length));
  add(T::KvUsage, 0, 0, 3, 4);
  add(T::StepEnd, 0, 0, 3, 3);
  return ev;
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "kvscope_trace_test_" + name; }

void expect_same(const std::vector<EngineEvent>& a, const std::vector<EngineEvent>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a[i].time_s, b[i].time_s);  // exact, not near
    EXPECT_EQ(a[i].type, b[i].type);
    EXPECT_EQ(a[i].request, b[i].request);
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].value, b[i].value);
    EXPECT_EQ(a[i].value2, b[i].value2);
  }
}

std::vector<json> with_phase(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}

TEST(ChromeTrace, IsValidJsonWithMetadata) {
  const json trace = json::parse(to_chrome_trace_json(session()));
  ASSERT_TRUE(trace.is_object());
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  bool engine_thread = false;
  for (const json& m : with_phase(trace, "M")) {
    EXPECT_EQ(m["pid"], 1);
    if (m["name"] == "thread_name" && m.value("tid", -1) == 1 && m["args"]["name"] == "engine") engine_thread = true;
  }
  EXPECT_TRUE(engine_thread);
  for (const json& e : trace["traceEvents"]) {
    EXPECT_EQ(e["pid"], 1);
    if (e["ph"] != "M") {
      EXPECT_TRUE(e.contains("ts") && e["ts"].is_number()) << e.dump();
    }
  }
}

TEST(ChromeTrace, EventsAreSortedByTimestamp) {
  const json trace = json::parse(to_chrome_trace_json(session()));
  double last = -1.0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M") continue;
    EXPECT_GE(e["ts"].get<double>(), last) << e.dump();
    last = e["ts"].get<double>();
  }
}

TEST(ChromeTrace, EveryAsyncBeginHasAMatchingEnd) {
  const std::vector<EngineEvent> events = session();
  const json trace = json::parse(to_chrome_trace_json(events));
  std::map<std::string, json> open;  // id -> its "b"
  std::set<std::string> spans;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "b") {
      const std::string id = e["id"];
      EXPECT_EQ(e["cat"], "request");
      EXPECT_FALSE(open.count(id)) << "span " << id << " begun twice";
      open[id] = e;
      spans.insert(id);
    } else if (e["ph"] == "e") {
      const std::string id = e["id"];
      ASSERT_TRUE(open.count(id)) << "end without begin: " << e.dump();
      EXPECT_EQ(open[id]["name"], e["name"]);
      EXPECT_EQ(open[id]["cat"], e["cat"]);
      EXPECT_GE(e["ts"].get<double>(), open[id]["ts"].get<double>());
      open.erase(id);
    }
  }
  EXPECT_TRUE(open.empty());
  EXPECT_EQ(spans, (std::set<std::string>{"1.0", "2.0", "2.1"}));

  // Request 2.1 never finished: its span closes at the last timestamp.
  for (const json& e : with_phase(trace, "e")) {
    if (e["id"] == "2.1") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), events.back().time_s * 1e6);
      EXPECT_EQ(e["name"], "request 2.1");
    }
    if (e["id"] == "1.0") {
      EXPECT_EQ(e["args"]["finish_reason"], "length");
    }
  }
}

TEST(ChromeTrace, StepsAreOrderedCompleteEvents) {
  const json trace = json::parse(to_chrome_trace_json(session()));
  const std::vector<json> steps = with_phase(trace, "X");
  ASSERT_EQ(steps.size(), 3u);
  double end_of_last = -1.0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& x = steps[i];
    EXPECT_EQ(x["tid"], 1);
    EXPECT_GE(x["dur"].get<double>(), 0.0);
    EXPECT_GE(x["ts"].get<double>(), end_of_last);
    end_of_last = x["ts"].get<double>() + x["dur"].get<double>();
    EXPECT_EQ(x["args"]["step"], i);
    EXPECT_TRUE(x["args"].contains("tokens"));
    EXPECT_TRUE(x["args"].contains("seqs"));
  }
  EXPECT_EQ(steps[0]["args"]["tokens"], 28);
  EXPECT_EQ(steps[0]["args"]["seqs"], 3);
  EXPECT_EQ(steps[0]["args"]["scheduled"], 3);
  EXPECT_EQ(steps[0]["args"]["scheduled_rows"], 28);
  EXPECT_EQ(steps[0]["args"]["allocated_blocks"], 1);
}

TEST(ChromeTrace, HasCountersAndInstants) {
  const json trace = json::parse(to_chrome_trace_json(session()));
  int kv = 0, batch = 0;
  for (const json& c : with_phase(trace, "C")) {
    EXPECT_FALSE(c["args"].contains("kvscope")) << "viewers would plot it";
    if (c["name"] == "KV blocks") {
      ++kv;
      EXPECT_TRUE(c["args"]["used"].is_number());
      EXPECT_TRUE(c["args"]["cached_free"].is_number());
    } else if (c["name"] == "batch") {
      ++batch;
      EXPECT_TRUE(c["args"]["tokens"].is_number());
      EXPECT_TRUE(c["args"]["seqs"].is_number());
    }
  }
  EXPECT_EQ(kv, 3);
  EXPECT_EQ(batch, 3);

  std::set<std::string> instants;
  for (const json& i : with_phase(trace, "i")) {
    EXPECT_EQ(i["s"], "t");
    instants.insert(i["name"].get<std::string>());
  }
  for (const char* name : {"cache_hit", "copy_on_write", "preempt", "swap_out", "swap_in", "evict", "finish"})
    EXPECT_TRUE(instants.count(name)) << name;
  EXPECT_FALSE(instants.count("kv_usage"));  // in-step usage rides on the step
}

// Tensor parallelism: each rank's forward pass is a span on its own lane
// (tid 10 + rank, named "rank r"), as long as the rank's own measured time.
TEST(ChromeTrace, RankForwardsHaveALanePerRank) {
  const std::vector<EngineEvent> events = {
      {0.010, T::StepBegin, 0, 0, 0, 0},
      {0.011, T::RankForward, 0, 0, 0, 2'000'000},   // rank 0: 2 ms
      {0.0112, T::RankForward, 0, 0, 1, 1'500'000},  // rank 1: 1.5 ms
      {0.014, T::StepEnd, 0, 0, 3, 1},
      {0.015, T::RankForward, 0, 0, 99, 5},  // a rank no tp has: an instant, not a lane
  };
  const json trace = json::parse(to_chrome_trace_json(events));
  std::map<int, json> spans;
  for (const json& x : with_phase(trace, "X")) {
    if (x["cat"] == "rank") spans[x["tid"].get<int>()] = x;
  }
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_DOUBLE_EQ(spans[10]["ts"].get<double>(), 11000.0);
  EXPECT_DOUBLE_EQ(spans[10]["dur"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(spans[11]["ts"].get<double>(), 11200.0);
  EXPECT_DOUBLE_EQ(spans[11]["dur"].get<double>(), 1500.0);
  EXPECT_EQ(spans[11]["name"], "forward");
  EXPECT_EQ(spans[11]["args"]["rank"], 1);
  std::map<int, std::string> names;
  for (const json& m : with_phase(trace, "M")) {
    if (m["name"] == "thread_name") names[m["tid"].get<int>()] = m["args"]["name"];
  }
  EXPECT_EQ(names[10], "rank 0");
  EXPECT_EQ(names[11], "rank 1");
  EXPECT_FALSE(names.count(10 + 99));
  bool instant = false;
  for (const json& i : with_phase(trace, "i")) instant |= i["name"] == "rank_forward" && i["tid"] == 1;
  EXPECT_TRUE(instant);
  auto back = parse_chrome_trace(trace.dump());
  ASSERT_TRUE(back.ok()) << back.error();
  expect_same(events, *back);
}

TEST(ChromeTrace, WriteThenReadIsExact) {
  const std::vector<EngineEvent> events = session();
  const std::string path = temp_path("session.json");
  ASSERT_TRUE(write_chrome_trace(events, path).ok());
  auto back = read_chrome_trace(path);
  ASSERT_TRUE(back.ok()) << back.error();
  expect_same(events, *back);
  std::remove(path.c_str());
}

TEST(ChromeTrace, RoundTripIsExactForArbitraryEvents) {
  // Random types in any order (steps unbalanced, finishes without admits),
  // awkward doubles and extreme integers.
  std::mt19937_64 rng(42);
  std::vector<EngineEvent> events;
  double t = 0.0;
  for (int i = 0; i < 2000; ++i) {
    EngineEvent e;
    t += std::uniform_real_distribution<double>(0.0, 1e-3)(rng);
    e.time_s = (i % 97 == 0) ? t * (1.0 + 1e-15) : t;
    e.type = static_cast<T>(rng() % kNumEngineEventTypes);
    e.request = (i % 13 == 0) ? std::numeric_limits<RequestId>::max() : rng() % 5;
    e.index = (i % 17 == 0) ? std::numeric_limits<int32_t>::min() : static_cast<int32_t>(rng() % 3);
    e.value = (i % 11 == 0) ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(rng() % 100);
    e.value2 = (i % 7 == 0) ? std::numeric_limits<int64_t>::max() : -static_cast<int64_t>(rng() % 100);
    events.push_back(e);
  }
  auto back = parse_chrome_trace(to_chrome_trace_json(events));
  ASSERT_TRUE(back.ok()) << back.error();
  expect_same(events, *back);
}

TEST(ChromeTrace, EmptyLogIsAValidTraceButNotReadable) {
  const std::string text = to_chrome_trace_json({});
  const json trace = json::parse(text);
  EXPECT_TRUE(trace["traceEvents"].is_array());
  auto back = parse_chrome_trace(text, "empty.json");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().find("no kvscope events"), std::string::npos) << back.error();
}

TEST(ChromeTrace, ReadingBadInputGivesErrors) {
  auto missing = read_chrome_trace(temp_path("does_not_exist.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot open"), std::string::npos) << missing.error();
  // A directory opens as an empty stream: it was called "not JSON".
  const std::string dir = temp_path("a_directory.json");
  std::filesystem::create_directories(dir);
  auto directory = read_chrome_trace(dir);
  std::filesystem::remove(dir);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.error().find("is a directory, not a trace file"), std::string::npos) << directory.error();

  const std::string garbage = temp_path("garbage.json");
  std::ofstream(garbage) << "\x01\x02 this is not { json";
  auto not_json = read_chrome_trace(garbage);
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.error().find("not JSON (parse error at line 1"), std::string::npos) << not_json.error();
  EXPECT_EQ(not_json.error().find("json.exception"), std::string::npos) << "the library's id is not the user's";
  std::remove(garbage.c_str());

  struct Case {
    const char* text;
    const char* expect;
  };
  for (const Case& c : {
           Case{"", "not JSON"},
           Case{"{\"foo\": 1}", "traceEvents"},
           Case{"{\"traceEvents\": 3}", "traceEvents"},
           Case{"42", "traceEvents"},
           Case{R"({"traceEvents": [{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"x"}, 5, null]})",
                "no kvscope events"},
           Case{R"({"traceEvents": [{"ph":"i","args":{"kvscope": 7}}]})", "not an array"},
           Case{R"({"traceEvents": [{"ph":"i","args":{"kvscope": [{"seq":0,"type":"bogus","request":1,)"
                R"("index":0,"value":0,"value2":0,"time":0.5}]}}]})",
                "unknown event type"},
           Case{R"({"traceEvents": [{"ph":"i","args":{"kvscope": [{"seq":0,"type":"admit","request":-1,)"
                R"("index":0,"value":0,"value2":0,"time":0.5}]}}]})",
                "request"},
           Case{R"({"traceEvents": [{"ph":"i","args":{"kvscope": [{"seq":0,"type":"admit","request":1,)"
                R"("index":0,"value":9223372036854775808,"value2":0,"time":0.5}]}}]})",
                "out of range"},
           Case{R"({"traceEvents": [{"ph":"i","args":{"kvscope": [{"seq":0,"type":"admit","request":1,)"
                R"("index":0,"value":0,"value2":0,"time":"soon"}]}}]})",
                "time"},
       }) {
    auto r = parse_chrome_trace(c.text, "t.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().find(c.expect), std::string::npos) << c.text << " -> " << r.error();
  }
}

TEST(ChromeTrace, WriteToAnUnwritablePathFails) {
  const Status s = write_chrome_trace(session(), "/nonexistent_dir_kvscope/x.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("/nonexistent_dir_kvscope/x.json"), std::string::npos) << s.error();
}

}  // namespace
}  // namespace kvscope
