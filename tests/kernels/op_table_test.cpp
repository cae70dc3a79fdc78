// The op test table (docs/architecture.md, "Adding a kernel"): every CPU op, every weight type,
// every CPU level this machine has, odd sizes, fast kernel vs the reference by
// normalised error ||fast - ref|| / ||ref||.
//
// Thresholds (matmul details at check_matmul):
// - matmul: per case vs the reference on the activations the kernel really
//   multiplies, scaled by dot(|w|, |x|): 1e-5 (f32 rounding). Overall vs the
//   exact reference: 2e-2 with 8-bit activations (x rounded to amax/254 per
//   block of 32 is ~0.4% noise per element, ~4e-3 per dot, ~1e-2 worst
//   case), 1e-5 for f32 paths (sqrt(768) * 6e-8 ~ 2e-6).
// - rms_norm / softmax: f32 sums vs double: 1e-5.
// - silu/gelu use a 2e-7-accurate polynomial exp: 1e-5. rope: f32 cos/sin of
//   the same f32 angle as the reference: 1e-5. add: exact.
// - dequantize / embedding_row: fast must equal reference bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "kernel_test_util.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/gelu_tanh_mul.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/silu_mul.h"
#include "kernels/cpu/softmax.h"
#include "kernels/reference/dequantize.h"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/matmul.h"

