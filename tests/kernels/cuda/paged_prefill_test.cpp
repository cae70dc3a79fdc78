// kernels/cuda/paged_prefill (mixed prefill / decode batches) against the f64
// reference attention (kernels/reference/attention.h) over K/V as the cache
// stores them: GQA / MHA / MQA, sliding window, softcap, every cache type,
// odd head dims; then the bitwise equivalences of the invariance contract:
// chunked prefill == one prefill, block size 16 == block size 5, a row alone
// == the row in a batch, a decode row (split into partitions) == the same row
// in a prefill chunk, 16-byte copies == element loads. Tolerance 1e-4
// normalised (f32 against f64).
// Without a device: the harness (CPU kernel over the same pool and batches)
// and the planner (rows covered once, decode rows cut at partition ends) run
// everywhere.
#include "kernels/cuda/paged_prefill.cuh"

#include <algorithm>
#include <set>

#include "cuda_test_util.h"
#include "prefill_run.h"

namespace kvscope {
namespace {

using cuda_test::PrefillProblem;
using cuda_test::SeqSpec;

constexpr double kTolerance = 1e-4;

// Decode rows, short and long prefill chunks, whole prompts: sizes 1, 7, 17, 54, 97 and beyond a few tiles.
const std::vector<SeqSpec> kMixedBatch = {
    {1, 1}, {7, 7}, {17, 1}, {54, 20}, {97, 97}, {300, 33}, {70, 1}, {129, 65},
};

PrefillProblem make(AttentionShape shape, KvCacheType type, std::vector<SeqSpec> seqs, std::mt19937& rng) {
  return cuda_test::make_prefill_problem(shape, type, std::move(seqs), rng);
}

TEST(CudaPagedPrefillHarness, CpuKernelOnThePoolMatchesReference) {
  std::mt19937 rng(60);
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::Q8_0}) {
    for (int32_t window : {0, 40}) {
      const PrefillProblem p = make(cuda_test::decode_shape(6, 2, 64, window, window > 0 ? 2.0f : 0.0f), type,
                                    kMixedBatch, rng);
      EXPECT_LT(cuda_test::normalised_error(cuda_test::run_prefill_cpu(p, 7, false, rng), p.ref), kTolerance)
          << kv_cache_type_name(type) << " window " << window;
    }
  }
}

// Checks that the plan computes every row once: in one flat item of its own
// sequence (at most rows_per_block rows), or, for a sequence's only row
// without a cascade prefix, with partition items that cover its keys in
// position order, each inside one partition, with a combine row when there
// are several; and that the workspace holds every partition's states.
// The partition boundaries as the header defines them, written out here on
// their own: every 64 positions below 1024, every 256 from there.
bool is_partition_boundary(int32_t p) {
  static_assert(cuda::kAttentionPartitionShort == 64 && cuda::kAttentionPartitionSwitch == 1024 &&
                    cuda::kAttentionPartition == 256,
                "the test's rule is the header's");
  return p < 1024 ? p % 64 == 0 : p % 256 == 0;
}

