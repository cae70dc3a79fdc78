// The 5-bit packed layout of Q5_0 / Q5_1 (packed_matmul_internal.h: nibbles
// plus one high-bit plane, unpacked in registers) on odd sizes (rows and
// tokens 1, 7, 17, 54, 97). Checks
//  - the AVX2 and AVX-512 VNNI kernels (through matmul_packed) equal the
//    scalar reference matmul_packed_groups_scalar bitwise;
//  - the old one-byte-per-weight layout (kBytes) through the AVX-512 kernel,
//    i.e. the Q5_0 path before the 5-bit layout, gives the same bits: the
//    engine's outputs do not change;
//  - a broken high-bit unpack is caught by these comparisons;
//  - invariance at each level, and the packed bytes equal GGUF's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "packed_test_util.h"
#include "kernels/cpu/packed_matmul.h"
#include "kernels/cpu/packed_matmul_internal.h"
#include "kernels/reference/dequantize.h"

namespace kvscope::test {
namespace {

const TensorType kQ5Types[] = {TensorType::Q5_0, TensorType::Q5_1};
const int64_t kOddSizes[] = {1, 7, 17, 54, 97};

// Levels with a packed Q5 kernel on this machine (AVX2 and up).
std::vector<CpuLevel> kernel_levels() {
  std::vector<CpuLevel> out;
  for (CpuLevel l : available_levels()) {
    if (l != CpuLevel::kScalar) out.push_back(l);
  }
  return out;
}

// A packed matrix built with packed_pack_row alone, 64-byte aligned as the
// kernels' aligned loads need.
struct PackedBytes {
  detail::PackedFormat f;
  detail::PackedGroupLayout layout;
  std::vector<uint8_t> storage;
  uint8_t* data() { return storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64; }
};

PackedBytes pack_bytes(TensorType type, detail::PackedQuants quants, const std::vector<uint8_t>& w, int64_t rows,
                       int64_t row_len) {
  PackedBytes p;
  p.f = detail::packed_format(type);
  p.f.quants = quants;
  p.layout = detail::packed_group_layout(p.f, row_len / 32);
  p.storage.assign(p.layout.bytes * static_cast<size_t>((rows + 15) / 16) + 64 + 4 * 320, 0);
  for (int64_t r = 0; r < rows; ++r) {
    detail::packed_pack_row(type, p.f, p.layout, w.data() + r * row_bytes(type, row_len), row_len,
                            static_cast<int>(r % 16), p.data() + static_cast<size_t>(r / 16) * p.layout.bytes);
  }
  return p;
}

// Activations as matmul_packed hands them to the kernels (s_x times the
// offset for Q5_0, which has no min).
ScalarActs kernel_acts(TensorType type, const std::vector<float>& x, int64_t tokens, int64_t row_len) {
  ScalarActs a = quantize_acts_scalar(x, tokens, row_len);
  const detail::PackedFormat f = detail::packed_format(type);
  if (!f.has_min) {
    for (size_t i = 1; i < a.ds.size(); i += 2) a.ds[i] *= f.offset;
  }
  return a;
}

std::vector<float> scalar_reference(PackedBytes& p, int64_t rows, int64_t row_len, const ScalarActs& a,
                                    int64_t tokens) {
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  detail::matmul_packed_groups_scalar(p.f, p.data(), p.layout, 0, (rows + 15) / 16, rows, row_len, a.view(), tokens,
                                      y.data(), rows);
  return y;
}

// Normalised RMS of y against the dequantised weights dotted in double with
// the same 8-bit activations (as packed_matmul_test.cpp's 1e-5 check).
double error_vs_dequantised(TensorType type, const std::vector<uint8_t>& w, int64_t rows, int64_t row_len,
                            const ScalarActs& a, int64_t tokens, const std::vector<float>& y) {
  std::vector<float> wf(static_cast<size_t>(row_len));
  double num = 0.0, den = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row_ref(type, w.data() + r * row_bytes(type, row_len), wf.data(), row_len);
    for (int64_t t = 0; t < tokens; ++t) {
      double same = 0.0, scale = 0.0;
      for (int64_t k = 0; k < row_len; ++k) {
        const double xq = static_cast<double>(a.q[t * a.q_stride + k]) * a.ds[t * a.ds_stride + 2 * (k / 32)];
        same += wf[k] * xq;
        scale += std::fabs(wf[k]) * std::fabs(xq);
      }
      num += (y[t * rows + r] - same) * (y[t * rows + r] - same);
      den += scale * scale;
    }
  }
  return std::sqrt(num / den);
}

TEST(PackedQ5, KernelsEqualScalarReferenceAndOldLayoutBitwise) {
  const auto levels = kernel_levels();
  if (levels.empty()) GTEST_SKIP() << "no AVX2: Q5_0/Q5_1 use matmul()";
  const bool avx512 = detected_cpu_level() == CpuLevel::kAvx512;
  ThreadPool pool(2);
  MatmulScratch scratch;
  uint32_t seed = 700;
  for (TensorType type : kQ5Types) {
    for (int64_t row_len : {32, 96, 640}) {
      for (int64_t rows : kOddSizes) {
        const auto w = random_weights(type, rows, row_len, seed++);
        PackedBytes five = pack_bytes(type, detail::PackedQuants::kFiveBit, w, rows, row_len);
        PackedBytes old = pack_bytes(type, detail::PackedQuants::kBytes, w, rows, row_len);
        for (int64_t tokens : kOddSizes) {
          SCOPED_TRACE(type_name(type) + " row_len " + std::to_string(row_len) + " rows " + std::to_string(rows) +
                       " tokens " + std::to_string(tokens));
          const auto x = random_floats(tokens * row_len, seed++);
          const ScalarActs a = kernel_acts(type, x, tokens, row_len);
          const auto expected = scalar_reference(five, rows, row_len, a, tokens);
          ASSERT_TRUE(bitwise_equal(scalar_reference(old, rows, row_len, a, tokens).data(), expected.data(),
                                    tokens * rows));
          std::vector<float> y(expected.size());
          if (avx512) {
            // The path before the 5-bit layout: one byte per weight, AVX-512.
            detail::matmul_packed_groups_avx512(old.f, old.data(), old.layout, 0, (rows + 15) / 16, rows, row_len,
                                                a.view(), tokens, y.data(), rows);
            ASSERT_TRUE(bitwise_equal(y.data(), expected.data(), tokens * rows)) << "old layout, AVX-512";
          }
          for (CpuLevel level : levels) {
            ScopedCpuLevel scoped(level);
            const PackedWeight pw = pack_one(type, w, rows, row_len);
            ASSERT_TRUE(pw.is_packed());
            std::fill(y.begin(), y.end(), 0.0f);
            matmul_packed(pw, x.data(), tokens, y.data(), pool, scratch);
            ASSERT_TRUE(bitwise_equal(y.data(), expected.data(), tokens * rows)) << cpu_level_name(level);
          }
          EXPECT_LE(error_vs_dequantised(type, w, rows, row_len, a, tokens, expected), 1e-5);
        }
      }
    }
  }
}

// The comparisons above must notice an unpack that gets the high bits wrong.
// A kernel whose unpack drops the high plane, or moves bit v into vector v+1
// (a shift off by one), computes what the correct unpack computes on a plane
// zeroed or rotated by one bit; run the scalar reference on such planes and
// check that both the bitwise comparison with the kernels and the error
// against the dequantised weights flag it.
TEST(PackedQ5, BrokenHighBitUnpackIsCaught) {
  const auto levels = kernel_levels();
  if (levels.empty()) GTEST_SKIP() << "no AVX2: Q5_0/Q5_1 use matmul()";
  ThreadPool pool(2);
  MatmulScratch scratch;
  const int64_t rows = 17, row_len = 640, tokens = 7;
  for (TensorType type : kQ5Types) {
    SCOPED_TRACE(type_name(type));
    const auto w = random_weights(type, rows, row_len, 900);
    const auto x = random_floats(tokens * row_len, 901);
    const ScalarActs a = kernel_acts(type, x, tokens, row_len);
    std::vector<std::vector<float>> kernel_y;
    for (CpuLevel level : levels) {
      ScopedCpuLevel scoped(level);
      kernel_y.emplace_back(static_cast<size_t>(tokens * rows));
      matmul_packed(pack_one(type, w, rows, row_len), x.data(), tokens, kernel_y.back().data(), pool, scratch);
      ASSERT_LE(error_vs_dequantised(type, w, rows, row_len, a, tokens, kernel_y.back()), 1e-5);
    }
    const char* const kBreakages[] = {"high plane dropped", "high bits off by one vector"};
    for (int breakage = 0; breakage < 2; ++breakage) {
      SCOPED_TRACE(kBreakages[breakage]);
      PackedBytes p = pack_bytes(type, detail::PackedQuants::kFiveBit, w, rows, row_len);
      for (int64_t g = 0; g < (rows + 15) / 16; ++g) {
        for (int64_t b = 0; b < row_len / 32; ++b) {
          uint8_t* hi = p.data() + static_cast<size_t>(g) * p.layout.bytes + static_cast<size_t>(b) * 320 + 256;
          for (int k = 0; k < 64; ++k) {
            hi[k] = breakage == 0 ? uint8_t{0} : static_cast<uint8_t>((hi[k] << 1) | (hi[k] >> 7));
          }
        }
      }
      const auto broken = scalar_reference(p, rows, row_len, a, tokens);
      for (const auto& y : kernel_y) EXPECT_FALSE(bitwise_equal(broken.data(), y.data(), tokens * rows));
      EXPECT_GT(error_vs_dequantised(type, w, rows, row_len, a, tokens, broken), 1e-3);
    }
  }
}

// docs/architecture.md "Invariance" at every kernel level: each token alone on
// one thread == in a batch of 1..54 on 1..3 threads, bitwise.
TEST(PackedQ5, SameBitsAloneInBatchAndAcrossThreads) {
  for (CpuLevel level : kernel_levels()) {
    ScopedCpuLevel scoped(level);
    for (TensorType type : kQ5Types) {
      SCOPED_TRACE(type_name(type) + " " + std::string(cpu_level_name(level)));
      const int64_t rows = 97, row_len = 640;
      const PackedWeight pw = pack_one(type, random_weights(type, rows, row_len, 42), rows, row_len);
      ASSERT_TRUE(pw.is_packed());
      std::vector<float> alone;
      ASSERT_NO_FATAL_FAILURE(expect_alone_equals_batched(pw, random_floats(54 * row_len, 43), 54, alone));
    }
  }
}

// 22 (Q5_0) and 24 (Q5_1) bytes per 32 weights as in GGUF, not the 34 / 36
// of one byte per weight: decode streams these bytes once per token.
TEST(PackedQ5, TakesGgufBytes) {
  for (CpuLevel level : kernel_levels()) {
    ScopedCpuLevel scoped(level);
    for (TensorType type : kQ5Types) {
      const auto w = random_weights(type, 2048, 640, 8);
      EXPECT_EQ(pack_one(type, w, 2048, 640).packed_bytes(), w.size()) << type_name(type);
    }
  }
}

}  // namespace
}  // namespace kvscope::test
