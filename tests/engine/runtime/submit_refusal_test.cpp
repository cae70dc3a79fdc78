// What Engine::submit tells a request that cannot fit, on the tiny model
// (label unit): a prompt that fills the context says there is no room left
// for a reply, and one too long says what would let it run; a request longer than the pool names the setting that sized
// the pool (num_blocks when it is set, else the KV budget), in the singular
// for one block; a tokenizer the engine cannot build names the model file.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

class SubmitRefusal : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("submit_refusal");
    ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path_).ok());
  }
  static void TearDownTestSuite() { std::remove(path_.c_str()); }
  static EngineConfig config() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 1;
    c.block_size = 4;
    return c;
  }
  // The error submitting `num_ids` token ids asking for `max_tokens` more.
  static std::string refusal(const EngineConfig& c, int num_ids, int max_tokens) {
    auto engine = Engine::create(c);
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
    if (!engine.ok()) return {};
    GenerationRequest request;
    request.prompt_tokens = std::vector<int32_t>(static_cast<size_t>(num_ids), 65);
    request.sampling.max_tokens = max_tokens;
    auto id = (*engine)->submit(std::move(request));
    return id.ok() ? std::string() : id.error();
  }
  static inline std::string path_;
};

TEST_F(SubmitRefusal, APromptThatFillsTheContextLeavesNoRoomForAReply) {
  EngineConfig c = config();
  c.max_model_len = 8;
  // Each says what would let it run: cutting its middle, or a longer
  // context where the model has one.
  const std::string fix = "; context_overflow = truncate_middle (or shift) would cut its middle to fit, or a larger "
                          "max_model_len (the model was trained on 512) with a KV pool that holds it";
  EXPECT_EQ(refusal(c, 8, 4), "the prompt has 8 tokens; the context holds 8 (max model length), with no room left "
                              "for a reply" + fix);
  EXPECT_EQ(refusal(c, 9, 4), "the prompt has 9 tokens; the context holds 8 (max model length)" + fix);
  c.max_model_len = 512;  // the model's own: only cutting helps
  EXPECT_EQ(refusal(c, 600, 4), "the prompt has 600 tokens; the context holds 512 (max model length); "
                                "context_overflow = truncate_middle (or shift) would cut its middle to fit");
  EXPECT_EQ(refusal(c, 7, 4), "");  // fits: one token of reply
}

TEST_F(SubmitRefusal, ALongRequestNamesTheSettingThatSizedThePool) {
  EngineConfig c = config();
  c.max_model_len = 64;  // set: the pool does not shorten it
  c.num_blocks = 3;      // 12 tokens
  EXPECT_EQ(refusal(c, 10, 20), "the request needs 8 KV blocks (30 tokens) but the pool has only 3; raise "
                                "num_blocks or lower max tokens");
  c.num_blocks = 0;
  c.kv_budget_bytes = 3 * 2048;  // 3 blocks of 4 tokens of f32 K and V (2 layers, 2 KV heads of 16)
  const std::string budget = refusal(c, 10, 20);
  EXPECT_EQ(budget, "the request needs 8 KV blocks (30 tokens) but the pool has only 3; raise the KV budget or "
                    "lower max tokens");
  c.kv_budget_bytes = 512ll << 20;
  c.num_blocks = 1;
  c.max_model_len = 64;
  EXPECT_EQ(refusal(c, 3, 4), "the request needs 2 KV blocks (7 tokens) but the pool has only 1; raise num_blocks "
                              "or lower max tokens");
  // A prompt the pool cannot hold with one reply token: fewer max tokens
  // would not help, so the message does not suggest it.
  c.num_blocks = 3;
  EXPECT_EQ(refusal(c, 20, 2), "the prompt needs 6 KV blocks (21 tokens with the first reply token) but the pool "
                               "has only 3; raise num_blocks or shorten the prompt");
}

TEST_F(SubmitRefusal, AnUnbuildableTokenizerNamesTheModelFile) {
  const std::string path = test::tiny_model_temp_path("submit_refusal_tokenizer");
  test::TinyModelSpec spec;
  spec.gguf_str["tokenizer.ggml.model"] = "zzzzz";
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  EngineConfig c = config();
  c.model_path = path;
  auto engine = Engine::create(c);
  std::remove(path.c_str());
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.error().rfind(path + ": tokenizer: model 'zzzzz' is not supported", 0), 0u) << engine.error();
}

}  // namespace
}  // namespace kvscope
