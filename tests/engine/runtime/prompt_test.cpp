// Engine::submit builds every prompt in one place: the same conversation
// given as chat messages, as the rendered text, or as the ids submit reported
// for it runs the same prompt ids and generates the same greedy tokens; BOS
// comes once (added for raw text when the vocabulary asks, not doubled when
// the text or template already starts with it); text with no token gives a
// warning and never a control token. On the random tiny model, GGUF and
// Hugging Face directory (label unit), and on the default model and Gemma
// when present (their tests skip, or fail under CI, without them).
//
// Run: ctest -R 'PromptTiny|PromptModel'
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "kvscope/engine.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Engine> create_engine(const std::string& path) {
  EngineConfig config;
  config.model_path = path;
  config.num_threads = 1;
  config.block_size = 16;
  config.num_blocks = 64;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
  return engine.ok() ? std::move(engine).value() : nullptr;
}

struct Ran {
  SubmittedPrompt prompt;
  std::vector<int32_t> generated;
};

// Submits `request` greedily for 6 tokens and runs it to the end.
Ran run(Engine& engine, GenerationRequest request) {
  Ran ran;
  request.sampling.temperature = 0.0f;
  request.sampling.max_tokens = 6;
  request.sampling.ignore_eos = true;
  request.on_event = [&ran](const TokenEvent& ev) {
    if (ev.token >= 0) ran.generated.push_back(ev.token);
  };
  auto id = engine.submit(std::move(request), &ran.prompt);
  EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error());
  engine.run_until_idle();
  return ran;
}

GenerationRequest text_request(const std::string& text) {
  GenerationRequest r;
  r.prompt = text;
  return r;
}

// Messages, their rendered text and the ids reported for them: one prompt.
void expect_three_forms_agree(Engine& engine) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "What is a KV cache?"}};
  GenerationRequest from_messages;
  from_messages.messages = messages;
  const Ran a = run(engine, from_messages);
  const Ran b = run(engine, text_request(engine.render_chat(messages, /*add_generation_prompt=*/true)));
  GenerationRequest from_ids;
  from_ids.prompt_tokens = a.prompt.tokens;
  const Ran c = run(engine, from_ids);
  ASSERT_FALSE(a.prompt.tokens.empty());
  EXPECT_EQ(a.prompt.tokens, b.prompt.tokens);
  EXPECT_EQ(a.prompt.tokens, c.prompt.tokens);
  EXPECT_EQ(a.generated.size(), 6u);
  EXPECT_EQ(a.generated, b.generated);
  EXPECT_EQ(a.generated, c.generated);
  EXPECT_TRUE(a.prompt.warnings.empty());
}

// BOS appears exactly once at the start when the vocabulary asks for it.
void expect_bos_once(const std::vector<int32_t>& ids, int32_t bos) {
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], bos);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), bos), 1);
}

class PromptTiny : public ::testing::TestWithParam<bool> {  // param: Hugging Face directory
 protected:
  std::string model_path(bool add_bos) {
    test::TinyModelSpec spec;
    spec.add_bos = add_bos;
    const std::string base = test::tiny_model_temp_path(std::string("prompt") + (add_bos ? "_bos" : ""));
    if (!GetParam()) {
      EXPECT_TRUE(test::write_tiny_gguf(spec, base).ok());
      return base;
    }
    const std::string dir = base + ".hf";
    EXPECT_TRUE(test::write_tiny_hf_dir(spec, dir).ok());
    return dir;
  }
  void TearDown() override {
    for (const char* suffix : {"", "_bos"}) {
      const std::string base = test::tiny_model_temp_path(std::string("prompt") + suffix);
      fs::remove(base);
      fs::remove_all(base + ".hf");
    }
  }
};

TEST_P(PromptTiny, MessagesTextAndIdsRunTheSamePrompt) {
  for (bool add_bos : {false, true}) {
    auto engine = create_engine(model_path(add_bos));
    ASSERT_NE(engine, nullptr);
    expect_three_forms_agree(*engine);
  }
}

