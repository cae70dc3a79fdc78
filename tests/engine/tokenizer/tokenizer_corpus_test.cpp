// Differential test against llama.cpp beyond its own fixtures: the texts of
// tests/data/tokenizer_corpus.txt (many scripts, code, emoji with joiners and
// skin tones, whitespace runs, numbers, text that looks like special tokens)
// through every vocabulary scripts/fetch_test_data.py fetches, with and
// without special-token parsing, give exactly the ids llama.cpp gave
// (tokenizer_corpus.h; the models' vocabularies are in
// tokenizer_corpus_model_test.cpp).
//
// Run: ctest -R tokenizer_test   (label: unit; needs the fetched vocabularies)
#include "engine/tokenizer/tokenizer_corpus.h"

namespace kvscope {
namespace {

using test::Ids;

TEST(TokenizerCorpus, RecordingMatchesCorpus) {
  const auto texts = test::read_corpus();
  EXPECT_GE(texts.size(), 300u);
  ASSERT_EQ(test::recorded()["num_texts"].get<size_t>(), texts.size())
      << "tests/data/tokenizer_corpus.txt changed: re-run scripts/dev/record_tokenizer_corpus.py";
  for (const auto& [name, v] : test::recorded()["vocabularies"].items()) {
    EXPECT_EQ(v["plain"].size(), texts.size()) << name;
  }
}

class CorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusTest, MatchesLlamaCpp) { test::expect_corpus_matches_llama_cpp(GetParam()); }

TEST_P(CorpusTest, RandomSplicesNeverGiveControlTokens) { test::expect_no_control_tokens_from_splices(GetParam()); }

// Every vocabulary scripts/fetch_test_data.py fetches.
const std::vector<std::string> kVocabularies = {
    "aquila", "baichuan", "command-r", "deepseek-coder", "deepseek-llm", "falcon",
    "gemma-4", "gpt-2",   "gpt-neox",  "llama-bpe",      "llama-spm",    "mpt",
    "phi-3",  "qwen2",    "qwen35",    "refact",         "starcoder",
};

INSTANTIATE_TEST_SUITE_P(Vocabularies, CorpusTest, ::testing::ValuesIn(kVocabularies), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
});

}  // namespace
}  // namespace kvscope
