// Packed K-quant matmul (Q2_K..Q6_K; kernels/cpu/kquant_packed.h) on
// odd sizes: rows not a multiple of 16, tokens 1..7 and 33, row_len 256, 768
// and 2816. Checks
//  - the AVX2 and AVX-512 VNNI kernels (through matmul_packed) equal the
//    scalar reference kquant_groups_scalar bitwise (same integer dot, same
//    float operations in the same order);
//  - the scalar reference equals the f32 dequantise (dequantize_row_ref) +
//    dot with the same 8-bit activations within a first-order rounding bound
//    (derived below), and the exact f32 dot within the activation
//    quantisation error;
//  - invariance: a token alone == in any batch on 1..3 threads, stacked parts
//    == each part alone, bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "packed_test_util.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/kquant_packed.h"
#include "kernels/cpu/packed_matmul.h"
#include "kernels/reference/dequantize.h"

namespace kvscope::test {
namespace {

const TensorType kKquantTypes[] = {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                   TensorType::Q6_K};
const int64_t kTokenCounts[] = {1, 2, 3, 4, 5, 6, 7, 33};


// Levels with a packed K-quant kernel on this machine (AVX2 and up).
std::vector<CpuLevel> kernel_levels() {
  std::vector<CpuLevel> out;
  for (CpuLevel l : available_levels()) {
    if (l != CpuLevel::kScalar) out.push_back(l);
  }
  return out;
}

// The scalar activations (packed_test_util.h) as the K-quant kernels take them.
struct Acts : ScalarActs {
  detail::KquantActs view() const { return {ScalarActs::view(), half_sums.data(), ds_stride}; }
};

Acts quantize(const std::vector<float>& x, int64_t tokens, int64_t row_len) {
  return Acts{quantize_acts_scalar(x, tokens, row_len)};
}

// The packed bytes of `w`, built with the pack routine alone (no CPU level).
std::vector<uint8_t> pack_bytes(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t row_len) {
  const size_t group = detail::kquant_group_bytes(type, row_len);
  std::vector<uint8_t> packed(group * static_cast<size_t>((rows + 15) / 16) + 64, 0);
  for (int64_t r = 0; r < rows; ++r) {
    detail::kquant_pack_row(type, w.data() + r * row_bytes(type, row_len), row_len, static_cast<int>(r % 16),
                            packed.data() + static_cast<size_t>(r / 16) * group);
  }
  return packed;
}

std::vector<float> scalar_reference(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t row_len,
                                    const Acts& a, int64_t tokens) {
  const auto packed = pack_bytes(type, w, rows, row_len);
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  detail::kquant_groups_scalar(type, packed.data(), 0, (rows + 15) / 16, rows, row_len, a.view(), tokens, y.data(),
                               rows);
  return y;
}

std::vector<float> dequantize_rows(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t row_len) {
  std::vector<float> out(static_cast<size_t>(rows * row_len));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row_ref(type, w.data() + r * row_bytes(type, row_len), out.data() + r * row_len, row_len);
  }
  return out;
}

// Per element, |d*sc*u| + |dmin*m| (types with mins: the two terms whose
// difference is the weight) or |d*sc*(u-o)| (Q3_K, Q6_K): the magnitudes the
// rounding errors scale with. Made by dequantising copies with dmin = 0 and
// with d = 0.
std::vector<float> term_magnitudes(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t row_len) {
  auto scaled_part = dequantize_rows(type, w, rows, row_len);
  for (float& v : scaled_part) v = std::fabs(v);
  if (!detail::kquant_has_min(type)) return scaled_part;
  const std::vector<int> f16_fields = f16_scale_offsets(type);  // {d, dmin}
  auto no_min = w;
  auto no_scale = w;
  const size_t bb = static_cast<size_t>(traits_of(type).block_bytes);
  for (size_t blk = 0; blk < w.size() / bb; ++blk) {
    std::memset(no_min.data() + blk * bb + f16_fields[1], 0, 2);
    std::memset(no_scale.data() + blk * bb + f16_fields[0], 0, 2);
  }
  auto a = dequantize_rows(type, no_min, rows, row_len);
  const auto b = dequantize_rows(type, no_scale, rows, row_len);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::fabs(a[i]) + std::fabs(b[i]);
  return a;
}

TEST(KquantMatmul, KernelsEqualScalarReferenceBitwise) {
  const auto levels = kernel_levels();
  if (levels.empty()) GTEST_SKIP() << "no AVX2: K-quants use the dequantise path";
  ThreadPool pool(2);
  MatmulScratch scratch;
  uint32_t seed = 100;
  for (TensorType type : kKquantTypes) {
    for (int64_t row_len : {256, 768, 2816}) {
      for (int64_t rows : {1, 17, 45}) {
        const auto w = random_weights(type, rows, row_len, seed++);
        for (int64_t tokens : kTokenCounts) {
          const auto x = random_floats(tokens * row_len, seed++);
          const auto expected = scalar_reference(type, w, rows, row_len, quantize(x, tokens, row_len), tokens);
          for (CpuLevel level : levels) {
            ScopedCpuLevel scoped(level);
            const PackedWeight pw = pack_one(type, w, rows, row_len);
            ASSERT_TRUE(pw.is_packed());
            std::vector<float> y(expected.size());
            matmul_packed(pw, x.data(), tokens, y.data(), pool, scratch);
            ASSERT_TRUE(bitwise_equal(y.data(), expected.data(), tokens * rows))
                << type_name(type) << " " << cpu_level_name(level) << " row_len " << row_len << " rows " << rows
                << " tokens " << tokens;
          }
        }
      }
    }
  }
}

// Scalar reference vs the f32 dequantised weights (dequantize_row_ref) dotted
// in double with the same 8-bit activations xq. The reference weight takes at
// most 4 roundings (Q2_K: fl(fl(fl(d*sc)*u) - fl(dmin*m))); the kernel adds
// per block of 32 at most two terms, each an exact integer times one or two
// rounded f32 products (fl(fl(d*sc)*d_x), s_x = fl(d_x*sum q), ...), with
// 2 * row_len/32 roundings in the sum, every term bounded by
// sum_k mag_k |xq_k| (mag_k the term magnitudes above). So to first order in
// u = 2^-24 the difference is at most (2 * row_len/32 + 8) u sum_k mag_k |xq_k|.
// Against the exact f32 x the error is the activation quantisation's, as for
// Q4_0..Q8_0 (packed_matmul_test.cpp): normalised RMS <= 2e-2.
TEST(KquantMatmul, ScalarReferenceMatchesDequantisedF32) {
  uint32_t seed = 500;
  for (TensorType type : kKquantTypes) {
    SCOPED_TRACE(type_name(type));
    double all_num = 0.0, all_den = 0.0, worst_ratio = 0.0;
    for (int64_t row_len : {256, 768, 2816}) {
      for (int64_t rows : {1, 17, 45}) {
        const auto w = random_weights(type, rows, row_len, seed++);
        const auto wf = dequantize_rows(type, w, rows, row_len);
        const auto mag = term_magnitudes(type, w, rows, row_len);
        const double bound_factor = (2.0 * static_cast<double>(row_len / 32) + 8.0) * std::ldexp(1.0, -24);
        for (int64_t tokens : kTokenCounts) {
          const auto x = random_floats(tokens * row_len, seed++);
          const Acts a = quantize(x, tokens, row_len);
          const auto y = scalar_reference(type, w, rows, row_len, a, tokens);
          for (int64_t t = 0; t < tokens; ++t) {
            for (int64_t r = 0; r < rows; ++r) {
              double same = 0.0, exact = 0.0, scale = 0.0;
              for (int64_t k = 0; k < row_len; ++k) {
                const double xq = static_cast<double>(a.q[t * a.q_stride + k]) * a.ds[t * a.ds_stride + 2 * (k / 32)];
                same += static_cast<double>(wf[r * row_len + k]) * xq;
                exact += static_cast<double>(wf[r * row_len + k]) * x[t * row_len + k];
                scale += static_cast<double>(mag[r * row_len + k]) * std::fabs(xq);
              }
              const double got = y[t * rows + r];
              const double bound = bound_factor * scale + 1e-30;
              worst_ratio = std::max(worst_ratio, std::fabs(got - same) / bound);
              ASSERT_LE(std::fabs(got - same), bound)
                  << "row_len " << row_len << " rows " << rows << " tokens " << tokens << " t " << t << " r " << r;
              all_num += (got - exact) * (got - exact);
              all_den += exact * exact;
            }
          }
        }
      }
    }
    EXPECT_LE(std::sqrt(all_num / all_den), 2e-2);
    RecordProperty("worst_error_over_bound_" + type_name(type), std::to_string(worst_ratio));
  }
}

// docs/architecture.md "Invariance": each token alone on one thread == in a
// batch of 1..33 on 1..3 threads, bitwise, at every kernel level.
TEST(KquantMatmul, SameBitsAloneInBatchAndAcrossThreads) {
  constexpr int64_t kMaxTokens = 33;
  for (CpuLevel level : kernel_levels()) {
    ScopedCpuLevel scoped(level);
    for (TensorType type : kKquantTypes) {
      const int64_t rows = 109;  // 6 full groups + 13 rows; several tiles per thread
      const int64_t row_len = 768;
      SCOPED_TRACE(type_name(type) + " " + std::string(cpu_level_name(level)));
      const auto w = random_weights(type, rows, row_len, 42);
      const PackedWeight pw = pack_one(type, w, rows, row_len);
      std::vector<float> alone;
      ASSERT_NO_FATAL_FAILURE(expect_alone_equals_batched(pw, random_floats(kMaxTokens * row_len, 43), kMaxTokens, alone));
    }
  }
}

// With AMX, 16-token tiles of Q4_K, Q5_K and Q6_K run on the tile unit
// (Q2_K and Q3_K pass through to VNNI): exactly the VNNI kernel's bits, with
// and without a tail of fewer than 16 tokens.
TEST(KquantMatmul, AmxEqualsVnniBitwise) {
  if (!amx_available()) GTEST_SKIP() << "this CPU (or kernel) has no AMX: nothing to compare";
  if (detected_cpu_level() != CpuLevel::kAvx512) GTEST_SKIP() << "AMX runs only beside AVX-512 VNNI";
  uint32_t seed = 900;
  for (TensorType type : kKquantTypes) {
    ASSERT_NO_FATAL_FAILURE(expect_amx_equals_vnni(type, {256, 768, 2048}, {17, 109}, {16, 33}, seed));
    seed += 100;
  }
}

// Parts of 7, 54 and 17 rows stacked (groups span parts) == each alone.
TEST(KquantMatmul, StackedPartsEqualEachPartAlone) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  const int64_t row_len = 512;
  const int64_t part_rows[] = {7, 54, 17};
  const int64_t total = 7 + 54 + 17;
  for (TensorType type : kKquantTypes) {
    SCOPED_TRACE(type_name(type));
    std::vector<std::vector<uint8_t>> ws;
    std::vector<WeightPart> parts;
    for (int i = 0; i < 3; ++i) ws.push_back(random_weights(type, part_rows[i], row_len, 10 + i));
    for (int i = 0; i < 3; ++i) parts.push_back({ws[i].data(), part_rows[i]});
    const PackedWeight stacked = PackedWeight::pack(type, row_len, parts);
    for (int64_t tokens : {1, 5}) {
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
              << "part " << i << " token " << t;
        }
        r0 += part_rows[i];
      }
    }
  }
}

// The packed copy takes about the GGUF bytes (kquant_packed.h): bytes are
// time at decode.
TEST(KquantMatmul, PackedBytesCloseToGguf) {
  if (kernel_levels().empty()) GTEST_SKIP() << "no AVX2: K-quants use the dequantise path";
  const struct {
    TensorType type;
    size_t packed_per_row_sb;
  } cases[] = {{TensorType::Q2_K, 164}, {TensorType::Q3_K, 148}, {TensorType::Q4_K, 148}, {TensorType::Q5_K, 180},
               {TensorType::Q6_K, 212}};
  for (const auto& c : cases) {
    const auto w = random_weights(c.type, 64, 768, 7);
    EXPECT_EQ(pack_one(c.type, w, 64, 768).packed_bytes(), 64 * 3 * c.packed_per_row_sb) << type_name(c.type);
  }
}

}  // namespace
}  // namespace kvscope::test
