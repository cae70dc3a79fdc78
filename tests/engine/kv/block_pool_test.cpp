// BlockPool and BlockTable: allocation order, reference counts, slots, and a
// randomised run whose invariants are checked after every operation.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "kv/block_pool.h"
#include "kv/block_table.h"

namespace kvscope {
namespace {

TEST(BlockPool, AllocatesInOrderAndReusesLeastRecentlyFreedFirst) {
  BlockPool pool(4);
  EXPECT_EQ(pool.num_free_blocks(), 4);
  const int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 2);
  pool.release(b);
  pool.release(a);
  EXPECT_EQ(pool.allocate(), 3);  // never-used block first: it was at the head
  EXPECT_EQ(pool.allocate(), b);  // then the least recently freed
  EXPECT_EQ(pool.allocate(), a);
  EXPECT_FALSE(pool.can_allocate(1));
}

TEST(BlockPool, ReferenceCountsKeepSharedBlocksUsed) {
  BlockPool pool(2);
  const int32_t a = pool.allocate();
  pool.retain(a);
  EXPECT_EQ(pool.ref_count(a), 2);
  pool.release(a);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.release(a);
  EXPECT_EQ(pool.num_free_blocks(), 2);
}

TEST(BlockTable, GrowsBySlotsAndMapsPositions) {
  BlockPool pool(8);
  BlockTable t(4);
  EXPECT_EQ(t.num_blocks_needed(1), 1);
  EXPECT_EQ(t.num_blocks_needed(9), 3);
  t.grow(pool, 5);
  EXPECT_EQ(t.num_blocks(), 2);
  EXPECT_EQ(t.capacity(), 8);
  EXPECT_EQ(t.num_blocks_needed(8), 0);
  EXPECT_EQ(t.slot(0), t.blocks()[0] * 4);
  EXPECT_EQ(t.slot(6), t.blocks()[1] * 4 + 2);
  t.release_all(pool);
  EXPECT_EQ(pool.num_free_blocks(), 8);
  EXPECT_EQ(t.num_blocks(), 0);
}

// Random grow/release/share over many tables; after each operation: every
// block's reference count equals the number of tables holding it, and the
// free blocks are exactly those with count zero.
TEST(BlockTable, RandomOperationsKeepPoolConsistent) {
  std::mt19937 rng(42);
  BlockPool pool(64);
  std::vector<BlockTable> tables(12, BlockTable(3));
  std::vector<int32_t> lengths(tables.size(), 0);
  for (int op = 0; op < 20000; ++op) {
    const size_t i = rng() % tables.size();
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 7) {
      const int32_t want = lengths[i] + static_cast<int32_t>(rng() % 7);
      if (pool.can_allocate(tables[i].num_blocks_needed(want))) {
        tables[i].grow(pool, want);
        lengths[i] = want;
      }
    } else {
      tables[i].release_all(pool);
      lengths[i] = 0;
    }
    std::vector<int32_t> holders(64, 0);
    for (const BlockTable& t : tables) {
      for (int32_t b : t.blocks()) ++holders[static_cast<size_t>(b)];
    }
    int32_t free_count = 0;
    for (int32_t b = 0; b < 64; ++b) {
      ASSERT_EQ(pool.ref_count(b), holders[static_cast<size_t>(b)]) << "block " << b << " op " << op;
      free_count += holders[static_cast<size_t>(b)] == 0;
    }
    ASSERT_EQ(pool.num_free_blocks(), free_count);
  }
}

}  // namespace
}  // namespace kvscope
