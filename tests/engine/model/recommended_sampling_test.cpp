// A model file's recommended sampling (GGUF general.sampling.*, a Hugging Face
// directory's generation_config.json) reaches ModelInfo and wins over
// kvscope's built-in defaults; values a request would refuse are left out
// with a note, never a failed load. Tiny random models, label: unit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kvscope/engine.h"
#include "kvscope/sampling_defaults.h"
#include "model/recommended_sampling.h"
#include "support/gguf_writer.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("kvscope_recsamp_" + std::to_string(::getpid()) + "_" + name)).string();
}

ModelInfo load_info(const std::string& path) {
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 1;
  auto engine = Engine::create(c);
  EXPECT_TRUE(engine.ok()) << engine.error();
  return engine.ok() ? (*engine)->model_info() : ModelInfo{};
}

TEST(KvscopeSamplingDefaults, AreLlamaCppsWithARepetitionPenalty) {
  const SamplingParams d = kvscope_sampling_defaults();
  EXPECT_FLOAT_EQ(d.temperature, 0.8f);
  EXPECT_EQ(d.top_k, 40);
  EXPECT_FLOAT_EQ(d.top_p, 0.95f);
  EXPECT_FLOAT_EQ(d.min_p, 0.05f);
  EXPECT_FLOAT_EQ(d.repetition_penalty, 1.1f);
  EXPECT_EQ(d.repeat_last_n, 64);
  EXPECT_TRUE(d.validate().ok());

  const SamplingDefaults none = resolve_sampling_defaults(RecommendedSampling{});
  EXPECT_TRUE(none.from_model.empty());
  EXPECT_FLOAT_EQ(none.params.temperature, 0.8f);
}

TEST(RecommendedSampling, GgufKeysAreReadCheckedAndWinOverTheDefaults) {
  test::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_f32("general.sampling.temp", 0.6f);
  w.set_u32("general.sampling.top_k", 20);
  w.set_f32("general.sampling.top_p", 0.9f);
  w.set_f32("general.sampling.min_p", 7.0f);            // out of [0, 1]: left out
  w.set_string("general.sampling.penalty_repeat", "x");  // wrong type: left out
  w.set_i32("general.sampling.penalty_last_n", 128);
  const std::string path = temp_path("keys.gguf");
  ASSERT_TRUE(w.write(path).ok());
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error();
  const RecommendedSampling r = read_gguf_sampling(**file);
  fs::remove(path);

  EXPECT_EQ(r.source, "GGUF general.sampling.*");
  EXPECT_EQ(r.temperature, 0.6f);
  EXPECT_EQ(r.top_k, 20);
  EXPECT_EQ(r.top_p, 0.9f);
  EXPECT_FALSE(r.min_p.has_value());
  EXPECT_FALSE(r.repetition_penalty.has_value());
  EXPECT_EQ(r.repeat_last_n, 128);
  ASSERT_EQ(r.ignored.size(), 2u);
  EXPECT_NE(r.ignored[0].find("general.sampling.min_p: min_p must be in [0, 1]"), std::string::npos) << r.ignored[0];
  EXPECT_NE(r.ignored[1].find("general.sampling.penalty_repeat: not a number"), std::string::npos) << r.ignored[1];

  const SamplingDefaults d = resolve_sampling_defaults(r);
  EXPECT_FLOAT_EQ(d.params.temperature, 0.6f);  // the model's, not 0.8
  EXPECT_EQ(d.params.top_k, 20);
  EXPECT_FLOAT_EQ(d.params.top_p, 0.9f);
  EXPECT_FLOAT_EQ(d.params.min_p, 0.05f);              // kvscope's: the file's value was refused
  EXPECT_FLOAT_EQ(d.params.repetition_penalty, 1.1f);  // kvscope's
  EXPECT_EQ(d.params.repeat_last_n, 128);
  EXPECT_TRUE(d.is_from_model("temperature"));
  EXPECT_FALSE(d.is_from_model("min_p"));
  EXPECT_EQ(d.from_model, (std::vector<std::string>{"temperature", "top_k", "top_p", "repeat_last_n"}));
}

TEST(RecommendedSampling, LlamaCppsMeaningsOfNegativeValues) {
  test::GgufWriter w;
  w.set_f32("general.sampling.temp", -1.0f);  // llama.cpp: greedy
  w.set_i32("general.sampling.top_k", -1);    // llama.cpp: the whole vocabulary
  const std::string path = temp_path("negative.gguf");
  ASSERT_TRUE(w.write(path).ok());
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error();
  const RecommendedSampling r = read_gguf_sampling(**file);
  fs::remove(path);
  EXPECT_EQ(r.temperature, 0.0f);
  EXPECT_EQ(r.top_k, 0);
  EXPECT_TRUE(r.ignored.empty());
}

TEST(RecommendedSampling, ReachesModelInfoFromAGgufModel) {
  test::TinyModelSpec spec;
  spec.gguf_f32 = {{"general.sampling.temp", 0.3f}, {"general.sampling.penalty_repeat", 1.2f}};
  spec.gguf_u32 = {{"general.sampling.top_k", 7}};
  const std::string path = test::tiny_model_temp_path("recommended_sampling");
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  const ModelInfo info = load_info(path);
  fs::remove(path);
  const RecommendedSampling& r = info.recommended_sampling;
  EXPECT_EQ(r.temperature, 0.3f);
  EXPECT_EQ(r.top_k, 7);
  EXPECT_EQ(r.repetition_penalty, 1.2f);
  EXPECT_FALSE(r.top_p.has_value());
}

TEST(RecommendedSampling, ReachesModelInfoFromAHfDirectory) {
  const std::string dir = temp_path("hf");
  ASSERT_TRUE(test::write_tiny_hf_dir(test::TinyModelSpec{}, dir).ok());
  EXPECT_TRUE(load_info(dir).recommended_sampling.empty());  // no generation_config.json
  std::ofstream(fs::path(dir) / "generation_config.json")
      << R"({"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
             "min_p": null, "bos_token_id": 0})";
  const ModelInfo info = load_info(dir);
  fs::remove_all(dir);
  const RecommendedSampling& r = info.recommended_sampling;
  EXPECT_EQ(r.source, "generation_config.json");
  EXPECT_EQ(r.temperature, 0.7f);
  EXPECT_EQ(r.top_p, 0.8f);
  EXPECT_EQ(r.top_k, 20);
  EXPECT_EQ(r.repetition_penalty, 1.05f);
  EXPECT_FALSE(r.min_p.has_value());
  EXPECT_TRUE(r.ignored.empty());
}

TEST(RecommendedSampling, AnUnreadableGenerationConfigIsNotedNotFatal) {
  const std::string dir = temp_path("hf_bad");
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "generation_config.json") << "{not json";
  const RecommendedSampling r = read_generation_config(dir);
  fs::remove_all(dir);
  EXPECT_TRUE(r.empty());
  ASSERT_EQ(r.ignored.size(), 1u);
  EXPECT_NE(r.ignored[0].find("not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace kvscope