void expect_plan_covers_rows(const AttentionShape& shape, const std::vector<int32_t>& query_start,
                             const std::vector<int32_t>& positions, const cuda::PrefillPlan& plan) {
  const auto boundaries_in = [](int32_t first, int32_t last) {  // boundaries p with first <= p <= last
    int32_t n = 0;
    for (int32_t p = first; p <= last; ++p) n += is_partition_boundary(p);
    return n;
  };
  const int32_t num_seqs = static_cast<int32_t>(query_start.size()) - 1;
  std::multiset<int32_t> seen;
  for (int32_t i = 0; i < plan.num_items; ++i) {
    const int32_t* item = plan.data.data() + plan.items_at + 3 * i;
    EXPECT_GT(item[2], item[1]);
    EXPECT_LE(item[2] - item[1], plan.rows_per_block);
    for (int32_t r = item[1]; r < item[2]; ++r) {
      const int32_t t = plan.data[static_cast<size_t>(plan.rows_at + r)];
      EXPECT_TRUE(t >= query_start[item[0]] && t < query_start[item[0] + 1]);
      seen.insert(t);
    }
  }
  int32_t next_item = 0, next_combine = 0;
  for (int32_t s = 0; s < num_seqs; ++s) {
    const int32_t t = query_start[s];
    if (query_start[s + 1] - t != 1 || plan.data[static_cast<size_t>(plan.row_prefix_at + t)] != 0) continue;
    seen.insert(t);  // a decode row: its partition items come next, in sequence order
    const int32_t pos = positions[static_cast<size_t>(t)];
    const int32_t begin = shape.sliding_window > 0 ? std::max(0, pos - shape.sliding_window + 1) : 0;
    const int32_t count = 1 + boundaries_in(begin + 1, pos);
    ASSERT_LE(next_item + count, plan.num_partition_items) << "sequence " << s;
    int32_t key = begin;
    for (int32_t k = next_item; k < next_item + count; ++k) {
      const int32_t* item = plan.data.data() + plan.partition_at + 5 * k;
      EXPECT_EQ(item[0], s);
      EXPECT_EQ(item[1], t);
      EXPECT_EQ(item[2], key);                       // contiguous, in position order
      EXPECT_EQ(boundaries_in(item[2] + 1, item[3] - 1), 0);                // inside one partition
      EXPECT_TRUE(item[3] == pos + 1 || is_partition_boundary(item[3]));  // cut only at partition ends
      EXPECT_EQ(item[4], count == 1 ? 1 : 0);
      key = item[3];
    }
    EXPECT_EQ(key, pos + 1) << "sequence " << s;
    if (count > 1) {
      ASSERT_LT(next_combine, plan.num_combine_rows);
      const int32_t* row = plan.data.data() + plan.combine_at + 3 * next_combine++;
      EXPECT_EQ(row[0], t);
      EXPECT_EQ(row[1], next_item);
      EXPECT_EQ(row[2], count);
    }
    next_item += count;
  }
  EXPECT_EQ(next_item, plan.num_partition_items);
  EXPECT_EQ(next_combine, plan.num_combine_rows);
  EXPECT_EQ(seen.size(), static_cast<size_t>(query_start.back()));
  EXPECT_EQ(std::set<int32_t>(seen.begin(), seen.end()).size(), seen.size());
  if (plan.num_shared_items == 0) {
    EXPECT_EQ(cuda::paged_prefill_workspace_floats(plan, shape),
              static_cast<size_t>(plan.num_partition_items) * shape.num_heads * (2 + shape.head_dim));
  }
}

TEST(CudaPagedPrefillHarness, PlanCoversEveryRowOnce) {
  std::mt19937 rng(61);
  for (int32_t heads : {1, 3, 9, 16}) {
    const PrefillProblem p = make(cuda_test::decode_shape(heads, 1, 32), KvCacheType::F32, kMixedBatch, rng);
    const PagedAttentionBatch batch{static_cast<int32_t>(p.seqs.size()), p.query_start.data(), p.positions.data(),
                                    nullptr, nullptr};
    cuda::PrefillPlan plan;
    ASSERT_EQ(cuda::plan_paged_prefill(p.shape, batch, {}, &plan), cudaSuccess);
    EXPECT_EQ(plan.rows_per_block, std::max(1, 16 / heads));
    EXPECT_EQ(plan.num_shared_items, 0);
    // kMixedBatch's decode rows at positions 0 and 16 (one partition each) and 69 (two: 64 is a boundary).
    EXPECT_EQ(plan.num_partition_items, 1 + 1 + 2);
    EXPECT_EQ(plan.num_combine_rows, 1);
    expect_plan_covers_rows(p.shape, p.query_start, p.positions, plan);
  }
}

