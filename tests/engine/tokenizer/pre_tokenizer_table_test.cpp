// The pre-tokenizer table (engine/src/tokenizer/pre_tokenizer_table.h) and
// how PreTokenizer runs its rows: every row compiles and keeps every byte of
// its input; unknown names are refused with the list, and names llama.cpp
// splits with hand-written code say why; \s is llama.cpp's whitespace set;
// non-ASCII whitespace splits exactly like U+000B (llama.cpp maps it to
// U+000B before matching); and a few splits pinned per family.
#include <gtest/gtest.h>

#include <set>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/pre_tokenizer_table.h"
#include "tokenizer/utf8.h"

namespace kvscope {
namespace {

using Words = std::vector<std::string>;

Words words(std::string_view pre, std::string_view text) {
  auto p = PreTokenizer::create(pre);
  EXPECT_TRUE(p) << p.error();
  if (!p) return {};
  Words out;
  for (auto w : (*p)->split(text)) out.emplace_back(w);
  return out;
}

// Piece boundaries of a split, counted in code points.
std::vector<size_t> boundaries(const PreTokenizer& p, std::string_view text) {
  std::vector<size_t> out;
  size_t num_chars = 0;
  for (std::string_view w : p.split(text)) {
    for (size_t pos = 0; pos < w.size();) {
      size_t len = 1;
      utf8::decode_one(w, pos, &len);
      pos += len;
      ++num_chars;
    }
    out.push_back(num_chars);
  }
  return out;
}

const std::string kSample =
    "Hello, World! I'M here: 1234567 ok\n\n  \tx\r\n日本語のテキスト 한국어 Привет مرحبا 🙂👍🏽 "
    "a.b-c_d 3.14 <s> ١٢٣ \xC2\xA0 end   ";

TEST(PreTokenizerTable, EveryRowCompilesAndKeepsEveryByte) {
  const auto names = supported_pre_tokenizer_names();
  EXPECT_GE(names.size(), 80u);
  std::set<std::string_view> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size()) << "a name appears twice";
  for (std::string_view name : names) {
    auto p = PreTokenizer::create(name);
    ASSERT_TRUE(p) << p.error();
    std::string joined;
    for (std::string_view w : (*p)->split(kSample)) {
      EXPECT_FALSE(w.empty()) << name;
      joined += w;
    }
    EXPECT_EQ(joined, kSample) << name;
  }
}

TEST(PreTokenizerTable, RefusesUnknownNamesAndSaysWhyForCustomOnes) {
  auto unknown = PreTokenizer::create("klingon");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("'klingon'"), std::string::npos) << unknown.error();
  EXPECT_NE(unknown.error().find("llama-bpe"), std::string::npos) << unknown.error();
  auto custom = PreTokenizer::create("kimi-k2");
  ASSERT_FALSE(custom);
  EXPECT_NE(custom.error().find("hand-written"), std::string::npos) << custom.error();
}

TEST(PreTokenizerTable, FlagsFollowLlamaCpp) {
  EXPECT_TRUE(find_pre_tokenizer_rule("llama-bpe")->ignore_merges);
  EXPECT_EQ(find_pre_tokenizer_rule("llama-bpe")->add_bos_default, std::optional<bool>(true));
  EXPECT_FALSE(find_pre_tokenizer_rule("dbrx")->ignore_merges);  // Llama 3's regex, not its flags
  EXPECT_FALSE(find_pre_tokenizer_rule("qwen2")->clean_spaces);
  const PreTokenizerRule* gemma4 = find_pre_tokenizer_rule("gemma4");
  EXPECT_FALSE(gemma4->byte_level);
  EXPECT_TRUE(gemma4->escape_spaces);
  EXPECT_TRUE(gemma4->whole_newline_runs);
  EXPECT_TRUE(gemma4->force_add_bos);
  EXPECT_EQ(find_pre_tokenizer_rule("nonsense"), nullptr);
}

