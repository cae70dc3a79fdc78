// llama.cpp's tokenizer test suite (scripts/fetch_test_data.py): every input
// must give exactly llama.cpp's ids (raw text, no special parsing, no BOS),
// and byte-level BPE must round-trip. Needs the fetched fixtures
// (support/require_data.h: skips, or fails when test data is required).
#include <gtest/gtest.h>

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

// NAME.inp: each input followed by "\n__ggml_vocab_test__\n".
std::vector<std::string> read_inputs(const std::string& path) {
  const std::string text = read_all(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find(sep, pos);
    if (end == std::string::npos) break;
    inputs.push_back(text.substr(pos, end - pos));
    pos = end + sep.size();
  }
  return inputs;
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
  const std::string dir = test::tokenizer_fixtures_dir();
  KVSCOPE_REQUIRE_DATA(!dir.empty(), test::TestData::kTokenizerFixtures);
  const std::string base = dir + "/" + GetParam();
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

INSTANTIATE_TEST_SUITE_P(Vocabularies, FixtureTest,
                         ::testing::Values("ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf",
                                           "ggml-vocab-starcoder.gguf"),
                         [](const auto& info) {
                           std::string name = info.param.substr(11);  // after "ggml-vocab-"
                           name = name.substr(0, name.find('.'));
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace kvscope