// Decode rows on, beside and across partition ends, with and without a
// sliding window, beside prefill chunks; and decode rows in a cascade group,
// which the flat pass continues from the prefix instead.
TEST(CudaPagedPrefillHarness, PlanCutsDecodeRowsAtPartitions) {
  constexpr int32_t P = cuda::kAttentionPartition;
  // {context, rows}: rows at positions [context - rows, context)
  const std::vector<std::pair<int32_t, int32_t>> seqs = {{1, 1},         {P, 1},     {P + 1, 1}, {P + 5, 3},
                                                         {2 * P, 1},     {700, 1},   {3 * P + 1, 1}, {40, 40},
                                                         {4 * P + 17, 1}};
  std::vector<int32_t> query_start = {0}, positions;
  for (const auto& [context, rows] : seqs) {
    for (int32_t i = context - rows; i < context; ++i) positions.push_back(i);
    query_start.push_back(static_cast<int32_t>(positions.size()));
  }
  const PagedAttentionBatch batch{static_cast<int32_t>(seqs.size()), query_start.data(), positions.data(), nullptr,
                                  nullptr};
  for (int32_t window : {0, 1, 40, P, P + 1, 600}) {
    SCOPED_TRACE(testing::Message() << "window " << window);
    const AttentionShape shape = cuda_test::decode_shape(9, 3, 64, window);
    cuda::PrefillPlan plan;
    ASSERT_EQ(cuda::plan_paged_prefill(shape, batch, {}, &plan), cudaSuccess);
    expect_plan_covers_rows(shape, query_start, positions, plan);
    if (window == 0) {
      // Decode rows at positions 0, 255, 256, 511, 699, 768, 1040: boundaries every 64 below 1024, then 1024.
      EXPECT_EQ(plan.num_partition_items, 1 + 4 + 5 + 8 + 11 + 13 + 17);
      EXPECT_EQ(plan.num_combine_rows, 6);
    }
  }
  // Sequences 5 and 6 (decode rows at 699 and 3P) in a cascade group on a 64-token prefix: flat pass rows.
  const std::vector<int32_t> prefix = {64}, seq_start = {0, 2}, members = {5, 6};
  const AttentionShape shape = cuda_test::decode_shape(9, 3, 64);
  cuda::PrefillPlan plan;
  ASSERT_EQ(cuda::plan_paged_prefill(shape, batch, CascadeGroups{1, prefix.data(), seq_start.data(), members.data()},
                                     &plan),
            cudaSuccess);
  expect_plan_covers_rows(shape, query_start, positions, plan);
  EXPECT_EQ(plan.num_partition_items, 1 + 4 + 5 + 8 + 17);  // positions 0, 255, 256, 511, 1040
  EXPECT_EQ(plan.num_combine_rows, 4);
  EXPECT_EQ(plan.num_shared_items, 1);
}

TEST(CudaPagedPrefillHarness, PlanRefusesWhatTheCpuKernelAsserts) {
  const std::vector<int32_t> query_start = {0, 2};
  const std::vector<int32_t> positions = {40, 41};
  const PagedAttentionBatch batch{1, query_start.data(), positions.data(), nullptr, nullptr};
  cuda::PrefillPlan plan;
  EXPECT_EQ(cuda::plan_paged_prefill(cuda_test::decode_shape(17, 1, 32), batch, {}, &plan), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::plan_paged_prefill(cuda_test::decode_shape(6, 4, 32), batch, {}, &plan), cudaErrorInvalidValue);
  const std::vector<int32_t> seq_start = {0, 1}, seqs = {0};
  for (int32_t prefix : {0, 20, 64}) {  // not a positive tile multiple; beyond the rows
    const CascadeGroups groups{1, &prefix, seq_start.data(), seqs.data()};
    EXPECT_EQ(cuda::plan_paged_prefill(cuda_test::decode_shape(4, 2, 32), batch, groups, &plan),
              cudaErrorInvalidValue) << "prefix " << prefix;
  }
}

