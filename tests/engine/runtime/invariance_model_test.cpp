// The invariance checker on the default model (label `model`): every
// serving-mode pair of the issue (speculative decoding included) gives the
// same greedy tokens and bitwise the same logits on SmolLM2-135M Q4_1, as on
// the tiny model in invariance_check_test.cpp, and each side ran in its mode.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kvscope/invariance_check.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

// Short, and long enough for the last to fill two 32-token cascade tiles
// that the companions share.
const std::vector<std::string> kPrompts = {
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village at the edge of a great forest, there lived an old "
    "clockmaker who had never once left the valley. Every morning he",
    "12345 + 67890 =",
};

TEST(InvarianceModel, ServingModesGiveIdenticalGreedyOutput) {
  const std::string model = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!model.empty(), test::TestData::kDefaultModel);
  EngineConfig base;
  base.model_path = model;
  base.num_threads = 2;
  InvarianceOptions options;
  options.max_tokens = 16;

  using Stats = InvarianceRunStats;
  struct Pair {
    const char* a;
    const char* b;
    std::function<bool(const Stats& a, const Stats& b)> exercised;
  };
  const auto any = [](const Stats&, const Stats&) { return true; };
  const Pair pairs[] = {
      {"concurrency=1", "concurrency=8", [](const Stats&, const Stats& b) { return b.max_batch_seqs == 8; }},
      {"block_size=16", "block_size=1", any},
      {"block_size=16", "block_size=32", any},
      {"kv_mode=paged", "kv_mode=contiguous", any},
      {"prefix_cache=on,concurrency=4", "prefix_cache=off,concurrency=4",
       [](const Stats& a, const Stats& b) { return a.num_prefix_hit_tokens > 0 && b.num_prefix_hit_tokens == 0; }},
      {"cascade=off,concurrency=16", "cascade=on,concurrency=16",
       [](const Stats& a, const Stats& b) { return a.num_cascade_steps == 0 && b.num_cascade_steps > 0; }},
      {"cascade=off,concurrency=16", "cascade=auto,concurrency=16", any},
      {"chunk=512", "chunk=7,concurrency=4", [](const Stats&, const Stats& b) { return b.num_mixed_steps > 0; }},
      {"threads=1", "threads=2", any},
      {"kv_type=q8_0", "kv_type=q8_0,cascade=on,concurrency=16,block_size=1",
       [](const Stats&, const Stats& b) { return b.num_cascade_steps > 0; }},
      // Speculative decoding: drafts verified in the step's rows, some kept,
      // some rolled back, change nothing; also beside cascade passes.
      {"spec=off", "spec=ngram",
       [](const Stats&, const Stats& b) {
         return b.num_accepted_draft_tokens > 0 && b.num_draft_tokens > b.num_accepted_draft_tokens;
       }},
      {"spec=off,cascade=on,concurrency=16", "spec=ngram,spec_k=8,cascade=on,concurrency=16,block_size=1",
       [](const Stats&, const Stats& b) { return b.num_cascade_steps > 0 && b.num_draft_tokens > 0; }},
  };
  for (const Pair& pair : pairs) {
    SCOPED_TRACE(std::string(pair.a) + " vs " + pair.b);
    auto a = parse_invariance_side(pair.a, base);
    auto b = parse_invariance_side(pair.b, base);
    ASSERT_TRUE(a.ok() && b.ok());
    auto report = check_invariance(*a, *b, kPrompts, options);
    ASSERT_TRUE(report.ok()) << report.error();
    for (const PromptVerdict& v : report->prompts) {
      EXPECT_TRUE(v.identical) << "'" << v.prompt << "' diverges at " << v.first_divergence << ": " << v.token_a
                               << " vs " << v.token_b << ", max logit diff " << v.max_logit_diff;
      EXPECT_TRUE(v.logits_identical) << "'" << v.prompt << "': max logit diff " << v.max_logit_diff;
      EXPECT_EQ(v.tokens_a.size(), 16u) << "'" << v.prompt << "'";
    }
    EXPECT_TRUE(pair.exercised(report->stats_a, report->stats_b))
        << "b: max batch " << report->stats_b.max_batch_seqs << ", cascade steps "
        << report->stats_b.num_cascade_steps << ", mixed steps " << report->stats_b.num_mixed_steps
        << ", prefix hits " << report->stats_b.num_prefix_hit_tokens << ", drafts accepted "
        << report->stats_b.num_accepted_draft_tokens << " of " << report->stats_b.num_draft_tokens;
  }
}

}  // namespace
}  // namespace kvscope
