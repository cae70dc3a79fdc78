// Tensor parallelism through the engine on a tiny random model (label unit):
// with tp_reduce = deterministic every logit of every request is bitwise the
// same at tp = 1, 2 and 4, with cascade attention on and off, one request at
// a time and nine at once, under swap preemption, and across a reconfigure
// that changes tp mid-run; a tp the model cannot split is refused at load.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "kvscope/engine.h"
#include "kvscope/invariance_check.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

using Logits = std::map<std::pair<RequestId, int32_t>, std::vector<float>>;

// What a run did besides its logits, so a test can check its condition held.
struct Happened {
  int64_t cascade_seqs = 0;
  int64_t swapped_in_blocks = 0;
};

struct TpRun {
  int32_t tp = 1;
  CascadeMode cascade = CascadeMode::Off;
  int32_t num_requests = 9;
  int32_t concurrency = 1;  // requests in flight together
  bool swap = false;        // a pool too small for all: preemption by swap
  int32_t reconfigure_to_tp = 0;  // > 0: reconfigure to this tp after a few steps
};

// r.num_requests requests sharing a 70-token prefix, each with its own tail.
Logits run(const std::string& model, const TpRun& r, Happened* happened = nullptr) {
  EngineConfig c;
  c.model_path = model;
  c.num_threads = 2;
  c.block_size = 16;
  c.tp = r.tp;
  c.tp_reduce = TpReduce::Deterministic;
  c.cascade = r.cascade;
  if (r.swap) {
    // Prompts of 5 blocks growing into a 6th: two fit, and then they do not.
    c.num_blocks = 11;
    c.prefix_caching = false;
    c.preemption = PreemptionMode::Swap;
  }
  auto created = Engine::create(c);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  if (!created.ok()) return {};
  Engine& engine = **created;
  Logits logits;
  std::vector<int32_t> prefix;
  for (int32_t i = 0; i < 70; ++i) prefix.push_back(3 + (i * 37) % 250);
  int32_t steps = 0;
  auto drain = [&] {
    while (engine.has_work()) {
      engine.step();
      if (happened) happened->cascade_seqs += engine.last_step_stats().num_cascade_seqs;
      if (++steps == 4 && r.reconfigure_to_tp > 0) {
        EngineConfig next = engine.config();
        next.tp = r.reconfigure_to_tp;
        const Status s = engine.reconfigure(next);
        EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
      }
    }
  };
  for (int32_t i = 0; i < r.num_requests; ++i) {
    GenerationRequest req;
    req.prompt_tokens = prefix;
    for (int32_t t = 0; t <= i % 4; ++t) req.prompt_tokens.push_back(10 + i * 5 + t);
    req.sampling.temperature = 0.0f;
    req.sampling.ignore_eos = true;
    req.sampling.max_tokens = 10;
    const RequestId id = i + 1;  // the engine numbers requests from 1 in submission order
    req.on_logits = [&logits, id](int32_t index, int32_t, const float* l, int32_t vocab) {
      auto& v = logits[{id, index}];
      v.insert(v.end(), l, l + vocab);
    };
    auto got = engine.submit(std::move(req));
    EXPECT_TRUE(got.ok());
    if (got.ok()) {
      EXPECT_EQ(*got, id);
    }
    if ((i + 1) % r.concurrency == 0) drain();
  }
  drain();
  if (happened) happened->swapped_in_blocks = engine.kv_stats().num_swapped_in_blocks;
  return logits;
}

void expect_same(const Logits& a, const Logits& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [key, values] : a) {
    const auto it = b.find(key);
    ASSERT_NE(it, b.end()) << what;
    ASSERT_EQ(values.size(), it->second.size()) << what;
    EXPECT_EQ(0, std::memcmp(values.data(), it->second.data(), values.size() * sizeof(float)))
        << what << ", request " << key.first;
  }
}

class TensorParallelEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::tiny_model_temp_path("tp_engine");
    const test::TinyModelSpec spec = test::tensor_parallel_tiny_spec(TensorType::Q8_0);
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

