// plan_cascade: groups come from the block tables alone; the prefix is the
// blocks every member shares, capped below each member's first query row,
// rounded down to whole attention tiles; the mode's rule decides which
// groups get a shared pass.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "runtime/cascade_plan.h"

namespace kvscope {
namespace {

// One decode row at `position` (or a chunk of `rows` rows starting there) with `table`.
struct Seq {
  std::vector<int32_t> table;
  int32_t position;
  int32_t rows = 1;
};

StepBatch batch_of(const std::vector<Seq>& seqs) {
  StepBatch b;
  b.clear();
  for (const Seq& s : seqs) {
    std::vector<int32_t> tokens(static_cast<size_t>(s.rows), 1);
    std::vector<int64_t> slots(static_cast<size_t>(s.rows), 0);
    b.add_sequence(tokens.data(), s.rows, s.position, slots.data(), s.table, true);
  }
  return b;
}

std::vector<int32_t> range(int32_t first, int32_t n) {
  std::vector<int32_t> v;
  for (int32_t i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(CascadePlan, OffPlansNothing) {
  StepBatch b = batch_of({{range(0, 20), 300}, {range(0, 20), 310}});
  plan_cascade(b, CascadeMode::Off, 16);
  EXPECT_EQ(b.num_cascade_groups(), 0);
  EXPECT_EQ(b.cascade_seq_start, std::vector<int32_t>{0});
}

TEST(CascadePlan, CommonBlocksCappedByFirstRowAndTiles) {
  // Two sequences share blocks 0..9 (160 tokens at block size 16); a third
  // shares 0..5 only (96 tokens) and its first row is at 90: the group's
  // prefix is min(96, 90) rounded down to 64.
  StepBatch b = batch_of({{concat(range(0, 10), {50, 51}), 170},
                          {concat(range(0, 10), {60}), 161},
                          {concat(range(0, 6), {70, 71}), 90, 3}});
  plan_cascade(b, CascadeMode::On, 16);
  ASSERT_EQ(b.num_cascade_groups(), 1);
  EXPECT_EQ(b.cascade_prefix_len[0], 64);
  EXPECT_EQ(b.cascade_seqs, (std::vector<int32_t>{0, 1, 2}));
  for (int32_t p : b.cascade_prefix_len) EXPECT_EQ(p % kAttentionTile, 0);
}

TEST(CascadePlan, TwoSystemPromptsMakeTwoGroupsAndLoneSequencesStayFlat) {
  StepBatch b = batch_of({{concat(range(0, 4), {100}), 70},
                          {concat(range(10, 4), {101}), 65},
                          {concat(range(0, 4), {102}), 66},
                          {range(200, 3), 40},
                          {concat(range(10, 4), {103}), 64}});
  plan_cascade(b, CascadeMode::On, 16);
  ASSERT_EQ(b.num_cascade_groups(), 2);
  EXPECT_EQ(b.cascade_prefix_len, (std::vector<int32_t>{64, 64}));
  EXPECT_EQ(b.cascade_seq_start, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(b.cascade_seqs, (std::vector<int32_t>{0, 2, 1, 4}));
}

TEST(CascadePlan, NoGroupBelowOneTileOrOfOne) {
  // Shared but the first row is inside the first tile (a fresh prefill).
  StepBatch fresh = batch_of({{range(0, 4), 0, 40}, {range(0, 4), 20}});
  plan_cascade(fresh, CascadeMode::On, 16);
  EXPECT_EQ(fresh.num_cascade_groups(), 0);
  StepBatch alone = batch_of({{range(0, 40), 600}});
  plan_cascade(alone, CascadeMode::On, 16);
  EXPECT_EQ(alone.num_cascade_groups(), 0);
  // Block size 1: every tile is 32 blocks; 40 shared blocks give one tile.
  StepBatch tiny = batch_of({{concat(range(0, 40), {99}), 40}, {concat(range(0, 40), {98}), 40}});
  plan_cascade(tiny, CascadeMode::On, 1);
  ASSERT_EQ(tiny.num_cascade_groups(), 1);
  EXPECT_EQ(tiny.cascade_prefix_len[0], 32);
}

TEST(CascadePlan, AutoNeedsEnoughSequencesAndTokens) {
  const CascadeRule rule = cascade_rule(CascadeMode::Auto);
  ASSERT_GE(rule.min_seqs, 2);
  const int32_t bs = 16;
  const int32_t prefix_blocks = (rule.min_shared_tokens + kAttentionTile + bs - 1) / bs;
  auto make = [&](int32_t num_seqs, int32_t blocks) {
    std::vector<Seq> seqs;
    for (int32_t i = 0; i < num_seqs; ++i) seqs.push_back({concat(range(0, blocks), {1000 + i}), blocks * bs + 1});
    return batch_of(seqs);
  };
  StepBatch enough = make(rule.min_seqs, prefix_blocks);
  plan_cascade(enough, CascadeMode::Auto, bs);
  EXPECT_EQ(enough.num_cascade_groups(), 1);
  if (rule.min_seqs > 2) {
    StepBatch few = make(rule.min_seqs - 1, prefix_blocks);
    plan_cascade(few, CascadeMode::Auto, bs);
    EXPECT_EQ(few.num_cascade_groups(), 0);
  }
  if (rule.min_shared_tokens > kAttentionTile) {
    StepBatch short_prefix = make(rule.min_seqs, (rule.min_shared_tokens - kAttentionTile) / bs);
    plan_cascade(short_prefix, CascadeMode::Auto, bs);
    EXPECT_EQ(short_prefix.num_cascade_groups(), 0);
  }
}

}  // namespace
}  // namespace kvscope
