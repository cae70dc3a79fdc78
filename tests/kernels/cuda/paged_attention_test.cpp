// kernels/cuda/paged_attention (split-KV decode + combine) against the f64
// reference attention (kernels/reference/attention.h) over K/V as the cache
// stores them (store_kv_row then load_kv_row, so q8_0's rounding is in both).
// The combine is the seed bug's class: EveryPartitionCount runs contexts that
// need 1 to 40 partitions, on partition boundaries and off them. Then GQA,
// sliding window, softcap, every cache type, odd head dims, and two bitwise
// equivalences: block size 16 == block size 5, and a sequence alone == the
// same sequence in a batch. Tolerance 1e-4 normalised (f32 against f64 over
// contexts up to ~2.5k keys). The harness (paged_problem.h) is checked
// without a device by running the CPU kernel over the same paged pool.
#include "kernels/cuda/paged_attention.cuh"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/thread_pool.h"
#include "cuda_test_util.h"
#include "paged_problem.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

constexpr double kTolerance = 1e-4;

using Problem = cuda_test::DecodeProblem;
using cuda_test::decode_shape;

Problem make_problem(AttentionShape shape, KvCacheType type, std::vector<int32_t> positions, std::mt19937& rng) {
  return cuda_test::make_decode_problem(shape, type, std::move(positions), rng);
}

// Pages the problem's K/V into a pool of shuffled blocks of `block_size`
// slots and runs the CUDA kernel; returns its output.
std::vector<float> run_cuda(const Problem& p, int32_t block_size, int32_t partition_size, int32_t max_context,
                            std::mt19937& rng) {
  const cuda_test::PagedPool pool = cuda_test::page_problem(p, block_size, rng);
  DeviceBuffer<uint8_t> dk(pool.k), dv(pool.v);
  DeviceBuffer<float> dq(p.q), dout(p.q.size());
  DeviceBuffer<int32_t> dpos(p.positions), dstart(pool.table_start), dids(pool.block_ids);
  const int32_t num_seqs = static_cast<int32_t>(p.positions.size());
  const size_t ws_floats = cuda::paged_decode_workspace_floats(num_seqs, p.shape.num_heads, p.shape.head_dim,
                                                               max_context, partition_size);
  DeviceBuffer<float> dws(ws_floats);
  EXPECT_EQ(dout.poison(), cudaSuccess);
  EXPECT_EQ(dws.poison(), cudaSuccess);  // partitions must write every state the combine reads
  const PagedKvLayer kv{dk.get(), dv.get(), block_size, p.type};
  const cuda::PagedDecodeBatch batch{num_seqs, dpos.get(), dstart.get(), dids.get(), max_context};
  EXPECT_EQ(cuda::paged_decode_attention(p.shape, kv, batch, dq.get(), dout.get(), partition_size, dws.get(),
                                         ws_floats, nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return dout.download();
}

int32_t max_context_of(const Problem& p) { return *std::max_element(p.positions.begin(), p.positions.end()) + 1; }

// The harness itself, without a device: the CPU kernel reading the same paged
// pool matches the same reference. If this fails, the GPU tests below would
// fail for the harness's fault, not the kernel's.
TEST(CudaPagedDecodeAttentionHarness, CpuKernelOnThePagedPoolMatchesReference) {
  std::mt19937 rng(40);
  ThreadPool threads(1);
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::Q8_0}) {
    for (int32_t window : {0, 40}) {
      const Problem p = make_problem(decode_shape(6, 2, 64, window, window > 0 ? 2.0f : 0.0f), type,
                                     {0, 5, 31, 32, 100, 257}, rng);
      const cuda_test::PagedPool pool = cuda_test::page_problem(p, 7, rng);
      std::vector<int32_t> query_start(p.positions.size() + 1);
      std::iota(query_start.begin(), query_start.end(), 0);
      const PagedAttentionBatch batch{static_cast<int32_t>(p.positions.size()), query_start.data(),
                                      p.positions.data(), pool.table_start.data(), pool.block_ids.data()};
      std::vector<float> out(p.q.size(), NAN);
      paged_attention(p.shape, PagedKvLayer{pool.k.data(), pool.v.data(), 7, type}, batch, p.q.data(), out.data(),
                      threads);
      EXPECT_LT(cuda_test::normalised_error(out, p.ref), kTolerance) << kv_cache_type_name(type) << " window " << window;
    }
  }
}

