// llama.cpp's tokenizer test suite (scripts/fetch_test_data.py): every BPE
// and SentencePiece vocabulary llama.cpp tests loads, every input of its
// .inp gives exactly the ids of its .out (raw text, no special parsing, no
// BOS: test-tokenizer-0.cpp calls common_tokenize(ctx, text, false, false)),
// and byte-level BPE round-trips. Each case needs its fetched files
// (support/require_data.h: skips, or fails when test data is required).
//
// Run: ctest -R tokenizer_test   (label: unit)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/gguf_file.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// NAME.inp: each input followed by "\n__ggml_vocab_test__\n" (text after
// the last separator is one more input, as llama.cpp reads it).
std::vector<std::string> read_inputs(const std::string& path) {
  const std::string text = read_all(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find(sep, pos);
    if (end == std::string::npos) {
      inputs.push_back(text.substr(pos));
      break;
    }
    inputs.push_back(text.substr(pos, end - pos));
    pos = end + sep.size();
  }
  return inputs;
}

// The vocabularies scripts/fetch_test_data.py fetches (its VOCABULARIES).
// With .inp/.out:
const std::vector<std::string> kWithFixtures = {
    "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2",   "llama-bpe",
    "llama-spm", "mpt",            "phi-3",        "qwen2",  "qwen35",  "refact", "starcoder",
};
// Without (llama.cpp only checks that they load):
const std::vector<std::string> kWithoutFixtures = {"aquila", "baichuan", "gpt-neox"};

std::string vocab_path(const std::string& name) {
  const std::string dir = test::tokenizer_fixtures_dir();
  return dir.empty() ? std::string() : dir + "/ggml-vocab-" + name + ".gguf";
}

bool exists(const std::string& path) { return !path.empty() && std::filesystem::is_regular_file(path); }

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

// NAME.out: one line of space-separated ids per input.
std::vector<std::vector<int32_t>> read_outputs(const std::string& path) {
  std::istringstream in(read_all(path));
  std::vector<std::vector<int32_t>> outputs;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    for (int32_t id; ids >> id;) row.push_back(id);
    outputs.push_back(std::move(row));
  }
  return outputs;
}

class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, MatchesLlamaCpp) {
  const std::string base = vocab_path(GetParam());
  KVSCOPE_REQUIRE_DATA(exists(base) && exists(base + ".inp") && exists(base + ".out"),
                       test::TestData::kTokenizerFixtures);
  auto file = GgufFile::open(base);
  ASSERT_TRUE(file) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok) << tok.error();

  const auto inputs = read_inputs(base + ".inp");
  const auto expected = read_outputs(base + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_FALSE(inputs.empty());
  int num_passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = (*tok)->encode(inputs[i], /*parse_special=*/false);
    EXPECT_EQ(ids, expected[i]) << "input " << i << ": '" << inputs[i] << "'";
    num_passed += ids == expected[i];
    if (vocab->model == "gpt2") {
      EXPECT_EQ((*tok)->decode(ids), inputs[i]) << "round trip of input " << i;
    }
  }
  std::cout << GetParam() << ": " << num_passed << "/" << inputs.size() << " inputs match\n";
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, FixtureTest, ::testing::ValuesIn(kWithFixtures), test_name);

class LoadOnlyTest : public ::testing::TestWithParam<std::string> {};

// The vocabularies without .inp/.out load, and encode and decode a sentence
// (their ids against llama.cpp's are in tokenizer_corpus_test.cpp).
TEST_P(LoadOnlyTest, LoadsAndRoundTrips) {
  const std::string path = vocab_path(GetParam());
  KVSCOPE_REQUIRE_DATA(exists(path), test::TestData::kTokenizerFixtures);
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok) << tok.error();
  const std::string text = "Hello world, 123 tokens!";
  const auto ids = (*tok)->encode(text, /*parse_special=*/false);
  ASSERT_FALSE(ids.empty());
  const std::string back = (*tok)->decode(ids);
  EXPECT_EQ((*tok)->add_space_prefix() ? back.substr(1) : back, text);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, LoadOnlyTest, ::testing::ValuesIn(kWithoutFixtures), test_name);

}  // namespace
}  // namespace kvscope
