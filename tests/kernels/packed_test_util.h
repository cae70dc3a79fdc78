// Helpers shared by the packed matmul tests (packed_matmul_test.cpp,
// kquant_matmul_test.cpp): one matrix packed alone, and the invariance check
// both run on every packed type.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/packed_matmul.h"

namespace kvscope::test {

inline std::string type_name(TensorType t) { return std::string(traits_of(t).name); }

inline PackedWeight pack_one(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t row_len) {
  const WeightPart part{w.data(), rows};
  return PackedWeight::pack(type, row_len, std::span<const WeightPart>(&part, 1));
}

// docs/architecture.md "Invariance": each of max_tokens tokens of x run alone
// on one thread, then the first 1..max_tokens tokens as one batch on 1, 2 or
// 3 threads (rotating), must give the same bits. Returns the alone results,
// [max_tokens][w.num_rows()], for further checks. Call under
// ASSERT_NO_FATAL_FAILURE.
inline void expect_alone_equals_batched(const PackedWeight& w, const std::vector<float>& x, int64_t max_tokens,
                                        std::vector<float>& alone) {
  ThreadPool single(1), two(2), three(3);
  ThreadPool* pools[] = {&single, &two, &three};
  MatmulScratch scratch;
  const int64_t rows = w.num_rows(), row_len = w.row_len();
  alone.assign(static_cast<size_t>(max_tokens * rows), 0.0f);
  for (int64_t t = 0; t < max_tokens; ++t) {
    matmul_packed(w, x.data() + t * row_len, 1, alone.data() + t * rows, single, scratch);
  }
  std::vector<float> y(alone.size());
  for (int64_t batch = 1; batch <= max_tokens; ++batch) {
    ThreadPool& pool = *pools[batch % 3];
    matmul_packed(w, x.data(), batch, y.data(), pool, scratch);
    ASSERT_TRUE(bitwise_equal(y.data(), alone.data(), batch * rows))
        << "batch " << batch << " threads " << pool.num_threads();
  }
}

}  // namespace kvscope::test
