// Special tokens as llama.cpp treats them: the split around literal special
// tokens (longest text first, spaces dropped next to Phi-3's), the token-type
// corrections by text (token_attributes.h), and which ids end generation.
#include <gtest/gtest.h>

#include "tokenizer/special_token_matcher.h"
#include "tokenizer/token_attributes.h"
#include "tokenizer/vocab.h"

namespace kvscope {
namespace {

using Fragment = SpecialTokenMatcher::Fragment;

std::vector<std::pair<std::string, int32_t>> pieces(const std::vector<Fragment>& fragments) {
  std::vector<std::pair<std::string, int32_t>> out;
  for (const Fragment& f : fragments) out.emplace_back(std::string(f.text), f.id);
  return out;
}

using Pieces = std::vector<std::pair<std::string, int32_t>>;

TEST(SpecialTokenMatcher, LongestTextFirstNotLeftmostFirst) {
  SpecialTokenMatcher m;
  m.add("xa", 1);
  m.add("abc", 2);
  // Leftmost-first would give [xa, "bc"]; llama.cpp splits "abc" out first.
  EXPECT_EQ(pieces(m.split("xabc")), (Pieces{{"x", -1}, {"abc", 2}}));
  EXPECT_EQ(pieces(m.split("xa xabc abc")), (Pieces{{"xa", 1}, {" x", -1}, {"abc", 2}, {" ", -1}, {"abc", 2}}));
  EXPECT_TRUE(m.split("").empty());
}

TEST(SpecialTokenMatcher, StripsAsciiSpacesWhereAsked) {
  SpecialTokenMatcher m;
  m.add("<r>", 1, /*lstrip=*/false, /*rstrip=*/true);
  m.add("<l>", 2, /*lstrip=*/true, /*rstrip=*/false);
  EXPECT_EQ(pieces(m.split("a<r> \t\n b")), (Pieces{{"a", -1}, {"<r>", 1}, {"b", -1}}));
  EXPECT_EQ(pieces(m.split("a  <l> b")), (Pieces{{"a", -1}, {"<l>", 2}, {" b", -1}}));
  EXPECT_EQ(pieces(m.split("<r>   ")), (Pieces{{"<r>", 1}}));
  // Only ASCII whitespace is stripped (llama.cpp's isspace on single bytes).
  EXPECT_EQ(pieces(m.split("<r>\xC2\xA0x")), (Pieces{{"<r>", 1}, {"\xC2\xA0x", -1}}));
}

VocabData vocab_of(std::vector<std::pair<std::string, TokenType>> tokens) {
  VocabData v;
  for (auto& [text, type] : tokens) {
    v.tokens.push_back(text);
    v.token_types.push_back(type);
  }
  return v;
}

TEST(TokenAttributes, TurnEndersBecomeControlTokensAndEndGeneration) {
  // Phi-3 stores "</s>" as user-defined; llama.cpp makes it a control token
  // (so plain text never splits it out) that ends generation.
  VocabData v = vocab_of({{"<unk>", TokenType::kControl},
                          {"<s>", TokenType::kControl},
                          {"</s>", TokenType::kUserDefined},
                          {"<|end|>", TokenType::kNormal},
                          {"<|fim_pad|>", TokenType::kNormal},
                          {"hello", TokenType::kNormal}});
  v.eos_id = 2;
  auto vocab = Vocab::build(v);
  ASSERT_TRUE(vocab) << vocab.error();
  EXPECT_TRUE(vocab->is_control(2));
  EXPECT_TRUE(vocab->is_control(3));
  EXPECT_TRUE(vocab->is_control(4));
  EXPECT_TRUE(vocab->is_eog(2));
  EXPECT_TRUE(vocab->is_eog(3));
  EXPECT_TRUE(vocab->is_eog(4));  // FIM padding ends generation too
  EXPECT_FALSE(vocab->is_eog(5));
  EXPECT_EQ(pieces(vocab->split_special("a</s>b", /*parse_special=*/false)), (Pieces{{"a</s>b", -1}}));
  EXPECT_EQ(pieces(vocab->split_special("a</s>b", /*parse_special=*/true)),
            (Pieces{{"a", -1}, {"</s>", 2}, {"b", -1}}));
}

TEST(TokenAttributes, Phi3DropsSpacesAfterSpecialTokens) {
  VocabData v = vocab_of({{"<unk>", TokenType::kControl},
                          {"<s>", TokenType::kControl},
                          {"</s>", TokenType::kUserDefined},
                          {"<|user|>", TokenType::kControl},
                          {"<|endoftext|>", TokenType::kControl}});
  v.model_name = "Phi3";
  auto vocab = Vocab::build(v);
  ASSERT_TRUE(vocab) << vocab.error();
  EXPECT_EQ(pieces(vocab->split_special("<|user|>  hi", true)), (Pieces{{"<|user|>", 3}, {"hi", -1}}));
  EXPECT_EQ(pieces(vocab->split_special("</s>  hi", true)), (Pieces{{"</s>", 2}, {"hi", -1}}));
  // Not for <s> and <|endoftext|>.
  EXPECT_EQ(pieces(vocab->split_special("<s>  hi", true)), (Pieces{{"<s>", 1}, {"  hi", -1}}));
  EXPECT_EQ(pieces(vocab->split_special("<|endoftext|> hi", true)), (Pieces{{"<|endoftext|>", 4}, {" hi", -1}}));
  // Other models keep the spaces.
  v.model_name = "Llama";
  auto plain = Vocab::build(v);
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(pieces(plain->split_special("<|user|>  hi", true)), (Pieces{{"<|user|>", 3}, {"  hi", -1}}));
}

TEST(TokenAttributes, GptOssAndGemma4Exceptions) {
  // gpt-oss: "<|end|>" ends a message, not the generation, when "<|return|>"
  // and "<|call|>" exist; "<|channel|>" is always split out.
  VocabData oss = vocab_of({{"<|return|>", TokenType::kControl},
                            {"<|call|>", TokenType::kControl},
                            {"<|end|>", TokenType::kControl},
                            {"<|channel|>", TokenType::kControl}});
  auto o = Vocab::build(oss);
  ASSERT_TRUE(o) << o.error();
  EXPECT_TRUE(o->is_eog(0));
  EXPECT_FALSE(o->is_eog(2));
  EXPECT_FALSE(o->is_control(2));
  EXPECT_EQ(pieces(o->split_special("a<|channel|>b", false)), (Pieces{{"a", -1}, {"<|channel|>", 3}, {"b", -1}}));
  // Gemma 4: with "<|tool_response>", "</s>" is an ordinary token.
  VocabData g = vocab_of({{"<|tool_response>", TokenType::kUserDefined}, {"</s>", TokenType::kControl}});
  auto gv = Vocab::build(g);
  ASSERT_TRUE(gv) << gv.error();
  EXPECT_TRUE(gv->is_eog(0));
  EXPECT_FALSE(gv->is_eog(1));
  EXPECT_FALSE(gv->is_control(1));
}

TEST(Vocab, EmptyAndRepeatedTextsAsLlamaCpp) {
  VocabData v = vocab_of({{"a", TokenType::kNormal}, {"", TokenType::kNormal}, {"a", TokenType::kNormal}});
  auto vocab = Vocab::build(v);
  ASSERT_TRUE(vocab) << vocab.error();
  EXPECT_EQ(vocab->text(1), "[EMPTY_1]");
  EXPECT_EQ(vocab->find("a"), 2);  // the last id of a repeated text
}

}  // namespace
}  // namespace kvscope
