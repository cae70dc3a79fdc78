// request_parser (label `unit`): good bodies become the engine's requests
// with the right sampling parameters; every bad body (malformed JSON, wrong
// types, out-of-range or huge numbers, invalid UTF-8, missing fields,
// unsupported features) becomes a 400 that names the field, never a crash.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "constrain/grammar_matcher.h"
#include "kvscope/json_constraint.h"
#include "request_parser.h"

namespace kvscope::server {
namespace {

ParseDefaults defaults() {
  ParseDefaults d;
  d.sampling.temperature = 0.7f;
  d.sampling.max_tokens = 512;
  d.sampling.seed = 0;
  return d;
}

ParsedRequest chat_ok(const std::string& body) {
  ParseResult r = parse_chat_request(body, defaults());
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << body << " -> " << e->message;
  return parse_ok(r) ? std::get<ParsedRequest>(r) : ParsedRequest{};
}

ParsedRequest completion_ok(const std::string& body) {
  ParseResult r = parse_completion_request(body, defaults());
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << body << " -> " << e->message;
  return parse_ok(r) ? std::get<ParsedRequest>(r) : ParsedRequest{};
}

ApiError chat_error(const std::string& body) {
  ParseResult r = parse_chat_request(body, defaults());
  EXPECT_FALSE(parse_ok(r)) << body << " was accepted";
  return parse_ok(r) ? ApiError{} : std::get<ApiError>(r);
}

ApiError completion_error(const std::string& body) {
  ParseResult r = parse_completion_request(body, defaults());
  EXPECT_FALSE(parse_ok(r)) << body << " was accepted";
  return parse_ok(r) ? ApiError{} : std::get<ApiError>(r);
}

const std::string kUser = R"("messages": [{"role": "user", "content": "Hi"}])";

TEST(RequestParser, ChatWithEverySupportedField) {
  const ParsedRequest r = chat_ok(R"({"model": "m", "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null},
      {"role": "user", "content": "Again"}],
    "stream": true, "stream_options": {"include_usage": true}, "n": 3, "max_completion_tokens": 17,
    "temperature": 0, "top_p": 0.5, "stop": ["END", ""], "seed": -1, "presence_penalty": 1.5,
    "frequency_penalty": -0.5, "top_k": 7, "min_p": 0.1, "repetition_penalty": 1.2, "repeat_last_n": -1,
    "ignore_eos": true, "logprobs": true, "top_logprobs": 4, "user": "ignored", "tool_choice": "none",
    "response_format": {"type": "text"}, "logit_bias": {}, "tools": []})");
  EXPECT_EQ(r.endpoint, Endpoint::kChatCompletions);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");  // developer is OpenAI's newer name for it
  EXPECT_EQ(r.messages[1].content, "Hello there");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.sampling.max_tokens, 17);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"END"});  // the empty one is dropped
  EXPECT_EQ(r.sampling.seed, ~0ull);
  EXPECT_EQ(r.sampling.presence_penalty, 1.5f);
  EXPECT_EQ(r.sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(r.sampling.top_k, 7);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.2f);
  EXPECT_EQ(r.sampling.repeat_last_n, -1);
  EXPECT_TRUE(r.sampling.ignore_eos);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 4);
}

TEST(RequestParser, ToolsToolCallsAndToolResults) {
  const ParsedRequest r = chat_ok(R"({"model": "m", "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "abc123XYZ", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "def", "type": "function", "function": {"name": "get_time", "arguments": {"tz": "CET"}}}]},
      {"role": "tool", "tool_call_id": "abc123XYZ", "name": "get_weather", "content": "21 C"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
    "tool_choice": "auto"})");
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "abc123XYZ");
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, "{\"city\": \"Paris\"}") << "JSON text kept as sent";
  EXPECT_EQ(r.messages[1].tool_calls[1].arguments, "{\"tz\":\"CET\"}") << "an object becomes its JSON text";
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].tool_call_id, "abc123XYZ");
  EXPECT_EQ(r.messages[2].name, "get_weather");
  EXPECT_EQ(r.messages[2].content, "21 C");
  EXPECT_EQ(nlohmann::json::parse(r.tools_json)[0]["function"]["name"], "get_weather");
  EXPECT_TRUE(r.tool_calls_allowed);

  // tool_choice none: the tools are shown, as OpenAI does, but no call is read back.
  const ParsedRequest none = chat_ok(R"({"model": "m", "tools": [{"type": "function", "function": {"name": "f"}}],
                                         "tool_choice": "none", )" + kUser + "}");
  EXPECT_EQ(nlohmann::json::parse(none.tools_json)[0]["function"]["name"], "f");
  EXPECT_FALSE(none.tool_calls_allowed);
  // Tools are a chat feature.
  EXPECT_EQ(completion_error(R"({"model": "m", "prompt": "a", "tools": [{"type": "function", "function": {"name": "f"}}]})")
                .param, "tools");
}

