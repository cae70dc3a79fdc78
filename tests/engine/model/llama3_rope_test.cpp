// Llama 3.x rope scaling from a Hugging Face config (model/llama3_rope.h):
// the divisors against values worked out by hand, bad parameters refused,
// and a directory with "rope_type": "llama3" loading with those divisors
// (the runner applying them is checked against llama.cpp by
// tests/engine/runtime/model_family_test.cpp, case llama31).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include "model/hf_model_loader.h"
#include "model/llama3_rope.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;

// head_dim 16, base 10000: pair i has wavelength 2 pi 10^(i/2) = 6.28, 19.9,
// 62.8, 198.7, 628, ... With an original context of 256 and low/high
// frequency factors 1/4, wavelengths below 64 keep their frequency, above
// 256 are divided by the factor 8, and 198.7 blends: s = (256 / 198.692 - 1)
// / 3 = 0.09613, divisor 1 / ((1 - s) / 8 + s) = 4.7818.
TEST(Llama3Rope, DivisorsFollowTheWavelengthBands) {
  const Llama3RopeScaling s{8.0, 1.0, 4.0, 256};
  auto d = llama3_rope_freq_factors(16, 10000.0, s);
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->size(), 8u);
  const float expected[8] = {1.0f, 1.0f, 1.0f, 4.78183f, 8.0f, 8.0f, 8.0f, 8.0f};
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR((*d)[i], expected[i], 1e-4f) << "pair " << i;
}

TEST(Llama3Rope, UnusableParametersAreRefused) {
  EXPECT_FALSE(llama3_rope_freq_factors(16, 10000.0, {0.5, 1.0, 4.0, 256}).ok());  // factor < 1
  EXPECT_FALSE(llama3_rope_freq_factors(16, 10000.0, {8.0, 4.0, 4.0, 256}).ok());  // high == low
  EXPECT_FALSE(llama3_rope_freq_factors(16, 10000.0, {8.0, 1.0, 4.0, 0}).ok());    // no context
}

TEST(Llama3Rope, HuggingFaceDirectoryLoadsTheDivisors) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("kvscope_llama3_rope_" + std::to_string(::getpid()));
  test::TinyModelSpec spec;
  ASSERT_TRUE(test::write_tiny_hf_dir(spec, dir.string()).ok());
  nlohmann::json config;
  {
    std::ifstream in(dir / "config.json");
    config = nlohmann::json::parse(in);
  }
  config["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 256}};
  std::ofstream(dir / "config.json") << config.dump(2);
  auto m = load_hf_directory(dir.string());
  ASSERT_TRUE(m.ok()) << m.error();
  const ModelConfig& c = m->weights->config;
  auto want = llama3_rope_freq_factors(c.head_dim, c.rope_base, {8.0, 1.0, 4.0, 256});
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(m->weights->rope_freq_factors, *want);

  config["rope_scaling"]["high_freq_factor"] = 0.5;  // below low_freq_factor: named in the error
  std::ofstream(dir / "config.json") << config.dump(2);
  auto bad = load_hf_directory(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("config.json"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("high_freq_factor"), std::string::npos) << bad.error();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvscope
