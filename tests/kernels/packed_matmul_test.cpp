// matmul_packed (kernels/cpu/packed_matmul.h) against the reference, and its
// equivalences: stacked parts == each part alone, a token alone == in any
// batch on any thread count (bitwise), a matrix split into many chunks == one
// thread (bitwise), and the fallback (CPU level below AVX-512, or a type
// without a packed kernel) == matmul() per part (bitwise).
// On a CPU without AVX-512 VNNI the packed cases run the fallback path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "packed_test_util.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kquant_packed.h"
#include "kernels/cpu/packed_matmul.h"
#include "kernels/cpu/packed_matmul_internal.h"
#include "kernels/reference/dequantize.h"
#include "kernels/reference/matmul.h"

namespace kvscope::test {
namespace {

const TensorType kPackedTypes[] = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                   TensorType::Q8_0};

// Tolerances as in op_table_test.cpp: per case vs the reference on the int8
// activations, scaled by dot(|w|, |x|): 1e-5; all cases vs the exact
// reference: 2e-2.
TEST(PackedMatmul, MatchesReference) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  uint32_t seed = 1;
  for (TensorType type : kPackedTypes) {
    SCOPED_TRACE(type_name(type));
    double all_num = 0.0, all_den = 0.0;
    for (int64_t row_len : {32, 96, 576, 1536}) {
      for (int64_t rows : {1, 7, 17, 54, 97, 200}) {
        const auto w = random_weights(type, rows, row_len, seed++);
        std::vector<float> wf(static_cast<size_t>(rows * row_len));
        for (int64_t r = 0; r < rows; ++r) {
          dequantize_row_ref(type, w.data() + r * row_bytes(type, row_len), wf.data() + r * row_len, row_len);
        }
        const PackedWeight pw = pack_one(type, w, rows, row_len);
        for (int64_t tokens : {1, 3, 17, 67}) {
          const auto x = random_floats(tokens * row_len, seed++);
          const auto xs = as_int8_activations(x);
          std::vector<float> y(static_cast<size_t>(tokens * rows));
          matmul_packed(pw, x.data(), tokens, y.data(), pool, scratch);
          double num = 0.0, den = 0.0;
          for (int64_t t = 0; t < tokens; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
              double same = 0.0, exact = 0.0, scale = 0.0;
              for (int64_t k = 0; k < row_len; ++k) {
                const double wk = wf[r * row_len + k];
                same += wk * xs[t * row_len + k];
                exact += wk * x[t * row_len + k];
                scale += std::fabs(wk) * std::fabs(x[t * row_len + k]);
              }
              const double fast = y[t * rows + r];
              num += (fast - same) * (fast - same);
              den += scale * scale;
              all_num += (fast - exact) * (fast - exact);
              all_den += exact * exact;
            }
          }
          EXPECT_LE(std::sqrt(num / den), 1e-5) << "rows " << rows << " row_len " << row_len << " tokens " << tokens;
        }
      }
    }
    EXPECT_LE(std::sqrt(all_num / all_den), 2e-2);
  }
}

TEST(PackedMatmul, PacksOnAvx512) {
  if (detected_cpu_level() != CpuLevel::kAvx512) GTEST_SKIP() << "CPU below AVX-512 VNNI: fallback only";
  ScopedCpuLevel scoped(CpuLevel::kAvx512);
  for (TensorType type : kPackedTypes) {
    const auto w = random_weights(type, 17, 64, 5);
    EXPECT_TRUE(pack_one(type, w, 17, 64).is_packed()) << type_name(type);
  }
  // Scales stay f16 and Q5_x quants take 5 bits, so all take exactly their
  // GGUF bytes (decode streams the weights from L3: bytes are time).
  for (TensorType type : kPackedTypes) {
    const auto w = random_weights(type, 64, 576, 6);
    EXPECT_EQ(pack_one(type, w, 64, 576).packed_bytes(), w.size()) << type_name(type);
  }
}

