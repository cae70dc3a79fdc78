// Hugging Face tokenizer.json / tokenizer_config.json -> VocabData -> the
// same BPE tokenizer class.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <fstream>

#include "tokenizer/chat_template.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

// Byte-level vocabulary for "a", "b", " " (Ġ) and merges "a b" -> "ab", "Ġ ab" -> "Ġab".
const char* kTokenizerJson = R"({
  "added_tokens": [
    {"id": 6, "content": "<|im_start|>", "special": true},
    {"id": 7, "content": "<|im_end|>", "special": true}
  ],
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": true},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}]},
  "model": {"type": "BPE",
    "vocab": {"a": 0, "b": 1, "Ġ": 2, "ab": 3, "Ġab": 4, "1": 5},
    "merges": [["a", "b"], "Ġ ab"]}
})";

TEST(HfTokenizerJson, ParsesVocabMergesAndAddedTokens) {
  auto v = parse_tokenizer_json(kTokenizerJson);
  ASSERT_TRUE(v) << v.error();
  EXPECT_EQ(v->pre, "smollm");
  EXPECT_EQ(v->tokens.size(), 8u);
  EXPECT_EQ(v->merges, (std::vector<std::string>{"a b", "Ġ ab"}));
  EXPECT_EQ(v->token_types[6], TokenType::kControl);
  auto tok = create_tokenizer(*v);
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->encode("ab ab11", false), (std::vector<int32_t>{3, 4, 5, 5}));
  EXPECT_EQ((*tok)->encode("<|im_start|>ab<|im_end|>", true), (std::vector<int32_t>{6, 3, 7}));
}

TEST(HfTokenizerJson, RejectsWhatItCannotRun) {
  EXPECT_FALSE(parse_tokenizer_json("{not json"));
  auto v = parse_tokenizer_json(R"({"model": {"type": "Unigram", "vocab": []}})");
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().find("Unigram"), std::string::npos) << v.error();
  v = parse_tokenizer_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Whitespace"}})");
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().find("Whitespace"), std::string::npos) << v.error();
}

TEST(HfTokenizerJson, ReadsDirectoryWithConfig) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvscope_hf_tok_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << kTokenizerJson;
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": {"content": "<|im_start|>"}, "eos_token": "<|im_end|>", "add_bos_token": false,
            "chat_template": "{{ '<|im_start|>' + message['role'] }}"})";
  auto v = read_hf_tokenizer_dir(dir.string());
  fs::remove_all(dir);
  ASSERT_TRUE(v) << v.error();
  EXPECT_EQ(v->bos_id, 6);
  EXPECT_EQ(v->eos_id, 7);
  EXPECT_FALSE(v->add_bos);
  EXPECT_EQ(ChatTemplate::detect(v->chat_template), ChatFamily::kChatMl);
  EXPECT_FALSE(read_hf_tokenizer_dir("/nonexistent/dir"));
}

// A directory's broken tokenizer.json is named with its folder.
TEST(HfTokenizerJson, ErrorsNameTheDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvscope_hf_tok_bad_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << "{not json";
  auto v = read_hf_tokenizer_dir(dir.string());
  fs::remove_all(dir);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), dir.string() + "/tokenizer.json: not valid JSON");
}

// A directory with no tokenizer file is named once (it was named twice,
// "dir/dir: ...").
TEST(HfTokenizerJson, MissingTokenizerNamesTheDirectoryOnce) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvscope_hf_tok_none_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto v = read_hf_tokenizer_dir(dir.string());
  fs::remove_all(dir);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), dir.string() + ": no tokenizer.json or tokenizer.model");
}

}  // namespace
}  // namespace kvscope
