// The public model-file API (kvscope/model_file.h): inspect_model_file on
// writer-made files (supported and unsupported architectures, not GGUF at
// all) and TextTokenizer on the vocabulary-only fixtures. Label: unit.
#include "kvscope/model_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/gguf_writer.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

using test::GgufWriter;
using ::testing::HasSubstr;

// A file under the temp directory, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& stem)
      : path_((std::filesystem::temp_directory_path() /
               (stem + "-" + std::to_string(::getpid()) + ".gguf")).string()) {}
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Two layers, 4 query heads of 8 dims, 2 KV heads; only a few tensors (the
// summary does not need a loadable model).
GgufWriter tiny_llama_writer(const std::string& arch) {
  GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "tiny");
  w.set_u32(arch + ".block_count", 2);
  w.set_u32(arch + ".context_length", 64);
  w.set_u32(arch + ".embedding_length", 32);
  w.set_u32(arch + ".feed_forward_length", 48);
  w.set_u32(arch + ".attention.head_count", 4);
  w.set_u32(arch + ".attention.head_count_kv", 2);
  std::vector<float> embd(32 * 10, 0.5f);
  w.add_f32_tensor("token_embd.weight", {32, 10}, embd);
  std::vector<float> norm(32, 1.0f);
  w.add_f32_tensor("output_norm.weight", {32}, norm);
  return w;
}

TEST(InspectModelFile, SummarisesASupportedModel) {
  TempFile file("kvscope-inspect");
  ASSERT_TRUE(tiny_llama_writer("llama").write(file.path()).ok());
  auto r = inspect_model_file(file.path());
  ASSERT_TRUE(r.ok()) << r.error();
  const ModelFileSummary& s = *r;
  EXPECT_EQ(s.gguf_version, 3u);
  EXPECT_EQ(s.file_size, std::filesystem::file_size(file.path()));
  ASSERT_GE(s.metadata.size(), 8u);
  EXPECT_EQ(s.metadata[0].first, "general.architecture");  // file order
  EXPECT_THAT(s.metadata[0].second, HasSubstr("llama"));

  ASSERT_EQ(s.tensors.size(), 2u);
  EXPECT_EQ(s.tensors[0].name, "token_embd.weight");
  EXPECT_EQ(s.tensors[0].type, "F32");
  EXPECT_EQ(s.tensors[0].dims, (std::vector<int64_t>{32, 10}));
  EXPECT_EQ(s.tensors[0].num_bytes, 32u * 10 * 4);
  EXPECT_EQ(s.num_parameters, 32 * 10 + 32);
  EXPECT_EQ(s.weight_bytes, (32u * 10 + 32) * 4);
  ASSERT_EQ(s.totals_by_type.size(), 1u);
  EXPECT_EQ(s.totals_by_type[0].type, "F32");
  EXPECT_EQ(s.totals_by_type[0].num_tensors, 2);

  ASSERT_TRUE(s.config.has_value()) << s.config_error;
  EXPECT_EQ(s.config->architecture, "llama");
  EXPECT_EQ(s.config->num_layers, 2);
  EXPECT_EQ(s.config->head_dim, 8);
  EXPECT_EQ(s.config->vocab_size, 10);
  EXPECT_EQ(s.config->context_length, 64);
  // 2 (K and V) * 2 layers * 2 KV heads * 8 dims * 4 bytes.
  EXPECT_EQ(s.kv_bytes_per_token, 2u * 2 * 2 * 8 * 4);
  EXPECT_EQ(s.memory_bytes_full_context, s.weight_bytes + 64 * s.kv_bytes_per_token);
  EXPECT_EQ(s.memory_bytes(10), s.weight_bytes + 10 * s.kv_bytes_per_token);
}

TEST(InspectModelFile, UnsupportedArchitectureStillListsTheFile) {
  TempFile file("kvscope-inspect-arch");
  ASSERT_TRUE(tiny_llama_writer("mamba").write(file.path()).ok());
  auto r = inspect_model_file(file.path());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->config.has_value());
  EXPECT_THAT(r->config_error, HasSubstr("mamba"));
  EXPECT_EQ(r->tensors.size(), 2u);
  EXPECT_EQ(r->kv_bytes_per_token, 0u);
  EXPECT_EQ(r->memory_bytes_full_context, r->weight_bytes);
}

