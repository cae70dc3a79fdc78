// Invariance on the default model: greedy tokens are identical whatever the
// block size, prefill chunking, thread count, or which other requests share
// the batch (docs/architecture.md, "Invariance"). Label `model`: skipped without the model.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kvscope/engine.h"
#include "support/greedy.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

const std::vector<std::string> kPrompts = {
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village at the edge of a great forest, there lived an old "
    "clockmaker who had never once left the valley. Every morning he",
    "12345 + 67890 =",
};

std::unique_ptr<Engine> make_engine(EngineConfig config) {
  config.model_path = test::default_model_path();
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// Every prompt submitted at once (they share the batches); each one's greedy tokens.
std::vector<std::vector<int32_t>> generate_all(Engine& engine, const std::vector<std::string>& prompts,
                                               int32_t max_tokens) {
  std::vector<std::vector<int32_t>> ids;
  for (const std::string& p : prompts) ids.push_back(engine.tokenize(p, /*parse_special=*/true));
  return test::greedy_tokens(engine, ids, max_tokens);
}

class EngineEquivalence : public ::testing::Test {
 protected:
  void SetUp() override {
    KVSCOPE_REQUIRE_DATA(!test::default_model_path().empty(), test::TestData::kDefaultModel);
  }

  // Reference: each prompt alone, block size 16, whole prefill, 2 threads.
  const std::vector<std::vector<int32_t>>& reference() {
    static std::vector<std::vector<int32_t>> ref;
    if (ref.empty()) {
      EngineConfig c;
      c.num_threads = 2;
      for (const std::string& p : kPrompts) {
        auto engine = make_engine(c);
        ref.push_back(generate_all(*engine, {p}, kTokens)[0]);
      }
    }
    return ref;
  }
  static constexpr int32_t kTokens = 24;
};

// Block size 2048 holds each whole sequence in one block.
TEST_F(EngineEquivalence, BlockSizeDoesNotChangeTokens) {
  for (int32_t block_size : {1, 16, 256, 2048}) {
    EngineConfig c;
    c.num_threads = 2;
    c.block_size = block_size;
    c.max_seqs = 1;  // one at a time: isolates block size
    auto engine = make_engine(c);
    EXPECT_EQ(generate_all(*engine, kPrompts, kTokens), reference()) << "block size " << block_size;
  }
}

TEST_F(EngineEquivalence, BatchingChunkingAndThreadsDoNotChangeTokens) {
  struct Variant {
    const char* name;
    int32_t threads, max_batched_tokens, block_size;
  };
  for (const Variant v : {Variant{"batched, 1 thread", 1, 512, 16}, Variant{"batched, chunks of 7", 2, 7, 16},
                          Variant{"batched, chunks of 33, block 1", 2, 33, 1}}) {
    EngineConfig c;
    c.num_threads = v.threads;
    c.max_batched_tokens = v.max_batched_tokens;
    c.block_size = v.block_size;
    auto engine = make_engine(c);
    EXPECT_EQ(generate_all(*engine, kPrompts, kTokens), reference()) << v.name;
  }
}

TEST_F(EngineEquivalence, PreemptionContiguousAndPrefixHitsDoNotChangeTokens) {
  struct Variant {
    const char* name;
    int32_t num_blocks;
    PreemptionMode preemption;
    bool paged;
  };
  // 8 blocks of 16 slots: two of these requests at a time at most, so the
  // scheduler preempts; each still fits alone.
  for (const Variant v : {Variant{"preempt by recompute", 8, PreemptionMode::Recompute, true},
                          Variant{"preempt by swap", 8, PreemptionMode::Swap, true},
                          Variant{"contiguous", 0, PreemptionMode::Recompute, false}}) {
    EngineConfig c;
    c.num_threads = 2;
    c.num_blocks = v.num_blocks;
    c.preemption = v.preemption;
    c.paged = v.paged;
    auto engine = make_engine(c);
    EXPECT_EQ(generate_all(*engine, kPrompts, kTokens), reference()) << v.name;
    EXPECT_EQ(engine->kv_stats().num_used_blocks, 0) << v.name;
    if (v.num_blocks > 0) {
      EXPECT_GT(engine->kv_stats().num_preemptions, 0) << v.name;
    }
  }
  // A second pass over the same prompts is served from the prefix cache.
  EngineConfig c;
  c.num_threads = 2;
  auto engine = make_engine(c);
  generate_all(*engine, kPrompts, kTokens);
  EXPECT_EQ(generate_all(*engine, kPrompts, kTokens), reference()) << "prefix-cache hits";
  EXPECT_GT(engine->kv_stats().num_prefix_hit_tokens, 0);
}

// Reconfigured mid-run (block size, pool, paging, chunking): requests are
// recomputed in the new pool and continue with the same tokens.
TEST_F(EngineEquivalence, ReconfigureMidRunDoesNotChangeTokens) {
  EngineConfig c;
  c.num_threads = 2;
  auto engine = make_engine(c);
  ASSERT_NE(engine, nullptr);
  std::vector<std::vector<int32_t>> ids;
  for (const std::string& p : kPrompts) ids.push_back(engine->tokenize(p, /*parse_special=*/true));
  EngineConfig small_blocks = engine->config();
  small_blocks.block_size = 7;
  small_blocks.num_blocks = 40;  // preempts: the four need more at once
  small_blocks.max_batched_tokens = 13;
  EngineConfig contiguous = engine->config();
  contiguous.paged = false;
  for (const EngineConfig& after : {small_blocks, contiguous}) {
    const auto tokens = test::greedy_tokens(*engine, ids, kTokens, [&] {
      for (int i = 0; i < 6; ++i) engine->step();
      const Status s = engine->reconfigure(after);
      EXPECT_TRUE(s.ok()) << s.error();
    });
    EXPECT_EQ(tokens, reference()) << "to block size " << after.block_size << (after.paged ? ", paged" : ", contiguous");
    EXPECT_EQ(engine->kv_stats().num_used_blocks, 0);
  }
}

}  // namespace
}  // namespace kvscope