// Three parts whose row counts are not multiples of 16, so row groups span
// parts: the stacked result equals each part packed and run alone, bitwise.
TEST(PackedMatmul, StackedPartsEqualEachPartAlone) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  const int64_t row_len = 576;
  const int64_t part_rows[] = {7, 54, 17};
  const int64_t total = 7 + 54 + 17;
  for (TensorType type : kPackedTypes) {
    SCOPED_TRACE(type_name(type));
    std::vector<std::vector<uint8_t>> ws;
    std::vector<WeightPart> parts;
    for (int i = 0; i < 3; ++i) ws.push_back(random_weights(type, part_rows[i], row_len, 10 + i));
    for (int i = 0; i < 3; ++i) parts.push_back({ws[i].data(), part_rows[i]});
    const PackedWeight stacked = PackedWeight::pack(type, row_len, parts);
    ASSERT_EQ(stacked.num_rows(), total);
    for (int64_t tokens : {1, 5, 17}) {
      const auto x = random_floats(tokens * row_len, 20);
      std::vector<float> y(static_cast<size_t>(tokens * total));
      matmul_packed(stacked, x.data(), tokens, y.data(), pool, scratch);
      int64_t r0 = 0;
      for (int i = 0; i < 3; ++i) {
        const PackedWeight alone = pack_one(type, ws[i], part_rows[i], row_len);
        std::vector<float> ya(static_cast<size_t>(tokens * part_rows[i]));
        matmul_packed(alone, x.data(), tokens, ya.data(), pool, scratch);
        for (int64_t t = 0; t < tokens; ++t) {
          ASSERT_TRUE(bitwise_equal(y.data() + t * total + r0, ya.data() + t * part_rows[i], part_rows[i]))
              << "part " << i << " token " << t << " of " << tokens;
        }
        r0 += part_rows[i];
      }
    }
  }
}

// docs/architecture.md "Invariance": each token alone on one thread == in batches of
// 1..67 on 1-3 threads, and in a reversed batch, bitwise.
TEST(PackedMatmul, SameBitsAloneInBatchAndAcrossThreads) {
  constexpr int64_t kMaxTokens = 67;
  ThreadPool two(2);
  MatmulScratch scratch;
  for (TensorType type : kPackedTypes) {
    for (int64_t rows : {97, 200}) {
      const int64_t row_len = 576;
      SCOPED_TRACE(type_name(type) + " rows " + std::to_string(rows));
      const auto w = random_weights(type, rows, row_len, 42);
      const PackedWeight pw = pack_one(type, w, rows, row_len);
      const auto x = random_floats(kMaxTokens * row_len, 43);
      std::vector<float> alone;
      ASSERT_NO_FATAL_FAILURE(expect_alone_equals_batched(pw, x, kMaxTokens, alone));
      std::vector<float> y(alone.size());
      std::vector<float> xr(x.size());
      for (int64_t t = 0; t < kMaxTokens; ++t) {
        std::copy_n(x.data() + (kMaxTokens - 1 - t) * row_len, row_len, xr.data() + t * row_len);
      }
      matmul_packed(pw, xr.data(), kMaxTokens, y.data(), two, scratch);
      for (int64_t t = 0; t < kMaxTokens; ++t) {
        ASSERT_TRUE(bitwise_equal(y.data() + t * rows, alone.data() + (kMaxTokens - 1 - t) * rows, rows))
            << "reversed slot " << t;
      }
    }
  }
}

// With AMX (Sapphire Rapids), 16-token tiles of the packed matmul run on the
// tile unit: exactly the VNNI kernel's bits, for every packed type, any row
// count, and token counts with and without a tail of fewer than 16.
TEST(PackedMatmul, AmxEqualsVnniBitwise) {
  if (!amx_available()) GTEST_SKIP() << "this CPU (or kernel) has no AMX: nothing to compare";
  if (detected_cpu_level() != CpuLevel::kAvx512) GTEST_SKIP() << "AMX runs only beside AVX-512 VNNI";
  uint32_t seed = 700;
  for (TensorType type : kPackedTypes) {
    ASSERT_NO_FATAL_FAILURE(expect_amx_equals_vnni(type, {32, 576, 1536}, {17, 97, 200}, {16, 31, 48}, seed));
    seed += 100;
  }
}

