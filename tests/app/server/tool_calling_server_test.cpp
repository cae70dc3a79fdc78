// Tool calling through the server on a tiny random model: tools reach the
// prompt through the model's own chat template (a Hermes-style one here, as
// Qwen's), a template without tools refuses them with a 400, tool calls and
// tool results in the history render, and a streamed reply with tools
// offered (text that may start a call is held back) ends with exactly the
// content the whole reply has. Reading calls out of replies is
// tests/engine/tokenizer/tool_calls_test.cpp; their JSON shape is
// response_json_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/tiny_model.h"
#include "test_server.h"

namespace kvscope {
namespace {

using nlohmann::json;

// Hermes-style: the tools as JSON in the system turn, calls as <tool_call>
// blocks, tool results in user turns, the way Qwen 2.5's template writes them.
constexpr const char* kHermesTemplate = R"JINJA({%- if tools %}<|im_start|>system
You may call functions. Signatures:
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
Reply with <tool_call>{"name": ..., "arguments": ...}</tool_call>.<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls is defined %}<|im_start|>assistant
{{ message.content }}
{%- for call in message.tool_calls %}
<tool_call>{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>{{ message.content }}</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %})JINJA";

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Weather in a city", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

class ToolCallingServerTest : public ::testing::Test {
 protected:
  static std::unique_ptr<test::TestServer> start(const std::string& path, bool hermes) {
    test::TinyModelSpec spec;
    if (hermes) spec.gguf_str["tokenizer.chat_template"] = kHermesTemplate;
    EXPECT_TRUE(test::write_tiny_gguf(spec, path).ok());
    EngineConfig c;
    c.model_path = path;
    c.num_threads = 2;
    c.num_blocks = 256;
    server::ServerOptions options;
    options.model_id = "tiny";
    return test::TestServer::start(c, options);
  }
  void TearDown() override {
    for (const std::string& p : paths_) std::filesystem::remove(p);
  }
  std::string path(const std::string& name) {
    paths_.push_back(test::tiny_model_temp_path(name));
    return paths_.back();
  }
  std::vector<std::string> paths_;
};

json chat_body(json messages, json extra = json::object()) {
  json body = {{"model", "tiny"}, {"messages", std::move(messages)}, {"temperature", 0}, {"ignore_eos", true},
               {"max_tokens", 24}};
  body.update(extra);
  return body;
}

const json kAsk = json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});

TEST_F(ToolCallingServerTest, ATemplateWithoutToolsRefusesThem) {
  auto server = start(path("tools_none"), /*hermes=*/false);
  ASSERT_TRUE(server);
  EXPECT_EQ(server->engine().tool_call_format(), ToolCallFormat::None);
  const test::Reply r = test::http_post(server->port(), "/v1/chat/completions", chat_body(kAsk, {{"tools", kTools}}));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.json["error"]["message"].get<std::string>().find("tools"), std::string::npos) << r.body;
  // tool_choice none: a template that cannot show them has nothing to show,
  // and there is no call to forbid.
  const test::Reply none = test::http_post(server->port(), "/v1/chat/completions",
                                           chat_body(kAsk, {{"tools", kTools}, {"tool_choice", "none"}}));
  EXPECT_EQ(none.status, 200) << none.body;
}

TEST_F(ToolCallingServerTest, ToolsReachThePromptAndStreamingHoldsNothingBack) {
  auto server = start(path("tools_hermes"), /*hermes=*/true);
  ASSERT_TRUE(server);
  ASSERT_EQ(server->engine().tool_call_format(), ToolCallFormat::Hermes);
  const int port = server->port();
  const test::Reply plain = test::http_post(port, "/v1/chat/completions", chat_body(kAsk));
  const test::Reply with_tools = test::http_post(port, "/v1/chat/completions", chat_body(kAsk, {{"tools", kTools}}));
  ASSERT_EQ(plain.status, 200) << plain.body;
  ASSERT_EQ(with_tools.status, 200) << with_tools.body;
  // The tools' signatures are in the prompt: the system turn the template adds.
  EXPECT_GT(with_tools.json["usage"]["prompt_tokens"].get<int>(), plain.json["usage"]["prompt_tokens"].get<int>() + 40);
  // tool_choice none shows them too (OpenAI's meaning: the model knows the
  // tools and may not call them); the reply is content, never calls.
  const test::Reply none = test::http_post(port, "/v1/chat/completions",
                                           chat_body(kAsk, {{"tools", kTools}, {"tool_choice", "none"}}));
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(none.json["usage"]["prompt_tokens"], with_tools.json["usage"]["prompt_tokens"]);
  EXPECT_FALSE(none.json["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(none.json["choices"][0]["finish_reason"], "length");

  // Streamed with tools offered: whatever the random model wrote comes out
  // whole, as content or as calls, exactly as the whole reply has it.
  json extra = {{"tools", kTools}, {"stream", true}};
  const test::Reply streamed = test::http_post(port, "/v1/chat/completions", chat_body(kAsk, extra));
  ASSERT_EQ(streamed.status, 200);
  const test::SseStream sse = test::parse_sse(streamed.body);
  EXPECT_TRUE(sse.done);
  const json& message = with_tools.json["choices"][0]["message"];
  if (message.contains("tool_calls")) {
    EXPECT_EQ(sse.finish_reasons(), std::vector<std::string>{"tool_calls"});
  } else {
    EXPECT_EQ(sse.texts(), std::vector<std::string>{message["content"].get<std::string>()});
    EXPECT_EQ(sse.finish_reasons(), std::vector<std::string>{"length"});
  }

  // A history with a call and its result renders through the template.
  const json history = json::parse(R"([
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "abc123XYZ", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "abc123XYZ", "content": "21 C and clear"}])");
  const test::Reply after = test::http_post(port, "/v1/chat/completions", chat_body(history, {{"tools", kTools}}));
  ASSERT_EQ(after.status, 200) << after.body;
  std::vector<ChatMessage> rendered_history = {{"user", "Weather in Paris?"}, {"assistant", ""}, {"tool", "21 C and clear"}};
  rendered_history[1].tool_calls = {{"abc123XYZ", "get_weather", "{\"city\": \"Paris\"}"}};
  rendered_history[2].tool_call_id = "abc123XYZ";
  const std::string text = server->engine().render_chat(rendered_history, true);
  EXPECT_NE(text.find("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"),
            std::string::npos) << text;
  EXPECT_NE(text.find("<tool_response>21 C and clear</tool_response>"), std::string::npos) << text;
}

}  // namespace
}  // namespace kvscope
