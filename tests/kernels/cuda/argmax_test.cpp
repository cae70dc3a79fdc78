// kernels/cuda/argmax against a host argmax with the CPU sampler's rule
// (ties -> lowest id): random rows, planted ties, -inf rows and NaN values.
// Exact: an index either matches or not.
#include "kernels/cuda/argmax.cuh"

#include <cmath>
#include <limits>

#include "cuda_test_util.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

int32_t host_argmax(const float* row, int64_t n) {
  int32_t best = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(row[i])) continue;
    if (best < 0 || row[i] > row[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

std::vector<int32_t> run(const std::vector<float>& logits, int64_t num_rows, int64_t vocab) {
  DeviceBuffer<float> dlogits(logits);
  DeviceBuffer<int32_t> dids(static_cast<size_t>(num_rows));
  EXPECT_EQ(dids.poison(), cudaSuccess);
  EXPECT_EQ(cuda::argmax_rows(dlogits.get(), num_rows, vocab, dids.get(), nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return dids.download();
}

TEST(CudaArgmax, MatchesHostOnRandomRowsWithTies) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(71);
  std::vector<int64_t> vocabs(std::begin(cuda_test::kOddSizes), std::end(cuda_test::kOddSizes));
  vocabs.push_back(49152);  // SmolLM2
  for (int64_t vocab : vocabs) {
    for (int64_t num_rows : {int64_t{1}, int64_t{7}, int64_t{17}}) {
      SCOPED_TRACE(testing::Message() << "vocab=" << vocab << " rows=" << num_rows);
      auto logits = cuda_test::random_floats(static_cast<size_t>(vocab * num_rows), rng, -10.0f, 10.0f);
      std::uniform_int_distribution<int64_t> col(0, vocab - 1);
      for (int64_t r = 0; r < num_rows; ++r) {
        float* row = &logits[static_cast<size_t>(r * vocab)];
        if (r % 2 == 1) {  // plant a tie of the maximum at two or three places
          for (int k = 0; k < 3; ++k) row[col(rng)] = 20.0f;
        }
        if (r % 3 == 2) row[col(rng)] = std::numeric_limits<float>::quiet_NaN();
      }
      const std::vector<int32_t> ids = run(logits, num_rows, vocab);
      for (int64_t r = 0; r < num_rows; ++r) {
        EXPECT_EQ(ids[static_cast<size_t>(r)], host_argmax(&logits[static_cast<size_t>(r * vocab)], vocab)) << "row " << r;
      }
    }
  }
}

TEST(CudaArgmax, DegenerateRows) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  const int64_t vocab = 1000;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> logits(3 * vocab, -INFINITY);                    // row 0: all -inf -> 0
  std::fill(logits.begin() + vocab, logits.begin() + 2 * vocab, nan);  // row 1: all NaN -> -1
  std::fill(logits.begin() + 2 * vocab, logits.end(), 1.5f);          // row 2: all equal -> 0
  logits[static_cast<size_t>(2 * vocab + 999)] = 1.75f;               // ... unless the last is larger
  EXPECT_EQ(run(logits, 3, vocab), (std::vector<int32_t>{0, -1, 999}));
}

}  // namespace
}  // namespace kvscope
