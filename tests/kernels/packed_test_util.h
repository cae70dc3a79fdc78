// Helpers shared by the packed matmul tests (packed_matmul_test.cpp,
// kquant_matmul_test.cpp, packed_q5_test.cpp): one matrix packed alone, the
// activations quantised in scalar C++ for the scalar reference kernels, and
// the invariance check all of them run on every packed type.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/packed_matmul.h"

namespace kvscope::test {

inline std::string type_name(TensorType t) { return std::string(traits_of(t).name); }

inline PackedWeight pack_one(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t row_len) {
  const WeightPart part{w.data(), rows};
  return PackedWeight::pack(type, row_len, std::span<const WeightPart>(&part, 1));
}

// The activations as matmul_packed makes them (quantize_acts_avx2: blocks of
// 32, d = max|x| / 127, q = round-half-even(x / d), s = d * sum(q)), written
// here in scalar C++ so a mismatch in the quantiser shows too; plus the sums
// over each 16 that the per-16 K-quants use.
struct ScalarActs {
  std::vector<int8_t> q;
  std::vector<float> ds;
  std::vector<int32_t> half_sums;
  int64_t q_stride = 0;
  int64_t ds_stride = 0;
  detail::QuantizedActs view() const { return {q.data(), ds.data(), q_stride, ds_stride}; }
};

inline ScalarActs quantize_acts_scalar(const std::vector<float>& x, int64_t tokens, int64_t row_len) {
  ScalarActs a;
  const int64_t padded = detail::padded_blocks(row_len);
  a.q_stride = padded * 32;
  a.ds_stride = padded * 2;
  a.q.assign(static_cast<size_t>(tokens * a.q_stride), 0);
  a.ds.assign(static_cast<size_t>(tokens * a.ds_stride), 0.0f);
  a.half_sums.assign(static_cast<size_t>(tokens * a.ds_stride), 0);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t b = 0; b < row_len / 32; ++b) {
      const float* xb = x.data() + t * row_len + 32 * b;
      float amax = 0.0f;
      for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(xb[e]));
      const float d = amax / 127.0f;
      const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
      int sum = 0;
      for (int e = 0; e < 32; ++e) {
        const int q = static_cast<int>(std::nearbyint(xb[e] * id));
        a.q[t * a.q_stride + 32 * b + e] = static_cast<int8_t>(q);
        a.half_sums[t * a.ds_stride + 2 * b + e / 16] += q;
        sum += q;
      }
      a.ds[t * a.ds_stride + 2 * b] = d;
      a.ds[t * a.ds_stride + 2 * b + 1] = d * static_cast<float>(sum);
    }
  }
  return a;
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

// With AMX on and off (amx.h), the packed matmul of `type` gives the same
// bits over every row_len, row count and token count given (16-token tiles
// with and without a VNNI tail). The caller skips where AMX is absent.
inline void expect_amx_equals_vnni(TensorType type, std::initializer_list<int64_t> row_lens,
                                   std::initializer_list<int64_t> row_counts, std::initializer_list<int64_t> token_counts,
                                   uint32_t seed) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (int64_t row_len : row_lens) {
    for (int64_t rows : row_counts) {
      SCOPED_TRACE(type_name(type) + " row_len " + std::to_string(row_len) + " rows " + std::to_string(rows));
      const auto w = random_weights(type, rows, row_len, seed++);
      const PackedWeight pw = pack_one(type, w, rows, row_len);
      for (int64_t tokens : token_counts) {
        const auto x = random_floats(tokens * row_len, seed++);
        std::vector<float> amx(static_cast<size_t>(tokens * rows)), vnni(amx.size());
        ASSERT_TRUE(set_amx_enabled(true));
        matmul_packed(pw, x.data(), tokens, amx.data(), pool, scratch);
        set_amx_enabled(false);
        matmul_packed(pw, x.data(), tokens, vnni.data(), pool, scratch);
        set_amx_enabled(true);
        EXPECT_TRUE(bitwise_equal(amx.data(), vnni.data(), tokens * rows)) << tokens << " tokens";
      }
    }
  }
}

}  // namespace kvscope::test
