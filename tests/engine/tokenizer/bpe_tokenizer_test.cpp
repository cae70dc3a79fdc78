// Byte-level BPE and its pre-tokenizers on hand-built vocabularies, plus the
// 10k-character speed bound on the StarCoder fixture vocabulary.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>

#include "engine/tokenizer/tiny_vocabs.h"
#include "model/gguf_file.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

using Ids = std::vector<int32_t>;

std::vector<std::string> words(const std::string& pre, std::string_view text) {
  auto p = PreTokenizer::create(pre);
  EXPECT_TRUE(p) << p.error();
  std::vector<std::string> out;
  for (auto w : (*p)->split(text)) out.emplace_back(w);
  return out;
}

TEST(ByteLevel, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level::encode(" "), "Ġ");
  EXPECT_EQ(byte_level::encode("\n"), "Ċ");
  EXPECT_EQ(byte_level::decode(byte_level::encode(all)), all);
  EXPECT_FALSE(byte_level::decode("日本"));
}

TEST(PreTokenizer, Gpt2KeepsNumbersTogether) {
  EXPECT_EQ(words("gpt2", "Hello, world! 12345"),
            (std::vector<std::string>{"Hello", ",", " world", "!", " 12345"}));
  EXPECT_EQ(words("gpt2", "a  b\n"), (std::vector<std::string>{"a", " ", " b", "\n"}));
}

TEST(PreTokenizer, SmolLmSplitsDigitsFirst) {
  EXPECT_EQ(words("smollm", "Hello, world! 12345"),
            (std::vector<std::string>{"Hello", ",", " world", "!", " ", "1", "2", "3", "4", "5"}));
}

TEST(PreTokenizer, Llama3GroupsThreeDigitsAndIgnoresCase) {
  EXPECT_EQ(words("llama3", "1234567 I'M"), (std::vector<std::string>{"123", "456", "7", " I", "'M"}));
  EXPECT_EQ(words("qwen2", "123 I'M"), (std::vector<std::string>{"1", "2", "3", " I", "'M"}));
  EXPECT_EQ(words("gpt2", "I'M"), (std::vector<std::string>{"I", "'", "M"}));  // case-sensitive
}

TEST(PreTokenizer, KeepsInvalidUtf8Bytes) {
  const std::string text = "ab\xFF\xFE cd";
  std::string joined;
  for (const auto& w : words("gpt2", text)) joined += w;
  EXPECT_EQ(joined, text);
}

TEST(BpeTokenizer, AppliesMergesByRank) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode(" the", false), (Ids{258}));
  EXPECT_EQ((*tok)->encode("the the", false), (Ids{'t', 257, 258}));
  EXPECT_EQ((*tok)->decode((*tok)->encode("the the", false)), "the the");
}

TEST(BpeTokenizer, ParsesSpecialTokensOnlyWhenAsked) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode("<|im_start|> the<|im_end|>", true), (Ids{260, 258, 261}));
  const Ids plain = (*tok)->encode("<|im_start|>", false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ((*tok)->decode(plain), "<|im_start|>");
}

TEST(BpeTokenizer, ControlTokensRenderOnlyWhenAsked) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->token_bytes(261), "");
  EXPECT_EQ((*tok)->token_bytes(261, /*render_special=*/true), "<|im_end|>");
  EXPECT_EQ((*tok)->token_bytes(258), " the");
  EXPECT_EQ((*tok)->token_bytes(-1), "");
  EXPECT_EQ((*tok)->token_bytes(100000), "");
  EXPECT_TRUE((*tok)->is_control(260));
  EXPECT_TRUE((*tok)->is_eog(261));  // eos
  EXPECT_TRUE((*tok)->is_eog(262));  // <|endoftext|>
  EXPECT_FALSE((*tok)->is_eog(260));
  EXPECT_EQ((*tok)->token_id("Ġthe"), 258);
  EXPECT_FALSE((*tok)->token_id("nope"));
}

// No merges: the message names the key in both formats (it named the GGUF
// key alone, to a user of a tokenizer.json).
TEST(BpeTokenizer, NoMergesNamesBothFormatsKeys) {
  VocabData v = test::tiny_bpe_vocab();
  v.merges.clear();
  auto tok = create_tokenizer(v);
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().find("tokenizer.ggml.merges"), std::string::npos) << tok.error();
  EXPECT_NE(tok.error().find("model.merges"), std::string::npos) << tok.error();
}

TEST(BpeTokenizer, RejectsUnknownNames) {
  VocabData v = test::tiny_bpe_vocab("klingon");
  auto tok = create_tokenizer(v);
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().find("'klingon'"), std::string::npos) << tok.error();
  v.pre = "gpt2";
  v.model = "wordpiece";
  tok = create_tokenizer(v);
  ASSERT_FALSE(tok);
  EXPECT_NE(tok.error().find("'wordpiece'"), std::string::npos) << tok.error();
  v.model = "gpt2";
  v.eos_id = 99999;
  EXPECT_FALSE(create_tokenizer(v));
}

