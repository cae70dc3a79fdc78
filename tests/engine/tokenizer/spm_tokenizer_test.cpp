// SentencePiece vocabularies: the Llama 2 fixture vocabulary through the
// in-memory ModelProto, special tokens and the space prefix, byte fallback,
// and tokenizer.model parsing (a proto we build must read back the same).
#include <gtest/gtest.h>

#include "model/gguf_file.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

using Ids = std::vector<int32_t>;

class LlamaSpm : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = test::tokenizer_fixtures_dir();
    KVSCOPE_REQUIRE_DATA(!dir.empty(), test::TestData::kTokenizerFixtures);
    auto file = GgufFile::open(dir + "/ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(file) << file.error();
    auto vocab = read_vocab(**file);
    ASSERT_TRUE(vocab) << vocab.error();
    vocab_ = std::move(*vocab);
    auto tok = create_tokenizer(vocab_);
    ASSERT_TRUE(tok) << tok.error();
    tok_ = std::move(*tok);
  }
  VocabData vocab_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(LlamaSpm, ReadsFlagsWithLlamaCppDefaults) {
  EXPECT_EQ(tok_->vocab_size(), 32000);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_TRUE(tok_->add_bos());
  EXPECT_TRUE(tok_->add_space_prefix());  // key absent: SentencePiece default
  EXPECT_TRUE(tok_->is_control(1));
  EXPECT_TRUE(tok_->is_eog(2));
}

TEST_F(LlamaSpm, SpacePrefixFollowsEverySpecialToken) {
  const Ids hello = tok_->encode("Hello", false);
  ASSERT_FALSE(hello.empty());
  EXPECT_EQ(tok_->token_text(hello[0]), "▁Hello");
  // As in llama.cpp, the text after a special token is prefixed again.
  const Ids ids = tok_->encode("<s>Hello</s>Hello", true);
  Ids expected = {1};
  expected.insert(expected.end(), hello.begin(), hello.end());
  expected.push_back(2);
  expected.insert(expected.end(), hello.begin(), hello.end());
  EXPECT_EQ(ids, expected);
  EXPECT_TRUE(tok_->encode("", true).empty());
}

TEST_F(LlamaSpm, BytesUnescapeSpacesAndByteTokens) {
  EXPECT_EQ(tok_->token_bytes(*tok_->token_id("▁Hello")), " Hello");
  EXPECT_EQ(tok_->token_bytes(*tok_->token_id("<0x0A>")), "\n");
  EXPECT_EQ(tok_->token_bytes(1), "");
  EXPECT_EQ(tok_->token_bytes(1, true), "<s>");
  // A character missing from the vocabulary falls back to its UTF-8 bytes.
  const std::string text = "🦙 llama";
  const Ids ids = tok_->encode(text, false);
  EXPECT_EQ(tok_->decode(ids), " " + text);  // the dummy prefix is part of the ids
}

TEST_F(LlamaSpm, ProtoRoundTrips) {
  auto proto = build_sentencepiece_proto(vocab_);
  ASSERT_TRUE(proto) << proto.error();
  auto back = parse_sentencepiece_proto(*proto);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->tokens, vocab_.tokens);
  EXPECT_EQ(back->scores, vocab_.scores);
  EXPECT_EQ(back->token_types, vocab_.token_types);
  EXPECT_EQ(back->bos_id, 1);
  EXPECT_EQ(back->eos_id, 2);
  EXPECT_EQ(back->unk_id, 0);
  EXPECT_FALSE(back->add_space_prefix);  // we build with the prefix off and add it ourselves
}

TEST(SentencePieceProto, RejectsGarbage) {
  EXPECT_FALSE(parse_sentencepiece_proto(std::string("\x0a\xff\xff\xff\xff\x0f", 6)));
  EXPECT_FALSE(parse_sentencepiece_proto(""));
  EXPECT_FALSE(read_sentencepiece_model_file("/nonexistent/tokenizer.model"));
}

TEST(SpmTokenizer, LoadsWithoutAnUnknownToken) {
  // llama.cpp needs no <unk>; a character without a token or byte tokens is
  // then left out, and counted.
  VocabData v;
  v.model = "llama";
  v.tokens = {"a", "b", "▁"};
  v.scores = {0, 0, 0};
  auto tok = create_tokenizer(v);
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("acb", false, &issues), (Ids{0, 1}));
  EXPECT_EQ(issues.num_dropped, 1);
}

TEST(SpmTokenizer, HighestScoreMergesFirstAndNeverIntoControlTokens) {
  // "ab" (-1) beats "bc" (-2) although "bc" would also be a token; "<s>"
  // written as text stays text even where the pieces could join into it.
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "a", "b", "c", "ab", "bc", "<", "s", ">", "<s", "s>"};
  v.scores = {0, 0, -5, -5, -5, -1, -2, -5, -5, -5, -3, -3};
  v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  v.token_types[0] = TokenType::kUnknown;
  v.token_types[1] = TokenType::kControl;
  v.unk_id = 0;
  v.bos_id = 1;
  auto tok = create_tokenizer(v);
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode("abc", false), (Ids{5, 4}));
  EXPECT_EQ((*tok)->encode("<s>", false), (Ids{10, 9}));
  EXPECT_EQ((*tok)->encode("<s>", true), (Ids{1}));
}

TEST(SpmTokenizer, TinyVocabularyWithDuplicatesAndEmptyPieces) {
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "ab", "▁ab", "", "ab"};
  v.scores = {0, 0, 0, -1, -2, -3, -4, -5, -6, 0, 0};
  v.token_types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl, TokenType::kNormal,
                   TokenType::kNormal, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal,
                   TokenType::kNormal, TokenType::kNormal, TokenType::kNormal};
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_space_prefix = true;
  auto tok = create_tokenizer(v);
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode("ab", false), (Ids{8}));
  EXPECT_EQ((*tok)->encode("ab ab", false), (Ids{8, 8}));
  EXPECT_EQ((*tok)->encode("c", false), (Ids{3, 0}));  // no byte tokens: <unk>
}

}  // namespace
}  // namespace kvscope
