// The reference dequantiser against values from the gguf Python package
// (tests/data/dequant_<type>.json, written by tests/kernels/gen_dequant_vectors.py
// from random blocks). This pins the block layouts independently of our code.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/reference/dequantize.h"
#include "support/test_paths.h"

namespace kvscope::test {
namespace {

struct Case {
  const char* file;
  TensorType type;
};

class DequantizeGguf : public ::testing::TestWithParam<Case> {};

TEST_P(DequantizeGguf, ReferenceMatchesGgufPackage) {
  const Case& c = GetParam();
  const std::string path = test_data_dir() + "/" + c.file;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path;
  const nlohmann::json doc = nlohmann::json::parse(in);
  const std::string hex = doc.at("hex").get<std::string>();
  std::vector<uint8_t> bytes(hex.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  const auto expected = doc.at("expected").get<std::vector<float>>();
  const int64_t n = static_cast<int64_t>(expected.size());
  ASSERT_EQ(bytes.size(), row_bytes(c.type, n));
  std::vector<float> got(expected.size());
  dequantize_row_ref(c.type, bytes.data(), got.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    // Same formula and f32 rounding order as gguf's numpy code: exact.
    ASSERT_EQ(got[i], expected[i]) << c.file << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Blocks, DequantizeGguf,
    ::testing::Values(Case{"dequant_q4_0.json", TensorType::Q4_0}, Case{"dequant_q4_1.json", TensorType::Q4_1},
                      Case{"dequant_q5_0.json", TensorType::Q5_0}, Case{"dequant_q5_1.json", TensorType::Q5_1},
                      Case{"dequant_q8_0.json", TensorType::Q8_0}, Case{"dequant_q2_k.json", TensorType::Q2_K},
                      Case{"dequant_q3_k.json", TensorType::Q3_K}, Case{"dequant_q4_k.json", TensorType::Q4_K},
                      Case{"dequant_q5_k.json", TensorType::Q5_K}, Case{"dequant_q6_k.json", TensorType::Q6_K}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(traits_of(info.param.type).name); });

}  // namespace
}  // namespace kvscope::test
