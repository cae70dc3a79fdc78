// Text with no token of its own (tokenizer.h, EncodeIssues): malformed UTF-8
// and bytes a vocabulary lacks become byte tokens, U+FFFD's tokens, <unk> or
// nothing, never a control token, and encode() counts what it replaced. On
// hand-built vocabularies shaped like the real ones (a byte-level BPE that
// lacks byte symbols and whose unknown id is a control token, as SmolLM2's;
// SentencePiece with and without <0xNN> byte fallback); the default model's
// own vocabulary is checked in tests/engine/runtime/prompt_test.cpp.
//
// Run: ctest -R UnspellableText   (label: unit)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "engine/tokenizer/tiny_vocabs.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

using Ids = std::vector<int32_t>;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// tiny_bpe_vocab() (byte b has id b) with the symbols of `missing` renamed so
// that no text maps to them, <|endoftext|> (262) as the unknown id, and
// optionally a token for U+FFFD's three byte symbols merged.
VocabData bpe_missing_bytes(const std::string& missing, bool with_replacement_token) {
  VocabData v = test::tiny_bpe_vocab();
  for (char c : missing) {
    const auto b = static_cast<unsigned char>(c);
    v.tokens[b] = "<unused" + std::to_string(b) + ">";
  }
  v.unk_id = 262;  // a control token, as SmolLM2's id 0
  if (with_replacement_token) {
    const std::string ef = byte_level::encode("\xEF"), bf = byte_level::encode("\xBF"), bd = byte_level::encode("\xBD");
    v.tokens.push_back(ef + bf);  // 263
    v.token_types.push_back(TokenType::kNormal);
    v.tokens.push_back(ef + bf + bd);  // 264
    v.token_types.push_back(TokenType::kNormal);
    v.merges.push_back(ef + " " + bf);
    v.merges.push_back(ef + bf + " " + bd);
  }
  return v;
}

std::set<int32_t> control_ids(const Tokenizer& tok) {
  std::set<int32_t> out;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.is_control(id)) out.insert(id);
  }
  return out;
}

// Random byte strings (every byte value, malformed UTF-8 likely): no control id
// ever comes out of plain text.
void expect_no_control_from_random_bytes(const Tokenizer& tok) {
  const std::set<int32_t> controls = control_ids(tok);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), len(1, 24);
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (int n = len(rng); n > 0; --n) text += static_cast<char>(byte(rng));
    for (int32_t id : tok.encode(text, /*parse_special=*/false)) {
      ASSERT_EQ(controls.count(id), 0u) << "control id " << id << " from plain text of " << text.size() << " bytes";
    }
  }
}

TEST(UnspellableTextBpe, MissingByteBecomesReplacementNotTheUnknownControlToken) {
  auto tok = create_tokenizer(bpe_missing_bytes("\x04\xFF", /*with_replacement_token=*/true));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("a\x04z", false, &issues), (Ids{'a', 264, 'z'}));
  EXPECT_EQ(issues.num_replaced, 1);
  EXPECT_EQ(issues.num_dropped, 0);
  EXPECT_EQ(issues.num_invalid_bytes, 0);  // 0x04 is valid UTF-8; the vocabulary just cannot spell it
  EXPECT_EQ(issues.first_byte, 0x04);

  EncodeIssues invalid;
  EXPECT_EQ((*tok)->encode("a\xFFz", false, &invalid), (Ids{'a', 264, 'z'}));
  EXPECT_EQ(invalid.num_invalid_bytes, 1);
  EXPECT_EQ(invalid.num_replaced, 1);
  EXPECT_NE(describe(invalid).find("not valid UTF-8"), std::string::npos) << describe(invalid);
  EXPECT_NE(describe(invalid).find("0xFF"), std::string::npos) << describe(invalid);
  // A stray byte is not a character: the sentence says both can be meant.
  EXPECT_EQ(describe(invalid), "the text has 1 byte that is not valid UTF-8; 1 character or stray byte has no token "
                               "in this vocabulary (the first starts with byte 0xFF); 1 became U+FFFD's token (or "
                               "the unknown token where there is none)");
}

TEST(UnspellableTextBpe, MalformedByteWithASymbolKeepsIt) {
  // Rule 1: a byte-level vocabulary's byte symbols are its byte fallback.
  auto tok = create_tokenizer(bpe_missing_bytes("\x04", true));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("\xC3(", false, &issues), (Ids{0xC3, '('}));
  EXPECT_EQ(issues.num_invalid_bytes, 1);
  EXPECT_EQ(issues.num_replaced, 0);
  EXPECT_EQ((*tok)->decode((*tok)->encode("\xC3(", false)), "\xC3(");
}

TEST(UnspellableTextBpe, CharacterWithOneMissingByteIsReplacedWhole) {
  // U+44444 is F1 84 91 84; without F1's symbol the three continuation bytes
  // must not be left behind as stray byte tokens.
  auto tok = create_tokenizer(bpe_missing_bytes("\xF1", true));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("\xF1\x84\x91\x84!", false, &issues), (Ids{264, '!'}));
  EXPECT_EQ(issues.num_replaced, 1);
}

