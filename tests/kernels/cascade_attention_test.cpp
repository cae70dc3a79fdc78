// Cascade attention (paged_attention with CascadeGroups) against the flat
// pass and the double-precision reference: the shared pass over a group's
// common prefix plus each sequence's own pass must give the flat pass's bits,
// for any block size, head shape, prefix length (a whole number of tiles,
// possibly shorter than what is shared), mix of decode and prefill rows, and
// thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/reference/attention.h"

namespace kvscope {
namespace {

struct Shape {
  int32_t num_heads, num_kv_heads, head_dim, block_size;
};

// A batch of sequences over one paged pool. Sequences in a group share the
// physical blocks of their first `shared_tokens` positions (so shared_tokens
// is a whole number of blocks), as prefix caching or parallel sampling leaves
// them; each has its own blocks after that.
struct Scenario {
  std::vector<float> k_pool, v_pool;
  std::vector<int32_t> query_start{0}, positions, block_table_start{0}, block_ids;
  std::vector<std::vector<float>> k_of, v_of;  // [seq] contiguous K/V by position, for the reference
  std::vector<float> q;
  int32_t num_seqs = 0;
};

struct SeqSpec {
  int32_t group;       // -1: alone
  int32_t length;      // tokens whose K/V are stored (including this step's rows)
  int32_t num_rows;    // query rows: the last num_rows positions
};

Scenario build(const Shape& sh, const std::vector<int32_t>& shared_tokens, const std::vector<SeqSpec>& specs,
               std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int32_t kv_row = sh.num_kv_heads * sh.head_dim, q_row = sh.num_heads * sh.head_dim, bs = sh.block_size;
  int32_t total_blocks = 0;
  for (int32_t n : shared_tokens) total_blocks += n / bs;
  for (const SeqSpec& s : specs) total_blocks += (s.length + bs - 1) / bs;
  total_blocks += 2;  // spare blocks full of garbage
  std::vector<int32_t> free_ids(static_cast<size_t>(total_blocks));
  std::iota(free_ids.begin(), free_ids.end(), 0);
  std::shuffle(free_ids.begin(), free_ids.end(), rng);
  auto take = [&] {
    const int32_t id = free_ids.back();
    free_ids.pop_back();
    return id;
  };
  Scenario sc;
  sc.k_pool.assign(static_cast<size_t>(total_blocks) * bs * kv_row, 1e3f);
  sc.v_pool.assign(sc.k_pool.size(), -1e3f);
  auto random_rows = [&](int32_t n) {
    std::vector<float> x(static_cast<size_t>(n) * kv_row);
    for (float& f : x) f = nd(rng);
    return x;
  };
  // Each group's prefix: its blocks and K/V.
  std::vector<std::vector<int32_t>> group_blocks;
  std::vector<std::vector<float>> group_k, group_v;
  for (int32_t n : shared_tokens) {
    std::vector<int32_t> blocks;
    for (int32_t b = 0; b < n / bs; ++b) blocks.push_back(take());
    group_blocks.push_back(blocks);
    group_k.push_back(random_rows(n));
    group_v.push_back(random_rows(n));
  }
  for (const SeqSpec& s : specs) {
    std::vector<float> k = random_rows(s.length), v = random_rows(s.length);
    std::vector<int32_t> table;
    if (s.group >= 0) {
      const auto& gk = group_k[static_cast<size_t>(s.group)];
      std::copy(gk.begin(), gk.end(), k.begin());
      const auto& gv = group_v[static_cast<size_t>(s.group)];
      std::copy(gv.begin(), gv.end(), v.begin());
      table = group_blocks[static_cast<size_t>(s.group)];
    }
    while (static_cast<int32_t>(table.size()) * bs < s.length) table.push_back(take());
    for (int32_t pos = 0; pos < s.length; ++pos) {
      const int64_t slot = static_cast<int64_t>(table[static_cast<size_t>(pos / bs)]) * bs + pos % bs;
      std::memcpy(&sc.k_pool[static_cast<size_t>(slot * kv_row)], &k[static_cast<size_t>(pos) * kv_row],
                  kv_row * sizeof(float));
      std::memcpy(&sc.v_pool[static_cast<size_t>(slot * kv_row)], &v[static_cast<size_t>(pos) * kv_row],
                  kv_row * sizeof(float));
    }
    for (int32_t r = 0; r < s.num_rows; ++r) sc.positions.push_back(s.length - s.num_rows + r);
    sc.query_start.push_back(sc.query_start.back() + s.num_rows);
    sc.block_ids.insert(sc.block_ids.end(), table.begin(), table.end());
    sc.block_table_start.push_back(static_cast<int32_t>(sc.block_ids.size()));
    sc.k_of.push_back(std::move(k));
    sc.v_of.push_back(std::move(v));
    ++sc.num_seqs;
  }
  sc.q.resize(static_cast<size_t>(sc.query_start.back()) * q_row);
  for (float& f : sc.q) f = nd(rng) * 2.0f;
  return sc;
}

struct Groups {
  std::vector<int32_t> prefix_len, seq_start{0}, seqs;
  CascadeGroups view() const {
    return {static_cast<int32_t>(prefix_len.size()), prefix_len.data(), seq_start.data(), seqs.data()};
  }
  void add(int32_t prefix, const std::vector<int32_t>& members) {
    prefix_len.push_back(prefix);
    seqs.insert(seqs.end(), members.begin(), members.end());
    seq_start.push_back(static_cast<int32_t>(seqs.size()));
  }
};

std::vector<float> run(const Shape& sh, const Scenario& sc, const CascadeGroups& groups, ThreadPool& pool,
                       int32_t window = 0) {
  AttentionShape shape{sh.num_heads, sh.num_kv_heads, sh.head_dim, 1.0f / std::sqrt(float(sh.head_dim)), window};
  PagedKvLayer kv{sc.k_pool.data(), sc.v_pool.data(), sh.block_size};
  PagedAttentionBatch b{sc.num_seqs, sc.query_start.data(), sc.positions.data(), sc.block_table_start.data(),
                        sc.block_ids.data()};
  std::vector<float> out(sc.q.size(), std::nanf(""));
  paged_attention(shape, kv, b, sc.q.data(), out.data(), pool, groups);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class CascadeAttentionTest : public ::testing::TestWithParam<Shape> {};

TEST_P(CascadeAttentionTest, SameBitsAsFlatAndCloseToReference) {
  const Shape sh = GetParam();
  std::mt19937 rng(99 + sh.head_dim * 7 + sh.block_size);
  const int32_t bs = sh.block_size;
  // Group 0: a prefix of about 100 tokens rounded to whole blocks; group 1 a
  // shorter one; members mix decode (1 row) and prefill chunks (several rows).
  const int32_t shared0 = std::max(1, 100 / bs) * bs, shared1 = std::max(1, 40 / bs) * bs;
  const std::vector<SeqSpec> specs = {
      {0, shared0 + 1, 1}, {0, shared0 + 37, 1}, {-1, 75, 3}, {0, shared0 + 9, 5},
      {1, shared1 + 20, 1}, {1, shared1 + 3, 2}, {0, shared0, 1}, {-1, 1, 1},
  };
  const Scenario sc = build(sh, {shared0, shared1}, specs, rng);
  ThreadPool pool1(1), pool2(2), pool3(3);
  const std::vector<float> flat = run(sh, sc, {}, pool1);

  // Reference for every row.
  const int32_t q_row = sh.num_heads * sh.head_dim;
  for (int32_t s = 0; s < sc.num_seqs; ++s) {
    const int32_t r0 = sc.query_start[s], n = sc.query_start[s + 1] - r0;
    std::vector<float> expected(static_cast<size_t>(n) * q_row);
    attention_ref(sc.q.data() + r0 * q_row, sc.positions.data() + r0, n, sc.k_of[s].data(), sc.v_of[s].data(),
                  sh.num_heads, sh.num_kv_heads, sh.head_dim, 1.0f / std::sqrt(float(sh.head_dim)), 0,
                  expected.data());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(flat[static_cast<size_t>(r0 * q_row) + i], expected[i], 2e-5) << "seq " << s;
    }
  }

  // The prefix a planner may choose: whole tiles below every member's first row.
  auto cap = [&](int32_t shared, const std::vector<int32_t>& members) {
    int32_t p = shared;
    for (int32_t s : members) p = std::min(p, sc.positions[static_cast<size_t>(sc.query_start[s])]);
    return p / kAttentionTile * kAttentionTile;
  };
  const std::vector<int32_t> g0 = {0, 1, 3, 6}, g1 = {4, 5};
  Groups both;
  if (cap(shared0, g0) > 0) both.add(cap(shared0, g0), g0);
  if (cap(shared1, g1) > 0) both.add(cap(shared1, g1), g1);
  ASSERT_FALSE(both.prefix_len.empty()) << "the scenario must exercise a shared pass";
  for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
    EXPECT_TRUE(same_bits(flat, run(sh, sc, both.view(), *pool))) << pool->num_threads() << " threads";
  }
  // A shorter prefix than what is shared (one tile), and a group of two.
  Groups short_one;
  short_one.add(kAttentionTile, {1, 3});
  if (cap(shared0, {1, 3}) >= kAttentionTile) {
    EXPECT_TRUE(same_bits(flat, run(sh, sc, short_one.view(), pool2)));
  }
  // With a sliding window the groups are ignored (the prefix is not visible to every row).
  const int32_t window = 50;
  EXPECT_TRUE(same_bits(run(sh, sc, {}, pool2, window), run(sh, sc, both.view(), pool2, window)));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CascadeAttentionTest,
                         ::testing::Values(Shape{9, 3, 64, 16}, Shape{4, 1, 24, 1}, Shape{6, 6, 40, 7},
                                           Shape{8, 2, 128, 48}, Shape{2, 1, 8, 32}, Shape{16, 1, 64, 5}));

// Many decode rows sharing a long prefix (the case cascade is for): the same
// bits as flat whatever the thread count, which also changes how the shared
// pass splits its rows into tasks.
TEST(CascadeAttention, ManyDecodeRowsLongPrefix) {
  const Shape sh{9, 3, 64, 16};
  std::mt19937 rng(5);
  const int32_t shared = 640;
  std::vector<SeqSpec> specs;
  for (int32_t i = 0; i < 37; ++i) specs.push_back({0, shared + 1 + (i * 13) % 90, 1});
  const Scenario sc = build(sh, {shared}, specs, rng);
  Groups g;
  std::vector<int32_t> all(specs.size());
  std::iota(all.begin(), all.end(), 0);
  g.add(shared, all);
  ThreadPool pool1(1), pool4(4);
  const std::vector<float> flat = run(sh, sc, {}, pool1);
  EXPECT_TRUE(same_bits(flat, run(sh, sc, g.view(), pool1)));
  EXPECT_TRUE(same_bits(flat, run(sh, sc, g.view(), pool4)));
}

}  // namespace
}  // namespace kvscope