TEST(CudaPagedPrefill, MixedBatchShapesWindowsSoftcapAndCacheTypes) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(62);
  struct Case {
    int32_t num_heads, num_kv_heads, head_dim, window;
    float softcap;
  };
  const Case cases[] = {
      {1, 1, 32, 0, 0.0f}, {4, 1, 64, 0, 0.0f}, {9, 3, 64, 0, 0.0f}, {8, 8, 128, 0, 0.0f},  // MHA, GQA, MQA
      {16, 1, 64, 0, 0.0f},                                                                  // widest group
      {8, 2, 64, 17, 0.0f}, {8, 2, 64, 100, 0.0f}, {8, 2, 64, 512, 0.0f},                   // sliding window
      {8, 2, 64, 0, 1.5f}, {4, 1, 256, 33, 5.0f},                                           // softcap (+ window)
  };
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(testing::Message() << kv_cache_type_name(type) << " heads=" << c.num_heads << "/" << c.num_kv_heads
                                      << " dim=" << c.head_dim << " window=" << c.window << " softcap=" << c.softcap);
      const PrefillProblem p =
          make(cuda_test::decode_shape(c.num_heads, c.num_kv_heads, c.head_dim, c.window, c.softcap), type,
               kMixedBatch, rng);
      EXPECT_LT(cuda_test::normalised_error(cuda_test::run_prefill_cuda(p, 16, false, rng), p.ref), kTolerance);
    }
  }
}

TEST(CudaPagedPrefill, OddHeadDimsAndRowsPerSequence) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(63);
  for (int64_t head_dim : cuda_test::kOddSizes) {
    SCOPED_TRACE(testing::Message() << "head_dim=" << head_dim);
    const PrefillProblem p = make(cuda_test::decode_shape(6, 3, static_cast<int32_t>(head_dim)), KvCacheType::F16,
                                  kMixedBatch, rng);
    const std::vector<float> out = cuda_test::run_prefill_cuda(p, 7, false, rng);
    // Per sequence too, so a decode row cannot hide in a long prefill's norm.
    for (size_t s = 0; s < p.seqs.size(); ++s) {
      const auto at = [&](const std::vector<float>& v, int32_t t) { return v.begin() + t * p.row_floats(); };
      const std::vector<float> o(at(out, p.query_start[s]), at(out, p.query_start[s + 1]));
      const std::vector<float> r(at(p.ref, p.query_start[s]), at(p.ref, p.query_start[s + 1]));
      EXPECT_LT(cuda_test::normalised_error(o, r), kTolerance) << "sequence " << s;
    }
  }
}

// Chunked prefill: the same prompt in two or three chunks (each chunk's K/V
// stored up to its end) gives bitwise the rows of one whole prefill.
TEST(CudaPagedPrefill, ChunkedPrefillIsBitwiseWholePrefill) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(64);
  for (int32_t window : {0, 50}) {
    const PrefillProblem p = make(cuda_test::decode_shape(9, 3, 64, window), KvCacheType::BF16, {{200, 200}}, rng);
    const std::vector<float> whole = cuda_test::run_prefill_cuda(p, 16, false, rng);
    EXPECT_LT(cuda_test::normalised_error(whole, p.ref), kTolerance);
    std::vector<float> chunked;
    for (const auto& [first, count] : std::vector<std::pair<int32_t, int32_t>>{{0, 77}, {77, 43}, {120, 80}}) {
      const std::vector<float> part =
          cuda_test::run_prefill_cuda(cuda_test::sub_problem(p, {{0, first, count, first + count}}), 16, false, rng);
      chunked.insert(chunked.end(), part.begin(), part.end());
    }
    EXPECT_TRUE(chunked == whole) << "chunking changed the bits, window " << window;
  }
}

