// plan_kv (kvscope/kv_plan.h) on hand-computed shapes. That the engine
// allocates exactly what the plan says is checked against a real engine in
// tests/engine/runtime/model_memory_info_test.cpp.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kvscope/kv_plan.h"
#include "support/smollm2_shape.h"

namespace kvscope {
namespace {

// 30 layers, 3 KV heads of 64 -> 2*4*30*3*64 = 46,080 bytes per token.
ModelShape smollm2() { return test::smollm2_shape(); }

EngineConfig config() {
  EngineConfig c;
  c.model_path = "m.gguf";
  return c;
}

TEST(KvPlan, BudgetMakesWholeBlocks) {
  EngineConfig c = config();  // 512 MiB, 16-token blocks
  const KvPlan p = plan_kv(smollm2(), c, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.kv_bytes_per_token, 46080);
  EXPECT_EQ(p.bytes_per_block, 46080 * 16);
  EXPECT_EQ(p.num_blocks, (int64_t{512} << 20) / (46080 * 16));  // 728
  EXPECT_EQ(p.num_blocks, 728);
  EXPECT_EQ(p.pool_bytes, 728 * 46080 * 16);
  EXPECT_EQ(p.num_swap_blocks, 0) << "no swap pool with recompute";
  EXPECT_EQ(p.swap_bytes, 0);
  EXPECT_EQ(p.max_model_len, 8192) << "0 means the trained context";
  EXPECT_TRUE(p.warnings.empty());
}

// Tensor parallelism: SmolLM2's 3 KV heads are dealt out at tp 2 (3 stored)
// and copied at tp 4 (one per rank: 4 stored), so a block is 4/3 as large.
TEST(KvPlan, ReplicatedKvHeadsAreCounted) {
  EngineConfig c = config();
  for (TpReduce reduce : {TpReduce::Fast, TpReduce::Deterministic}) {
    c.tp_reduce = reduce;
    c.tp = 2;
    KvPlan p = plan_kv(smollm2(), c, 0);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.num_kv_head_slots, 3);
    EXPECT_EQ(p.kv_bytes_per_token, 46080);
    c.tp = 4;
    p = plan_kv(smollm2(), c, 0);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.num_kv_head_slots, 4);
    EXPECT_EQ(p.kv_bytes_per_token, 46080 / 3 * 4);  // 2 * 4 bytes * 30 layers * 4 heads * 64
    EXPECT_EQ(p.bytes_per_block, 61440 * 16);
    EXPECT_EQ(p.num_blocks, (int64_t{512} << 20) / (61440 * 16));  // 546: the budget holds fewer blocks
  }
}

TEST(KvPlan, BlockCountOverridesTheBudgetAndSwapFollowsPreemption) {
  EngineConfig c = config();
  c.num_blocks = 100;
  c.block_size = 7;
  c.preemption = PreemptionMode::Swap;
  c.swap_space_bytes = 1 << 20;
  const KvPlan p = plan_kv(smollm2(), c, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.num_blocks, 100);
  EXPECT_EQ(p.num_swap_blocks, (1 << 20) / (46080 * 7));  // 3
  EXPECT_EQ(p.swap_bytes, p.num_swap_blocks * 46080 * 7);
}

TEST(KvPlan, WorkspaceIsActivationsPlusLogits) {
  EngineConfig c = config();
  c.max_batched_tokens = 10;
  c.max_seqs = 2;
  const KvPlan p = plan_kv(smollm2(), c, 0);
  // Per row: x, h, o (3 * 576) + qkv (576 + 2 * 192) + q, attn (2 * 576) + gate_up, act (3 * 1536).
  const int64_t per_row = 3 * 576 + (576 + 2 * 192) + 2 * 576 + 3 * 1536;
  // Logits: a row per sequence, and the rows a step may score: no more than
  // its 10 rows (8M floats would be 170 of 49,152).
  EXPECT_EQ(p.workspace_bytes, 4 * (10 * per_row + (2 + 10) * 49152));
  c.max_batched_tokens = 512;
  EXPECT_EQ(max_scored_rows(c, 49152), 170);
  EXPECT_EQ(max_scored_rows(c, 262144), 32);
}