TEST(RequestParser, DefaultsFillWhatTheRequestLeavesOut) {
  const ParsedRequest r = chat_ok(R"({"model": "m", "temperature": null, )" + kUser + "}");
  EXPECT_EQ(r.sampling.temperature, 0.7f);  // null counts as not given
  EXPECT_EQ(r.sampling.max_tokens, 512);
  EXPECT_EQ(r.sampling.seed, 0u);  // the engine picks one
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.logprobs);
}

TEST(RequestParser, SeedZeroIsAFixedSeedAndMaxCompletionTokensWins) {
  const ParsedRequest r = chat_ok(R"({"model": "m", "seed": 0, "max_tokens": 5, "max_completion_tokens": 9, )" +
                                  kUser + "}");
  EXPECT_EQ(r.sampling.seed, kSeedForZero);
  EXPECT_EQ(r.sampling.max_tokens, 9);
  EXPECT_EQ(chat_ok(R"({"model": "m", "seed": 18446744073709551615, )" + kUser + "}").sampling.seed, ~0ull);
}

// top_k -1 is vLLM's "off", 0 llama.cpp's: both turn it off; -2 is refused.
TEST(RequestParser, TopKMinusOneIsOff) {
  EXPECT_EQ(chat_ok(R"({"model": "m", "top_k": -1, )" + kUser + "}").sampling.top_k, 0);
  EXPECT_EQ(chat_ok(R"({"model": "m", "top_k": 0, )" + kUser + "}").sampling.top_k, 0);
  EXPECT_EQ(chat_ok(R"({"model": "m", "top_k": 7, )" + kUser + "}").sampling.top_k, 7);
  EXPECT_EQ(chat_error(R"({"model": "m", "top_k": -2, )" + kUser + "}").param, "top_k");
}

// stream_options belong to a stream: without one they are refused, as
// OpenAI refuses them (they were ignored).
TEST(RequestParser, StreamOptionsOnlyWithAStream) {
  for (const char* stream : {"", R"("stream": false, )"}) {
    const ApiError e =
        chat_error(std::string(R"({"model": "m", )") + stream + R"("stream_options": {"include_usage": true}, )" + kUser + "}");
    EXPECT_EQ(e.param, "stream_options");
    EXPECT_NE(e.message.find("only allowed when 'stream' is true"), std::string::npos) << e.message;
  }
  EXPECT_TRUE(chat_ok(R"({"model": "m", "stream": true, "stream_options": {"include_usage": true}, )" + kUser + "}")
                  .include_usage);
  EXPECT_FALSE(chat_ok(R"({"model": "m", "stream": true, "stream_options": {}, )" + kUser + "}").include_usage);
}

// Replaying a conversation in which an OpenAI model refused: the assistant
// turn's refusal part is its text. Anywhere else a part must be text, and
// one with no type says that it needs one.
TEST(RequestParser, AssistantRefusalPartsAreItsText) {
  const ParsedRequest r = chat_ok(R"({"model": "m", "messages": [{"role": "user", "content": "a"},
      {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]},
      {"role": "user", "content": [{"type": "text", "text": "b"}]}]})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1].content, "I can't help with that.");
  const ApiError user_refusal =
      chat_error(R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "refusal", "refusal": "x"}]}]})");
  EXPECT_EQ(user_refusal.param, "messages[0].content[0].type");
  const ApiError untyped = chat_error(R"({"model": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]})");
  EXPECT_EQ(untyped.param, "messages[0].content[0].type");
  EXPECT_NE(untyped.message.find("messages[0].content[0].type is required"), std::string::npos) << untyped.message;
  const ApiError bare = chat_error(
      R"({"model": "m", "messages": [{"role": "assistant", "content": [{"type": "refusal", "text": "x"}]}]})");
  EXPECT_EQ(bare.param, "messages[0].content[0].refusal");
}

TEST(RequestParser, CompletionPromptForms) {
  ParsedRequest r = completion_ok(R"({"model": "m", "prompt": "Once", "logprobs": 2, "echo": true, "stop": "x"})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "Once");
  EXPECT_FALSE(r.prompts[0].is_tokens);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"x"});

  // Token ids echo their text; max_tokens 0 runs the prompt only (completions only).
  r = completion_ok(R"({"model": "m", "prompt": [1, 2], "echo": true, "max_tokens": 0})");
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.sampling.max_tokens, 0);

  r = completion_ok(R"({"model": "m", "prompt": [1, 2, 3]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_tokens);
  EXPECT_EQ(r.prompts[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(r.logprobs);

  r = completion_ok(R"({"model": "m", "prompt": ["a", [4, 5], "b"], "logprobs": 0})");
  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[2].text, "b");
  EXPECT_EQ(r.prompts[1].tokens, (std::vector<int32_t>{4, 5}));
  EXPECT_TRUE(r.logprobs);  // 0: the chosen token's logprob, no alternatives
  EXPECT_EQ(r.top_logprobs, 0);
}

struct BadBody {
  const char* body;
  const char* param;  // the field the error names ("" = none)
};

TEST(RequestParser, BadChatBodiesAre400sNamingTheField) {
  const BadBody cases[] = {
      {"", ""},
      {"{", ""},
      {"[]", ""},
      {"null", ""},
      {"\"text\"", ""},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}]} trailing)", ""},
      {"{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}", ""},  // invalid UTF-8
      {"{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"\xc3\"}]}", ""},       // cut character
      {R"({"messages": [{"role": "user", "content": "a"}]})", "model"},
      {R"({"model": 7, "messages": []})", "model"},
      {R"({"model": "m"})", "messages"},
      {R"({"model": "m", "messages": "hi"})", "messages"},
      {R"({"model": "m", "messages": []})", "messages"},
      {R"({"model": "m", "messages": [7]})", "messages[0]"},
      {R"({"model": "m", "messages": [{"content": "a"}]})", "messages[0].role"},
      {R"({"model": "m", "messages": [{"role": "tool", "content": "a"}]})", "messages[0].tool_call_id"},
      {R"({"model": "m", "messages": [{"role": "robot", "content": "a"}]})", "messages[0].role"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a", "tool_calls": []}]})", "messages[0].tool_calls"},
      {R"({"model": "m", "messages": [{"role": "assistant", "tool_calls": {}}]})", "messages[0].tool_calls"},
      {R"({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 5}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"model": "m", "messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"model": "m", "messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content[0].type"},
      {R"({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{}]}]})", "messages[0].tool_calls[0].function"},
      {R"({"model": "m", "stream": "yes", "messages": [{"role": "user", "content": "a"}]})", "stream"},
      {R"({"model": "m", "n": 0, "messages": [{"role": "user", "content": "a"}]})", "n"},
      {R"({"model": "m", "n": 65, "messages": [{"role": "user", "content": "a"}]})", "n"},
      {R"({"model": "m", "n": 1.5, "messages": [{"role": "user", "content": "a"}]})", "n"},
      {R"({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "a"}]})", "max_tokens"},
      {R"({"model": "m", "max_tokens": 1e400, "messages": [{"role": "user", "content": "a"}]})", ""},  // overflows JSON
      {R"({"model": "m", "max_tokens": 1e10, "messages": [{"role": "user", "content": "a"}]})", "max_tokens"},
      {R"({"model": "m", "max_tokens": 99999999999999999999999, "messages": [{"role": "user", "content": "a"}]})",
       "max_tokens"},
      {R"({"model": "m", "max_tokens": 2147483648, "messages": [{"role": "user", "content": "a"}]})", "max_tokens"},
      {R"({"model": "m", "max_tokens": -9223372036854775808, "messages": [{"role": "user", "content": "a"}]})",
       "max_tokens"},
      {R"({"model": "m", "temperature": "hot", "messages": [{"role": "user", "content": "a"}]})", "temperature"},
      {R"({"model": "m", "temperature": -1, "messages": [{"role": "user", "content": "a"}]})", "temperature"},
      {R"({"model": "m", "temperature": 1e308, "messages": [{"role": "user", "content": "a"}]})", "temperature"},
      {R"({"model": "m", "top_p": 0, "messages": [{"role": "user", "content": "a"}]})", "top_p"},
      {R"({"model": "m", "stop": 5, "messages": [{"role": "user", "content": "a"}]})", "stop"},
      {R"({"model": "m", "stop": ["a", 5], "messages": [{"role": "user", "content": "a"}]})", "stop[1]"},
      {R"({"model": "m", "seed": 1.5, "messages": [{"role": "user", "content": "a"}]})", "seed"},
      {R"({"model": "m", "logprobs": 1, "messages": [{"role": "user", "content": "a"}]})", "logprobs"},
      {R"({"model": "m", "top_logprobs": 3, "messages": [{"role": "user", "content": "a"}]})", "top_logprobs"},
      {R"({"model": "m", "logprobs": true, "top_logprobs": 21, "messages": [{"role": "user", "content": "a"}]})",
       "top_logprobs"},
      {R"({"model": "m", "stream_options": 1, "messages": [{"role": "user", "content": "a"}]})", "stream_options"},
      {R"({"model": "m", "tools": [{"type": "function"}], "messages": [{"role": "user", "content": "a"}]})",
       "tools[0].function"},
      {R"({"model": "m", "tools": {"type": "function"}, "messages": [{"role": "user", "content": "a"}]})", "tools"},
      {R"({"model": "m", "tools": [{"type": "code"}], "messages": [{"role": "user", "content": "a"}]})", "tools[0].type"},
      {R"({"model": "m", "tools": [{"type": "function", "function": {"name": "f", "parameters": []}}],
           "messages": [{"role": "user", "content": "a"}]})", "tools[0].function.parameters"},
      {R"({"model": "m", "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required",
           "messages": [{"role": "user", "content": "a"}]})", "tool_choice"},
      {R"({"model": "m", "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": 3,
           "messages": [{"role": "user", "content": "a"}]})", "tool_choice"},
      // Without tools too: "required" or a named function would otherwise pass unnoticed.
      {R"({"model": "m", "tool_choice": "required", "messages": [{"role": "user", "content": "a"}]})", "tool_choice"},
      {R"({"model": "m", "tool_choice": {"type": "function", "function": {"name": "f"}},
           "messages": [{"role": "user", "content": "a"}]})", "tool_choice"},
      {R"({"model": "m", "functions": [{"name": "f"}], "messages": [{"role": "user", "content": "a"}]})", "functions"},
      {R"({"model": "m", "response_format": {"type": "xml"}, "messages": [{"role": "user", "content": "a"}]})",
       "response_format"},
      {R"({"model": "m", "logit_bias": {"1": 5}, "messages": [{"role": "user", "content": "a"}]})", "logit_bias"},
      {R"({"model": "m", "best_of": 3, "messages": [{"role": "user", "content": "a"}]})", "best_of"},
      {R"({"model": "m", "modalities": ["text", "audio"], "messages": [{"role": "user", "content": "a"}]})",
       "modalities"},
      {R"({"model": "m", "audio": {"voice": "alloy", "format": "wav"}, "messages": [{"role": "user", "content": "a"}]})",
       "audio"},
      {R"({"model": "m", "seed": 18446744073709551616, "messages": [{"role": "user", "content": "a"}]})", "seed"},
      {R"({"model": "m", "repetition_penalty": 0, "messages": [{"role": "user", "content": "a"}]})",
       "repetition_penalty"},
  };
  for (const BadBody& c : cases) {
    const ApiError e = chat_error(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << " -> " << e.message;
    EXPECT_FALSE(e.message.empty()) << c.body;
  }
}

