// The server's pure pieces (label `unit`): log-probabilities from logits,
// OpenAI's response and chunk shapes, the tokens-per-second window, the
// Prometheus text and the snapshot JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "logprobs.h"
#include "metrics.h"
#include "response_json.h"
#include "snapshot_json.h"

namespace kvscope::server {
namespace {

TEST(Logprobs, LogSoftmaxMatchesTheDefinitionAndTopIsSorted) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  const float lse = log_sum_exp(logits.data(), 5);
  double sum = 0;
  for (float l : logits) sum += std::exp(l);
  EXPECT_NEAR(lse, std::log(sum), 1e-5);
  const std::vector<TopLogprob> top = top_logprobs(logits.data(), 5, lse, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].token, 1);  // ties: the lower id first
  EXPECT_EQ(top[1].token, 3);
  EXPECT_EQ(top[2].token, 0);
  EXPECT_NEAR(top[2].logprob, 1.0 - std::log(sum), 1e-5);
  EXPECT_EQ(top_logprobs(logits.data(), 5, lse, 99).size(), 5u);
  EXPECT_TRUE(top_logprobs(logits.data(), 5, lse, 0).empty());
  // Large logits do not overflow.
  const std::vector<float> big = {1000.0f, 1000.0f};
  EXPECT_NEAR(log_sum_exp(big.data(), 2), 1000.0 + std::log(2.0), 1e-3);
}

ResponseContext context(Endpoint endpoint, bool logprobs = false) {
  return {endpoint, "id-1", 123, "model-x", logprobs};
}