TEST(CudaPagedDecodeAttention, EveryPartitionCount) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(41);
  for (int32_t partition_size : {32, 64, 256}) {
    // Positions needing 1..40 partitions: ending on a boundary, just past one, and in the middle.
    std::vector<int32_t> positions;
    const int32_t max_parts = partition_size == 256 ? 10 : 40;
    for (int32_t parts = 1; parts <= max_parts; ++parts) {
      positions.push_back(parts * partition_size - 1);
      positions.push_back((parts - 1) * partition_size);
      positions.push_back((parts - 1) * partition_size + partition_size / 2 + parts % 7);
    }
    SCOPED_TRACE(testing::Message() << "partition_size=" << partition_size);
    const Problem p = make_problem(decode_shape(9, 3, 64), KvCacheType::F32, positions, rng);
    EXPECT_LT(cuda_test::normalised_error(run_cuda(p, 16, partition_size, max_context_of(p), rng), p.ref), kTolerance);
    // Per sequence as well, so that one sequence cannot hide in the batch's norm.
    const std::vector<float> out = run_cuda(p, 16, partition_size, max_context_of(p) + 100, rng);
    const size_t q_row = static_cast<size_t>(9 * 64);
    for (size_t s = 0; s < positions.size(); ++s) {
      const std::vector<float> o(out.begin() + s * q_row, out.begin() + (s + 1) * q_row);
      const std::vector<float> r(p.ref.begin() + s * q_row, p.ref.begin() + (s + 1) * q_row);
      EXPECT_LT(cuda_test::normalised_error(o, r), kTolerance) << "position " << positions[s];
    }
  }
}

TEST(CudaPagedDecodeAttention, ShapesWindowsSoftcapAndCacheTypes) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(42);
  struct Case {
    int32_t num_heads, num_kv_heads, head_dim, window;
    float softcap;
  };
  const Case cases[] = {
      {1, 1, 32, 0, 0.0f}, {4, 1, 64, 0, 0.0f}, {9, 3, 64, 0, 0.0f}, {8, 8, 128, 0, 0.0f},  // MHA, GQA, MQA
      {8, 2, 64, 17, 0.0f}, {8, 2, 64, 100, 0.0f}, {8, 2, 64, 512, 0.0f},                   // sliding window
      {8, 2, 64, 0, 1.5f}, {4, 2, 256, 33, 5.0f},                                           // softcap (+ window)
  };
  const std::vector<int32_t> positions = {0, 6, 16, 53, 96, 250, 511, 512, 1000};
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(testing::Message() << kv_cache_type_name(type) << " heads=" << c.num_heads << "/" << c.num_kv_heads
                                      << " dim=" << c.head_dim << " window=" << c.window << " softcap=" << c.softcap);
      const Problem p = make_problem(decode_shape(c.num_heads, c.num_kv_heads, c.head_dim, c.window, c.softcap), type,
                                     positions, rng);
      EXPECT_LT(cuda_test::normalised_error(run_cuda(p, 16, 64, max_context_of(p), rng), p.ref), kTolerance);
    }
  }
}

TEST(CudaPagedDecodeAttention, OddHeadDims) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(43);
  for (int64_t head_dim : cuda_test::kOddSizes) {
    SCOPED_TRACE(testing::Message() << "head_dim=" << head_dim);
    const Problem p = make_problem(decode_shape(6, 3, static_cast<int32_t>(head_dim)), KvCacheType::F16,
                                   {0, 1, 6, 17, 54, 97, 300}, rng);
    EXPECT_LT(cuda_test::normalised_error(run_cuda(p, 7, 32, max_context_of(p), rng), p.ref), kTolerance);
  }
}

// Partitions are absolute positions: block size and batch company change no bit.
TEST(CudaPagedDecodeAttention, BitwiseInvariantToBlockSizeAndBatch) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(44);
  const Problem p = make_problem(decode_shape(9, 3, 64, 0, 0.0f), KvCacheType::BF16, {5, 700, 64, 1299, 255}, rng);
  const int32_t max_context = max_context_of(p);
  const std::vector<float> a = run_cuda(p, 16, 256, max_context, rng);
  const std::vector<float> b = run_cuda(p, 5, 256, max_context + 1000, rng);
  EXPECT_TRUE(a == b) << "block size or grid size changed the bits";
  const Problem alone = [&] {
    Problem one = p;
    one.positions = {p.positions[3]};
    one.q.assign(p.q.begin() + 3 * 9 * 64, p.q.begin() + 4 * 9 * 64);
    one.k = {p.k[3]};
    one.v = {p.v[3]};
    return one;
  }();
  const std::vector<float> c = run_cuda(alone, 16, 256, max_context, rng);
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.begin() + 3 * 9 * 64)) << "the batch changed a sequence's bits";
}

// A position at or beyond max_context had no partitions: NaN, never stale data.
TEST(CudaPagedDecodeAttention, PositionBeyondMaxContextIsNaN) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(45);
  const Problem p = make_problem(decode_shape(2, 1, 32), KvCacheType::F32, {10, 100}, rng);
  const std::vector<float> out = run_cuda(p, 16, 32, 64, rng);  // 100 >= 64
  for (size_t i = 0; i < 64; ++i) EXPECT_FALSE(std::isnan(out[i]));
  for (size_t i = 64; i < out.size(); ++i) EXPECT_TRUE(std::isnan(out[i]));
}

}  // namespace
}  // namespace kvscope
