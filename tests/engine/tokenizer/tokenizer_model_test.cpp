// Tokenizers of the real models (label `model`): SmolLM2 (default model) and
// Gemma 3 when present. Each test skips with a reason when its file is absent.
#include <gtest/gtest.h>

#include "model/gguf_file.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

struct Loaded {
  VocabData vocab;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load(const std::string& path) {
  Loaded l;
  auto file = GgufFile::open(path);
  EXPECT_TRUE(file) << file.error();
  if (!file) return l;
  auto vocab = read_vocab(**file);
  EXPECT_TRUE(vocab) << vocab.error();
  if (!vocab) return l;
  l.vocab = std::move(*vocab);
  auto tok = create_tokenizer(l.vocab);
  EXPECT_TRUE(tok) << tok.error();
  if (tok) l.tok = std::move(*tok);
  return l;
}

TEST(SmolLm2Tokenizer, SplitsDigitsOneByOne) {
  const std::string path = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kDefaultModel);
  Loaded m = load(path);
  ASSERT_TRUE(m.tok);
  EXPECT_EQ(m.tok->vocab_size(), 49152);
  EXPECT_FALSE(m.tok->add_bos());
  const auto ids = m.tok->encode("Hello, world! 12345", false);
  ASSERT_GE(ids.size(), 5u);
  std::vector<std::string> last5;
  for (size_t i = ids.size() - 5; i < ids.size(); ++i) last5.emplace_back(m.tok->token_text(ids[i]));
  EXPECT_EQ(last5, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(m.tok->decode(ids), "Hello, world! 12345");
}

TEST(SmolLm2Tokenizer, ParsesChatMlSpecialTokens) {
  const std::string path = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kDefaultModel);
  Loaded m = load(path);
  ASSERT_TRUE(m.tok);
  const auto start = m.tok->token_id("<|im_start|>"), end = m.tok->token_id("<|im_end|>");
  ASSERT_TRUE(start && end);
  const auto ids = m.tok->encode("<|im_start|>user\nhi<|im_end|>", true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), *start);
  EXPECT_EQ(ids.back(), *end);
  EXPECT_EQ(m.tok->decode(ids, /*render_special=*/true), "<|im_start|>user\nhi<|im_end|>");
  EXPECT_TRUE(m.tok->is_eog(*end));
  const auto plain = m.tok->encode("<|im_start|>", false);
  EXPECT_GT(plain.size(), 1u) << "without parse_special the marker is plain text";
}

TEST(SmolLm2Tokenizer, ChatTemplateMatchesTheModelsJinja) {
  const std::string path = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kDefaultModel);
  Loaded m = load(path);
  ASSERT_TRUE(m.tok);
  const ChatTemplate t = ChatTemplate::from_vocab(m.vocab, *m.tok);
  EXPECT_EQ(t.family(), ChatFamily::kChatMl);
  // Rendered with Jinja2 from the file's own tokenizer.chat_template.
  EXPECT_EQ(t.render({{"user", "Hi"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.stop_token_ids(), (std::vector<int32_t>{*m.tok->token_id("<|im_end|>")}));
}

TEST(GemmaTokenizer, LoadsWithBosTwo) {
  const std::string path = test::gemma_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kGemmaModel);
  Loaded m = load(path);
  ASSERT_TRUE(m.tok);
  EXPECT_EQ(m.tok->bos_id(), 2);
  EXPECT_TRUE(m.tok->add_bos());
  EXPECT_FALSE(m.tok->add_space_prefix());
  const auto eot = m.tok->token_id("<end_of_turn>");
  ASSERT_TRUE(eot);
  EXPECT_TRUE(m.tok->is_eog(*eot));
  const ChatTemplate t = ChatTemplate::from_vocab(m.vocab, *m.tok);
  EXPECT_EQ(t.family(), ChatFamily::kGemma);
  const std::string prompt = t.render({{"user", "Hi"}}, true);
  const auto ids = m.tok->encode(prompt, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1) << "BOS exactly once";
  StreamingDetokenizer detok(*m.tok);
  std::string text;
  for (int32_t id : m.tok->encode("Hello 🙂 한국어", false)) text += detok.push(id);
  EXPECT_EQ(text + detok.flush(), "Hello 🙂 한국어");
}

}  // namespace
}  // namespace kvscope
