// KvCacheManager::drop_blocks, the block side of a context shift (label
// `unit`): dropped blocks go back to the pool, later blocks move down; a
// moved block another table also holds is copied (the other table keeps the
// original, untouched), a moved block this table owns loses its prefix hash;
// kept blocks keep theirs; nothing the shift moved, nor anything committed
// after it, is ever found by a prompt; pool invariants hold throughout.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "kv/host_kv_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/prefix_hash.h"

namespace kvscope {
namespace {

constexpr int32_t kBlockSize = 4;
const uint64_t kSeed = prefix_hash_seed("");

struct Fixture {
  Fixture()
      : blocks(KvPoolSpec{.num_layers = 1, .kv_size = 2, .num_blocks = 32, .block_size = kBlockSize}),
        storage(blocks.storage()) {
    cfg.block_size = kBlockSize;
    cfg.num_blocks = 32;
    kv = std::make_unique<KvCacheManager>(cfg, blocks, events);
  }
  void prefill(BlockTable& t, const std::vector<int32_t>& tokens) {
    const int32_t n = static_cast<int32_t>(tokens.size());
    ASSERT_TRUE(kv->can_write(t, 0, n));
    kv->prepare_write(t, 0, n, 1, 0);
    for (int32_t pos = 0; pos < n; ++pos) {  // K row = (token, position): recognisable after a move
      const float k[2] = {static_cast<float>(tokens[static_cast<size_t>(pos)]), static_cast<float>(pos)};
      storage.store(0, t.slot(pos), k, k);
    }
    kv->commit(t, tokens, 0, n, kSeed);
  }
  float k_at(const BlockTable& t, int32_t pos, int32_t e) const {
    float k[2];
    std::memcpy(k, storage.k(0, t.slot(pos)), sizeof k);
    return k[e];
  }
  HostKvPool blocks;
  KvStorage& storage;  // blocks' contents, written and read directly
  EventLog events;
  KvCacheConfig cfg;
  std::unique_ptr<KvCacheManager> kv;
};

std::vector<int32_t> iota_tokens(int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), 10);
  return t;
}

TEST(KvDropBlocks, SharedMovedBlocksAreCopiedOwnedOnesForgetTheirHash) {
  Fixture f;
  const std::vector<int32_t> tokens = iota_tokens(22);  // 5 full blocks + 2 slots
  BlockTable a(kBlockSize), b(kBlockSize);
  f.prefill(a, tokens);
  f.kv->fork(a, b);  // b shares every block (parallel sampling)
  const std::vector<int32_t> b_before = b.blocks();
  const int32_t used_before = f.kv->pool().num_used_blocks();
  // Keep block 0, drop blocks 1-2 (8 tokens): blocks 3, 4, 5 move to 1, 2, 3.
  ASSERT_TRUE(f.kv->drop_blocks(a, 1, 2, 22 - 8, 1, 0));
  EXPECT_TRUE(f.kv->pool().check_invariants());
  ASSERT_EQ(a.num_blocks(), 4);
  EXPECT_EQ(a.block(0), b_before[0]);  // kept: the same shared block
  for (int32_t i = 1; i < 4; ++i) {
    EXPECT_NE(a.block(i), b_before[static_cast<size_t>(i + 2)]) << "a shared moved block must be copied";
    EXPECT_EQ(f.kv->pool().ref_count(a.block(i)), 1);
    EXPECT_FALSE(f.kv->pool().has_hash(a.block(i)));
  }
  // The copies hold what the originals held (position 12 moved to 4), and b is untouched.
  EXPECT_EQ(f.k_at(a, 4, 0), 22.0f);
  EXPECT_EQ(f.k_at(a, 4, 1), 12.0f);
  EXPECT_EQ(b.blocks(), b_before);
  EXPECT_EQ(f.k_at(b, 12, 1), 12.0f);
  // Dropped blocks lost a's reference (b still holds them); 3 copies allocated.
  EXPECT_EQ(f.kv->pool().num_used_blocks(), used_before + 3);
  // Full moved blocks (logical 1, 2; 14 tokens) carry hashes, so commit does not re-hash them.
  EXPECT_EQ(a.num_hashed(), 3);
  f.kv->release(a);
  f.kv->release(b);
  EXPECT_EQ(f.kv->pool().num_used_blocks(), 0);
  EXPECT_TRUE(f.kv->pool().check_invariants());
}

TEST(KvDropBlocks, MovedContentIsNeverAPrefixCacheHit) {
  Fixture f;
  std::vector<int32_t> tokens = iota_tokens(21);
  BlockTable a(kBlockSize);
  f.prefill(a, tokens);
  ASSERT_TRUE(f.kv->drop_blocks(a, 1, 2, 21 - 8, 1, 0));
  EXPECT_TRUE(f.kv->pool().check_invariants());
  for (int32_t i = 1; i < a.num_blocks(); ++i) EXPECT_FALSE(f.kv->pool().has_hash(a.block(i)));
  // The tokens after the shift, and more committed on top of them.
  tokens.erase(tokens.begin() + 4, tokens.begin() + 12);
  for (int32_t t = 0; t < 8; ++t) tokens.push_back(100 + t);
  const int32_t n = static_cast<int32_t>(tokens.size());
  ASSERT_TRUE(f.kv->can_write(a, 13, n));
  f.kv->prepare_write(a, 13, n, 1, 0);
  f.kv->commit(a, tokens, 13, n, kSeed);
  EXPECT_TRUE(f.kv->pool().check_invariants());
  // A prompt of exactly those tokens finds only the kept block.
  std::vector<int32_t> prompt = tokens;
  prompt.push_back(7);
  EXPECT_EQ(f.kv->num_cached_prefix_tokens(prompt, kSeed), kBlockSize);
  f.kv->release(a);
  EXPECT_EQ(f.kv->pool().num_used_blocks(), 0);
}

TEST(KvDropBlocks, RefusesWithoutFreeBlocksForTheCopies) {
  Fixture f;
  BlockTable a(kBlockSize), b(kBlockSize), filler(kBlockSize);
  f.prefill(a, iota_tokens(24));  // 6 blocks
  f.kv->fork(a, b);
  f.prefill(filler, std::vector<int32_t>(26 * kBlockSize, 3));  // the other 26
  ASSERT_EQ(f.kv->pool().num_free_blocks(), 0);
  // Dropping 1 shared block frees nothing; 4 moved shared blocks need 4 copies.
  const std::vector<int32_t> before = a.blocks();
  EXPECT_FALSE(f.kv->drop_blocks(a, 1, 1, 20, 1, 0));
  EXPECT_EQ(a.blocks(), before);
  EXPECT_TRUE(f.kv->pool().check_invariants());
}

}  // namespace
}  // namespace kvscope