// Tiles are absolute positions: the block size changes no bit, nor does a
// row's company in the batch.
TEST(CudaPagedPrefill, BitwiseInvariantToBlockSizeAndBatch) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(65);
  const PrefillProblem p = make(cuda_test::decode_shape(9, 3, 64, 0, 0.0f), KvCacheType::F16, kMixedBatch, rng);
  const std::vector<float> a = cuda_test::run_prefill_cuda(p, 16, false, rng);
  const std::vector<float> b = cuda_test::run_prefill_cuda(p, 5, false, rng);
  EXPECT_TRUE(a == b) << "block size changed the bits";
  // Row 10 of sequence 5 (context 300), alone: one row at its position, all of its context stored.
  const PrefillProblem alone = cuda_test::sub_problem(p, {{5, 10, 1, 300}});
  const std::vector<float> c = cuda_test::run_prefill_cuda(alone, 16, false, rng);
  const size_t t = static_cast<size_t>(p.query_start[5] + 10);
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.begin() + t * p.row_floats())) << "the batch changed a row's bits";
  // Two sequences swapped and with a third removed: each row keeps its bits.
  const PrefillProblem swapped = cuda_test::sub_problem(p, {{7, 0, 65, 129}, {3, 0, 20, 54}});
  const std::vector<float> d = cuda_test::run_prefill_cuda(swapped, 5, false, rng);
  const size_t at7 = static_cast<size_t>(p.query_start[7]) * p.row_floats();
  const size_t at3 = static_cast<size_t>(p.query_start[3]) * p.row_floats();
  EXPECT_TRUE(std::equal(d.begin(), d.begin() + 65 * p.row_floats(), a.begin() + at7));
  EXPECT_TRUE(std::equal(d.begin() + 65 * p.row_floats(), d.end(), a.begin() + at3));
}

// q read from rows wider than its heads (the CUDA backend's [q | k | v] per
// token): the same bits as from packed rows.
TEST(CudaPagedPrefill, StridedQueryRowsGiveThePackedBits) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(66);
  const PrefillProblem p = make(cuda_test::decode_shape(9, 3, 64, 0, 0.0f), KvCacheType::F32, kMixedBatch, rng);
  std::mt19937 pages_a(7), pages_b(7);  // the same shuffled blocks for both runs
  const std::vector<float> packed = cuda_test::run_prefill_cuda(p, 16, false, pages_a);
  const std::vector<float> strided = cuda_test::run_prefill_cuda(p, 16, false, pages_b, 9 * 64 + 2 * 3 * 64);
  EXPECT_TRUE(packed == strided);
  EXPECT_LT(cuda_test::normalised_error(strided, p.ref), kTolerance);
}

// Aligned f32 / f16 / bf16 pools are loaded with 16-byte copies staged in
// shared memory; a pool shifted by one element is loaded element by element,
// as every kernel before the copies did. Both must give the same bits, for
// plain rows and for cascade rows (whose shared pass loads through the same
// code).
TEST(CudaPagedPrefill, CopiedAndElementLoadsGiveTheSameBits) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(67);
  const std::vector<SeqSpec> grouped = {{130, 1}, {100, 1, 0, 100}, {160, 30, 0, 110}, {300, 40}, {33, 1}};
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16}) {
    const int32_t element_bytes = type == KvCacheType::F32 ? 4 : 2;
    for (const AttentionShape& shape : {cuda_test::decode_shape(9, 3, 64), cuda_test::decode_shape(8, 8, 128),
                                        cuda_test::decode_shape(4, 1, 256, 33, 5.0f),
                                        cuda_test::decode_shape(6, 2, 96, 0, 0.0f)}) {
      SCOPED_TRACE(testing::Message() << kv_cache_type_name(type) << " heads=" << shape.num_heads << "/"
                                      << shape.num_kv_heads << " dim=" << shape.head_dim);
      for (bool cascade : {false, true}) {
        const PrefillProblem p = make(shape, type, cascade ? grouped : kMixedBatch, rng);
        std::mt19937 pages_a(8), pages_b(8);  // the same shuffled blocks for both runs
        const std::vector<float> copied = cuda_test::run_prefill_cuda(p, 16, cascade, pages_a);
        const std::vector<float> elements = cuda_test::run_prefill_cuda(p, 16, cascade, pages_b, 0, element_bytes);
        EXPECT_TRUE(copied == elements) << "cascade " << cascade;
        EXPECT_LT(cuda_test::normalised_error(copied, p.ref), kTolerance) << "cascade " << cascade;
      }
    }
  }
}