TEST(RequestParser, BadCompletionBodiesAre400s) {
  const BadBody cases[] = {
      {R"({"model": "m"})", "prompt"},
      {R"({"model": "m", "prompt": 5})", "prompt"},
      {R"({"model": "m", "prompt": []})", "prompt"},
      {R"({"model": "m", "prompt": [1, -2]})", "prompt"},
      {R"({"model": "m", "prompt": [1, 4294967296]})", "prompt"},
      {R"({"model": "m", "prompt": [[]]})", "prompt"},
      {R"({"model": "m", "prompt": ["a", {}]})", "prompt[1]"},
      {R"({"model": "m", "prompt": "a", "logprobs": 6})", "logprobs"},
      {R"({"model": "m", "prompt": "a", "logprobs": true})", "logprobs"},
      {R"({"model": "m", "prompt": "a", "suffix": "b"})", "suffix"},
      {R"({"model": "m", "prompt": "a", "max_tokens": -1})", "max_tokens"},
  };
  for (const BadBody& c : cases) {
    const ApiError e = completion_error(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << " -> " << e.message;
  }
}

// The words of a refusal: what the field must be, said once, without the JSON
// library's internals.
TEST(RequestParser, RefusalsSayWhatTheFieldMustBe) {
  const std::string chat = R"("model": "m", "messages": [{"role": "user", "content": "a"}])";
  EXPECT_EQ(chat_error("{" + chat + R"(, "top_p": 0})").message, "'top_p' must be a number above 0 and at most 1, got 0");
  EXPECT_EQ(chat_error("{" + chat + R"(, "top_p": 1.5})").message, "'top_p' must be a number above 0 and at most 1, got 1.5");
  EXPECT_EQ(chat_error("{" + chat + R"(, "min_p": 2})").message, "'min_p' must be a number from 0 to 1, got 2");
  EXPECT_EQ(chat_error("{" + chat + R"(, "seed": 18446744073709551616})").message,
            "'seed' must be a 64-bit integer, got an integer beyond 64 bits");
  EXPECT_EQ(chat_error("{" + chat + R"(, "seed": 1.5})").message,
            "'seed' must be a 64-bit integer, got a number with a fraction or exponent");
  EXPECT_TRUE(parse_ok(parse_chat_request("{" + chat + R"(, "modalities": ["text"]})", defaults())));
  const std::string bad_json = chat_error(R"({"model": "m", x})").message;
  EXPECT_EQ(bad_json.rfind("the body is not valid JSON: parse error at line 1, column 16", 0), 0u) << bad_json;
  EXPECT_EQ(bad_json.find("json.exception"), std::string::npos) << bad_json;
}

TEST(RequestParser, ManyPromptsOrStopStringsAreRefused) {
  std::string prompts = "[";
  for (int i = 0; i <= kMaxPrompts; ++i) prompts += std::string(i ? "," : "") + "\"p\"";
  prompts += "]";
  EXPECT_EQ(completion_error(R"({"model": "m", "prompt": )" + prompts + "}").param, "prompt");
  std::string stops = "[";
  for (int i = 0; i <= kMaxStopStrings; ++i) stops += std::string(i ? "," : "") + "\"s\"";
  stops += "]";
  EXPECT_EQ(chat_error(R"({"model": "m", "stop": )" + stops + ", " + kUser + "}").param, "stop");
}

TEST(RequestParser, DeeplyNestedJsonIsAnErrorNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(chat_error(deep).status, 400);
  EXPECT_EQ(chat_error(R"({"model": "m", "messages": )" + deep + "}").param, "messages[0]");
}

TEST(RequestParser, ErrorJsonHasOpenAisShape) {
  const ApiError e = chat_error(R"({"model": "m"})");
  const auto j = e.to_json();
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "messages");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_TRUE(j["error"]["message"].is_string());
  // A message quoting bytes that are not UTF-8 still gives valid JSON text.
  ApiError raw = invalid_request("bad \xff byte");
  EXPECT_NE(raw.body().find("bad"), std::string::npos);
}

