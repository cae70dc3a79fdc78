// The cascade pass of kernels/cuda/paged_prefill: groups of sequences sharing
// a prefix of physical blocks attend it once (shared pass, states in the
// workspace) and continue over their own blocks. Cascade on must give
// bitwise the flat output on the GPU, for several group shapes (decode-only
// groups, prefill chunks in a group, several groups beside ungrouped
// sequences, a group with more rows than a block, prefixes longer than a
// partition, every cache type), and match the f64 reference within 1e-4.
// With cascade off, a group's decode rows take the split-KV path (one block
// per partition, then the combine), so these tests also hold that path to
// the flat pass's bits. Without a device, the harness: the
// CPU kernel with the same groups gives bitwise its own flat output, so the
// groups the test forms are valid cascade groups.
#include <vector>

#include "cuda_test_util.h"
#include "prefill_run.h"

namespace kvscope {
namespace {

using cuda_test::PrefillProblem;
using cuda_test::SeqSpec;

constexpr double kTolerance = 1e-4;

struct GroupShape {
  const char* name;
  std::vector<SeqSpec> seqs;
};

// {context, rows, shares_from, shared_positions}
std::vector<GroupShape> group_shapes() {
  std::vector<GroupShape> shapes;
  shapes.push_back({"two decode rows on a 64-token prefix", {{70, 1}, {65, 1, 0, 64}}});
  shapes.push_back({"five members, decode and prefill chunks",
                    {{130, 1}, {100, 1, 0, 100}, {160, 30, 0, 110}, {101, 1, 0, 101}, {200, 60, 0, 128}}});
  shapes.push_back({"two groups beside ungrouped sequences",
                    {{50, 50}, {90, 1}, {97, 7, 1, 80}, {33, 1}, {300, 40, -1, 0}, {260, 20, 4, 250},
                     {257, 1, 4, 256}, {17, 17}}});
  std::vector<SeqSpec> wide = {{140, 1}};
  for (int32_t i = 0; i < 23; ++i) wide.push_back({140 + i % 5, 1 + i % 3, 0, 140});
  shapes.push_back({"one group of 24 sequences (more rows than a block)", wide});
  // Prefixes beyond a partition (boundaries every 64 positions below 1024): the shared pass
  // hands the flat pass a merged state and a current partition's state.
  shapes.push_back({"a 576-token prefix: decode rows and chunks",
                    {{600, 1}, {620, 5, 0, 600}, {700, 30, 0, 600}, {601, 1, 0, 600}}});
  shapes.push_back({"a 512-token prefix (a partition end)", {{530, 1}, {540, 1, 0, 520}, {600, 40, 0, 530}}});
  return shapes;
}

PrefillProblem make(AttentionShape shape, KvCacheType type, std::vector<SeqSpec> seqs, std::mt19937& rng) {
  return cuda_test::make_prefill_problem(shape, type, std::move(seqs), rng);
}

TEST(CudaCascadeAttentionHarness, GroupsAreValidForTheCpuKernel) {
  std::mt19937 rng(70);
  for (const GroupShape& g : group_shapes()) {
    SCOPED_TRACE(g.name);
    const PrefillProblem p = make(cuda_test::decode_shape(6, 2, 64), KvCacheType::F16, g.seqs, rng);
    for (int32_t block_size : {16, 5}) {
      EXPECT_FALSE(cuda_test::cascade_groups(p, block_size).prefix_len.empty()) << "block size " << block_size;
      std::mt19937 same_a(1), same_b(1);  // the same pool for both runs
      const std::vector<float> flat = cuda_test::run_prefill_cpu(p, block_size, false, same_a);
      const std::vector<float> cascade = cuda_test::run_prefill_cpu(p, block_size, true, same_b);
      EXPECT_TRUE(flat == cascade) << "block size " << block_size;
      EXPECT_LT(cuda_test::normalised_error(cascade, p.ref), kTolerance);
    }
  }
}

TEST(CudaCascadeAttention, CascadeIsBitwiseFlat) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(71);
  for (const GroupShape& g : group_shapes()) {
    for (const AttentionShape& shape : {cuda_test::decode_shape(9, 3, 64), cuda_test::decode_shape(8, 8, 128),
                                        cuda_test::decode_shape(4, 1, 256, 0, 3.0f)}) {
      SCOPED_TRACE(testing::Message() << g.name << ", heads " << shape.num_heads << "/" << shape.num_kv_heads
                                      << " dim " << shape.head_dim);
      const PrefillProblem p = make(shape, KvCacheType::F32, g.seqs, rng);
      for (int32_t block_size : {16, 5}) {
        const std::vector<float> flat = cuda_test::run_prefill_cuda(p, block_size, false, rng);
        const std::vector<float> cascade = cuda_test::run_prefill_cuda(p, block_size, true, rng);
        EXPECT_TRUE(flat == cascade) << "block size " << block_size;
        EXPECT_LT(cuda_test::normalised_error(cascade, p.ref), kTolerance) << "block size " << block_size;
      }
    }
  }
}

TEST(CudaCascadeAttention, EveryCacheType) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(72);
  const std::vector<GroupShape> shapes = group_shapes();
  for (KvCacheType type : {KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0}) {
    for (size_t shape : {size_t{2}, size_t{4}}) {  // two groups; a prefix beyond two partitions
      SCOPED_TRACE(testing::Message() << kv_cache_type_name(type) << ", " << shapes[shape].name);
      const PrefillProblem p = make(cuda_test::decode_shape(9, 3, 64), type, shapes[shape].seqs, rng);
      const std::vector<float> flat = cuda_test::run_prefill_cuda(p, 16, false, rng);
      const std::vector<float> cascade = cuda_test::run_prefill_cuda(p, 16, true, rng);
      EXPECT_TRUE(flat == cascade);
      EXPECT_LT(cuda_test::normalised_error(cascade, p.ref), kTolerance);
    }
  }
}

// A cascade group's rows keep the bits they have alone (flat, no group, own batch).
TEST(CudaCascadeAttention, GroupedRowEqualsRowAlone) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(73);
  const PrefillProblem p = make(cuda_test::decode_shape(9, 3, 64), KvCacheType::BF16, group_shapes()[1].seqs, rng);
  const std::vector<float> cascade = cuda_test::run_prefill_cuda(p, 16, true, rng);
  const PrefillProblem alone = cuda_test::sub_problem(p, {{2, 0, 30, 160}});
  const std::vector<float> out = cuda_test::run_prefill_cuda(alone, 16, false, rng);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), cascade.begin() + p.query_start[2] * p.row_floats()));
}

// With a sliding window the groups are ignored (as on the CPU): still the flat bits.
TEST(CudaCascadeAttention, SlidingWindowIgnoresGroups) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(74);
  const PrefillProblem p = make(cuda_test::decode_shape(8, 2, 64, 48), KvCacheType::F32, group_shapes()[1].seqs, rng);
  const std::vector<float> flat = cuda_test::run_prefill_cuda(p, 16, false, rng);
  const std::vector<float> cascade = cuda_test::run_prefill_cuda(p, 16, true, rng);
  EXPECT_TRUE(flat == cascade);
  EXPECT_LT(cuda_test::normalised_error(cascade, p.ref), kTolerance);
}

}  // namespace
}  // namespace kvscope
