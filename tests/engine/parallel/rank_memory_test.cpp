// Per-rank memory (kvscope/rank_memory.h) as the engine reports it, checked
// against the shard plan on a tiny model of 6 query heads over 3 KV heads
// (label unit): each rank's heads are the plan's, its weight bytes are its
// slices' (by hand for tp = 2; summed to the model's matrices at every tp,
// plus the copied K/V rows at tp = 4), its KV bytes are its heads' share of
// the pool the engine allocated, its workspace bytes are what its own runner
// (ModelRunner::create_shard) allocates for max_batched_tokens rows, and
// model-info's tensor_parallel_memory() gives the same figures without an
// engine.
//   ctest --test-dir build -R rank_memory_test --output-on-failure
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kvscope/engine.h"
#include "kvscope/rank_memory.h"
#include "kv/kv_storage.h"
#include "model/model_loader.h"
#include "parallel/in_process_communicator.h"
#include "parallel/shard_plan.h"
#include "runtime/model_runner.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

constexpr int32_t kNumBlocks = 12;

class RankMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::tiny_model_temp_path("rank_memory");
    const test::TinyModelSpec spec = test::tensor_parallel_tiny_spec(TensorType::Q8_0);
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
    auto model = load_model(path_);
    ASSERT_TRUE(model.ok()) << model.error();
    weights_ = model->weights;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  EngineConfig config(int32_t tp) const {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.tp = tp;
    c.tp_reduce = TpReduce::Deterministic;
    c.num_blocks = kNumBlocks;
    c.block_size = 16;
    c.max_batched_tokens = 64;
    return c;
  }

  std::string path_;
  std::shared_ptr<const ModelWeights> weights_;
};

void expect_same(const TensorParallelMemory& a, const TensorParallelMemory& b) {
  EXPECT_EQ(a.tp, b.tp);
  EXPECT_EQ(a.deterministic, b.deterministic);
  EXPECT_EQ(a.kv_heads_replicated, b.kv_heads_replicated);
  EXPECT_EQ(a.num_kv_head_slots, b.num_kv_head_slots);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].q_head_begin, b.ranks[r].q_head_begin);
    EXPECT_EQ(a.ranks[r].num_q_heads, b.ranks[r].num_q_heads);
    EXPECT_EQ(a.ranks[r].kv_head_begin, b.ranks[r].kv_head_begin);
    EXPECT_EQ(a.ranks[r].num_kv_heads, b.ranks[r].num_kv_heads);
    EXPECT_EQ(a.ranks[r].weight_bytes, b.ranks[r].weight_bytes);
    EXPECT_EQ(a.ranks[r].kv_bytes, b.ranks[r].kv_bytes);
    EXPECT_EQ(a.ranks[r].workspace_bytes, b.ranks[r].workspace_bytes);
  }
}

TEST_F(RankMemoryTest, SnapshotMatchesTheShardPlan) {
  const ModelConfig& mc = weights_->config;
  for (int32_t tp : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << "tp " << tp);
    auto engine = Engine::create(config(tp));
    ASSERT_TRUE(engine.ok()) << engine.error();
    const auto snapshot = (*engine)->snapshot();
    const TensorParallelMemory& m = snapshot->tensor_parallel;
    auto plan = plan_shards(*weights_, tp, true);
    ASSERT_TRUE(plan.ok()) << plan.error();

    EXPECT_EQ(m.tp, tp);
    EXPECT_TRUE(m.deterministic);
    EXPECT_EQ(m.num_kv_heads, 3);
    EXPECT_EQ(m.num_kv_head_slots, plan->num_kv_slots);
    EXPECT_EQ(m.kv_heads_replicated, tp == 4);
    ASSERT_EQ(m.ranks.size(), static_cast<size_t>(tp));
    const int64_t pool = static_cast<int64_t>((*engine)->model_info().kv_pool_bytes);
    for (int32_t r = 0; r < tp; ++r) {
      const RankMemory& got = m.ranks[static_cast<size_t>(r)];
      const RankShard& want = plan->ranks[static_cast<size_t>(r)];
      EXPECT_EQ(got.rank, r);
      EXPECT_EQ(got.q_head_begin, want.q_head_begin);
      EXPECT_EQ(got.num_q_heads, want.num_q_heads);
      EXPECT_EQ(got.kv_head_begin, want.kv_head_begin);
      EXPECT_EQ(got.num_kv_heads, want.num_kv_heads);
      // One storage layer per (layer, KV head slot), all the same size.
      EXPECT_EQ(got.kv_bytes, pool / plan->num_kv_slots * want.num_kv_heads);
    }
    EXPECT_EQ(m.total_kv_bytes(), pool);
    // Each matrix once over the ranks, except the K and V rows of a copied
    // KV head: one extra head of wk and wv per layer at tp 4.
    const int64_t copied_kv_rows = int64_t{plan->num_kv_slots - mc.num_kv_heads} * mc.head_dim;
    int64_t copies = 0;
    for (const LayerWeights& L : weights_->layers) {
      copies += copied_kv_rows * static_cast<int64_t>(row_bytes(L.wk.type, L.wk.row_len) +
                                                      row_bytes(L.wv.type, L.wv.row_len));
    }
    EXPECT_EQ(m.total_weight_bytes(), static_cast<int64_t>(weights_->matrix_bytes()) + copies);
    expect_same((*engine)->model_info().tensor_parallel, m);
    // model-info's figures, without an engine.
    auto planned = tensor_parallel_memory(config(tp), kNumBlocks);
    ASSERT_TRUE(planned.ok()) << planned.error();
    expect_same(*planned, m);
  }
}

