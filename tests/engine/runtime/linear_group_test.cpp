// LinearGroup (runtime/linear_group.h) with the input's RMSNorm folded in,
// against the unfused steps, bitwise, on every CPU level (label `unit`):
//  - run(x, norm) == rms_norm(x) into a buffer, then run() on it;
//  - a group whose parts differ in type (Gemma 3's Q|K|V in a Q4_K_M file:
//    Q5_0, Q5_0, Q8_0), run as one dispatch where all parts are packed,
//    == each part as a group of its own.
// Below AVX-512 the Q8_0 part (and SmolLM2's Q4_1) is not packed, so the
// same checks cover the path that writes the normed rows first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/rms_norm.h"
#include "kernels/kernel_test_util.h"
#include "runtime/linear_group.h"

namespace kvscope {
namespace {

using test::bitwise_equal;

struct Part {
  std::vector<uint8_t> bytes;
  WeightMatrix matrix;
};

Part make_part(TensorType type, int64_t rows, int64_t row_len, uint32_t seed) {
  Part p;
  p.bytes = test::random_weights(type, rows, row_len, seed);
  p.matrix = WeightMatrix{type, p.bytes.data(), rows, row_len};
  return p;
}

struct GroupCase {
  const char* name;
  std::vector<TensorType> types;
  std::vector<int64_t> rows;
  int64_t row_len;
};

const GroupCase kCases[] = {
    {"gemma3 q4_k_m qkv", {TensorType::Q5_0, TensorType::Q5_0, TensorType::Q8_0}, {97, 17, 17}, 640},
    {"smollm2 q4_1 qkv", {TensorType::Q4_1, TensorType::Q4_1, TensorType::Q4_1}, {54, 7, 7}, 576},
    {"k-quant gate|up", {TensorType::Q4_K, TensorType::Q6_K}, {54, 97}, 512},
};

TEST(LinearGroup, FoldedNormAndMixedTypesEqualTheUnfusedSteps) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  uint32_t seed = 1;
  for (CpuLevel level : test::available_levels()) {
    test::ScopedCpuLevel scoped(level);  // packing follows the level in effect
    for (const GroupCase& c : kCases) {
      SCOPED_TRACE(std::string(c.name) + " at " + std::string(cpu_level_name(level)));
      std::vector<Part> parts;
      std::vector<const WeightMatrix*> matrices;
      int64_t total_rows = 0;
      for (size_t i = 0; i < c.types.size(); ++i) parts.push_back(make_part(c.types[i], c.rows[i], c.row_len, seed++));
      for (const Part& p : parts) {
        matrices.push_back(&p.matrix);
        total_rows += p.matrix.num_rows;
      }
      LinearGroup group(matrices);
      const std::vector<float> norm_weight = test::random_floats(c.row_len, seed++, 0.5f, 1.5f);
      const RowNorm norm{norm_weight.data(), 1e-6f};
      for (int64_t tokens : {1, 7, 17, 54, 97}) {
        SCOPED_TRACE(std::to_string(tokens) + " tokens");
        const std::vector<float> x = test::random_floats(tokens * c.row_len, seed++, -4.0f, 4.0f);
        const int32_t T = static_cast<int32_t>(tokens);
        std::vector<float> fused(static_cast<size_t>(tokens * total_rows));
        group.run(x.data(), T, fused.data(), pool, scratch, &norm);

        std::vector<float> normed(x.size());
        rms_norm(x.data(), norm_weight.data(), tokens, c.row_len, norm.eps, normed.data());
        std::vector<float> unfused(fused.size());
        group.run(normed.data(), T, unfused.data(), pool, scratch);
        ASSERT_TRUE(bitwise_equal(fused.data(), unfused.data(), tokens * total_rows)) << "folded norm";

        int64_t col = 0;
        for (const Part& p : parts) {
          LinearGroup alone({&p.matrix});
          const int64_t rows = p.matrix.num_rows;
          std::vector<float> y(static_cast<size_t>(tokens * rows));
          alone.run(normed.data(), T, y.data(), pool, scratch);
          for (int64_t t = 0; t < tokens; ++t) {
            ASSERT_TRUE(bitwise_equal(fused.data() + t * total_rows + col, y.data() + t * rows, rows))
                << traits_of(p.matrix.type).name << " part at column " << col << ", token " << t;
          }
          col += rows;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvscope
