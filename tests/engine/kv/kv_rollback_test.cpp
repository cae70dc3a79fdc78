// KvCacheManager::truncate, the rollback of speculative decoding (label
// `unit`): after a verification writes K/V for drafts and keeps only some,
// the table, fills and prefix hashes are what decoding the kept tokens one by
// one leaves; blocks that held only rejected drafts go back to the pool,
// unhashed; contiguous reservations are kept whole.
#include <gtest/gtest.h>

#include <vector>

#include "kv/host_kv_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/prefix_hash.h"

namespace kvscope {
namespace {

constexpr int32_t kBlockSize = 4;

struct Fixture {
  explicit Fixture(bool contiguous = false)
      : blocks(KvPoolSpec{.num_layers = 1, .kv_size = 2, .num_blocks = 32, .block_size = kBlockSize}) {
    cfg.block_size = kBlockSize;
    cfg.num_blocks = 32;
    cfg.prefix_caching = true;
    cfg.contiguous = contiguous;
    kv = std::make_unique<KvCacheManager>(cfg, blocks, events);
  }
  HostKvPool blocks;
  EventLog events;
  KvCacheConfig cfg;
  std::unique_ptr<KvCacheManager> kv;
};

const uint64_t kSeed = prefix_hash_seed("");

// Prefill of `tokens` into an empty table.
void prefill(KvCacheManager& kv, BlockTable& t, const std::vector<int32_t>& tokens) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  ASSERT_TRUE(kv.can_write(t, 0, n));
  kv.prepare_write(t, 0, n, 1, 0);
  kv.commit(t, tokens, 0, n, kSeed);
}

// A verification: the last token (position num_computed) plus `drafted`
// draft rows are written; `kept` rows stay (the last token + accepted drafts),
// whose tokens are appended first as the engine does.
int32_t verify(KvCacheManager& kv, BlockTable& t, std::vector<int32_t>& tokens, int32_t& num_computed,
               int32_t drafted, const std::vector<int32_t>& emitted) {
  const int32_t rows = 1 + drafted;
  EXPECT_TRUE(kv.can_write(t, num_computed, num_computed + rows));
  kv.prepare_write(t, num_computed, num_computed + rows, 1, 0);
  tokens.insert(tokens.end(), emitted.begin(), emitted.end());
  const int32_t kept = static_cast<int32_t>(emitted.size());
  kv.commit(t, tokens, num_computed, num_computed + kept, kSeed);
  num_computed += kept;
  return kv.truncate(t, num_computed);
}

// The same tokens decoded one at a time.
void decode_one_by_one(KvCacheManager& kv, BlockTable& t, std::vector<int32_t>& tokens, int32_t& num_computed,
                       const std::vector<int32_t>& emitted) {
  for (int32_t token : emitted) {
    kv.prepare_write(t, num_computed, num_computed + 1, 1, 0);
    tokens.push_back(token);
    kv.commit(t, tokens, num_computed, num_computed + 1, kSeed);
    ++num_computed;
  }
}

void expect_same_tables(const KvCacheManager& kv, const BlockTable& a, const BlockTable& b) {
  ASSERT_EQ(a.num_blocks(), b.num_blocks());
  ASSERT_EQ(a.num_hashed(), b.num_hashed());
  for (int32_t i = 0; i < a.num_hashed(); ++i) EXPECT_EQ(a.hash(i), b.hash(i)) << "block " << i;
  for (int32_t i = 0; i < a.num_blocks(); ++i) {
    EXPECT_EQ(kv.pool().fill(a.block(i)), kv.pool().fill(b.block(i))) << "block " << i;
  }
}

TEST(KvRollback, RejectedDraftBlocksAreReleasedAndNeverHashed) {
  Fixture f;
  KvCacheManager& kv = *f.kv;
  // A prompt of 6, its first sampled token 7, then verifications of 4 drafts
  // keeping 2 rows, 1 row and all 5; beside it a table decoding the same
  // tokens one at a time.
  BlockTable spec(kBlockSize), plain(kBlockSize);
  std::vector<int32_t> spec_tokens = {1, 2, 3, 4, 5, 6}, plain_tokens = spec_tokens;
  prefill(kv, spec, spec_tokens);
  prefill(kv, plain, plain_tokens);
  spec_tokens.push_back(7);
  plain_tokens.push_back(7);
  int32_t spec_computed = 6, plain_computed = 6;
  const int32_t used_before = kv.pool().num_used_blocks();

  // Rows for positions 6..10 take blocks 1 and 2; 2 rows stay (6, 7), so
  // block 2 held only rejected drafts. Block 1 is now full: hashed as 5 6 7 8.
  EXPECT_EQ(verify(kv, spec, spec_tokens, spec_computed, 4, {8, 9}), 1);
  decode_one_by_one(kv, plain, plain_tokens, plain_computed, {8, 9});
  EXPECT_EQ(spec_computed, 8);
  EXPECT_EQ(spec.num_blocks(), 2);
  expect_same_tables(kv, spec, plain);
  ASSERT_EQ(spec.num_hashed(), 2);
  EXPECT_EQ(spec.hash(1), prefix_hash(spec.hash(0), std::vector<int32_t>{5, 6, 7, 8}));

  // Every draft rejected: only the last token's row (position 8) stays.
  EXPECT_EQ(verify(kv, spec, spec_tokens, spec_computed, 4, {10}), 1);
  decode_one_by_one(kv, plain, plain_tokens, plain_computed, {10});
  EXPECT_EQ(spec.num_blocks(), 3);
  expect_same_tables(kv, spec, plain);

  // Everything accepted (and the bonus token): nothing to release.
  EXPECT_EQ(verify(kv, spec, spec_tokens, spec_computed, 4, {11, 12, 13, 14, 15}), 0);
  decode_one_by_one(kv, plain, plain_tokens, plain_computed, {11, 12, 13, 14, 15});
  EXPECT_EQ(spec_computed, 14);
  expect_same_tables(kv, spec, plain);
  EXPECT_EQ(spec.num_hashed(), 3);

  // Rolled-back blocks are free and not findable (no hash): the pool holds
  // exactly the two tables' blocks, and only full blocks of real tokens are cached.
  EXPECT_EQ(kv.pool().num_used_blocks(), spec.num_blocks() + plain.num_blocks());
  EXPECT_GT(kv.pool().num_used_blocks(), used_before);
  EXPECT_TRUE(kv.pool().check_invariants());
  kv.release(spec);
  kv.release(plain);
  EXPECT_EQ(kv.pool().num_used_blocks(), 0);
  // [1 2 3 4], [5 6 7 8], [9 10 11 12]: one block per hash (the second table's
  // equal blocks were never registered).
  EXPECT_EQ(kv.pool().num_cached_free_blocks(), 3);
  EXPECT_TRUE(kv.pool().check_invariants());
}

TEST(KvRollback, TruncateIsANoOpWhenNothingIsPastTheKeptTokens) {
  Fixture f;
  BlockTable t(kBlockSize);
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  prefill(*f.kv, t, tokens);
  EXPECT_EQ(f.kv->truncate(t, 5), 0);
  EXPECT_EQ(t.num_blocks(), 2);
  f.kv->prepare_write(t, 5, 12, 1, 0);  // 3 blocks
  EXPECT_EQ(t.num_blocks(), 3);
  EXPECT_EQ(f.kv->truncate(t, 8), 1);   // 8 slots: 2 blocks
  EXPECT_EQ(t.num_blocks(), 2);
  EXPECT_EQ(f.kv->truncate(t, 5), 0);   // never below what holds the kept tokens
  EXPECT_EQ(t.num_blocks(), 2);
  EXPECT_TRUE(f.kv->pool().check_invariants());
}

TEST(KvRollback, ContiguousReservationsAreKeptWhole) {
  Fixture f(/*contiguous=*/true);
  BlockTable t(kBlockSize);
  ASSERT_TRUE(f.kv->reserve_contiguous(t, 20));
  const std::vector<int32_t> blocks = t.blocks();
  std::vector<int32_t> tokens = {1, 2, 3};
  f.kv->prepare_write(t, 0, 8, 1, 0);
  f.kv->commit(t, tokens, 0, 3, kSeed);
  EXPECT_EQ(f.kv->truncate(t, 3), 0);
  EXPECT_EQ(t.blocks(), blocks);
}

}  // namespace
}  // namespace kvscope