TEST(ResponseJson, ToolCallsInTheMessageAndInChunks) {
  ChoiceResult c;
  c.finish = FinishReason::Stop;
  c.tool_calls = {{"abc123XYZ", "get_weather", "{\"city\":\"Paris\"}"}, {"def456UVW", "get_time", "{}"}};
  const auto full = full_response(context(Endpoint::kChatCompletions), {c}, Usage{10, 4, 0});
  const auto& message = full["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null()) << "a turn that only calls tools has no content";
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["id"], "abc123XYZ");
  EXPECT_EQ(message["tool_calls"][0]["type"], "function");
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Paris\"}") << "arguments are JSON text";
  EXPECT_FALSE(message["tool_calls"][0].contains("index"));
  EXPECT_EQ(full["choices"][0]["finish_reason"], "tool_calls");

  c.text = "Checking.";
  EXPECT_EQ(full_response(context(Endpoint::kChatCompletions), {c}, Usage{})["choices"][0]["message"]["content"],
            "Checking.");

  const auto chunks = tool_call_chunks(context(Endpoint::kChatCompletions), 1, c.tool_calls, true);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0]["choices"][0]["index"], 1);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["tool_calls"][1]["index"], 1);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_TRUE(chunks[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(chunks[1]["choices"][0]["delta"].empty());
  EXPECT_EQ(chunks[1]["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(chunks[1].contains("usage"));
}

TEST(ResponseJson, ChatResponseAndChunks) {
  ChoiceResult c;
  c.text = "Hello";
  c.finish = FinishReason::ContextFull;
  const auto full = full_response(context(Endpoint::kChatCompletions), {c}, Usage{10, 4, 8});
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_EQ(full["id"], "id-1");
  EXPECT_EQ(full["model"], "model-x");
  EXPECT_EQ(full["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(full["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(full["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(full["usage"]["total_tokens"], 14);
  EXPECT_EQ(full["usage"]["prompt_tokens_details"]["cached_tokens"], 8);

  const auto role = stream_chunk(context(Endpoint::kChatCompletions), 2, "", "assistant", {}, FinishReason::None, true);
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["index"], 2);
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(role["usage"].is_null());
  EXPECT_TRUE(role.contains("usage"));
  const auto finish = stream_chunk(context(Endpoint::kChatCompletions), 0, "", std::nullopt, {}, FinishReason::Stop,
                                   false);
  EXPECT_TRUE(finish["choices"][0]["delta"].empty());
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(finish.contains("usage"));
  const auto usage = usage_chunk(context(Endpoint::kChatCompletions), Usage{3, 2, 0});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
  EXPECT_EQ(sse_event(usage).rfind("data: {", 0), 0u);
  EXPECT_EQ(sse_event(usage).substr(sse_event(usage).size() - 2), "\n\n");
}

TEST(ResponseJson, LogprobsInEachEndpointsShape) {
  TokenLogprob lp;
  lp.token = 7;
  lp.bytes = "ab";
  lp.logprob = -0.5f;
  lp.top = {{7, -0.5f}, {9, -1.5f}};
  lp.top_bytes = {"ab", "c"};
  ChoiceResult c;
  c.text = "ab";
  TokenLogprob second = lp;
  lp.text_offset = 5;  // after an echoed prompt of 5 characters
  second.text_offset = 7;
  c.logprobs = {lp, second};
  c.finish = FinishReason::Stop;
  const auto chat = full_response(context(Endpoint::kChatCompletions, true), {c}, {});
  const auto& content = chat["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["token"], "ab");
  EXPECT_EQ(content[0]["bytes"], (std::vector<int>{97, 98}));
  EXPECT_EQ(content[0]["top_logprobs"][1]["token"], "c");
  EXPECT_FLOAT_EQ(content[0]["top_logprobs"][1]["logprob"].get<float>(), -1.5f);

  const auto text = full_response(context(Endpoint::kCompletions, true), {c}, {});
  const auto& lps = text["choices"][0]["logprobs"];
  EXPECT_EQ(lps["tokens"], (std::vector<std::string>{"ab", "ab"}));
  EXPECT_EQ(lps["text_offset"], (std::vector<int>{5, 7}));  // as the entries place them
  EXPECT_EQ(utf8_chars_started("\xc3\xa9\xe4\xbd\xa0"), 2u);  // é你: characters, not bytes
  EXPECT_EQ(utf8_chars_started("\xa9"), 0u);  // the end of a character begins none
  EXPECT_FLOAT_EQ(lps["top_logprobs"][0]["c"].get<float>(), -1.5f);
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "ab");
}

// Echo with logprobs: the prompt's entries (the first unscored, written as
// nulls) carry their place in the echoed text; the generated ones follow it.
TEST(ResponseJson, EchoedPromptEntriesKeepTheirOffsets) {
  TokenLogprob bos, word, generated;
  bos.bytes = "<s>";
  bos.scored = false;
  bos.text_offset = 0;  // added by the engine: not in the text
  word.bytes = "Hi";
  word.logprob = -2.0f;
  word.top = {{5, -1.0f}};
  word.top_bytes = {"Yo"};
  word.text_offset = 0;
  generated.bytes = "!";
  generated.logprob = -0.25f;
  generated.text_offset = 2;
  ChoiceResult c;
  c.text = "Hi!";
  c.logprobs = {bos, word, generated};
  const auto text = full_response(context(Endpoint::kCompletions, true), {c}, {});
  const auto& lps = text["choices"][0]["logprobs"];
  EXPECT_EQ(lps["tokens"], (std::vector<std::string>{"<s>", "Hi", "!"}));
  EXPECT_TRUE(lps["token_logprobs"][0].is_null());
  EXPECT_TRUE(lps["top_logprobs"][0].is_null());
  EXPECT_FLOAT_EQ(lps["token_logprobs"][1].get<float>(), -2.0f);
  EXPECT_FLOAT_EQ(lps["top_logprobs"][1]["Yo"].get<float>(), -1.0f);
  EXPECT_EQ(lps["text_offset"], (std::vector<int>{0, 0, 2}));
}

// Tokens that are part of a character (byte-level vocabularies split CJK
// and emoji) are "bytes:\xNN..." in completions' logprobs: as raw bytes they
// all became U+FFFD, and one position's alternatives shared a single key.
TEST(ResponseJson, CompletionsLogprobsNamePartialCharactersByTheirBytes) {
  TokenLogprob lp;
  lp.token = 1;
  lp.bytes = "\xe5\x8c";  // the first two bytes of a three-byte character
  lp.logprob = -0.5f;
  lp.top = {{1, -0.5f}, {2, -1.0f}, {3, -2.0f}};
  lp.top_bytes = {"\xe5\x8c", "\xe4\xb8", "\xe4\xb8\xad"};
  ChoiceResult c;
  c.logprobs = {lp};
  c.finish = FinishReason::Length;
  const auto text = nlohmann::json::parse(dump(full_response(context(Endpoint::kCompletions, true), {c}, {})));
  const auto& lps = text["choices"][0]["logprobs"];
  EXPECT_EQ(lps["tokens"][0], "bytes:\\xe5\\x8c");
  const auto& top = lps["top_logprobs"][0];
  ASSERT_EQ(top.size(), 3u) << top.dump();
  EXPECT_FLOAT_EQ(top["bytes:\\xe4\\xb8"].get<float>(), -1.0f);
  EXPECT_FLOAT_EQ(top["\xe4\xb8\xad"].get<float>(), -2.0f);  // a whole character is itself
}

TEST(ResponseJson, InvalidUtf8IsReplacedNotThrown) {
  ChoiceResult c;
  c.text = "a\xff";
  EXPECT_NE(dump(full_response(context(Endpoint::kCompletions), {c}, {})).find("\"a\xef\xbf\xbd\""), std::string::npos);
}

TEST(TokenRate, CountsTheLastTenSeconds) {
  const auto t0 = TokenRate::Clock::now();
  TokenRate rate(t0);
  rate.add(50, t0 + std::chrono::milliseconds(500));
  rate.add(30, t0 + std::chrono::seconds(4));
  EXPECT_DOUBLE_EQ(rate.per_second(t0 + std::chrono::seconds(5)), 80.0 / 5.0);
  EXPECT_DOUBLE_EQ(rate.per_second(t0 + std::chrono::seconds(12)), 30.0 / 10.0);
  EXPECT_DOUBLE_EQ(rate.per_second(t0 + std::chrono::seconds(30)), 0.0);
}

TEST(Metrics, PrometheusTextHasEveryMetricOnce) {
  ServerMetrics m;
  m.on_request_started(true, 12);
  m.on_token();
  m.on_finish(FinishReason::Cancelled, {});
  EngineSample e;
  e.kv.num_blocks = 100;
  e.kv.num_used_blocks = 25;
  e.kv.num_prefix_queried_tokens = 40;
  e.kv.num_prefix_hit_tokens = 10;
  e.num_running = 3;
  const std::string text = prometheus_text(m.totals(), m.tokens_per_second(), e);
  for (const char* line : {"kvscope_requests_running 3", "kvscope_kv_blocks_total 100", "kvscope_kv_blocks_used 25",
                           "kvscope_kv_usage_ratio 0.25", "kvscope_prefix_cache_hit_rate 0.25",
                           "kvscope_prompt_tokens_total 12", "kvscope_generated_tokens_total 1",
                           "kvscope_http_requests_in_flight 1",
                           "kvscope_http_requests_total{endpoint=\"chat_completions\"} 1",
                           "kvscope_choices_finished_total{reason=\"cancelled\"} 1"}) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("kvscope_spec_"), std::string::npos);  // speculative decoding off: no such metrics
  e.speculative = true;
  e.spec.num_draft_tokens = 8;
  e.spec.num_accepted_tokens = 6;
  EXPECT_NE(prometheus_text(m.totals(), 0.0, e).find("\nkvscope_spec_acceptance_rate 0.75\n"), std::string::npos);
  // Every sample line is "name[{labels}] value" after its HELP and TYPE.
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind('#', 0) == 0) continue;
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_NO_THROW((void)std::stod(line.substr(space + 1))) << line;
    EXPECT_EQ(line.rfind("kvscope_", 0), 0u) << line;
  }
}

TEST(SnapshotJson, SummarisesTheSnapshot) {
  EngineSnapshot s;
  s.step = 9;
  s.block_size = 16;
  s.blocks.resize(4);
  s.blocks[0].state = BlockState::Used;
  s.blocks[0].ref_count = 2;
  s.blocks[1].state = BlockState::Used;
  s.blocks[1].ref_count = 1;
  s.blocks[2].state = BlockState::CachedFree;
  SequenceSnapshot q;
  q.id = 5;
  q.state = SequenceState::Running;
  q.tokens = {1, 2, 3};
  q.block_table = {0, 1};
  s.sequences.push_back(q);
  s.num_running = 1;
  const auto j = snapshot_json(s);
  EXPECT_EQ(j["step"], 9);
  EXPECT_EQ(j["blocks"], "SUC.");
  EXPECT_EQ(j["num_running"], 1);
  EXPECT_EQ(j["sequences"][0]["id"], 5);
  EXPECT_EQ(j["sequences"][0]["state"], sequence_state_name(SequenceState::Running));
  EXPECT_EQ(j["sequences"][0]["num_tokens"], 3);
  EXPECT_EQ(j["sequences"][0]["block_table"], (std::vector<int>{0, 1}));
}

// Each tensor-parallel rank's figures under tensor_parallel, and the last
// step's forward time of each rank (num_ranks of them, not the array's size).
TEST(SnapshotJson, CarriesEachRank) {
  EngineSnapshot s;
  s.tensor_parallel.tp = 2;
  s.tensor_parallel.deterministic = true;
  s.tensor_parallel.num_kv_heads = 1;
  s.tensor_parallel.num_kv_head_slots = 2;
  s.tensor_parallel.kv_heads_replicated = true;
  for (int32_t r = 0; r < 2; ++r) {
    RankMemory rank;
    rank.rank = r;
    rank.q_head_begin = 3 * r;
    rank.num_q_heads = 3;
    rank.num_kv_heads = 1;
    rank.weight_bytes = 1000 + r;
    rank.kv_bytes = 2000 + r;
    rank.workspace_bytes = 3000 + r;
    s.tensor_parallel.ranks.push_back(rank);
  }
  s.last_step.num_ranks = 2;
  s.last_step.rank_forward_s[0] = 0.25;
  s.last_step.rank_forward_s[1] = 0.5;
  s.last_step.device_time_s = 0.125;
  const auto j = snapshot_json(s);
  const auto& tp = j["tensor_parallel"];
  EXPECT_EQ(tp["tp"], 2);
  EXPECT_EQ(tp["tp_reduce"], "deterministic");
  EXPECT_EQ(tp["num_kv_heads"], 1);
  EXPECT_EQ(tp["num_kv_head_slots"], 2);
  EXPECT_EQ(tp["kv_heads_replicated"], true);
  ASSERT_EQ(tp["ranks"].size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const auto& rank = tp["ranks"][static_cast<size_t>(r)];
    EXPECT_EQ(rank["rank"], r);
    EXPECT_EQ(rank["q_head_begin"], 3 * r);
    EXPECT_EQ(rank["num_q_heads"], 3);
    EXPECT_EQ(rank["kv_head_begin"], 0);
    EXPECT_EQ(rank["num_kv_heads"], 1);
    EXPECT_EQ(rank["weight_bytes"], 1000 + r);
    EXPECT_EQ(rank["kv_bytes"], 2000 + r);
    EXPECT_EQ(rank["workspace_bytes"], 3000 + r);
  }
  EXPECT_EQ(j["last_step"]["rank_forward_s"], (std::vector<double>{0.25, 0.5}));
  EXPECT_EQ(j["last_step"]["device_time_s"], 0.125);
  // No forward pass: no ranks' times.
  EXPECT_TRUE(snapshot_json(EngineSnapshot{})["last_step"]["rank_forward_s"].empty());
}

}  // namespace
}  // namespace kvscope::server