// The whole text is a complete value of the request's grammar.
bool grammar_accepts(const ParsedRequest& r, const std::string& text) {
  if (!r.sampling.constraint) return false;
  GrammarMatcher m(r.sampling.constraint);
  return m.advance(text) && m.is_complete();
}

TEST(RequestParser, ResponseFormatText) {
  EXPECT_EQ(chat_ok(R"({"model": "m", "response_format": {"type": "text"}, )" + kUser + "}").sampling.constraint,
            nullptr);
  EXPECT_EQ(chat_ok(R"({"model": "m", "response_format": null, )" + kUser + "}").sampling.constraint, nullptr);
}

TEST(RequestParser, ResponseFormatJsonObjectOnBothEndpoints) {
  const ParsedRequest chat = chat_ok(R"({"model": "m", "response_format": {"type": "json_object"}, )" + kUser + "}");
  EXPECT_EQ(chat.sampling.constraint, json_object_grammar());
  const ParsedRequest completion =
      completion_ok(R"({"model": "m", "prompt": "x", "response_format": {"type": "json_object"}})");
  EXPECT_TRUE(grammar_accepts(completion, R"({"a": [1]})"));
  EXPECT_FALSE(grammar_accepts(completion, "[1]"));
}

TEST(RequestParser, ResponseFormatJsonSchemaKeepsThePropertyOrder) {
  // "b" before "a": a parse that sorted keys would write them the other way round.
  const std::string format = R"("response_format": {"type": "json_schema", "json_schema": {"name": "pair",
      "strict": true, "schema": {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}},
      "required": ["b", "a"], "additionalProperties": false}}})";
  const ParsedRequest chat = chat_ok(R"({"model": "m", )" + format + ", " + kUser + "}");
  EXPECT_TRUE(grammar_accepts(chat, R"({"b": 1, "a": "x"})"));
  EXPECT_FALSE(grammar_accepts(chat, R"({"a": "x", "b": 1})"));
  const ParsedRequest completion = completion_ok(R"({"model": "m", "prompt": ["x", "y"], )" + format + "}");
  EXPECT_TRUE(grammar_accepts(completion, R"({"b":2,"a":""})"));
}