TEST(InspectModelFile, RejectsWhatIsNotGguf) {
  TempFile file("kvscope-inspect-text");
  std::ofstream(file.path()) << "this is not a model file";
  auto r = inspect_model_file(file.path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr(file.path()));

  auto missing = inspect_model_file("/nonexistent/kvscope/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_FALSE(missing.error().empty());
}

// A Hugging Face directory is summarised from its config.json and its
// safetensors headers, as `model-info --model DIR` shows it: the same model
// numbers as its GGUF twin, the tensors with GGUF-order dims, config.json's
// keys as the metadata; sharded directories count their files.
TEST(InspectModelFile, SummarisesAHuggingFaceDirectory) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvscope-inspect-hf-" + std::to_string(::getpid()));
  test::TinyModelSpec spec;
  spec.hf_num_shards = 2;
  ASSERT_TRUE(test::write_tiny_hf_dir(spec, dir.string()).ok());
  auto r = inspect_model_file(dir.string());
  const std::string gguf = dir.string() + ".gguf";
  ASSERT_TRUE(test::write_tiny_gguf(spec, gguf).ok());
  auto twin = inspect_model_file(gguf);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(gguf);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_TRUE(twin.ok()) << twin.error();
  EXPECT_EQ(r->format, "safetensors");
  EXPECT_EQ(r->gguf_version, 0u);
  EXPECT_EQ(r->num_files, 2);
  EXPECT_GT(r->file_size, r->weight_bytes);  // the headers besides the data
  ASSERT_TRUE(r->config.has_value()) << r->config_error;
  EXPECT_EQ(r->config->architecture, "llama");
  EXPECT_EQ(r->config->num_layers, twin->config->num_layers);
  EXPECT_EQ(r->config->hidden_size, spec.hidden);
  EXPECT_EQ(r->config->num_kv_heads, spec.kv_heads);
  EXPECT_EQ(r->config->context_length, spec.context_length);
  EXPECT_EQ(r->kv_bytes_per_token, twin->kv_bytes_per_token);
  bool found_embedding = false;
  for (const TensorSummary& t : r->tensors) {
    if (t.name != "model.embed_tokens.weight") continue;
    found_embedding = true;
    EXPECT_EQ(t.type, "F32");
    EXPECT_EQ(t.dims, (std::vector<int64_t>{spec.hidden, spec.vocab}));  // contiguous dim first, as GGUF
    EXPECT_EQ(t.num_bytes, static_cast<uint64_t>(spec.hidden) * spec.vocab * 4);
  }
  EXPECT_TRUE(found_embedding);
  bool found_layers = false;
  for (const auto& [key, value] : r->metadata) found_layers = found_layers || (key == "num_hidden_layers" && value == "2");
  EXPECT_TRUE(found_layers);
}

std::string fixture(const std::string& name) {
  const std::string dir = test::tokenizer_fixtures_dir();
  return dir.empty() ? std::string() : dir + "/" + name;
}

TEST(TextTokenizer, EncodesWithAVocabularyOnlyBpeFile) {
  const std::string path = fixture("ggml-vocab-starcoder.gguf");
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kTokenizerFixtures);
  auto tok = TextTokenizer::open(path);
  ASSERT_TRUE(tok.ok()) << tok.error();
  // Expected ids from the fixture's .out file (llama.cpp's tokenizer tests).
  EXPECT_EQ((*tok)->encode("Hello world", false, false), (std::vector<int32_t>{8302, 5810}));
  EXPECT_EQ((*tok)->encode(" Hello world", false, false), (std::vector<int32_t>{12009, 5810}));
  EXPECT_EQ((*tok)->piece(8302), "Hello");
  EXPECT_EQ((*tok)->piece(5810), "Ġworld");
  EXPECT_EQ((*tok)->piece(-1), "");
  EXPECT_EQ((*tok)->decode({8302, 5810}), "Hello world");
  EXPECT_GT((*tok)->vocab_size(), 40000);
}

TEST(TextTokenizer, RoundTripsTextWithGpt2) {
  const std::string path = fixture("ggml-vocab-gpt-2.gguf");
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kTokenizerFixtures);
  auto tok = TextTokenizer::open(path);
  ASSERT_TRUE(tok.ok()) << tok.error();
  const std::string text = "Paged attention, 16 tokens per block: ça marche!\n";
  EXPECT_EQ((*tok)->decode((*tok)->encode(text, false, false)), text);
}

TEST(TextTokenizer, AddsBosForSentencePieceVocabularies) {
  const std::string path = fixture("ggml-vocab-llama-spm.gguf");
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kTokenizerFixtures);
  auto tok = TextTokenizer::open(path);
  ASSERT_TRUE(tok.ok()) << tok.error();
  const std::vector<int32_t> plain = (*tok)->encode("Hello world", false, false);
  const std::vector<int32_t> with_bos = (*tok)->encode("Hello world", false, true);
  ASSERT_GE((*tok)->bos_id(), 0);
  ASSERT_EQ(with_bos.size(), plain.size() + 1);
  EXPECT_EQ(with_bos.front(), (*tok)->bos_id());
  EXPECT_EQ((*tok)->piece(plain.front()), "\xE2\x96\x81Hello");  // "▁Hello"
  EXPECT_EQ((*tok)->decode(with_bos), "Hello world");
}

TEST(TextTokenizer, FileWithoutVocabularyIsAnError) {
  TempFile file("kvscope-novocab");
  ASSERT_TRUE(tiny_llama_writer("llama").write(file.path()).ok());
  auto tok = TextTokenizer::open(file.path());
  ASSERT_FALSE(tok.ok());
  EXPECT_THAT(tok.error(), HasSubstr("tokenizer"));
}

}  // namespace
}  // namespace kvscope
