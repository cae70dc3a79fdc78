// plan_kv's bytes per block against the KV storage really allocated, at
// tp = 1, 2 and 4, on a tiny model of 3 KV heads (label unit). At tp = 4 the
// ranks keep 4 KV head copies (docs/tensor-parallel.md), so a block is 4/3
// of tp = 1's; a plan that counted 3 heads would let the pool outgrow the KV
// budget by a third. Likewise its workspace against the engine's: every rank
// runs its own runner with its own activation buffers, and a plan that
// counted one runner would leave tp - 1 of them out.
//   ctest --test-dir build -R kv_pool_tp_test --output-on-failure
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kv/kv_storage.h"
#include "kvscope/engine.h"
#include "kvscope/kv_plan.h"
#include "model/model_loader.h"
#include "parallel/shard_plan.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

class KvPoolTpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::tiny_model_temp_path("kv_pool_tp");
    const test::TinyModelSpec spec = test::tensor_parallel_tiny_spec(TensorType::Q8_0);
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
    auto model = load_model(path_);
    ASSERT_TRUE(model.ok()) << model.error();
    weights_ = model->weights;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  ModelShape shape() const {
    const ModelConfig& c = weights_->config;
    ModelShape s;
    s.num_layers = c.num_layers;
    s.hidden_size = c.hidden_size;
    s.ffn_size = c.ffn_size;
    s.num_heads = c.num_heads;
    s.num_kv_heads = c.num_kv_heads;
    s.head_dim = c.head_dim;
    s.vocab_size = c.vocab_size;
    s.context_length = c.context_length;
    return s;
  }

  std::string path_;
  std::shared_ptr<const ModelWeights> weights_;
};

TEST_F(KvPoolTpTest, PlanBytesPerBlockAreTheStoragesAtEveryTp) {
  constexpr int32_t kBlocks = 5;
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::Q8_0}) {
    int64_t tp1_bytes_per_block = 0;
    for (bool deterministic : {false, true}) {
      for (int32_t tp : {1, 2, 4}) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp << (deterministic ? " deterministic" : " fast") << ", "
                                          << kv_cache_type_name(type));
        EngineConfig c;
        c.model_path = path_;
        c.tp = tp;
        c.tp_reduce = deterministic ? TpReduce::Deterministic : TpReduce::Fast;
        c.kv_cache_type = type;
        c.block_size = 16;
        c.num_blocks = kBlocks;
        const KvPlan plan = plan_kv(shape(), c, 0);
        ASSERT_TRUE(plan.ok());
        auto shards = plan_shards(*weights_, tp, deterministic);
        ASSERT_TRUE(shards.ok()) << shards.error();
        const KvStorageShape layout = kv_storage_shape(*shards, weights_->config);
        const KvStorage storage(layout.num_layers, kBlocks, c.block_size, layout.kv_size, type);
        EXPECT_EQ(plan.bytes_per_block * kBlocks, static_cast<int64_t>(storage.num_bytes()));
        EXPECT_EQ(plan.pool_bytes, static_cast<int64_t>(storage.num_bytes()));
        EXPECT_EQ(plan.num_kv_head_slots, shards->num_kv_slots);
        if (tp == 1 && !deterministic) tp1_bytes_per_block = plan.bytes_per_block;
        // 3 KV heads at tp 1 and 2; 4 copies at tp 4.
        EXPECT_EQ(plan.bytes_per_block * 3, tp1_bytes_per_block * (tp == 4 ? 4 : 3));
      }
    }
  }
}

// Through Engine::create: the pool it allocates is the plan's, and within the budget.
TEST_F(KvPoolTpTest, EngineAllocatesWhatThePlanSays) {
  for (int32_t tp : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << "tp " << tp);
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.tp = tp;
    c.kv_budget_bytes = int64_t{1} << 20;
    c.max_batched_tokens = 64;
    const KvPlan plan = plan_kv(shape(), c, 0);
    ASSERT_TRUE(plan.ok());
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok()) << engine.error();
    const ModelInfo& info = (*engine)->model_info();
    EXPECT_EQ(info.num_kv_blocks, plan.num_blocks);
    EXPECT_EQ(static_cast<int64_t>(info.kv_pool_bytes), plan.pool_bytes);
    EXPECT_LE(static_cast<int64_t>(info.kv_pool_bytes), c.kv_budget_bytes);
    EXPECT_EQ(static_cast<int64_t>(info.kv_bytes_per_token), plan.kv_bytes_per_token);
  }
}

// The workspace the plan counts is what the engine's rank runners allocate
// (ModelInfo::workspace_bytes, measured from the runners), at every tp: the
// ranks' own activations (RankMemory::workspace_bytes) plus the logits.
TEST_F(KvPoolTpTest, PlanWorkspaceIsEveryRanksRunner) {
  int64_t tp1_activations = 0;
  for (bool deterministic : {false, true}) {
    for (int32_t tp : {1, 2, 4}) {
      SCOPED_TRACE(::testing::Message() << "tp " << tp << (deterministic ? " deterministic" : " fast"));
      EngineConfig c;
      c.model_path = path_;
      c.num_threads = 2;
      c.tp = tp;
      c.tp_reduce = deterministic ? TpReduce::Deterministic : TpReduce::Fast;
      c.num_blocks = 8;
      c.max_batched_tokens = 64;
      c.max_seqs = 4;
      const KvPlan plan = plan_kv(shape(), c, 0);
      ASSERT_TRUE(plan.ok());
      auto engine = Engine::create(c);
      ASSERT_TRUE(engine.ok()) << engine.error();
      const ModelInfo& info = (*engine)->model_info();
      EXPECT_EQ(plan.workspace_bytes, static_cast<int64_t>(info.workspace_bytes));
      const int32_t vocab = weights_->config.vocab_size;
      const int64_t logits = (max_logits_rows(c) + max_scored_rows(c, vocab)) * vocab * int64_t{sizeof(float)};
      const int64_t activations = info.tensor_parallel.total_workspace_bytes();
      EXPECT_EQ(plan.workspace_bytes, activations + logits);
      if (tp == 1 && !deterministic) tp1_activations = activations;
      // Each rank more keeps another copy of the residual stream (x, h, o:
      // 3 x 96 floats a row, 64 rows); at tp 4 one KV head is copied too
      // (K and V of 32 floats a row).
      const int64_t copies = int64_t{tp - 1} * 3 * 96 + (tp == 4 ? 2 * 32 : 0);
      EXPECT_EQ(activations, tp1_activations + copies * 64 * int64_t{sizeof(float)});
    }
  }
}

}  // namespace
}  // namespace kvscope
