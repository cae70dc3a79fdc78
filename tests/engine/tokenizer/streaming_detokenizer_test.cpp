// StreamingDetokenizer: characters split across tokens come out whole, once;
// leftovers become U+FFFD at flush; the SentencePiece dummy-prefix space is
// dropped from the first token.
#include <gtest/gtest.h>

#include "engine/tokenizer/tiny_vocabs.h"
#include "model/gguf_file.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace kvscope {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Streams `ids` and checks every chunk is valid UTF-8; returns the joined text.
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, std::vector<std::string>* chunks = nullptr) {
  StreamingDetokenizer detok(tok);
  std::string out;
  for (int32_t id : ids) {
    const std::string piece = detok.push(id);
    EXPECT_EQ(utf8::sanitize(piece), piece) << "chunk is not valid UTF-8";
    if (chunks) chunks->push_back(piece);
    out += piece;
  }
  out += detok.flush();
  return out;
}

TEST(StreamingDetokenizer, HoldsEmojiBytesUntilComplete) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  const std::string emoji = "🙂";  // F0 9F 99 82: four byte-level tokens
  const auto ids = (*tok)->encode(emoji, false);
  ASSERT_EQ(ids.size(), 4u);
  std::vector<std::string> chunks;
  EXPECT_EQ(stream(**tok, ids, &chunks), emoji);
  EXPECT_EQ(chunks, (std::vector<std::string>{"", "", "", emoji}));
}

TEST(StreamingDetokenizer, MixedTextAndKorean) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  const std::string text = "the 한국어 and 🙂 end";
  EXPECT_EQ(stream(**tok, (*tok)->encode(text, false)), text);
}

TEST(StreamingDetokenizer, FlushReplacesIncompleteBytes) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  StreamingDetokenizer detok(**tok);
  EXPECT_EQ(detok.push(0xF0), "");  // ids 0..255 are the byte tokens
  EXPECT_EQ(detok.push(0x9F), "");
  EXPECT_EQ(detok.num_pending_bytes(), 2u);
  EXPECT_EQ(detok.flush(), kReplacement);  // one character cut short: one U+FFFD
  EXPECT_EQ(detok.num_pending_bytes(), 0u);
  // A stray continuation byte can never complete: out at once.
  EXPECT_EQ(detok.push(0x80), kReplacement);
  // An interrupted character is replaced and the text goes on.
  EXPECT_EQ(detok.push(0xE2), "");
  EXPECT_EQ(detok.push('a'), kReplacement + "a");
}

// One U+FFFD per maximal subpart, as Python's errors='replace' and browsers
// decode: a server reply cut mid-emoji ended in one U+FFFD per byte.
TEST(Utf8Sanitize, OneReplacementPerMaximalSubpart) {
  const std::string r = kReplacement;
  EXPECT_EQ(utf8::sanitize("a\xF0\x9F"), "a" + r);          // 2 of an emoji's 4 bytes
  EXPECT_EQ(utf8::sanitize("\xF0\x9F\x98z"), r + "z");     // 3 of 4, then text
  EXPECT_EQ(utf8::sanitize("\xE0\x80"), r + r);             // overlong: not a start of anything
  EXPECT_EQ(utf8::sanitize("\xED\xA0\x80"), r + r + r);     // a surrogate's bytes
  EXPECT_EQ(utf8::sanitize("\xF4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
  EXPECT_EQ(utf8::sanitize("\xC0\xAF"), r + r);             // overlong lead
  EXPECT_EQ(utf8::sanitize("\x80\x80"), r + r);             // stray continuations
  EXPECT_EQ(utf8::sanitize("\xE2\x82"), r);                 // 2 of a euro sign's 3
  EXPECT_EQ(utf8::sanitize("\xE2\x82\xAC"), "\xE2\x82\xAC"); // whole: kept
}

// The count of characters returned is where each token's text starts in
// the reply (the server's text_offset): a partial character, a hidden token
// and a U+FFFD are placed as the text reads, not as their bytes would be.
TEST(StreamingDetokenizer, CountsTheCharactersItReturned) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  StreamingDetokenizer detok(**tok);
  std::string text;
  auto push = [&](int32_t id) {
    const size_t at = detok.num_chars_returned();
    text += detok.push(id);
    return at;
  };
  EXPECT_EQ(push('a'), 0u);
  EXPECT_EQ(push(0xC3), 1u);  // the first byte of "é": nothing returned yet
  EXPECT_EQ(push(0xA9), 1u);  // completes it: "é" starts at 1
  EXPECT_EQ(push(261), 2u);   // <|im_end|>, hidden
  EXPECT_EQ(push(0x80), 2u);  // a stray continuation byte: U+FFFD
  EXPECT_EQ(push('b'), 3u);
  text += detok.flush();
  EXPECT_EQ(text, "a\xC3\xA9" + kReplacement + "b");
  EXPECT_EQ(detok.num_chars_returned(), 4u);
  detok.reset();
  EXPECT_EQ(detok.num_chars_returned(), 0u);
}

TEST(StreamingDetokenizer, ControlTokensHiddenUnlessAsked) {
  auto tok = create_tokenizer(test::tiny_bpe_vocab());
  ASSERT_TRUE(tok) << tok.error();
  StreamingDetokenizer hidden(**tok);
  EXPECT_EQ(hidden.push(261), "");
  StreamingDetokenizer shown(**tok, /*render_special=*/true);
  EXPECT_EQ(shown.push(261), "<|im_end|>");
}

TEST(StreamingDetokenizer, SentencePieceByteFallbackAndLeadingSpace) {
  const std::string dir = test::tokenizer_fixtures_dir();
  KVSCOPE_REQUIRE_DATA(!dir.empty(), test::TestData::kTokenizerFixtures);
  auto file = GgufFile::open(dir + "/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(file) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok) << tok.error();

  const std::string text = "Hello 🦙 한국어 ok";
  std::vector<int32_t> ids = {(*tok)->bos_id()};
  for (int32_t id : (*tok)->encode(text, false)) ids.push_back(id);
  int num_byte_tokens = 0;
  for (int32_t id : ids) num_byte_tokens += (*tok)->token_text(id).starts_with("<0x");
  EXPECT_GE(num_byte_tokens, 4) << "the llama emoji should need byte fallback";
  EXPECT_EQ(stream(**tok, ids), text);  // no leading space, BOS hidden
}

}  // namespace
}  // namespace kvscope
