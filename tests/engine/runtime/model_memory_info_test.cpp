// ModelInfo's memory fields (label `unit`, random tiny model): the KV pool is
// num_kv_blocks * block_size * kv_bytes_per_token bytes, the swap pool exists
// only with swap preemption, the workspace grows with max_batched_tokens, and
// all of it follows reconfigure.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "kvscope/engine.h"
#include "kvscope/kv_plan.h"
#include "kvscope/model_file.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

class ModelMemoryInfo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("memory_info");
    ASSERT_TRUE(test::write_tiny_gguf(spec(), path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static test::TinyModelSpec spec() {
    test::TinyModelSpec s;
    s.matrix_type = TensorType::Q8_0;
    return s;
  }

  static EngineConfig config() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.block_size = 16;
    c.num_blocks = 100;
    c.max_batched_tokens = 64;
    return c;
  }

  static std::string path_;
};
std::string ModelMemoryInfo::path_;

// K and V, f32, every layer and KV head.
size_t expected_kv_bytes_per_token(const test::TinyModelSpec& s) {
  return 2 * sizeof(float) * static_cast<size_t>(s.layers) * s.kv_heads * s.head_dim;
}

// The weights held are what the file's tensors add up to (model-info's
// figure), tied head or not; the matrices read per step leave out the
// norms, and an untied model's embedding table.
TEST_F(ModelMemoryInfo, WeightMemoryIsTheFilesTensors) {
  for (const bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    test::TinyModelSpec s = spec();
    s.tied = tied;
    const std::string path = test::tiny_model_temp_path(tied ? "memory_info_tied" : "memory_info_untied");
    ASSERT_TRUE(test::write_tiny_gguf(s, path).ok());
    EngineConfig c = config();
    c.model_path = path;
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok()) << engine.error();
    auto file = inspect_model_file(path);
    ASSERT_TRUE(file.ok()) << file.error();
    const ModelInfo& info = (*engine)->model_info();
    EXPECT_EQ(info.weight_memory_bytes, file->weight_bytes);
    EXPECT_LT(info.weight_bytes, info.weight_memory_bytes);
    std::filesystem::remove(path);
  }
}

TEST_F(ModelMemoryInfo, PoolSwapAndWorkspaceSizes) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  const ModelInfo& info = (*engine)->model_info();
  EXPECT_EQ(info.kv_bytes_per_token, expected_kv_bytes_per_token(spec()));
  EXPECT_EQ(info.num_kv_blocks, 100);
  EXPECT_EQ(info.block_size, 16);
  EXPECT_EQ(info.kv_pool_bytes, size_t{100} * 16 * info.kv_bytes_per_token);
  EXPECT_EQ(info.swap_pool_bytes, 0u) << "recompute preemption allocates no swap pool";
  // At least the residual stream, its normed copy and the FFN activations for 64 rows.
  const auto& s = spec();
  EXPECT_GE(info.workspace_bytes, sizeof(float) * 64u * static_cast<size_t>(2 * s.hidden + 3 * s.ffn));

  // A budget instead of a block count: whole blocks only.
  EngineConfig budget = config();
  budget.num_blocks = 0;
  budget.kv_budget_bytes = 1000000;
  budget.preemption = PreemptionMode::Swap;
  budget.swap_space_bytes = 300000;
  auto by_budget = Engine::create(budget);
  ASSERT_TRUE(by_budget.ok()) << by_budget.error();
  const ModelInfo& b = (*by_budget)->model_info();
  const size_t per_block = 16 * b.kv_bytes_per_token;
  EXPECT_EQ(b.num_kv_blocks, static_cast<int32_t>(1000000 / per_block));
  EXPECT_EQ(b.kv_pool_bytes, static_cast<size_t>(b.num_kv_blocks) * per_block);
  EXPECT_EQ(b.swap_pool_bytes, 300000 / per_block * per_block);
  EXPECT_EQ((*by_budget)->kv_stats().num_swap_blocks * per_block, b.swap_pool_bytes);
}

// plan_kv is what the engine allocates by, and what model-info and the memory
// panel show: its figures must be the allocation's exactly, workspace included.
TEST_F(ModelMemoryInfo, PlanMatchesWhatTheEngineAllocates) {
  EngineConfig variants[3] = {config(), config(), config()};
  variants[1].num_blocks = 0;
  variants[1].kv_budget_bytes = 1000000;
  variants[1].preemption = PreemptionMode::Swap;
  variants[1].swap_space_bytes = 300000;
  variants[2].block_size = 7;
  variants[2].max_batched_tokens = 100;
  variants[2].max_seqs = 5;
  for (const EngineConfig& c : variants) {
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok()) << engine.error();
    const ModelInfo& info = (*engine)->model_info();
    const KvPlan plan = plan_kv(model_shape(info), c, physical_memory_bytes());
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan.num_blocks, info.num_kv_blocks);
    EXPECT_EQ(plan.pool_bytes, static_cast<int64_t>(info.kv_pool_bytes));
    EXPECT_EQ(plan.swap_bytes, static_cast<int64_t>(info.swap_pool_bytes));
    EXPECT_EQ(plan.kv_bytes_per_token, static_cast<int64_t>(info.kv_bytes_per_token));
    EXPECT_EQ(plan.workspace_bytes, static_cast<int64_t>(info.workspace_bytes));
    EXPECT_EQ(plan.max_model_len, (*engine)->config().max_model_len);
  }
}

TEST_F(ModelMemoryInfo, FollowsReconfigure) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  const size_t workspace_before = (*engine)->model_info().workspace_bytes;
  EngineConfig after = config();
  after.block_size = 7;
  after.num_blocks = 30;
  after.max_batched_tokens = 256;
  after.preemption = PreemptionMode::Swap;
  after.swap_space_bytes = 1 << 20;
  ASSERT_TRUE((*engine)->reconfigure(after).ok());
  const ModelInfo& info = (*engine)->model_info();
  EXPECT_EQ(info.num_kv_blocks, 30);
  EXPECT_EQ(info.block_size, 7);
  EXPECT_EQ(info.kv_pool_bytes, size_t{30} * 7 * info.kv_bytes_per_token);
  EXPECT_EQ(info.swap_pool_bytes, (size_t{1} << 20) / (7 * info.kv_bytes_per_token) * 7 * info.kv_bytes_per_token);
  EXPECT_GT(info.workspace_bytes, workspace_before) << "four times the rows need more activation memory";
  EXPECT_EQ((*engine)->kv_stats().num_blocks, 30);

  ASSERT_TRUE((*engine)->reconfigure(config()).ok());
  EXPECT_EQ((*engine)->model_info().workspace_bytes, workspace_before) << "buffers shrink back";
  EXPECT_EQ((*engine)->model_info().swap_pool_bytes, 0u);
}

}  // namespace
}  // namespace kvscope
