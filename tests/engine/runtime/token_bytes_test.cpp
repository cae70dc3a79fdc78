// Engine::token_bytes: the bytes of a prompt's ids, concatenated, give back
// the prompt's text, ASCII and not (where single tokens hold only part of a
// UTF-8 character); control tokens are hidden unless asked for; ids outside
// the vocabulary give "". On the random tiny model (label `unit`) and, when
// present, the default model (its test skips without it).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "kvscope/engine.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

const std::string kAscii = "The KV cache holds 16 tokens per block.\n\tNext line!";
const std::string kNonAscii = "naïve café — 日本語 🙂 Ωmega";

std::string concatenated_bytes(const Engine& engine, const std::vector<int32_t>& ids, bool render_special) {
  std::string out;
  for (int32_t id : ids) out += engine.token_bytes(id, render_special);
  return out;
}

bool is_whole_utf8(const std::string& bytes) {
  // No lead byte without all of its continuation bytes, no stray continuation byte.
  size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > bytes.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(bytes[i + k]) >> 6) != 0x2) return false;
    }
    i += len;
  }
  return true;
}

std::unique_ptr<Engine> create_engine(const std::string& path) {
  EngineConfig config;
  config.model_path = path;
  config.num_threads = 1;
  config.num_blocks = 16;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
  return engine.ok() ? std::move(engine).value() : nullptr;
}

class TokenBytesTiny : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One file per process (ctest runs each test as its own process, in parallel).
    path_ = (std::filesystem::temp_directory_path() /
             ("kvscope_token_bytes_tiny_" + std::to_string(::getpid()) + ".gguf")).string();
    ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }
  static inline std::string path_;
};

TEST_F(TokenBytesTiny, PromptIdsGiveBackTheText) {
  auto engine = create_engine(path_);
  ASSERT_TRUE(engine);
  for (const std::string& text : {kAscii, kNonAscii}) {
    const std::vector<int32_t> ids = engine->tokenize(text, /*parse_special=*/false);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(concatenated_bytes(*engine, ids, false), text);
    EXPECT_EQ(concatenated_bytes(*engine, ids, false), engine->detokenize(ids));
  }
}

TEST_F(TokenBytesTiny, NonAsciiTokensMayHoldPartCharacters) {
  // The tiny vocabulary spells non-ASCII text in byte tokens, so some single
  // tokens are not whole characters: a block boundary can fall inside one.
  auto engine = create_engine(path_);
  ASSERT_TRUE(engine);
  int partial = 0;
  for (int32_t id : engine->tokenize(kNonAscii, false)) partial += !is_whole_utf8(engine->token_bytes(id));
  EXPECT_GT(partial, 0);
}

TEST_F(TokenBytesTiny, ControlTokensOnlyWhenRendered) {
  auto engine = create_engine(path_);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->token_bytes(test::kTinyImStart), "");
  EXPECT_EQ(engine->token_bytes(test::kTinyImStart, /*render_special=*/true), "<|im_start|>");
  EXPECT_EQ(engine->token_bytes(test::kTinyImEnd, true), "<|im_end|>");
  EXPECT_EQ(engine->token_bytes('A'), "A");  // byte tokens come first in the tiny vocabulary
  EXPECT_EQ(engine->token_bytes(-1, true), "");
  EXPECT_EQ(engine->token_bytes(engine->model_info().vocab_size, true), "");
}

TEST(TokenBytesDefaultModel, PromptIdsGiveBackTheText) {
  KVSCOPE_REQUIRE_DATA(!test::default_model_path().empty(), test::TestData::kDefaultModel);
  auto engine = create_engine(test::default_model_path());
  ASSERT_TRUE(engine);
  for (const std::string& text : {kAscii, kNonAscii}) {
    const std::vector<int32_t> ids = engine->tokenize(text, false);
    EXPECT_EQ(concatenated_bytes(*engine, ids, false), text);
  }
  // A chat prompt with its control tokens, shown when rendered.
  const std::string chat = "<|im_start|>user\n" + kNonAscii + "<|im_end|>\n<|im_start|>assistant\n";
  const std::vector<int32_t> ids = engine->tokenize(chat, /*parse_special=*/true);
  EXPECT_EQ(concatenated_bytes(*engine, ids, true), chat);
  EXPECT_EQ(concatenated_bytes(*engine, ids, false), "user\n" + kNonAscii + "\nassistant\n");
}

}  // namespace
}  // namespace kvscope
