// The differential corpus (tokenizer_corpus.h) through the vocabularies of
// the models kvscope runs: SmolLM2 (the default model) and Gemma 3's 262k
// SentencePiece vocabulary; exactly llama.cpp's ids, with and without
// special-token parsing.
//
// Run: ctest -R tokenizer_model_test   (label: model)
#include "engine/tokenizer/tokenizer_corpus.h"

namespace kvscope {
namespace {

class ModelCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelCorpusTest, MatchesLlamaCpp) { test::expect_corpus_matches_llama_cpp(GetParam()); }

TEST_P(ModelCorpusTest, RandomSplicesNeverGiveControlTokens) {
  test::expect_no_control_tokens_from_splices(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Models, ModelCorpusTest, ::testing::Values("smollm2", "gemma-3"), [](const auto& info) {
  return info.param == "smollm2" ? std::string("smollm2") : std::string("gemma_3");
});

}  // namespace
}  // namespace kvscope