TEST(RequestParser, ResponseFormatErrorsNameResponseFormat) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // (response_format value, part of the message)
      {R"("json")", "'response_format' must be an object"},
      {R"({})", "'response_format.type' must be"},
      {R"({"type": "yaml"})", "got 'yaml'"},
      {R"({"type": "json_schema"})", "'response_format.json_schema'"},
      {R"({"type": "json_schema", "json_schema": {"name": "x"}})", "'response_format.json_schema.schema'"},
      {R"({"type": "json_schema", "json_schema": {"name": 3, "schema": {}}})", "name' must be a string"},
      {R"({"type": "json_schema", "json_schema": {"strict": "yes", "schema": {}}})", "strict' must be true or false"},
      {R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "a+"}}})",
       "schema at #: keyword 'pattern' is not supported"},
      {R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object",
          "properties": {"n": {"type": "integer", "minimum": 1}}}}})",
       "schema at #/properties/n: keyword 'minimum' is not supported"},
  };
  for (const auto& [format, message] : cases) {
    const ApiError chat = chat_error(R"({"model": "m", "response_format": )" + format + ", " + kUser + "}");
    EXPECT_EQ(chat.status, 400) << format;
    EXPECT_EQ(chat.type, "invalid_request_error") << format;
    EXPECT_EQ(chat.param, "response_format") << format;
    EXPECT_NE(chat.message.find(message), std::string::npos) << format << " -> " << chat.message;
    const ApiError completion = completion_error(R"({"model": "m", "prompt": "x", "response_format": )" + format + "}");
    EXPECT_EQ(completion.param, "response_format") << format;
  }
}

}  // namespace
}  // namespace kvscope::server
