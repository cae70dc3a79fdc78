// Batch invariance of matmul (docs/architecture.md "Invariance"): a token's
// outputs are bitwise identical whether it is alone or in a batch of 1..67
// tokens, wherever it sits in the batch, whatever the other rows hold and
// whatever the thread count - on each CPU level separately.
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_util.h"
#include "kernels/cpu/matmul.h"

namespace kvscope::test {
namespace {

constexpr int64_t kMaxTokens = 67;
constexpr int64_t kNumRows = 97;

void check_invariance(TensorType type, CpuLevel level, int64_t row_len) {
  ScopedCpuLevel scoped(level);
  const auto w = random_weights(type, kNumRows, row_len, 42);
  const auto x = random_floats(kMaxTokens * row_len, 43);
  MatmulScratch scratch;
  ThreadPool single(1);
  // Each token alone, one thread.
  std::vector<float> alone(static_cast<size_t>(kMaxTokens * kNumRows));
  for (int64_t t = 0; t < kMaxTokens; ++t) {
    matmul(type, w.data(), kNumRows, row_len, x.data() + t * row_len, 1, alone.data() + t * kNumRows, single,
           scratch);
  }
  ThreadPool two(2);
  ThreadPool three(3);
  ThreadPool* pools[] = {&single, &two, &three};
  std::vector<float> y(alone.size());
  for (int64_t batch = 1; batch <= kMaxTokens; ++batch) {
    ThreadPool& pool = *pools[batch % 3];
    matmul(type, w.data(), kNumRows, row_len, x.data(), batch, y.data(), pool, scratch);
    ASSERT_TRUE(bitwise_equal(y.data(), alone.data(), batch * kNumRows))
        << "batch " << batch << " threads " << pool.num_threads();
  }
  // Reversed batch with a different neighbour in every slot.
  std::vector<float> xr(x.size());
  for (int64_t t = 0; t < kMaxTokens; ++t) {
    std::copy_n(x.data() + (kMaxTokens - 1 - t) * row_len, row_len, xr.data() + t * row_len);
  }
  matmul(type, w.data(), kNumRows, row_len, xr.data(), kMaxTokens, y.data(), two, scratch);
  for (int64_t t = 0; t < kMaxTokens; ++t) {
    ASSERT_TRUE(bitwise_equal(y.data() + t * kNumRows, alone.data() + (kMaxTokens - 1 - t) * kNumRows, kNumRows))
        << "reversed slot " << t;
  }
}

struct Case {
  TensorType type;
  CpuLevel level;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (CpuLevel level : available_levels()) {
    for (TensorType t : all_weight_types()) cases.push_back({t, level});
  }
  return cases;
}

class MatmulInvariance : public ::testing::TestWithParam<Case> {};

TEST_P(MatmulInvariance, SameBitsAloneInBatchAndAcrossThreads) {
  const Case& c = GetParam();
  for (int64_t row_len : {96, 256, 576, 768}) {
    if (row_len % traits_of(c.type).block_elems != 0) continue;
    SCOPED_TRACE("row_len " + std::to_string(row_len));
    check_invariance(c.type, c.level, row_len);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, MatmulInvariance, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(traits_of(info.param.type).name) + "_" +
                                  std::string(cpu_level_name(info.param.level));
                         });

}  // namespace
}  // namespace kvscope::test