TEST(UnspellableTextBpe, WithoutReplacementSymbolsTheCharacterIsLeftOut) {
  auto tok = create_tokenizer(bpe_missing_bytes(std::string("\x04\xEF", 2), false));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("a\x04z", false, &issues), (Ids{'a', 'z'}));
  EXPECT_EQ(issues.num_replaced, 0);
  EXPECT_EQ(issues.num_dropped, 1);
  EXPECT_NE(describe(issues).find("left out"), std::string::npos) << describe(issues);
}

TEST(UnspellableTextBpe, ValidTextIsUntouchedAndReportsNothing) {
  auto tok = create_tokenizer(bpe_missing_bytes("\x04\xFF", true));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("the the", false, &issues), (Ids{'t', 257, 258}));
  EXPECT_FALSE(issues.any());
  EXPECT_EQ(describe(issues), "");
  // Control tokens written literally still parse when asked (parse_special).
  EXPECT_EQ((*tok)->encode("<|im_start|>", true), (Ids{260}));
}

TEST(UnspellableTextBpe, RandomBytesNeverGiveAControlToken) {
  auto tok = create_tokenizer(bpe_missing_bytes(std::string("\x00\x04\x06\x13\xC0\xC1\xF1\xF2\xF5\xFF", 10), true));
  ASSERT_TRUE(tok) << tok.error();
  expect_no_control_from_random_bytes(**tok);
}

// SentencePiece: <unk> 0, <s> 1, </s> 2, "▁" and letters, optionally <0xNN>
// byte tokens for every byte (byte fallback).
VocabData spm_vocab(bool byte_fallback, bool unk_is_control = false) {
  VocabData v;
  v.model = "llama";
  auto add = [&v](const std::string& text, TokenType type, float score) {
    v.tokens.push_back(text);
    v.token_types.push_back(type);
    v.scores.push_back(score);
  };
  add("<unk>", unk_is_control ? TokenType::kControl : TokenType::kUnknown, 0);
  add("<s>", TokenType::kControl, 0);
  add("</s>", TokenType::kControl, 0);
  add("\xE2\x96\x81", TokenType::kNormal, -1);  // ▁
  add("a", TokenType::kNormal, -2);
  add("b", TokenType::kNormal, -3);
  add(std::string(kReplacement), TokenType::kNormal, -4);
  if (byte_fallback) {
    for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), TokenType::kByte, 0);
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

constexpr int32_t kSpmReplacement = 6;
constexpr int32_t kSpmFirstByte = 7;  // <0x00>

TEST(UnspellableTextSpm, MalformedByteUsesByteFallbackAsLlamaCpp) {
  auto tok = create_tokenizer(spm_vocab(/*byte_fallback=*/true));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("a\xFF" "b", false, &issues), (Ids{4, kSpmFirstByte + 0xFF, 5}));
  EXPECT_EQ(issues.num_invalid_bytes, 1);
  EXPECT_EQ(issues.num_replaced, 0);
  // A valid character the pieces lack: the library's own byte fallback.
  EncodeIssues valid;
  EXPECT_EQ((*tok)->encode("c", false, &valid), (Ids{kSpmFirstByte + 'c'}));
  EXPECT_FALSE(valid.any());
}

TEST(UnspellableTextSpm, WithoutByteFallbackMalformedBytesBecomeReplacement) {
  auto tok = create_tokenizer(spm_vocab(/*byte_fallback=*/false));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("a\xFF" "b", false, &issues), (Ids{4, kSpmReplacement, 5}));
  EXPECT_EQ(issues.num_invalid_bytes, 1);
  EXPECT_EQ(issues.num_replaced, 1);
  // A valid character it cannot spell: <unk>, as llama.cpp gives, counted.
  EncodeIssues unk;
  EXPECT_EQ((*tok)->encode("c", false, &unk), (Ids{0}));
  EXPECT_EQ(unk.num_replaced, 1);
}

TEST(UnspellableTextSpm, UnknownTokenThatIsAControlTokenIsLeftOut) {
  auto tok = create_tokenizer(spm_vocab(/*byte_fallback=*/false, /*unk_is_control=*/true));
  ASSERT_TRUE(tok) << tok.error();
  EncodeIssues issues;
  EXPECT_EQ((*tok)->encode("acb", false, &issues), (Ids{4, 5}));
  EXPECT_EQ(issues.num_dropped, 1);
}

TEST(UnspellableTextSpm, RandomBytesNeverGiveAControlToken) {
  for (bool fallback : {true, false}) {
    auto tok = create_tokenizer(spm_vocab(fallback, /*unk_is_control=*/true));
    ASSERT_TRUE(tok) << tok.error();
    expect_no_control_from_random_bytes(**tok);
  }
}

}  // namespace
}  // namespace kvscope
