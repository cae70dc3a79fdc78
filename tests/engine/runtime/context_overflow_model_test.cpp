// Context overflow = shift on the default model (SmolLM2-135M, 30 layers,
// adjacent-pair rope): a chat reply far longer than a small max_model_len
// runs to max_tokens through many shifts, every token a real one, no block
// left in use, and the text stays text. 2,000 tokens, not 20,000: on 2
// shared cores this model decodes 50 to 85 tokens/s (24 to 37 s for this
// test), so 20,000 would take 4 to 6 minutes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "kvscope/engine.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

TEST(ContextOverflowModel, LongReplyShiftsThroughASmallContext) {
  const std::string path = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kDefaultModel);
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 2;
  c.max_model_len = 256;
  c.context_overflow = ContextOverflow::Shift;
  c.context_keep = 32;  // the system prompt
  c.kv_cache_type = KvCacheType::F16;
  auto created = Engine::create(c);
  ASSERT_TRUE(created.ok()) << created.error();
  Engine& engine = **created;
  GenerationRequest r;
  r.messages = {{"system", "You are a storyteller."}, {"user", "Tell me a very long story about a lighthouse."}};
  r.sampling.temperature = 0.8f;
  r.sampling.seed = 3;
  r.sampling.ignore_eos = true;
  constexpr int32_t kTokens = 2000;
  r.sampling.max_tokens = kTokens;
  TokenEvent last;
  int32_t num_tokens = 0, num_notices = 0;
  std::string text;
  r.on_event = [&](const TokenEvent& ev) {
    num_tokens += ev.token >= 0;
    num_notices += ev.num_dropped_tokens > 0;
    text += ev.text;
    if (ev.finish != FinishReason::None) last = ev;
  };
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(engine.submit(std::move(r)).ok());
  engine.run_until_idle();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(last.finish, FinishReason::Length) << last.error;
  EXPECT_EQ(num_tokens, kTokens);
  EXPECT_EQ(last.stats.num_generated_tokens, kTokens);
  // 64 tokens (a quarter of 256) per shift.
  EXPECT_GE(last.stats.num_context_shifts, (kTokens - 256) / 64);
  EXPECT_EQ(last.stats.num_dropped_tokens, 64 * last.stats.num_context_shifts);
  EXPECT_EQ(num_notices, last.stats.num_context_shifts);
  EXPECT_GT(text.size(), 2000u);
  EXPECT_EQ(engine.kv_stats().num_used_blocks, 0);
  std::printf("%d tokens, %d shifts, %.1f s (%.0f tokens/s)\n", kTokens, last.stats.num_context_shifts, seconds,
              kTokens / seconds);
  std::printf("last 300 bytes: %s\n", text.substr(text.size() - 300).c_str());
}

}  // namespace
}  // namespace kvscope