TEST(KvPlan, SaysWhyItDoesNotFit) {
  EngineConfig c = config();
  c.kv_budget_bytes = 46080 * 16 - 1;  // one byte short of a block
  KvPlan p = plan_kv(smollm2(), c, 0);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "kv_budget");
  EXPECT_NE(p.problems[0].message.find("holds no block of 16 tokens"), std::string::npos) << p.problems[0].message;
  c.kv_budget_bytes += 1;
  EXPECT_TRUE(plan_kv(smollm2(), c, 0).ok()) << "exactly one block fits";

  EngineConfig big = config();
  big.num_blocks = 1 << 20;  // 720 GiB of KV
  p = plan_kv(smollm2(), big, int64_t{16} << 30);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "num_blocks");
  EXPECT_NE(p.problems[0].message.find("do not fit in this machine's 16384 MiB"), std::string::npos)
      << p.problems[0].message;
  EXPECT_TRUE(plan_kv(smollm2(), big, 0).ok()) << "0: memory not checked";

  EngineConfig swap = config();
  swap.preemption = PreemptionMode::Swap;
  swap.swap_space_bytes = int64_t{15} << 30;
  p = plan_kv(smollm2(), swap, int64_t{16} << 30);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "swap_space") << "the swap pool is the larger part";

  // Less swap space than a block: swap cannot happen, and the plan says so.
  swap.swap_space_bytes = 46080 * 16 - 1;
  p = plan_kv(smollm2(), swap, 0);
  EXPECT_EQ(p.num_swap_blocks, 0);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("every preemption recomputes; raise swap_space"), std::string::npos) << p.warnings[0];

  // The workspace counts on the CPU: a million batched tokens planned 33 GiB
  // of activations, passed the check, and the engine was killed for memory.
  EngineConfig wide = config();
  wide.max_batched_tokens = 1 << 20;
  p = plan_kv(smollm2(), wide, int64_t{24} << 30);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "max_batched_tokens");
  EXPECT_NE(p.problems[0].message.find("lower max_batched_tokens"), std::string::npos) << p.problems[0].message;
  EXPECT_TRUE(plan_kv(smollm2(), config(), int64_t{24} << 30).ok()) << "the default workspace fits";
}

// On a GPU (the CUDA backend) with gpu_memory_percent, the pool gets that
// share of the free memory, plus what the engine already holds there, after
// the weights and the workspace; pool + weights + workspace must fit in the
// free memory whatever sizes the pool; the host bounds only the swap space.
TEST(KvPlan, GpuMemoryPercentSizesThePoolFromTheDevice) {
  EngineConfig c = config();
  c.gpu_memory_percent = 50;
  DeviceMemory gpu;
  gpu.free_bytes = int64_t{8} << 30;
  gpu.weight_bytes = int64_t{100} << 20;
  const int64_t workspace = plan_kv(smollm2(), c, 0).workspace_bytes;
  KvPlan p = plan_kv(smollm2(), c, 0, &gpu);
  ASSERT_TRUE(p.ok()) << p.problems[0].message;
  const int64_t block = 46080 * 16;
  EXPECT_EQ(p.workspace_bytes, workspace) << "the workspace does not depend on the device";
  EXPECT_EQ(p.num_blocks, ((int64_t{4} << 30) - gpu.weight_bytes - workspace) / block);
  // What the engine holds on a reconfigure counts as free for the share.
  gpu.held_bytes = int64_t{2} << 30;
  EXPECT_EQ(plan_kv(smollm2(), c, 0, &gpu).num_blocks, ((int64_t{5} << 30) - gpu.weight_bytes - workspace) / block);
  gpu.held_bytes = 0;
  // Off (0), or an exact block count: the usual sizing, still checked against the device.
  c.gpu_memory_percent = 0;
  EXPECT_EQ(plan_kv(smollm2(), c, 0, &gpu).num_blocks, 728);
  c.gpu_memory_percent = 50;
  c.num_blocks = 100;
  EXPECT_EQ(plan_kv(smollm2(), c, 0, &gpu).num_blocks, 100);
  c.num_blocks = 0;
  // Too small a share: no block after the weights, named on the setting.
  gpu.free_bytes = int64_t{150} << 20;
  c.gpu_memory_percent = 10;
  p = plan_kv(smollm2(), c, 0, &gpu);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "gpu_memory_percent");
  EXPECT_NE(p.problems[0].message.find("no KV block"), std::string::npos) << p.problems[0].message;
  // A budget the device cannot hold with the weights: a problem on kv_budget,
  // even though the host has room.
  c.gpu_memory_percent = 0;
  c.kv_budget_bytes = int64_t{1} << 30;
  gpu.free_bytes = int64_t{1} << 30;
  p = plan_kv(smollm2(), c, int64_t{64} << 30, &gpu);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "kv_budget");
  EXPECT_NE(p.problems[0].message.find("GPU"), std::string::npos) << p.problems[0].message;
  // Without a device the same budget fits the host.
  EXPECT_TRUE(plan_kv(smollm2(), c, int64_t{64} << 30).ok());
  // The swap space stays on the host and is checked against it.
  c.kv_budget_bytes = int64_t{64} << 20;
  c.preemption = PreemptionMode::Swap;
  c.swap_space_bytes = int64_t{16} << 30;
  p = plan_kv(smollm2(), c, int64_t{8} << 30, &gpu);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "swap_space");
}

