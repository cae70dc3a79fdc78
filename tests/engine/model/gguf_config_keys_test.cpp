// The GGUF loader's model numbers (gguf_model_loader.cpp): a context length,
// epsilon, rope base, sliding window or soft-cap that is out of range, NaN or
// infinite is a load error naming the file and the key, not a model that
// loads and then writes garbage (a context of 2^32 - 1 read as -1, a NaN
// epsilon giving NaN logits and an empty reply). Absent keys take the
// documented defaults.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "model/model_loader.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

// The load error for the tiny model with `spec`'s overrides ("" when it loads).
std::string load_error(const test::TinyModelSpec& spec, const std::string& name) {
  const std::string path = test::tiny_model_temp_path("gguf_config_keys_" + name);
  EXPECT_TRUE(test::write_tiny_gguf(spec, path).ok());
  auto loaded = load_model(path);
  std::remove(path.c_str());
  return loaded.ok() ? std::string() : loaded.error();
}

TEST(GgufConfigKeys, OutOfRangeNumbersAreLoadErrorsNamingTheKey) {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* name;
    const char* key;
    bool is_int;
    double value;
  };
  const Case cases[] = {
      {"context_max", "llama.context_length", true, 4294967295.0},
      {"context_sign", "llama.context_length", true, 2147483648.0},
      {"context_zero", "llama.context_length", true, 0.0},
      {"eps_nan", "llama.attention.layer_norm_rms_epsilon", false, kNan},
      {"eps_negative", "llama.attention.layer_norm_rms_epsilon", false, -1.0},
      {"eps_inf", "llama.attention.layer_norm_rms_epsilon", false, kInf},
      {"rope_nan", "llama.rope.freq_base", false, kNan},
      {"rope_zero", "llama.rope.freq_base", false, 0.0},
      {"rope_negative", "llama.rope.freq_base", false, -10000.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    test::TinyModelSpec spec;
    if (c.is_int) {
      spec.gguf_u32[c.key] = static_cast<uint32_t>(c.value);
    } else {
      spec.gguf_f32[c.key] = static_cast<float>(c.value);
    }
    const std::string error = load_error(spec, c.name);
    EXPECT_NE(error.find(std::string("key '") + c.key + "'"), std::string::npos) << error;
    EXPECT_NE(error.find("out of range ("), std::string::npos) << "says the range: " << error;
    EXPECT_NE(error.find("gguf_config_keys_" + std::string(c.name)), std::string::npos) << "names the file: " << error;
  }
}

TEST(GgufConfigKeys, LegalValuesLoad) {
  test::TinyModelSpec spec;
  spec.gguf_f32["llama.attention.layer_norm_rms_epsilon"] = 0.0f;  // legal: only an all-zero row divides by it
  spec.gguf_f32["llama.rope.freq_base"] = 500000.0f;
  spec.gguf_u32["llama.context_length"] = 131072;
  EXPECT_EQ(load_error(spec, "legal"), "");
}

TEST(GgufConfigKeys, Gemma3SlidingWindowIsChecked) {
  test::TinyModelSpec spec;
  spec.arch = Architecture::Gemma3;
  spec.gguf_u32["gemma3.attention.sliding_window"] = 0;
  const std::string error = load_error(spec, "gemma_window");
  EXPECT_NE(error.find("key 'gemma3.attention.sliding_window' = 0 is out of range"), std::string::npos) << error;
}

// Shape keys that disagree are named as such: more rotated dimensions than
// a head has was reported as partial rotary ("not supported yet"), which
// sent the user looking for a feature instead of a broken file; and an
// architecture key of the wrong type is not "missing".
TEST(GgufConfigKeys, DisagreeingShapeKeysAreSaidToDisagree) {
  test::TinyModelSpec spec;  // head_dim 16 (key_length)
  spec.gguf_u32["llama.rope.dimension_count"] = 32;
  std::string error = load_error(spec, "rope_dims");
  EXPECT_NE(error.find("rope.dimension_count 32 is more than the head dimension 16 (attention.key_length): the "
                       "file's shape keys disagree"),
            std::string::npos)
      << error;
  spec.gguf_u32["llama.rope.dimension_count"] = 8;
  error = load_error(spec, "rope_partial");
  EXPECT_NE(error.find("rope over 8 of 16 head dimensions (partial rotary) is not supported yet"), std::string::npos)
      << error;
  test::TinyModelSpec arch;
  arch.gguf_u32["general.architecture"] = 7;
  error = load_error(arch, "arch_type");
  EXPECT_NE(error.find("key 'general.architecture' is not a string"), std::string::npos) << error;
}

}  // namespace
}  // namespace kvscope