// tp = 2 by hand. Q8_0 rows take 34 bytes per 32 values: a row of 96 (hidden)
// is 102 bytes. Rank 0 holds KV group 0 (query heads 0-1, KV head 0), rank 1
// groups 1-2 (query heads 2-5, KV heads 1-2); each holds 4 of the 8 down
// chunks (128 FFN rows) and 150 of the 300 vocabulary rows.
TEST_F(RankMemoryTest, WeightBytesByHandAtTpTwo) {
  auto engine = Engine::create(config(2));
  ASSERT_TRUE(engine.ok()) << engine.error();
  const TensorParallelMemory& m = (*engine)->snapshot()->tensor_parallel;
  ASSERT_EQ(m.ranks.size(), 2u);
  const int64_t head = 150 * static_cast<int64_t>(row_bytes(weights_->output.type, 96));
  auto layer = [](int64_t q_heads, int64_t kv_heads) {
    const int64_t q = q_heads * 32 * 102, kv = kv_heads * 32 * 102;  // Q, K, V rows of 96
    const int64_t wo = 96 * (q_heads * 32 / 32 * 34);                 // 96 rows, K slice of the rank's heads
    const int64_t gate_up = 2 * 128 * 102;
    const int64_t down = 96 * (128 / 32 * 34);
    return q + 2 * kv + wo + gate_up + down;
  };
  EXPECT_EQ(m.ranks[0].weight_bytes, head + 2 * layer(2, 1));
  EXPECT_EQ(m.ranks[1].weight_bytes, head + 2 * layer(4, 2));
  // K and V of 16 slots x 12 blocks x 2 layers of 32 f32 per KV head.
  EXPECT_EQ(m.ranks[0].kv_bytes, 2 * 16 * 12 * 2 * 1 * 32 * 4);
  EXPECT_EQ(m.ranks[1].kv_bytes, 2 * 16 * 12 * 2 * 2 * 32 * 4);
}

// Each rank runs its own ModelRunner with its own activation buffers: the
// rank's workspace figure is what that runner allocates once reserved for
// max_batched_tokens rows (rank 1 of tp = 2 holds twice rank 0's heads, so
// the figures differ; at tp = 4 every rank keeps a KV head of its own).
TEST_F(RankMemoryTest, EachRanksWorkspaceIsWhatItsRunnerAllocates) {
  for (int32_t tp : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << "tp " << tp);
    auto engine = Engine::create(config(tp));
    ASSERT_TRUE(engine.ok()) << engine.error();
    const TensorParallelMemory& m = (*engine)->model_info().tensor_parallel;
    ASSERT_EQ(m.ranks.size(), static_cast<size_t>(tp));
    auto plan = plan_shards(*weights_, tp, true);
    ASSERT_TRUE(plan.ok()) << plan.error();
    const KvStorageShape shape = kv_storage_shape(*plan, weights_->config);
    KvStorage kv(shape.num_layers, kNumBlocks, 16, shape.kv_size);
    InProcessGroup group(tp);
    ThreadPool pool(1);
    for (int32_t r = 0; r < tp; ++r) {
      auto shard = ModelRunner::create_shard(weights_, *plan, r, tp > 1 ? &group.communicator(r) : nullptr, kv, pool,
                                             {});
      ASSERT_TRUE(shard);
      shard->reserve(config(tp).max_batched_tokens);
      EXPECT_EQ(m.ranks[static_cast<size_t>(r)].workspace_bytes, static_cast<int64_t>(shard->workspace_bytes()))
          << "rank " << r;
    }
    if (tp == 2) {
      EXPECT_LT(m.ranks[0].workspace_bytes, m.ranks[1].workspace_bytes);
    }
  }
}

TEST_F(RankMemoryTest, ASplitTheModelCannotMakeIsAnError) {
  EngineConfig c = config(8);  // more ranks than the 6 query heads
  auto planned = tensor_parallel_memory(c, kNumBlocks);
  ASSERT_FALSE(planned.ok());
  EXPECT_NE(planned.error().find("tp = 8"), std::string::npos) << planned.error();
}

}  // namespace
}  // namespace kvscope