// The grid: tp 1/2/4 x cascade off/on x concurrency 1 and 32, all
// against tp 1 run one request at a time.
TEST_F(TensorParallelEngineTest, DeterministicLogitsAreTheSameAtEveryTp) {
  TpRun base;
  base.num_requests = 32;
  const Logits reference = run(path_, base);
  ASSERT_EQ(reference.size(), 32u);
  for (int32_t concurrency : {1, 32}) {
    for (CascadeMode cascade : {CascadeMode::Off, CascadeMode::On}) {
      for (int32_t tp : {1, 2, 4}) {
        TpRun r = base;
        r.tp = tp;
        r.cascade = cascade;
        r.concurrency = concurrency;
        Happened happened;
        const Logits got = run(path_, r, &happened);
        if (cascade == CascadeMode::On && concurrency > 1) {
          EXPECT_GT(happened.cascade_seqs, 0) << "the shared prefix had no cascade pass";
        }
        expect_same(reference, got,
                    "tp " + std::to_string(tp) + " cascade " + cascade_mode_name(cascade) + " concurrency " +
                        std::to_string(concurrency));
      }
    }
  }
}

// Swapped-out blocks carry every rank's KV heads (one storage, a layer per head slot).
TEST_F(TensorParallelEngineTest, SwapPreemptionKeepsEveryRanksKv) {
  const Logits reference = run(path_, TpRun{});
  TpRun r;
  r.tp = 2;
  r.concurrency = 9;
  r.swap = true;
  Happened happened;
  const Logits got = run(path_, r, &happened);
  EXPECT_GT(happened.swapped_in_blocks, 0) << "nothing was swapped";
  expect_same(reference, got, "tp 2 with swap");
}

TEST_F(TensorParallelEngineTest, ReconfigureChangesTpMidRun) {
  const Logits reference = run(path_, TpRun{});
  TpRun r;
  r.concurrency = 9;
  r.reconfigure_to_tp = 2;
  expect_same(reference, run(path_, r), "tp 1 -> 2");
  r.tp = 4;
  r.reconfigure_to_tp = 1;
  expect_same(reference, run(path_, r), "tp 4 -> 1");
}

// The invariance checker takes tp and tp_reduce like any setting-table key.
TEST_F(TensorParallelEngineTest, InvarianceCheckerComparesTpVariants) {
  EngineConfig base;
  base.model_path = path_;
  base.num_threads = 2;
  auto a = parse_invariance_side("tp=1,tp_reduce=deterministic", base);
  auto b = parse_invariance_side("tp=4,tp_reduce=deterministic,cascade=on,concurrency=8", base);
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->config.tp, 4);
  InvarianceOptions options;
  options.max_tokens = 12;
  auto report = check_invariance(*a, *b, std::vector<std::string>{"hello there, hello there", "a b c d e f g"}, options);
  ASSERT_TRUE(report.ok()) << report.error();
  for (const PromptVerdict& v : report->prompts) {
    EXPECT_TRUE(v.identical) << v.prompt;
    EXPECT_TRUE(v.logits_identical) << v.prompt;
  }
  // Fast at tp = 2 against tp = 1 runs too; its logits may drift (reported, not asserted).
  auto fast = parse_invariance_side("tp=2", base);
  ASSERT_TRUE(fast.ok()) << fast.error();
  auto fast_report = check_invariance(*parse_invariance_side("", base), *fast, {"hello there"}, options);
  ASSERT_TRUE(fast_report.ok()) << fast_report.error();
  std::printf("fast tp 2 vs tp 1 on the tiny model: max logit drift %g\n", fast_report->prompts[0].max_logit_diff);
}

TEST(TensorParallelEngineRefusal, TpTheModelCannotSplitIsRefusedAtLoad) {
  const std::string path = test::tiny_model_temp_path("tp_engine_refuse");
  test::TinyModelSpec spec;  // 4 heads: tp 8 cannot give each rank a head
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  EngineConfig c;
  c.model_path = path;
  c.tp = 8;
  auto created = Engine::create(c);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.error().find("tp = 8"), std::string::npos) << created.error();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kvscope