TEST_P(PromptTiny, BosOnceForRawTextAndMessages) {
  auto engine = create_engine(model_path(/*add_bos=*/true));
  ASSERT_NE(engine, nullptr);
  const Ran plain = run(*engine, text_request("Hello"));
  expect_bos_once(plain.prompt.tokens, test::kTinyEndOfText);
  EXPECT_EQ(std::vector<int32_t>(plain.prompt.tokens.begin() + 1, plain.prompt.tokens.end()),
            engine->tokenize("Hello", /*parse_special=*/true));
  // Text that already starts with BOS's text does not get a second one.
  const Ran written = run(*engine, text_request("<|endoftext|>Hello"));
  EXPECT_EQ(written.prompt.tokens, plain.prompt.tokens);
  GenerationRequest chat;
  chat.messages = {{"user", "Hello"}};
  expect_bos_once(run(*engine, chat).prompt.tokens, test::kTinyEndOfText);

  auto no_bos = create_engine(model_path(/*add_bos=*/false));
  ASSERT_NE(no_bos, nullptr);
  EXPECT_EQ(run(*no_bos, text_request("Hello")).prompt.tokens, no_bos->tokenize("Hello", true));
}

// A template that puts the message first: a message starting with BOS's
// text is plain text, so the BOS the vocabulary asks for is still added
// (it was taken as the template's own BOS, and the prompt had none).
TEST(PromptBos, AMessageStartingWithBosTextStillGetsBos) {
  test::TinyModelSpec spec;
  spec.add_bos = true;
  spec.gguf_str["tokenizer.chat_template"] = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}";
  const std::string path = test::tiny_model_temp_path("prompt_message_first");
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  auto engine = create_engine(path);
  fs::remove(path);
  ASSERT_NE(engine, nullptr);
  GenerationRequest chat;
  chat.messages = {{"user", "<|endoftext|>Hello"}};
  expect_bos_once(run(*engine, chat).prompt.tokens, test::kTinyEndOfText);
}

TEST_P(PromptTiny, OnePromptFormOnly) {
  auto engine = create_engine(model_path(false));
  ASSERT_NE(engine, nullptr);
  GenerationRequest both;
  both.prompt = "Hello";
  both.prompt_tokens = {72, 101};
  auto id = engine->submit(both);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().find("more than one prompt"), std::string::npos) << id.error();
  auto empty = engine->submit(GenerationRequest{});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().find("empty"), std::string::npos) << empty.error();
}

TEST_P(PromptTiny, MalformedUtf8IsReportedAndNeverAControlToken) {
  auto engine = create_engine(model_path(false));
  ASSERT_NE(engine, nullptr);
  const Ran ran = run(*engine, text_request("a\xFF\xC3(b"));
  ASSERT_EQ(ran.prompt.warnings.size(), 1u);
  EXPECT_NE(ran.prompt.warnings[0].find("not valid UTF-8"), std::string::npos) << ran.prompt.warnings[0];
  for (int32_t id : ran.prompt.tokens) EXPECT_LT(id, test::kTinyEndOfText) << "a control token from plain text";
}

INSTANTIATE_TEST_SUITE_P(GgufAndHf, PromptTiny, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "HfDirectory" : "Gguf"; });

TEST(PromptModel, DefaultModelFormsAgreeAndControlBytesGetNoControlToken) {
  const std::string path = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kDefaultModel);
  auto engine = create_engine(path);
  ASSERT_NE(engine, nullptr);
  expect_three_forms_agree(*engine);
  // SmolLM2's vocabulary has no symbol for byte 0x04, and its unknown id 0 is
  // <|endoftext|>: the byte used to become that control token.
  const Ran ran = run(*engine, text_request("a\x04z"));
  EXPECT_EQ(std::count(ran.prompt.tokens.begin(), ran.prompt.tokens.end(), 0), 0);
  EXPECT_EQ(ran.prompt.tokens, (std::vector<int32_t>{81, 24211, 106}));  // a, U+FFFD ("ï¿½"), z
  ASSERT_EQ(ran.prompt.warnings.size(), 1u);
  EXPECT_NE(ran.prompt.warnings[0].find("0x04"), std::string::npos) << ran.prompt.warnings[0];
}

TEST(PromptModel, GemmaTemplateWritesBosAndSubmitAddsNoSecond) {
  const std::string path = test::gemma_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kGemmaModel);
  auto engine = create_engine(path);
  ASSERT_NE(engine, nullptr);
  expect_three_forms_agree(*engine);
  GenerationRequest chat;
  chat.messages = {{"user", "Hello"}};
  const Ran ran = run(*engine, chat);
  expect_bos_once(ran.prompt.tokens, 2);  // <bos>
  // Raw text gets BOS from the vocabulary's rule (add_bos_token).
  expect_bos_once(run(*engine, text_request("Hello")).prompt.tokens, 2);
}

}  // namespace
}  // namespace kvscope
