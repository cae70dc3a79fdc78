// A lane per rank in the trace (label unit): a tp = 2 engine's steps carry
// each rank's forward time (StepStats::rank_forward_s) and its event log
// one RankForward event per rank and step, which the Chrome trace shows as a
// "forward" span on the rank's own thread ("rank 0", "rank 1"), with
// non-negative durations; at tp = 1 there is no rank lane. The log's times
// never run backwards (the GUI's timeline relies on it).
//   ctest --test-dir build -R tensor_parallel_trace_test --output-on-failure
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kvscope/chrome_trace.h"
#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

using json = nlohmann::json;

struct Traced {
  std::vector<EngineEvent> events;
  std::vector<StepStats> steps;  // steps that ran a forward pass
};

Traced run_traced(const std::string& model, int32_t tp) {
  EngineConfig c;
  c.model_path = model;
  c.num_threads = 2;
  c.tp = tp;
  c.num_blocks = 16;
  c.max_batched_tokens = 64;
  auto created = Engine::create(c);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  if (!created.ok()) return {};
  Engine& engine = **created;
  engine.set_tracing(true);
  for (int32_t i = 0; i < 2; ++i) {
    GenerationRequest req;
    for (int32_t t = 0; t < 20; ++t) req.prompt_tokens.push_back(3 + (t * 31 + i * 7) % 250);
    req.sampling.temperature = 0.0f;
    req.sampling.ignore_eos = true;
    req.sampling.max_tokens = 4;
    EXPECT_TRUE(engine.submit(std::move(req)).ok());
  }
  Traced out;
  while (engine.has_work()) {
    engine.step();
    if (engine.last_step_stats().num_seqs > 0) out.steps.push_back(engine.last_step_stats());
  }
  out.events = engine.take_events();
  return out;
}

class TensorParallelTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::tiny_model_temp_path("tp_trace");
    test::TinyModelSpec spec;  // 4 heads over 2 KV heads: one group per rank at tp 2
    spec.heads = 4;
    spec.kv_heads = 2;
    spec.head_dim = 32;
    spec.hidden = 128;
    spec.ffn = 256;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(TensorParallelTraceTest, EachRankHasItsOwnLane) {
  const Traced t = run_traced(path_, 2);
  ASSERT_FALSE(t.steps.empty());
  for (const StepStats& s : t.steps) {
    ASSERT_EQ(s.num_ranks, 2);
    for (int32_t r = 0; r < 2; ++r) EXPECT_GE(s.rank_forward_s[static_cast<size_t>(r)], 0.0);
  }
  // Two RankForward events per forward pass, rank 0 and rank 1, and times in order.
  std::map<int64_t, int32_t> per_rank;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const EngineEvent& e = t.events[i];
    if (i > 0) {
      EXPECT_GE(e.time_s, t.events[i - 1].time_s) << "event " << i << " runs backwards";
    }
    if (e.type != EngineEventType::RankForward) continue;
    ++per_rank[e.value];
    EXPECT_GE(e.value2, 0);
  }
  ASSERT_EQ(per_rank.size(), 2u);
  EXPECT_EQ(per_rank[0], static_cast<int32_t>(t.steps.size()));
  EXPECT_EQ(per_rank[1], static_cast<int32_t>(t.steps.size()));

  const json trace = json::parse(to_chrome_trace_json(t.events));
  std::set<int> lanes;
  std::map<int, std::string> thread_names;
  std::map<int, int32_t> spans;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] != "X" || e["cat"] != "rank") continue;
    const int tid = e["tid"].get<int>();
    lanes.insert(tid);
    ++spans[tid];
    EXPECT_EQ(e["name"], "forward");
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_EQ(tid, 10 + e["args"]["rank"].get<int>());
  }
  EXPECT_EQ(lanes, (std::set<int>{10, 11}));
  EXPECT_EQ(thread_names[10], "rank 0");
  EXPECT_EQ(thread_names[11], "rank 1");
  EXPECT_EQ(spans[10], static_cast<int32_t>(t.steps.size()));
  EXPECT_EQ(spans[11], static_cast<int32_t>(t.steps.size()));
  // The export keeps every event for reading back.
  auto back = parse_chrome_trace(trace.dump());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->size(), t.events.size());
}

TEST_F(TensorParallelTraceTest, OneRankHasNoRankLane) {
  const Traced t = run_traced(path_, 1);
  ASSERT_FALSE(t.steps.empty());
  EXPECT_EQ(t.steps.front().num_ranks, 1);  // the one runner's forward time
  for (const EngineEvent& e : t.events) EXPECT_NE(e.type, EngineEventType::RankForward);
  const json trace = json::parse(to_chrome_trace_json(t.events));
  for (const json& e : trace["traceEvents"]) EXPECT_NE(e.value("cat", ""), "rank");
}

}  // namespace
}  // namespace kvscope
