// 100,000 random operations on the KV cache manager (new sequence with prefix
// lookup, grow, fork, write into shared blocks, release, swap out and in),
// with every invariant checked after each operation:
//   - each block's reference count equals the number of tables holding it;
//   - free blocks are exactly those with count zero, and the free list, the
//     cached-free count and the hash map agree (BlockPool::check_invariants);
//   - a table's blocks are distinct and cover what it claims;
//   - the swap pool's counts equal the swapped tables' blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "kv/host_kv_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/prefix_hash.h"

namespace kvscope {
namespace {

struct SimSeq {
  BlockTable table{4};
  std::vector<int32_t> tokens;
  int32_t num_computed = 0;
  bool swapped = false;
};

class KvSoak : public ::testing::TestWithParam<bool> {};

TEST_P(KvSoak, InvariantsHoldAfterEveryOperation) {
  const bool contiguous = GetParam();
  const int32_t bs = 4, num_blocks = 48;
  HostKvPool blocks(KvPoolSpec{.num_layers = 1, .kv_size = 2, .num_blocks = num_blocks, .block_size = bs,
                               .num_swap_blocks = 24});
  EventLog events;
  KvCacheConfig cfg;
  cfg.block_size = bs;
  cfg.num_blocks = num_blocks;
  cfg.num_swap_blocks = 24;
  cfg.prefix_caching = true;
  cfg.contiguous = contiguous;
  KvCacheManager kv(cfg, blocks, events);
  std::mt19937 rng(2024);
  std::vector<SimSeq> seqs;
  const uint64_t seed = prefix_hash_seed("");
  // A few shared prefixes so that lookups hit.
  const std::vector<std::vector<int32_t>> prefixes = {{1, 2, 3, 4, 5, 6, 7, 8}, {9, 9, 9, 9}, {1, 2, 3, 4}};
  int64_t hits = 0;

  for (int op = 0; op < 100000; ++op) {
    const int kind = static_cast<int>(rng() % 100);
    if (kind < 15 && seqs.size() < 24) {  // new sequence: prefix lookup + first write
      SimSeq s;
      s.tokens = prefixes[rng() % prefixes.size()];
      for (int i = static_cast<int>(rng() % 7); i > 0; --i) s.tokens.push_back(static_cast<int32_t>(rng() % 5));
      if (contiguous) {
        if (!kv.reserve_contiguous(s.table, static_cast<int32_t>(s.tokens.size()) + 8)) continue;
      } else {
        if (!kv.pool().can_allocate(s.table.num_blocks_needed(static_cast<int32_t>(s.tokens.size())))) continue;
        s.num_computed = kv.acquire_cached_prefix(s.table, s.tokens, seed, 1);
        hits += s.num_computed > 0;
      }
      const int32_t n = static_cast<int32_t>(s.tokens.size());
      if (!kv.can_write(s.table, s.num_computed, n)) {
        kv.release(s.table);
        continue;
      }
      kv.prepare_write(s.table, s.num_computed, n, 1, 0);
      kv.commit(s.table, s.tokens, s.num_computed, n, seed);
      s.num_computed = n;
      seqs.push_back(std::move(s));
    } else if (kind < 55 && !seqs.empty()) {  // decode one token (copy-on-write when shared)
      SimSeq& s = seqs[rng() % seqs.size()];
      if (s.swapped) continue;
      const int32_t n = s.num_computed + 1;
      if (contiguous && n > s.table.capacity()) continue;
      if (!kv.can_write(s.table, s.num_computed, n)) continue;
      kv.prepare_write(s.table, s.num_computed, n, 1, 0);
      s.tokens.push_back(static_cast<int32_t>(rng() % 5));
      kv.commit(s.table, s.tokens, s.num_computed, n, seed);
      s.num_computed = n;
    } else if (kind < 65 && !seqs.empty() && seqs.size() < 24) {  // fork
      const SimSeq& p = seqs[rng() % seqs.size()];
      if (p.swapped) continue;
      SimSeq c;
      c.tokens = p.tokens;
      c.num_computed = p.num_computed;
      kv.fork(p.table, c.table);
      seqs.push_back(std::move(c));
    } else if (kind < 85 && !seqs.empty()) {  // release
      const size_t i = rng() % seqs.size();
      if (seqs[i].swapped) {
        kv.release_swapped(seqs[i].table);
      } else {
        kv.release(seqs[i].table);
      }
      seqs.erase(seqs.begin() + static_cast<ptrdiff_t>(i));
    } else if (!seqs.empty()) {  // swap out or in
      SimSeq& s = seqs[rng() % seqs.size()];
      if (!s.swapped && kv.can_swap_out(s.table)) {
        kv.swap_out(s.table, 1, 0);
        s.swapped = true;
      } else if (s.swapped && kv.can_swap_in(s.table)) {
        kv.swap_in(s.table, 1, 0);
        s.swapped = false;
      }
    }

    ASSERT_TRUE(kv.pool().check_invariants()) << "op " << op;
    std::map<int32_t, int32_t> holders;
    int32_t swap_blocks = 0;
    for (const SimSeq& s : seqs) {
      if (s.swapped) {
        swap_blocks += s.table.num_blocks();
        continue;
      }
      ASSERT_GE(s.table.capacity(), s.num_computed) << "op " << op;
      for (int32_t b : s.table.blocks()) ++holders[b];
    }
    for (int32_t b = 0; b < num_blocks; ++b) {
      const auto it = holders.find(b);
      ASSERT_EQ(kv.pool().ref_count(b), it == holders.end() ? 0 : it->second) << "block " << b << " op " << op;
    }
    ASSERT_EQ(kv.stats().num_used_swap_blocks, swap_blocks) << "op " << op;
  }
  for (SimSeq& s : seqs) s.swapped ? kv.release_swapped(s.table) : kv.release(s.table);
  EXPECT_EQ(kv.pool().num_used_blocks(), 0);
  EXPECT_EQ(kv.stats().num_used_swap_blocks, 0);
  if (!contiguous) {
    EXPECT_GT(hits, 100) << "the workload should exercise prefix hits";
    EXPECT_GT(kv.stats().num_copy_on_writes, 100);
    EXPECT_GT(kv.stats().num_evictions, 100);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, KvSoak, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Contiguous" : "Paged"; });

}  // namespace
}  // namespace kvscope