namespace kvscope::test {
namespace {

const int64_t kRows[] = {1, 7, 17, 54, 97};
const int64_t kRowLens[] = {32, 64, 96, 256, 512, 768};
const int64_t kTokens[] = {1, 3, 17};
const int64_t kElemSizes[] = {1, 7, 17, 54, 97, 576, 1536};

bool uses_int8(TensorType t, CpuLevel level) {
  return level != CpuLevel::kScalar &&
         (t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q5_0 ||
          t == TensorType::Q5_1 || t == TensorType::Q8_0);
}

struct OpCase {
  std::string name;
  CpuLevel level;
  std::function<void()> run;  // runs its sizes, EXPECTs inside
};

std::vector<uint8_t> as_f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Per case, fast is compared with the reference on the activations the kernel
// really multiplies (int8-rounded for the int8 paths), scaled by dot(|w|, |x|),
// the natural size of f32 rounding error (a single dot can cancel to ~0, so
// ||ref|| would be a noisy scale): tolerance 1e-5. Over all cases together,
// fast vs the exact reference by ||fast - ref|| / ||ref||: 2e-2 for int8
// activations, 1e-5 for f32.
void check_matmul(TensorType type, CpuLevel level) {
  ScopedCpuLevel scoped(level);
  ThreadPool pool(2);
  MatmulScratch scratch;
  const bool int8 = uses_int8(type, level);
  std::vector<float> all_fast, all_ref;
  uint32_t seed = 1;
  for (int64_t row_len : kRowLens) {
    if (row_len % traits_of(type).block_elems != 0) continue;
    for (int64_t rows : kRows) {
      for (int64_t tokens : kTokens) {
        const auto w = random_weights(type, rows, row_len, seed++);
        const auto x = random_floats(tokens * row_len, seed++);
        const size_t num_out = static_cast<size_t>(tokens * rows);
        std::vector<float> fast(num_out), ref(num_out), ref_same(num_out), scale(num_out);
        matmul(type, w.data(), rows, row_len, x.data(), tokens, fast.data(), pool, scratch);
        matmul_ref(type, w.data(), rows, row_len, x.data(), tokens, ref.data());
        std::vector<float> wf(static_cast<size_t>(rows * row_len));
        for (int64_t r = 0; r < rows; ++r) {
          dequantize_row_ref(type, w.data() + r * row_bytes(type, row_len), wf.data() + r * row_len, row_len);
        }
        const auto xs = int8 ? as_int8_activations(x) : x;
        matmul_ref(TensorType::F32, as_f32_bytes(wf).data(), rows, row_len, xs.data(), tokens, ref_same.data());
        std::vector<float> wabs(wf.size()), xabs(x.size());
        for (size_t i = 0; i < wf.size(); ++i) wabs[i] = std::fabs(wf[i]);
        for (size_t i = 0; i < x.size(); ++i) xabs[i] = std::fabs(x[i]);
        matmul_ref(TensorType::F32, as_f32_bytes(wabs).data(), rows, row_len, xabs.data(), tokens, scale.data());
        double num = 0.0, den = 0.0;
        for (size_t i = 0; i < num_out; ++i) {
          num += (static_cast<double>(fast[i]) - ref_same[i]) * (static_cast<double>(fast[i]) - ref_same[i]);
          den += static_cast<double>(scale[i]) * scale[i];
        }
        EXPECT_LE(std::sqrt(num / den), 1e-5) << "rows " << rows << " row_len " << row_len << " tokens " << tokens;
        all_fast.insert(all_fast.end(), fast.begin(), fast.end());
        all_ref.insert(all_ref.end(), ref.begin(), ref.end());
      }
    }
  }
  EXPECT_LE(normalised_error(all_fast.data(), all_ref.data(), static_cast<int64_t>(all_ref.size())),
            int8 ? 2e-2 : 1e-5);
}

void check_dequantize(TensorType type) {
  for (int64_t row_len : kRowLens) {
    if (row_len % traits_of(type).block_elems != 0) continue;
    const auto w = random_weights(type, 3, row_len, static_cast<uint32_t>(row_len));
    std::vector<float> fast(static_cast<size_t>(row_len));
    std::vector<float> ref(fast.size());
    for (int64_t r = 0; r < 3; ++r) {
      embedding_row(type, w.data(), r, row_len, fast.data());
      dequantize_row_ref(type, w.data() + r * row_bytes(type, row_len), ref.data(), row_len);
      EXPECT_TRUE(bitwise_equal(fast.data(), ref.data(), row_len)) << "row_len " << row_len << " row " << r;
    }
  }
}

// Elementwise ops: the fast op on `tokens` rows at once vs the reference per row.
void check_rms_norm() {
  for (int64_t n : kElemSizes) {
    for (int64_t tokens : kTokens) {
      const auto x = random_floats(tokens * n, 7, -3.0f, 3.0f);
      const auto w = random_floats(n, 8, 0.5f, 1.5f);
      std::vector<float> fast(x.size()), ref(x.size());
      rms_norm(x.data(), w.data(), tokens, n, 1e-5f, fast.data());
      for (int64_t t = 0; t < tokens; ++t) rms_norm_ref(x.data() + t * n, w.data(), n, 1e-5f, ref.data() + t * n);
      EXPECT_LE(normalised_error(fast.data(), ref.data(), tokens * n), 1e-5) << "n " << n;
    }
  }
}

// With frequency factors (Llama 3.x rope scaling) as well as without: the
// factors range over 1..8 like the llama3 rule's, so dropping them fails.
void check_rope(RopeStyle style) {
  const int64_t head_dims[] = {2, 64, 256};
  const int64_t heads[] = {1, 3, 9};
  for (bool scaled : {false, true}) {
    for (int64_t d : head_dims) {
      const auto factors = random_floats(d / 2, 11, 1.0f, 8.0f);
      const float* ff = scaled ? factors.data() : nullptr;
      for (int64_t h : heads) {
        for (int64_t tokens : kTokens) {
          auto fast = random_floats(tokens * h * d, 9);
          auto ref = fast;
          std::vector<int32_t> pos(static_cast<size_t>(tokens));
          for (int64_t t = 0; t < tokens; ++t) pos[t] = static_cast<int32_t>(t * 397 % 5000);
          rope(fast.data(), tokens, h, d, pos.data(), 100000.0f, style, 0, ff);
          for (int64_t t = 0; t < tokens; ++t) rope_ref(ref.data() + t * h * d, h, d, pos[t], 100000.0f, style, ff);
          EXPECT_LE(normalised_error(fast.data(), ref.data(), tokens * h * d), 1e-5)
              << "d " << d << " heads " << h << (scaled ? " with factors" : "");
        }
      }
    }
  }
}

void check_softmax() {
  for (int64_t n : kElemSizes) {
    for (int64_t tokens : kTokens) {
      const auto x = random_floats(tokens * n, 10, -20.0f, 20.0f);
      std::vector<float> fast(x.size()), ref(x.size());
      softmax(x.data(), tokens, n, fast.data());
      for (int64_t t = 0; t < tokens; ++t) softmax_ref(x.data() + t * n, n, ref.data() + t * n);
      EXPECT_LE(normalised_error(fast.data(), ref.data(), tokens * n), 1e-5) << "n " << n;
    }
  }
}

using Binary = void (*)(const float*, const float*, int64_t, float*);
void check_binary(Binary fast_fn, Binary ref_fn, double tol, float range) {
  for (int64_t n : kElemSizes) {
    const auto a = random_floats(n, 11, -range, range);
    const auto b = random_floats(n, 12, -range, range);
    std::vector<float> fast(a.size()), ref(a.size());
    fast_fn(a.data(), b.data(), n, fast.data());
    ref_fn(a.data(), b.data(), n, ref.data());
    EXPECT_LE(normalised_error(fast.data(), ref.data(), n), tol) << "n " << n;
  }
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> cases;
  for (CpuLevel level : available_levels()) {
    const std::string lv(cpu_level_name(level));
    for (TensorType t : all_weight_types()) {
      const std::string tn(traits_of(t).name);
      cases.push_back({"matmul_" + tn + "_" + lv, level, [t, level] { check_matmul(t, level); }});
    }
  }
  // The elementwise kernels and dequantize pick their path at compile time
  // (AVX2 baseline on x86-64), so they run once.
  for (TensorType t : all_weight_types()) {
    cases.push_back({"dequantize_" + std::string(traits_of(t).name), CpuLevel::kScalar, [t] { check_dequantize(t); }});
  }
  cases.push_back({"rms_norm", CpuLevel::kScalar, check_rms_norm});
  cases.push_back({"rope_adjacent", CpuLevel::kScalar, [] { check_rope(RopeStyle::kAdjacentPairs); }});
  cases.push_back({"rope_half_split", CpuLevel::kScalar, [] { check_rope(RopeStyle::kHalfSplit); }});
  cases.push_back({"softmax", CpuLevel::kScalar, check_softmax});
  cases.push_back({"silu_mul", CpuLevel::kScalar, [] { check_binary(silu_mul, silu_mul_ref, 1e-5, 30.0f); }});
  cases.push_back({"gelu_tanh_mul", CpuLevel::kScalar, [] { check_binary(gelu_tanh_mul, gelu_tanh_mul_ref, 1e-5, 30.0f); }});
  cases.push_back({"add", CpuLevel::kScalar, [] { check_binary(add, add_ref, 0.0, 100.0f); }});
  return cases;
}

class OpTable : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpTable, FastMatchesReference) { GetParam().run(); }

INSTANTIATE_TEST_SUITE_P(Cpu, OpTable, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

}  // namespace
}  // namespace kvscope::test