TEST(KvPlan, WarnsAboveTheTrainedContext) {
  EngineConfig c = config();
  c.max_model_len = 16384;
  const KvPlan p = plan_kv(smollm2(), c, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.max_model_len, 16384);
  ASSERT_EQ(p.warnings.size(), 2u);
  EXPECT_NE(p.warnings[0].find("above the model's trained context of 8192"), std::string::npos) << p.warnings[0];
  // And the default pool (728 blocks of 16) holds less than that.
  EXPECT_NE(p.warnings[1].find("holds 11648 tokens (728 blocks of 16), less than the max model length of 16384"),
            std::string::npos)
      << p.warnings[1];
  c.max_model_len = 8192;
  EXPECT_TRUE(plan_kv(smollm2(), c, 0).warnings.empty());
}

// Left at 0, the max model length is what one sequence can fill: the trained
// context, or the pool where it holds less (without a note: a 32k context
// over the default pool is usual). A request that asks for no max tokens,
// running to the end of the context, then fits the pool alone.
TEST(KvPlan, ThePoolCapsAnUnsetMaxModelLength) {
  EngineConfig c = config();
  c.kv_budget_bytes = int64_t{46080} * 16 * 300;  // 300 blocks: 4800 tokens, under 8192
  KvPlan p = plan_kv(smollm2(), c, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.num_blocks, 300);
  EXPECT_EQ(p.max_model_len, 4800);
  EXPECT_TRUE(p.warnings.empty());
  c.max_model_len = 6000;  // set: kept, with a note that the pool holds less
  p = plan_kv(smollm2(), c, 0);
  EXPECT_EQ(p.max_model_len, 6000);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("less than the max model length of 6000"), std::string::npos) << p.warnings[0];
  c.max_model_len = 0;
  c.kv_budget_bytes = int64_t{512} << 20;  // 11648 tokens: the trained 8192
  EXPECT_EQ(plan_kv(smollm2(), c, 0).max_model_len, 8192);
}

// A small pool is legal (short requests fit), but it is the longest context
// (or, with a max model length set, a longer request is refused): the plan
// says so for a pool under 4,096 tokens (or under the max model length, when
// that is shorter), naming the setting.
TEST(KvPlan, WarnsWhenThePoolIsSmall) {
  EngineConfig c = config();
  c.block_size = 3;
  c.kv_budget_bytes = 1 << 20;
  const KvPlan p = plan_kv(smollm2(), c, 0);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find(fmt::format("the KV pool holds only {} tokens ({} blocks of 3)", p.num_blocks * 3,
                                           p.num_blocks)),
            std::string::npos)
      << p.warnings[0];
  EXPECT_NE(p.warnings[0].find("so no context is longer: a longer prompt is refused and a reply stops there; raise "
                               "kv_budget"),
            std::string::npos)
      << p.warnings[0];
  c.num_blocks = 4096 / 4;
  c.block_size = 4;  // 4,096 tokens: enough for the note, though under the 8,192 context
  EXPECT_TRUE(plan_kv(smollm2(), c, 0).warnings.empty());
  c.num_blocks = 4096 / 4 - 1;
  const KvPlan small = plan_kv(smollm2(), c, 0);
  ASSERT_EQ(small.warnings.size(), 1u);
  EXPECT_NE(small.warnings[0].find("raise num_blocks"), std::string::npos) << small.warnings[0];
  c.max_model_len = 1000;  // a pool that holds a whole request is no note, however small
  c.num_blocks = 250;
  EXPECT_TRUE(plan_kv(smollm2(), c, 0).warnings.empty());
  c.max_model_len = 0;
  c.num_blocks = 1;  // one block, not "1 blocks"
  const KvPlan one = plan_kv(smollm2(), c, 0);
  ASSERT_EQ(one.warnings.size(), 1u);
  EXPECT_NE(one.warnings[0].find("(1 block of 4)"), std::string::npos) << one.warnings[0];
}

TEST(KvPlan, UnknownShapeIsAProblemNotACrash) {
  const KvPlan p = plan_kv(ModelShape{}, config(), 0);
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.num_blocks, 0);
}

}  // namespace
}  // namespace kvscope