TEST(BpeTokenizer, MergesByTextThroughPiecesThatAreNoTokens) {
  // As llama.cpp: "x y" fires although "xy" is no token, and "xy z" then
  // gives "xyz". A final piece that is no token falls back to its bytes.
  VocabData v = test::tiny_bpe_vocab();
  v.tokens.push_back("xyz");  // 263
  v.token_types.push_back(TokenType::kNormal);
  v.merges = {"x y", "xy z", "q r"};
  auto tok = create_tokenizer(v);
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode("xyz", false), (Ids{263}));
  EXPECT_EQ((*tok)->encode("xy", false), (Ids{'x', 'y'}));
  EXPECT_EQ((*tok)->encode("qr", false), (Ids{'q', 'r'}));
}

TEST(BpeTokenizer, IgnoreMergesTakesWholeWords) {
  // Llama 3's row: a word that is a token is emitted whole even when the
  // merges would not build it.
  VocabData v = test::tiny_bpe_vocab("llama-bpe");
  v.tokens.push_back("Ġcat");  // 263, no merges lead to it
  v.token_types.push_back(TokenType::kNormal);
  auto tok = create_tokenizer(v);
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode(" cat", false), (Ids{263}));
  v.pre = "gpt-2";
  tok = create_tokenizer(v);
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode(" cat", false), (Ids{' ', 'c', 'a', 't'}));
}

// Gemma 4's kind: BPE on raw UTF-8 with U+2581 for spaces and <0xNN> byte
// tokens, newline runs kept whole when they are tokens.
VocabData tiny_gemma4_vocab() {
  VocabData v;
  v.model = "gemma4";
  auto add = [&v](const std::string& text, TokenType type) {
    v.tokens.push_back(text);
    v.token_types.push_back(type);
    return static_cast<int32_t>(v.tokens.size() - 1);
  };
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), TokenType::kByte);  // 0..255
  add("\xE2\x96\x81", TokenType::kNormal);       // 256 ▁
  add("a", TokenType::kNormal);                   // 257
  add("b", TokenType::kNormal);                   // 258
  add("\xE2\x96\x81" "a", TokenType::kNormal);   // 259 ▁a
  add("\xE2\x96\x81" "ab", TokenType::kNormal);  // 260 ▁ab
  add("\n\n", TokenType::kNormal);                // 261
  add("\n", TokenType::kNormal);                  // 262
  v.bos_id = add("<bos>", TokenType::kControl);   // 263
  v.merges = {"\xE2\x96\x81 a", "\xE2\x96\x81" "a b"};
  v.add_bos = false;
  return v;
}

TEST(BpeTokenizer, Gemma4RawUtf8WithSpaceMarkersAndByteTokens) {
  auto tok = create_tokenizer(tiny_gemma4_vocab());
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode(" ab a", false), (Ids{260, 259}));
  EXPECT_EQ((*tok)->encode("ab", false), (Ids{257, 258}));
  EXPECT_EQ((*tok)->encode("\n\n\n", false), (Ids{262, 262, 262}));  // "\n\n\n" is no token: char by char
  EXPECT_EQ((*tok)->encode("a\n\nb", false), (Ids{257, 261, 258}));
  EXPECT_EQ((*tok)->encode("\xC3\xA9", false), (Ids{0xC3, 0xA9}));  // é: its bytes
  EXPECT_EQ((*tok)->decode((*tok)->encode(" ab é\n\n", false)), " ab é\n\n");
  EXPECT_TRUE((*tok)->add_bos());  // llama.cpp always adds BOS for Gemma 4
  EXPECT_FALSE((*tok)->add_space_prefix());
}

TEST(BpeTokenizer, EncodesTenThousandCharactersQuickly) {
  const std::string dir = test::tokenizer_fixtures_dir();
  KVSCOPE_REQUIRE_DATA(!dir.empty(), test::TestData::kTokenizerFixtures);
  auto file = GgufFile::open(dir + "/ggml-vocab-starcoder.gguf");
  ASSERT_TRUE(file) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok) << tok.error();
  std::string text;
  const std::string sample =
      "The quick brown fox jumps over the lazy dog 1234567890. Ünïcödé, 日本語, emoji 🙂!\n"
      "    def main(argv): return sum(int(x) for x in argv)  # comment\n";
  while (text.size() < 10000) text += sample;
  (void)(*tok)->encode(text, false);  // warm up (JIT, allocator)
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = (*tok)->encode(text, false);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ((*tok)->decode(ids), text);
  EXPECT_LT(ms, 50.0) << ids.size() << " tokens";
  std::cout << "encoded " << text.size() << " bytes into " << ids.size() << " tokens in " << ms << " ms\n";
}

}  // namespace
}  // namespace kvscope