// The bitwise contract of split-KV: a decode row (its sequence's only row:
// one block per partition, then the combine) gives the same bits as the same
// row inside a prefill chunk (the flat pass, which merges the partitions as
// it walks them), for contexts from one key to several partitions, on and
// off partition ends, with sliding windows shorter and longer than a
// partition, softcap, GQA / MHA / MQA, an odd head dim (element loads) and
// every cache type. Both also match the f64 reference.
TEST(CudaPagedPrefill, DecodeRowIsBitwiseTheRowInAChunk) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(68);
  constexpr int32_t P = cuda::kAttentionPartition;
  struct Case {
    int32_t num_heads, num_kv_heads, head_dim, window;
    float softcap;
  };
  const Case cases[] = {
      {9, 3, 64, 0, 0.0f},  {8, 2, 64, 100, 0.0f}, {8, 2, 64, P + 44, 0.0f}, {4, 1, 256, 33, 5.0f},
      {16, 1, 64, 0, 0.0f}, {8, 8, 128, 700, 1.5f}, {6, 3, 54, 0, 0.0f},
  };
  constexpr int32_t S = cuda::kAttentionPartitionSwitch;  // where partitions grow from 64 to P keys
  const std::vector<int32_t> contexts = {1,   2,     31,    33,          63,    65,    P - 1, P, P + 1,
                                         300, 2 * P, 2 * P + 1, 777, S - 1, S, S + 1, 4 * P + 76};
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0}) {
    for (const Case& c : cases) {
      if (!kv_type_fits_head_dim(type, c.head_dim)) continue;
      SCOPED_TRACE(testing::Message() << kv_cache_type_name(type) << " heads=" << c.num_heads << "/" << c.num_kv_heads
                                      << " dim=" << c.head_dim << " window=" << c.window << " softcap=" << c.softcap);
      std::vector<SeqSpec> chunks;  // the last 3 positions of each context (fewer when there are fewer)
      for (int32_t context : contexts) chunks.push_back({context, std::min(context, 3)});
      const PrefillProblem p =
          make(cuda_test::decode_shape(c.num_heads, c.num_kv_heads, c.head_dim, c.window, c.softcap), type, chunks,
               rng);
      const std::vector<float> in_chunks = cuda_test::run_prefill_cuda(p, 16, false, rng);
      EXPECT_LT(cuda_test::normalised_error(in_chunks, p.ref), kTolerance);
      // Each chunk's first and last row again, now as decode rows (only their keys stored).
      std::vector<cuda_test::RowSlice> decode_rows;
      std::vector<size_t> row_in_chunks;
      for (size_t s = 0; s < p.seqs.size(); ++s) {
        const int32_t rows = p.seqs[s].num_rows, context = p.seqs[s].context;
        for (int32_t r : {0, rows - 1}) {
          decode_rows.push_back({static_cast<int32_t>(s), r, 1, context - rows + r + 1});
          row_in_chunks.push_back(static_cast<size_t>(p.query_start[s] + r));
        }
      }
      const PrefillProblem decode = cuda_test::sub_problem(p, decode_rows);
      const std::vector<float> alone = cuda_test::run_prefill_cuda(decode, 5, false, rng);
      EXPECT_LT(cuda_test::normalised_error(alone, decode.ref), kTolerance);
      const size_t row = p.row_floats();
      for (size_t i = 0; i < decode_rows.size(); ++i) {
        EXPECT_TRUE(std::equal(alone.begin() + i * row, alone.begin() + (i + 1) * row,
                               in_chunks.begin() + row_in_chunks[i] * row))
            << "decode row at position " << decode.positions[i] << " differs from its chunk's row";
      }
    }
  }
}

}  // namespace
}  // namespace kvscope