TEST(PreTokenizer, WhitespaceIsLlamaCppsSet) {
  auto rewritten = with_llama_whitespace(R"(\s+(?!\S)|[^\s\p{L}]+)");
  ASSERT_TRUE(rewritten) << rewritten.error();
  EXPECT_EQ(rewritten->find("\\s"), std::string::npos);
  EXPECT_NE(rewritten->find("[^\\t-\\r"), std::string::npos) << *rewritten;
  EXPECT_FALSE(with_llama_whitespace(R"([\S])"));
  // U+180E is whitespace to PCRE2 but not to llama.cpp: a run of two is
  // one symbol word, not two whitespace words.
  EXPECT_EQ(words("gpt-2", "x\xE1\xA0\x8E\xE1\xA0\x8Ey"), (Words{"x", "\xE1\xA0\x8E\xE1\xA0\x8E", "y"}));
  // U+0085 (NEL) is whitespace to llama.cpp.
  EXPECT_EQ(words("gpt-2", "a\xC2\x85\xC2\x85" "b"), (Words{"a", "\xC2\x85", "\xC2\x85", "b"}));
}

TEST(PreTokenizer, NonAsciiWhitespaceSplitsLikeVerticalTab) {
  // llama.cpp replaces whitespace outside ASCII by U+000B before its regexes
  // run, so literal ranges in a row (deepseek's U+0800..U+4E00) must not
  // match it; every row must split these texts the same either way.
  const std::string samples[] = {"a\vb", "x \v y", "\v\v", "漢\v字", "。\v。", "1\v2", "\vk", "k\v"};
  const std::string spaces[] = {"\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x8A",
                                "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
  for (std::string_view name : supported_pre_tokenizer_names()) {
    auto p = PreTokenizer::create(name);
    ASSERT_TRUE(p) << p.error();
    for (const std::string& sample : samples) {
      const auto want = boundaries(**p, sample);
      for (const std::string& space : spaces) {
        std::string text;
        for (char c : sample) {
          if (c == '\v') text += space;
          else text += c;
        }
        EXPECT_EQ(boundaries(**p, text), want) << name << " on '" << text << "'";
      }
    }
  }
}

TEST(PreTokenizer, FamiliesSplitAsLlamaCpp) {
  // Digits: one by one (StarCoder), up to three (Llama 3), runs (GPT-2).
  EXPECT_EQ(words("starcoder", "x 2024"), (Words{"x", " ", "2", "0", "2", "4"}));
  EXPECT_EQ(words("llama-bpe", "x 2024"), (Words{"x", " ", "202", "4"}));
  EXPECT_EQ(words("gpt-2", "x 2024"), (Words{"x", " 2024"}));
  // The default split isolates punctuation runs and groups digits by three.
  EXPECT_EQ(words("default", "a...b 12345"), (Words{"a", "...", "b", " ", "123", "45"}));
  // Falcon's first step takes punctuation and symbols, backtick included.
  EXPECT_EQ(words("falcon", "a`b"), (Words{"a", "`", "b"}));
  // DeepSeek: newlines alone, CJK runs, letters with one leading space.
  EXPECT_EQ(words("deepseek-llm", "ab\n中文 cd"), (Words{"ab", "\n", "中文", " cd"}));
  // Qwen 3.5 keeps combining marks with their letters.
  EXPECT_EQ(words("qwen35", "e\xCC\x81t\xC3\xA9"), (Words{"e\xCC\x81t\xC3\xA9"}));
  EXPECT_EQ(words("qwen2", "e\xCC\x81t"), (Words{"e", "\xCC\x81t"}));
  // Gemma 4: newline runs against the rest (spaces are U+2581 by then).
  EXPECT_EQ(words("gemma4", "a b\n\nc"), (Words{"a b", "\n\n", "c"}));
}

}  // namespace
}  // namespace kvscope