// A matrix big enough to be split into more chunks than threads
// (packed_row_chunks: Gemma 3's head is) gives the same bits as one thread.
TEST(PackedMatmul, ManyChunksEqualOneThread) {
  if (detected_cpu_level() == CpuLevel::kScalar) GTEST_SKIP() << "no AVX2: Q5_0 is not packed";
  const TensorType type = TensorType::Q5_0;
  const int64_t rows = 131072 + 5, row_len = 640, tokens = 2;
  const auto w = random_weights(type, rows, row_len, 77);
  const PackedWeight pw = pack_one(type, w, rows, row_len);
  ASSERT_TRUE(pw.is_packed());
  const int64_t num_groups = (rows + 15) / 16;
  ASSERT_GT(detail::packed_row_chunks(2, num_groups, pw.packed_bytes() / static_cast<size_t>(num_groups)), 2);
  const auto x = random_floats(tokens * row_len, 78);
  ThreadPool one(1), two(2);
  MatmulScratch scratch;
  std::vector<float> y1(static_cast<size_t>(tokens * rows)), y2(y1.size());
  matmul_packed(pw, x.data(), tokens, y1.data(), one, scratch);
  matmul_packed(pw, x.data(), tokens, y2.data(), two, scratch);
  EXPECT_TRUE(bitwise_equal(y1.data(), y2.data(), tokens * rows));
}

// Below AVX-512 (as with KVSCOPE_CPU=avx2) or for a type without a packed
// kernel, matmul_packed is matmul() per part, bitwise, columns in place.
// (K-quants and Q5_0/Q5_1 pack at AVX2 too: tested in kquant_matmul_test.cpp
// and packed_q5_test.cpp.)
TEST(PackedMatmul, FallbackEqualsMatmulPerPart) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  const int64_t row_len = 256;
  const int64_t part_rows[] = {7, 54, 17};
  const int64_t total = 7 + 54 + 17;
  struct Case {
    TensorType type;
    CpuLevel level;
  };
  std::vector<Case> cases;
  for (CpuLevel level : available_levels()) {
    for (TensorType t : all_weight_types()) {
      const bool packs = (level == CpuLevel::kAvx512 &&
                          std::find(std::begin(kPackedTypes), std::end(kPackedTypes), t) != std::end(kPackedTypes)) ||
                         (level != CpuLevel::kScalar && detail::is_packed_kquant(t)) ||  // kquant_matmul_test.cpp
                         (level != CpuLevel::kScalar &&
                          (t == TensorType::Q5_0 || t == TensorType::Q5_1));  // packed_q5_test.cpp
      if (!packs) cases.push_back({t, level});
    }
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(type_name(c.type) + " " + std::string(cpu_level_name(c.level)));
    ScopedCpuLevel scoped(c.level);
    std::vector<std::vector<uint8_t>> ws;
    std::vector<WeightPart> parts;
    for (int i = 0; i < 3; ++i) ws.push_back(random_weights(c.type, part_rows[i], row_len, 30 + i));
    for (int i = 0; i < 3; ++i) parts.push_back({ws[i].data(), part_rows[i]});
    const PackedWeight pw = PackedWeight::pack(c.type, row_len, parts);
    EXPECT_FALSE(pw.is_packed());
    const int64_t tokens = 3;
    const auto x = random_floats(tokens * row_len, 40);
    std::vector<float> y(static_cast<size_t>(tokens * total));
    matmul_packed(pw, x.data(), tokens, y.data(), pool, scratch);
    int64_t r0 = 0;
    for (int i = 0; i < 3; ++i) {
      std::vector<float> ya(static_cast<size_t>(tokens * part_rows[i]));
      matmul(c.type, ws[i].data(), part_rows[i], row_len, x.data(), tokens, ya.data(), pool, scratch);
      for (int64_t t = 0; t < tokens; ++t) {
        ASSERT_TRUE(bitwise_equal(y.data() + t * total + r0, ya.data() + t * part_rows[i], part_rows[i]))
            << "part " << i << " token " << t;
      }
      r0 += part_rows[i];
    }
  }
}

}  // namespace
}  // namespace kvscope::test
