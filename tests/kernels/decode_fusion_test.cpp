// The decode fusions (docs/decode-profile.md, "Done since") against the
// unfused steps they replace, bitwise, at odd sizes (1, 7, 17, 54, 97):
// - matmul_packed_stacked with a RowNorm == rms_norm() into a buffer, then
//   matmul_packed() on each weight alone: one activation quantisation with
//   the norm folded in, and one parallel_for over weights of mixed types,
//   give the same bits;
// - rope_cos_sin + rope_rotate (one table for q and k, q rotated out of
//   place) == rope() in place.
// Run on every CPU level that packs something (AVX-512 VNNI, AVX2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "packed_test_util.h"
#include "kernels/cpu/packed_matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"

namespace kvscope::test {
namespace {

constexpr int64_t kOddSizes[] = {1, 7, 17, 54, 97};

struct StackCase {
  std::vector<TensorType> types;
  int64_t row_len;
};

// Gemma 3's Q|K|V in a Q4_K_M file (Q5_0, Q5_0, Q8_0); every offset and
// K-quant kind with four parts; more parts than one quantisation serves;
// one weight with a padding block (row_len / 32 odd).
const StackCase kCases[] = {
    {{TensorType::Q5_0, TensorType::Q5_0, TensorType::Q8_0}, 640},
    {{TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::Q4_0}, 512},
    {{TensorType::Q4_1, TensorType::Q5_1, TensorType::Q2_K, TensorType::Q3_K, TensorType::Q5_K, TensorType::Q5_0},
     256},
    {{TensorType::Q8_0}, 96},
};

std::string describe(const StackCase& c) {
  std::string s;
  for (TensorType t : c.types) s += type_name(t) + " ";
  return s + "x " + std::to_string(c.row_len);
}

// The weights of c that the current CPU level packs (the stacked call's
// precondition), rows per weight rotating through the odd sizes.
struct Stack {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<PackedWeight> weights;
  std::vector<const PackedWeight*> ptrs;
  int64_t total_rows = 0;
};

Stack make_stack(const StackCase& c, uint32_t seed) {
  Stack s;
  for (size_t i = 0; i < c.types.size(); ++i) {
    const int64_t rows = kOddSizes[(seed + i) % 5];
    std::vector<uint8_t> w = random_weights(c.types[i], rows, c.row_len, seed * 31 + static_cast<uint32_t>(i));
    PackedWeight pw = pack_one(c.types[i], w, rows, c.row_len);
    if (!pw.is_packed()) continue;
    s.bytes.push_back(std::move(w));
    s.weights.push_back(std::move(pw));
    s.total_rows += rows;
  }
  for (const PackedWeight& w : s.weights) s.ptrs.push_back(&w);
  return s;
}

// x: [tokens][row_len] with token 0 all zeros (the norm's scale is then
// 1/sqrt(eps)), the rest random with a wide range.
std::vector<float> make_input(int64_t tokens, int64_t row_len, uint32_t seed) {
  std::vector<float> x = random_floats(tokens * row_len, seed, -4.0f, 4.0f);
  std::fill(x.begin(), x.begin() + row_len, 0.0f);
  return x;
}

// Adds to *num_checked the token counts it compared (none when the level
// packs none of c's types).
void expect_stacked_equals_each_alone(const StackCase& c, bool with_norm, int* num_checked) {
  ThreadPool one(1), two(2), three(3);
  ThreadPool* pools[] = {&one, &two, &three};
  MatmulScratch scratch;
  uint32_t seed = with_norm ? 100 : 200;
  const std::vector<float> norm_weight = random_floats(c.row_len, seed, 0.5f, 1.5f);
  const RowNorm norm{norm_weight.data(), 1e-6f};
  for (int64_t tokens : kOddSizes) {
    SCOPED_TRACE(describe(c) + ", " + std::to_string(tokens) + " tokens" + (with_norm ? ", norm" : ""));
    const Stack s = make_stack(c, seed++);
    if (s.weights.empty()) return;  // e.g. Q8_0 below AVX-512 (matmul() on the GGUF blocks)
    ++*num_checked;
    const std::vector<float> x = make_input(tokens, c.row_len, seed++);
    ThreadPool& pool = *pools[tokens % 3];
    std::vector<float> stacked(static_cast<size_t>(tokens * s.total_rows), -1.0f);
    matmul_packed_stacked(s.ptrs, x.data(), tokens, stacked.data(), pool, scratch, with_norm ? &norm : nullptr);

    // Unfused: the normed rows written out, then each weight on its own.
    std::vector<float> input = x;
    if (with_norm) rms_norm(x.data(), norm_weight.data(), tokens, c.row_len, norm.eps, input.data());
    int64_t col = 0;
    for (size_t i = 0; i < s.weights.size(); ++i) {
      const int64_t rows = s.weights[i].num_rows();
      std::vector<float> alone(static_cast<size_t>(tokens * rows));
      matmul_packed(s.weights[i], input.data(), tokens, alone.data(), pool, scratch);
      for (int64_t t = 0; t < tokens; ++t) {
        ASSERT_TRUE(bitwise_equal(stacked.data() + t * s.total_rows + col, alone.data() + t * rows, rows))
            << "weight " << i << " (" << type_name(s.weights[i].type()) << ", " << rows << " rows), token " << t;
      }
      col += rows;
    }
  }
}

std::vector<CpuLevel> packing_levels() {
  std::vector<CpuLevel> levels;
  for (CpuLevel l : available_levels()) {
    if (l != CpuLevel::kScalar) levels.push_back(l);
  }
  return levels;
}

// Every stack case at every level that packs, with the norm folded in or not.
void expect_all_cases_at_every_packing_level(bool fold_norm) {
  for (CpuLevel level : packing_levels()) {
    ScopedCpuLevel scoped(level);
    SCOPED_TRACE(std::string(cpu_level_name(level)));
    int num_checked = 0;
    for (const StackCase& c : kCases) {
      ASSERT_NO_FATAL_FAILURE(expect_stacked_equals_each_alone(c, fold_norm, &num_checked));
    }
    EXPECT_GE(num_checked, 15) << "cases with something packed";
  }
}

TEST(DecodeFusion, StackedWeightsWithFoldedNormEqualNormThenEachAlone) {
  if (packing_levels().empty()) GTEST_SKIP() << "no AVX2: nothing is packed";
  expect_all_cases_at_every_packing_level(true);
}

TEST(DecodeFusion, StackedWeightsEqualEachAlone) {
  if (packing_levels().empty()) GTEST_SKIP() << "no AVX2: nothing is packed";
  expect_all_cases_at_every_packing_level(false);
}

// Q|K rows of T tokens (9 query heads, 3 KV heads, as SmolLM2), rotated by
// rope() in place per part vs one shared table, q into its own buffer.
TEST(DecodeFusion, RopeTableThenRotateEqualsRope) {
  const int64_t num_q = 9, num_kv = 3;
  uint32_t seed = 300;
  for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalfSplit}) {
    for (int64_t head_dim : {2, 6, 64, 256}) {
      const std::vector<float> factors = random_floats(head_dim / 2, seed++, 1.0f, 8.0f);
      for (const float* ff : {static_cast<const float*>(nullptr), factors.data()}) {
        for (int64_t tokens : kOddSizes) {
          SCOPED_TRACE("style " + std::to_string(static_cast<int>(style)) + ", head_dim " + std::to_string(head_dim) +
                       ", " + std::to_string(tokens) + " tokens" + (ff ? ", factors" : ""));
          const int64_t Q = num_q * head_dim, stride = (num_q + num_kv) * head_dim;
          std::vector<int32_t> positions(static_cast<size_t>(tokens));
          for (int64_t t = 0; t < tokens; ++t) positions[static_cast<size_t>(t)] = static_cast<int32_t>((t * 7919 + seed) % 40000);
          const std::vector<float> rows = random_floats(tokens * stride, seed++, -3.0f, 3.0f);
          const float base = 10000.0f;

          std::vector<float> expected = rows;
          rope(expected.data(), tokens, num_q, head_dim, positions.data(), base, style, stride, ff);
          rope(expected.data() + Q, tokens, num_kv, head_dim, positions.data(), base, style, stride, ff);

          std::vector<float> cos_sin(static_cast<size_t>(tokens * head_dim));
          rope_cos_sin(tokens, head_dim, positions.data(), base, ff, cos_sin.data());
          std::vector<float> got = rows;
          std::vector<float> q(static_cast<size_t>(tokens * Q));
          for (int64_t t = 0; t < tokens; ++t) {
            float* row = got.data() + t * stride;
            rope_rotate(row, q.data() + t * Q, num_q, head_dim, style, cos_sin.data() + t * head_dim);
            rope_rotate(row + Q, row + Q, num_kv, head_dim, style, cos_sin.data() + t * head_dim);
          }
          for (int64_t t = 0; t < tokens; ++t) {
            ASSERT_TRUE(bitwise_equal(q.data() + t * Q, expected.data() + t * stride, Q)) << "q, token " << t;
            ASSERT_TRUE(bitwise_equal(got.data() + t * stride + Q, expected.data() + t * stride + Q, stride - Q))
                << "k, token " << t;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvscope::test
