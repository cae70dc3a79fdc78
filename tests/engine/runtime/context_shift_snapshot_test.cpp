// EngineSnapshot::recent_shifts (docs/context-overflow.md, Observability):
// after a context shift the snapshot names the shift's request, the dropped
// positions and the physical blocks the shift freed, and those blocks are
// free in the pool; a block a sibling sample still holds is not listed as
// freed; only the last kMaxRecentShifts shifts are kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

std::string tiny_model(const std::string& name) {
  const std::string path = test::tiny_model_temp_path("context_shift_snapshot_" + name);
  EXPECT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path).ok());
  return path;
}

EngineConfig shift_config(const std::string& path) {
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 2;
  c.block_size = 8;
  c.max_model_len = 64;  // a shift drops a quarter: 2 blocks
  c.context_overflow = ContextOverflow::Shift;
  c.context_keep = 12;   // rounded up to 2 blocks: positions 0..15 kept
  c.record_snapshots = true;
  return c;
}

GenerationRequest request(int32_t num_prompt, int32_t max_tokens, int32_t n = 1) {
  GenerationRequest r;
  for (int32_t i = 0; i < num_prompt; ++i) r.prompt_tokens.push_back(3 + (i * 37) % 250);
  r.n = n;
  r.sampling.temperature = n > 1 ? 0.7f : 0.0f;
  r.sampling.seed = 9;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = max_tokens;
  return r;
}

const SequenceSnapshot* find_sequence(const EngineSnapshot& snap, RequestId id, int32_t index) {
  for (const SequenceSnapshot& s : snap.sequences) {
    if (s.id == id && s.index == index) return &s;
  }
  return nullptr;
}

TEST(ContextShiftSnapshotTest, ListsTheFreedBlocksAndTheirPositions) {
  auto created = Engine::create(shift_config(tiny_model("one")));
  ASSERT_TRUE(created.ok()) << created.error();
  Engine& engine = **created;
  auto submitted = engine.submit(request(40, 30));
  ASSERT_TRUE(submitted.ok());
  const RequestId id = submitted.value();
  std::vector<int32_t> table_before;  // the sequence's block table in the snapshot before the shift
  std::shared_ptr<const EngineSnapshot> snap;
  while (engine.has_work()) {
    engine.step();
    snap = engine.snapshot();
    if (!snap->recent_shifts.empty()) break;
    const SequenceSnapshot* s = find_sequence(*snap, id, 0);
    ASSERT_NE(s, nullptr);
    table_before = s->block_table;
  }
  ASSERT_TRUE(snap && !snap->recent_shifts.empty()) << "no shift";
  ASSERT_EQ(snap->recent_shifts.size(), 1u);
  const ContextShiftSnapshot& shift = snap->recent_shifts[0];
  EXPECT_EQ(shift.request_id, id);
  EXPECT_EQ(shift.index, 0);
  EXPECT_EQ(shift.step + 1, snap->step) << "the snapshot right after the shifting step";
  EXPECT_LE(shift.time_s, snap->time_s);
  EXPECT_EQ(shift.dropped_from, 16);
  EXPECT_EQ(shift.num_dropped_tokens, 16);
  // The sequence's logical blocks 2 and 3 (positions 16..31) before the shift.
  ASSERT_GE(table_before.size(), 4u);
  EXPECT_EQ(shift.freed_blocks, (std::vector<int32_t>{table_before[2], table_before[3]}));
  EXPECT_EQ(shift.freed_from, (std::vector<int32_t>{16, 24}));
  const SequenceSnapshot* s = find_sequence(*snap, id, 0);
  ASSERT_NE(s, nullptr);
  for (int32_t b : shift.freed_blocks) {
    const BlockSnapshot& block = snap->blocks.at(static_cast<size_t>(b));
    EXPECT_EQ(block.ref_count, 0) << "block " << b;
    EXPECT_NE(block.state, BlockState::Used) << "block " << b;
    EXPECT_EQ(std::count(s->block_table.begin(), s->block_table.end(), b), 0) << "block " << b;
  }
  // Later snapshots still carry it (a viewer decides how long it is news).
  engine.step();
  ASSERT_EQ(engine.snapshot()->recent_shifts.size(), 1u);
  EXPECT_EQ(engine.snapshot()->recent_shifts[0].freed_blocks, shift.freed_blocks);
  engine.run_until_idle();
}

TEST(ContextShiftSnapshotTest, BlocksASiblingStillHoldsAreNotFreed) {
  auto created = Engine::create(shift_config(tiny_model("two")));
  ASSERT_TRUE(created.ok()) << created.error();
  Engine& engine = **created;
  // Two samples share the 40-token prompt's blocks, so the dropped prompt
  // blocks 2 and 3 are freed by the second shift only.
  auto submitted = engine.submit(request(40, 30, 2));
  ASSERT_TRUE(submitted.ok());
  std::shared_ptr<const EngineSnapshot> snap;
  while (engine.has_work()) {
    engine.step();
    snap = engine.snapshot();
    if (!snap->recent_shifts.empty()) break;
  }
  ASSERT_TRUE(snap);
  ASSERT_EQ(snap->recent_shifts.size(), 2u) << "both samples fill their context in the same step";
  const ContextShiftSnapshot& first = snap->recent_shifts[0];
  const ContextShiftSnapshot& second = snap->recent_shifts[1];
  EXPECT_NE(first.index, second.index);
  EXPECT_TRUE(first.freed_blocks.empty()) << "the other sample still held them";
  ASSERT_EQ(second.freed_blocks.size(), 2u);
  EXPECT_EQ(second.freed_from, (std::vector<int32_t>{16, 24}));
  for (int32_t b : second.freed_blocks) EXPECT_EQ(snap->blocks.at(static_cast<size_t>(b)).ref_count, 0);
  engine.run_until_idle();
}

TEST(ContextShiftSnapshotTest, KeepsOnlyTheLastShifts) {
  auto created = Engine::create(shift_config(tiny_model("many")));
  ASSERT_TRUE(created.ok()) << created.error();
  Engine& engine = **created;
  ASSERT_TRUE(engine.submit(request(50, 400)).ok());
  engine.run_until_idle();
  // 50 + 400 tokens through 64, 16 dropped per shift: 25 shifts.
  const auto snap = engine.snapshot();
  ASSERT_EQ(snap->recent_shifts.size(), EngineSnapshot::kMaxRecentShifts);
  for (size_t i = 1; i < snap->recent_shifts.size(); ++i) {
    EXPECT_LT(snap->recent_shifts[i - 1].step, snap->recent_shifts[i].step) << "oldest first";
  }
  EXPECT_EQ(snap->recent_shifts.back().freed_blocks.size(), 2u);
}

}  // namespace
}  // namespace kvscope
