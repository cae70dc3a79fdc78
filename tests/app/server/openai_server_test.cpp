// The OpenAI-compatible server over loopback (label `unit`, a tiny random
// model; httplib's client): chat and completions, streamed and not, n > 1,
// stop strings, seed reproducibility, usage numbers, logprobs, the other
// endpoints (echo and prompt scoring: completions_echo_test.cpp), and errors
// in OpenAI's format with the right status (400 bad JSON / fields, 401 key,
// 403 origin, 404 model / route, 411 chunked, 413 body, 415 gzip); at tp = 2
// the snapshot's per-rank split.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "openai_server_fixture.h"
#include "support/tiny_model.h"
#include "test_server.h"

namespace kvscope {
namespace {

using nlohmann::json;
using test::exchange_raw;
using test::RawExchange;
using test::http_get;
using test::http_post;
using test::parse_sse;
using test::Reply;

using OpenAiServerTest = test::OpenAiServerFixture;
using test::kGreedy;

TEST_F(OpenAiServerTest, ChatCompletionNotStreamed) {
  json extra = kGreedy;
  extra["max_tokens"] = 6;
  const Reply r = post("/v1/chat/completions", chat("Hello", extra));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["object"], "chat.completion");
  EXPECT_EQ(r.json["model"], "tiny");
  EXPECT_EQ(r.json["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  ASSERT_EQ(r.json["choices"].size(), 1u);
  EXPECT_EQ(r.json["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r.json["choices"][0]["finish_reason"], "length");
  // The prompt is the chat template's rendering, tokenised by the engine.
  const std::string rendered = server_->engine().render_chat({{"user", "Hello"}}, true);
  const auto prompt_ids = server_->engine().tokenize(rendered, true);
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], prompt_ids.size());
  EXPECT_EQ(r.json["usage"]["completion_tokens"], 6);
  EXPECT_EQ(r.json["usage"]["total_tokens"], prompt_ids.size() + 6);
}

TEST_F(OpenAiServerTest, StreamedChatEqualsTheWholeReply) {
  json extra = kGreedy;
  extra["max_tokens"] = 12;
  const Reply whole = post("/v1/chat/completions", chat("Tell me", extra));
  ASSERT_EQ(whole.status, 200) << whole.body;
  extra["stream"] = true;
  extra["stream_options"] = {{"include_usage", true}};
  const Reply streamed = post("/v1/chat/completions", chat("Tell me", extra));
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.header("Content-Type"), "text/event-stream");
  const test::SseStream sse = parse_sse(streamed.body);
  EXPECT_TRUE(sse.done);
  EXPECT_TRUE(sse.malformed.empty());
  ASSERT_GE(sse.chunks.size(), 3u);
  EXPECT_EQ(sse.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(sse.chunks.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(sse.texts(), std::vector<std::string>{whole.json["choices"][0]["message"]["content"].get<std::string>()});
  EXPECT_EQ(sse.finish_reasons(), std::vector<std::string>{"length"});
  // The last chunk carries the usage and no choices; the others "usage": null.
  const json& last = sse.chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  for (const char* count : {"prompt_tokens", "completion_tokens", "total_tokens"}) {
    EXPECT_EQ(last["usage"][count], whole.json["usage"][count]) << count;
  }
  // The same prompt again: its full blocks came from the prefix cache.
  EXPECT_GT(last["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
  for (size_t i = 0; i + 1 < sse.chunks.size(); ++i) EXPECT_TRUE(sse.chunks[i]["usage"].is_null());
}

TEST_F(OpenAiServerTest, CompletionsWithNChoicesStreamedAndNot) {
  json extra = {{"max_tokens", 5}, {"n", 2}, {"seed", 11}, {"temperature", 1.0}, {"ignore_eos", true}};
  const Reply whole = post("/v1/completions", completion("Once upon", extra));
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json["object"], "text_completion");
  ASSERT_EQ(whole.json["choices"].size(), 2u);
  EXPECT_EQ(whole.json["choices"][1]["index"], 1);
  EXPECT_EQ(whole.json["usage"]["completion_tokens"], 10);  // 2 choices x 5
  const auto prompt_ids = server_->engine().tokenize("Once upon", true);
  EXPECT_EQ(whole.json["usage"]["prompt_tokens"], prompt_ids.size());  // the prompt counted once
  extra["stream"] = true;
  const test::SseStream sse = parse_sse(post("/v1/completions", completion("Once upon", extra)).body);
  EXPECT_TRUE(sse.done);
  EXPECT_EQ(sse.chunks.front()["object"], "text_completion");
  const std::vector<std::string> texts = sse.texts();
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0], whole.json["choices"][0]["text"]);  // same seed, same text
  EXPECT_EQ(texts[1], whole.json["choices"][1]["text"]);
  EXPECT_EQ(sse.finish_reasons(), (std::vector<std::string>{"length", "length"}));
}

TEST_F(OpenAiServerTest, SeedReproducesASampledReply) {
  const json extra = {{"max_tokens", 16}, {"temperature", 1.5}, {"top_p", 1.0}, {"ignore_eos", true}};
  auto text = [&](json seed) {
    json e = extra;
    e["seed"] = seed;
    const Reply r = post("/v1/completions", completion("The", e));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json["choices"][0]["text"].get<std::string>();
  };
  EXPECT_EQ(text(42), text(42));
  EXPECT_EQ(text(0), text(0));  // 0 is a seed like any other
  EXPECT_NE(text(42), text(43));
}

TEST_F(OpenAiServerTest, StopStringEndsTheReplyBeforeIt) {
  // A seeded reply with a printable character that first appears after its
  // start: with that character as a stop string, the reply is what came before.
  json extra = {{"max_tokens", 24}, {"temperature", 1.0}, {"top_p", 1.0}, {"ignore_eos", true}};
  std::string full, stop;
  for (int seed = 1; seed <= 50 && stop.empty(); ++seed) {
    extra["seed"] = seed;
    full = post("/v1/completions", completion("abc", extra)).json["choices"][0]["text"];
    for (size_t i = 1; i < full.size(); ++i) {
      if (full[i] > ' ' && full[i] < 127 && full.find(full[i]) == i) {
        stop = std::string(1, full[i]);
        break;
      }
    }
  }
  ASSERT_FALSE(stop.empty()) << "no seed gave a usable stop character";
  extra["stop"] = {stop, "never-there"};
  const Reply r = post("/v1/completions", completion("abc", extra));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["choices"][0]["text"], full.substr(0, full.find(stop)));
  EXPECT_EQ(r.json["choices"][0]["finish_reason"], "stop");
  extra["stream"] = true;
  const test::SseStream sse = parse_sse(post("/v1/completions", completion("abc", extra)).body);
  EXPECT_EQ(sse.texts(), std::vector<std::string>{full.substr(0, full.find(stop))});
  EXPECT_EQ(sse.finish_reasons(), std::vector<std::string>{"stop"});
}

TEST_F(OpenAiServerTest, TokenIdPromptsAndBatchesOfPrompts) {
  json extra = kGreedy;
  extra["max_tokens"] = 3;
  const Reply one = post("/v1/completions", completion(json::array({10, 11, 12, 13}), extra));
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json["usage"]["prompt_tokens"], 4);
  const Reply batch = post("/v1/completions", completion(json::array({json::array({10, 11, 12, 13}), "xy"}), extra));
  ASSERT_EQ(batch.status, 200) << batch.body;
  ASSERT_EQ(batch.json["choices"].size(), 2u);
  EXPECT_EQ(batch.json["choices"][0]["text"], one.json["choices"][0]["text"]);
  EXPECT_EQ(batch.json["usage"]["completion_tokens"], 6);
}

TEST_F(OpenAiServerTest, LogprobsAreNormalisedAndSorted) {
  json extra = kGreedy;
  extra["max_tokens"] = 5;
  extra["logprobs"] = true;
  extra["top_logprobs"] = 3;
  const Reply r = post("/v1/chat/completions", chat("Hi", extra));
  ASSERT_EQ(r.status, 200) << r.body;
  const json& content = r.json["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (const json& token : content) {
    const double lp = token["logprob"];
    EXPECT_LE(lp, 0.0);
    ASSERT_EQ(token["top_logprobs"].size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_DOUBLE_EQ(lp, token["top_logprobs"][0]["logprob"].get<double>());
    EXPECT_GE(token["top_logprobs"][0]["logprob"].get<double>(), token["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_GE(token["top_logprobs"][1]["logprob"].get<double>(), token["top_logprobs"][2]["logprob"].get<double>());
  }
  // The streamed entries are the same, one per token.
  extra["stream"] = true;
  const test::SseStream sse = parse_sse(post("/v1/chat/completions", chat("Hi", extra)).body);
  json streamed = json::array();
  for (const json& c : sse.chunks) {
    if (!c["choices"].empty() && c["choices"][0]["logprobs"].is_object()) {
      for (const json& t : c["choices"][0]["logprobs"]["content"]) streamed.push_back(t);
    }
  }
  EXPECT_EQ(streamed, content);
  // Completions: logprobs = number of alternatives.
  const Reply text = post("/v1/completions", completion("Hi", {{"max_tokens", 4}, {"logprobs", 2}, {"temperature", 0},
                                                               {"ignore_eos", true}}));
  const json& lps = text.json["choices"][0]["logprobs"];
  EXPECT_EQ(lps["tokens"].size(), 4u);
  EXPECT_EQ(lps["token_logprobs"].size(), 4u);
  EXPECT_EQ(lps["text_offset"][0], 0);
  EXPECT_LE(lps["top_logprobs"][0].size(), 3u);  // two alternatives and the token itself
}

TEST_F(OpenAiServerTest, ModelsHealthMetricsAndSnapshot) {
  const Reply models = http_get(server_->port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json["object"], "list");
  EXPECT_EQ(models.json["data"][0]["id"], "tiny");
  EXPECT_EQ(models.json["data"][0]["context_length"], 512);
  EXPECT_EQ(http_get(server_->port(), "/v1/models/tiny").json["id"], "tiny");
  EXPECT_EQ(http_get(server_->port(), "/v1/models/other").status, 404);
  EXPECT_EQ(http_get(server_->port(), "/models/tiny").json["id"], "tiny") << "as /models is, without /v1";
  EXPECT_EQ(http_get(server_->port(), "/health").json["status"], "ok");

  ASSERT_EQ(post("/v1/completions", completion("Hi", {{"max_tokens", 2}})).status, 200);
  const Reply metrics = http_get(server_->port(), "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.header("Content-Type").rfind("text/plain", 0), 0u);
  for (const char* name : {"kvscope_requests_running 0", "kvscope_requests_waiting 0", "kvscope_kv_blocks_total 128",
                           "kvscope_kv_blocks_used 0", "kvscope_prefix_cache_hit_rate",
                           "kvscope_http_requests_total{endpoint=\"completions\"} 1",
                           "kvscope_generated_tokens_total", "kvscope_generated_tokens_per_second"}) {
    EXPECT_NE(metrics.body.find(name), std::string::npos) << name << "\n" << metrics.body;
  }
  const Reply snapshot = http_get(server_->port(), "/v1/engine/snapshot");
  ASSERT_EQ(snapshot.status, 200);
  EXPECT_EQ(snapshot.json["blocks"].get<std::string>().size(), 128u);
  EXPECT_TRUE(snapshot.json["sequences"].empty());
  EXPECT_GE(snapshot.json["step"].get<int>(), 1);
}

// A reply that ends with end-of-sequence: the usage counts that token, and
// the generated-tokens metric counts the same tokens. A schema of one constant
// leaves end-of-sequence as the only token after it.
TEST_F(OpenAiServerTest, GeneratedTokensMetricCountsWhatTheUsageCounts) {
  auto generated_total = [this] {
    const std::string body = http_get(server_->port(), "/metrics").body;
    const std::string name = "\nkvscope_generated_tokens_total ";
    const size_t at = body.find(name);
    EXPECT_NE(at, std::string::npos) << body;
    return at == std::string::npos ? -1L : std::stol(body.substr(at + name.size()));
  };
  const long before = generated_total();
  const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "one"}, {"schema", {{"const", 1}}}}}};
  // Up to 16 bytes of whitespace may come first (docs/json-schema.md).
  const Reply r = post("/v1/chat/completions", chat("Hi", {{"n", 3}, {"max_tokens", 24}, {"response_format", format}}));
  ASSERT_EQ(r.status, 200) << r.body;
  long visible_tokens = 0;
  for (const json& c : r.json["choices"]) {
    EXPECT_EQ(c["finish_reason"], "stop") << r.body;
    const std::string content = c["message"]["content"];
    EXPECT_EQ(content.back(), '1') << r.body;
    visible_tokens += static_cast<long>(content.size());  // the tiny model's tokens are bytes
  }
  const long completion_tokens = r.json["usage"]["completion_tokens"].get<long>();
  EXPECT_EQ(completion_tokens, visible_tokens + 3) << r.body;  // and an end-of-sequence token each
  EXPECT_EQ(generated_total() - before, completion_tokens);
}

TEST_F(OpenAiServerTest, ErrorsHaveOpenAisShapeAndStatus) {
  auto expect_error = [](const Reply& r, int status, const std::string& param, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    ASSERT_TRUE(r.json.is_object()) << r.body;
    ASSERT_TRUE(r.json.contains("error")) << r.body;
    const json& e = r.json["error"];
    EXPECT_TRUE(e["message"].is_string());
    EXPECT_TRUE(e["type"].is_string());
    EXPECT_EQ(e["param"], param.empty() ? json(nullptr) : json(param)) << r.body;
    EXPECT_EQ(e["code"], code.empty() ? json(nullptr) : json(code)) << r.body;
    EXPECT_EQ(r.header("Content-Type"), "application/json");
  };
  const int port = server_->port();
  expect_error(http_post(port, "/v1/chat/completions", std::string("{not json")), 400, "", "invalid_json");
  expect_error(http_post(port, "/v1/chat/completions", std::string("{\"model\": \"tiny\", \"messages\": \"\xff\"}")),
               400, "", "invalid_json");
  expect_error(post("/v1/chat/completions", json{{"model", "tiny"}}), 400, "messages", "");
  expect_error(post("/v1/chat/completions", chat("x", {{"max_tokens", "many"}})), 400, "max_tokens", "");
  expect_error(post("/v1/completions", completion("x", {{"model", "gpt-4o"}})), 404, "model", "model_not_found");
  expect_error(http_get(port, "/v1/nothing"), 404, "", "unknown_url");
  // An endpoint asked with the wrong method: 405 and the method it takes.
  const Reply get_chat = http_get(port, "/v1/chat/completions");
  expect_error(get_chat, 405, "", "method_not_allowed");
  EXPECT_EQ(get_chat.header("Allow"), "POST");
  const Reply post_models = http_post(port, "/v1/models", std::string("{}"));
  expect_error(post_models, 405, "", "method_not_allowed");
  EXPECT_EQ(post_models.header("Allow"), "GET, HEAD");
  // The tiny model's template offers no tools: the refusal names them.
  const json tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  expect_error(post("/v1/chat/completions", chat("x", {{"tools", tools}})), 400, "tools", "");
  // A prompt longer than the context (512 tokens) is the client's error.
  expect_error(post("/v1/completions", completion(json(std::vector<int>(600, 10)))), 400, "prompt",
               "context_length_exceeded");
}

TEST(OpenAiServerLimits, ApiKeyBodyLimitAndOrigins) {
  const std::string path = test::tiny_model_temp_path("openai_server_limits");
  ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path).ok());
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 1;
  c.num_blocks = 64;
  server::ServerOptions options;
  options.model_id = "tiny";
  options.api_key = "sekrit";
  options.max_body_bytes = 2048;
  options.allowed_origins = {"http://app.test"};
  auto s = test::TestServer::start(c, options);
  server::ServerOptions roomy_options = options;
  roomy_options.max_body_bytes = 64 << 10;
  auto roomy = test::TestServer::start(c, roomy_options);
  std::filesystem::remove(path);
  ASSERT_TRUE(s);
  ASSERT_TRUE(roomy);
  const int port = s->port();
  const json body = {{"model", "tiny"}, {"prompt", "Hi"}, {"max_tokens", 2}};
  const httplib::Headers key = {{"Authorization", "Bearer sekrit"}};

  EXPECT_EQ(http_post(port, "/v1/completions", body, key).status, 200);
  const Reply no_key = http_post(port, "/v1/completions", body);
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(no_key.json["error"]["code"], "invalid_api_key");
  EXPECT_EQ(no_key.header("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(http_post(port, "/v1/completions", body, {{"Authorization", "Bearer sekriT"}}).status, 401);
  // The scheme in any case (RFC 9110); the key exactly.
  EXPECT_EQ(http_post(port, "/v1/completions", body, {{"Authorization", "bearer sekrit"}}).status, 200);
  EXPECT_EQ(http_post(port, "/v1/completions", body, {{"Authorization", "BEARER sekrit"}}).status, 200);
  EXPECT_EQ(http_post(port, "/v1/completions", body, {{"Authorization", "Basic sekrit"}}).status, 401);
  EXPECT_EQ(http_post(port, "/v1/completions", body, {{"Authorization", "sekrit"}}).status, 401);
  EXPECT_EQ(http_post(port, "/v1/completions", body, {{"Authorization", "Bearer sekrit2"}}).status, 401);
  EXPECT_EQ(http_get(port, "/v1/models").status, 401);
  EXPECT_EQ(http_get(port, "/metrics").status, 401);
  EXPECT_EQ(http_get(port, "/health").status, 200);  // for liveness probes

  const json big = {{"model", "tiny"}, {"prompt", std::string(4096, 'a')}};
  const Reply too_big = http_post(port, "/v1/completions", big, key);
  EXPECT_EQ(too_big.status, 413);
  EXPECT_EQ(too_big.json["error"]["code"], "request_too_large");
  // curl -d without a Content-Type header sends a form: the HTTP library caps
  // those at 8 KiB whatever --max-body-size says, and the error says so.
  const json form_sized = {{"model", "tiny"}, {"prompt", std::string(10000, 'a')}, {"max_tokens", 1}};
  const Reply as_form =
      http_post(roomy->port(), "/v1/completions", form_sized.dump(), key, "application/x-www-form-urlencoded");
  EXPECT_EQ(as_form.status, 413);
  EXPECT_EQ(as_form.json["error"]["code"], "request_too_large");
  const std::string message = as_form.json["error"]["message"];
  EXPECT_NE(message.find("application/json"), std::string::npos) << message;
  EXPECT_EQ(message.find("--max-body-size"), std::string::npos) << message;
  // A body whose size is known only once read is refused before it is: sent
  // in chunks, or compressed (a small gzip can expand to gigabytes).
  // Only the head of a chunked request is sent: the answer must come before
  // any of its body is read, and the connection then closes (what follows
  // on it is body, not a request).
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sekrit\r\n"
                           "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  const RawExchange chunked = exchange_raw(port, head);
  EXPECT_EQ(chunked.reply.rfind("HTTP/1.1 411", 0), 0u) << chunked.reply;
  EXPECT_NE(chunked.reply.find("\"length_required\""), std::string::npos) << chunked.reply;
  EXPECT_TRUE(chunked.closed);
  // A compressed body that arrives after the refusal is not run as a request.
  const std::string inner = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sekrit\r\n\r\n";
  const RawExchange smuggled = exchange_raw(
      port,
      fmt::format("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sekrit\r\n"
                  "Content-Type: application/json\r\nContent-Encoding: GZIP\r\nContent-Length: {}\r\n\r\n",
                  inner.size()),
      inner);
  EXPECT_EQ(smuggled.reply.rfind("HTTP/1.1 415", 0), 0u) << smuggled.reply;
  EXPECT_EQ(smuggled.reply.find("HTTP/1.1 200"), std::string::npos) << smuggled.reply;
  EXPECT_TRUE(smuggled.closed);
  // curl waits for "100 Continue" before a chunked body: it hears 411 instead.
  const RawExchange expecting = exchange_raw(port, head.substr(0, head.size() - 2) + "Expect: 100-continue\r\n\r\n");
  EXPECT_EQ(expecting.reply.rfind("HTTP/1.1 411", 0), 0u) << expecting.reply;
  // A POST with neither a length nor chunks (curl -X POST without -d) is
  // answered at once, not after httplib's 5 s wait for a body.
  const auto started = std::chrono::steady_clock::now();
  const RawExchange no_length = exchange_raw(
      port, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sekrit\r\n\r\n");
  EXPECT_EQ(no_length.reply.rfind("HTTP/1.1 411", 0), 0u) << no_length.reply;
  EXPECT_NE(no_length.reply.find("no Content-Length"), std::string::npos) << no_length.reply;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
  // A GET is not asked about a body: a client's default header does not refuse it.
  const RawExchange get = exchange_raw(
      port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(get.reply.rfind("HTTP/1.1 200", 0), 0u) << get.reply;
  httplib::Headers gzipped = key;
  gzipped.emplace("Content-Encoding", "gzip");
  const Reply compressed = http_post(port, "/v1/completions", body, gzipped);
  EXPECT_EQ(compressed.status, 415);
  EXPECT_EQ(compressed.json["error"]["code"], "unsupported_content_encoding");

  httplib::Headers from_app = key;
  from_app.emplace("Origin", "http://app.test");
  const Reply allowed = http_post(port, "/v1/completions", body, from_app);
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.header("Access-Control-Allow-Origin"), "http://app.test");
  httplib::Headers from_elsewhere = key;
  from_elsewhere.emplace("Origin", "http://evil.test");
  const Reply refused = http_post(port, "/v1/completions", body, from_elsewhere);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.header("Access-Control-Allow-Origin"), "");
  // The browser's preflight needs no key.
  httplib::Client client("127.0.0.1", port);
  httplib::Headers preflight = {{"Origin", "http://app.test"}, {"Access-Control-Request-Method", "POST"}};
  auto options_reply = client.Options("/v1/completions", preflight);
  ASSERT_TRUE(options_reply);
  EXPECT_EQ(options_reply->status, 204);
  EXPECT_NE(options_reply->get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
  // The headers a page asks for are allowed (OpenAI's JS SDK adds its own).
  preflight.emplace("Access-Control-Request-Headers", "authorization, content-type, x-stainless-os");
  options_reply = client.Options("/v1/completions", preflight);
  ASSERT_TRUE(options_reply);
  EXPECT_EQ(options_reply->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type, x-stainless-os");
}

TEST(OpenAiServerLimits, NoCorsHeadersAndBrowserPagesRefusedWithoutAllowedOrigins) {
  const std::string path = test::tiny_model_temp_path("openai_server_cors");
  ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path).ok());
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 1;
  c.num_blocks = 64;
  auto s = test::TestServer::start(c);
  std::filesystem::remove(path);
  ASSERT_TRUE(s);
  // The model id defaults to the file's name without .gguf.
  EXPECT_EQ(s->model_id(), std::filesystem::path(path).stem().string());
  const Reply plain = http_get(s->port(), "/v1/models");
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(http_get(s->port(), "/v1/models", {{"Origin", "http://localhost:3000"}}).status, 403);
}

// A request without max_tokens may run to the end of the context. With a
// pool smaller than the model's context (512 tokens here; Gemma 3's 32k at
// the default budget), that context is the pool's: the request is served,
// not refused for wanting more blocks than exist, and /v1/models says so.
TEST(OpenAiServerSmallPool, ARequestWithoutMaxTokensFitsThePool) {
  const std::string path = test::tiny_model_temp_path("openai_server_small_pool");
  ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path).ok());
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 2;
  c.block_size = 16;
  c.num_blocks = 6;  // 96 tokens
  server::ServerOptions options;
  options.model_id = "tiny";
  auto server = test::TestServer::start(c, options);
  std::filesystem::remove(path);
  ASSERT_TRUE(server);
  const Reply models = http_get(server->port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json["data"][0]["context_length"], 96) << models.body;
  const json body = {{"model", "tiny"}, {"prompt", "Hi"}, {"temperature", 0}, {"ignore_eos", true}};
  const Reply reply = http_post(server->port(), "/v1/completions", body);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.json["choices"][0]["finish_reason"], "length") << reply.body;
  EXPECT_EQ(reply.json["usage"]["prompt_tokens"].get<int>() + reply.json["usage"]["completion_tokens"].get<int>(), 96)
      << reply.body;
}

// tp = 2 on a tiny model of 6 query heads over 3 KV heads: the snapshot's
// tensor_parallel has both ranks, their heads as the split deals them (rank
// 0: KV group 0, query heads 0-1; rank 1: groups 1-2, query heads 2-5) and
// the engine's per-rank bytes; the ranks' KV bytes add up to the pool, and a
// step's rank_forward_s has one time per rank.
TEST(OpenAiServerTensorParallel, SnapshotHasEachRank) {
  const std::string path = test::tiny_model_temp_path("openai_server_tp");
  ASSERT_TRUE(test::write_tiny_gguf(test::tensor_parallel_tiny_spec(TensorType::Q8_0), path).ok());
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 2;
  c.num_blocks = 32;
  c.tp = 2;
  server::ServerOptions options;
  options.model_id = "tiny";
  auto server = test::TestServer::start(c, options);
  std::filesystem::remove(path);
  ASSERT_TRUE(server);

  const json completion = {{"model", "tiny"}, {"prompt", "Hi"}, {"max_tokens", 2}, {"temperature", 0}};
  ASSERT_EQ(http_post(server->port(), "/v1/completions", completion).status, 200);
  const Reply snapshot = http_get(server->port(), "/v1/engine/snapshot");
  ASSERT_EQ(snapshot.status, 200);
  ASSERT_TRUE(snapshot.json.contains("tensor_parallel")) << snapshot.body;
  const json& tp = snapshot.json["tensor_parallel"];
  EXPECT_EQ(tp["tp"], 2);
  EXPECT_EQ(tp["tp_reduce"], "fast");
  EXPECT_EQ(tp["num_kv_heads"], 3);
  EXPECT_EQ(tp["num_kv_head_slots"], 3);
  EXPECT_EQ(tp["kv_heads_replicated"], false);
  ASSERT_EQ(tp["ranks"].size(), 2u) << tp.dump();
  const int want_heads[2][4] = {{0, 2, 0, 1}, {2, 4, 1, 2}};  // q begin, q count, KV begin, KV count
  const TensorParallelMemory engine_tp = server->engine().snapshot()->tensor_parallel;
  ASSERT_EQ(engine_tp.ranks.size(), 2u);
  int64_t kv_bytes = 0;
  for (size_t r = 0; r < 2; ++r) {
    SCOPED_TRACE(::testing::Message() << "rank " << r);
    const json& rank = tp["ranks"][r];
    EXPECT_EQ(rank["rank"], r);
    EXPECT_EQ(rank["q_head_begin"], want_heads[r][0]);
    EXPECT_EQ(rank["num_q_heads"], want_heads[r][1]);
    EXPECT_EQ(rank["kv_head_begin"], want_heads[r][2]);
    EXPECT_EQ(rank["num_kv_heads"], want_heads[r][3]);
    EXPECT_EQ(rank["weight_bytes"], engine_tp.ranks[r].weight_bytes);
    EXPECT_EQ(rank["kv_bytes"], engine_tp.ranks[r].kv_bytes);
    EXPECT_EQ(rank["workspace_bytes"], engine_tp.ranks[r].workspace_bytes);
    EXPECT_GT(rank["weight_bytes"].get<int64_t>(), 0);
    EXPECT_GT(rank["workspace_bytes"].get<int64_t>(), 0);
    kv_bytes += rank["kv_bytes"].get<int64_t>();
  }
  // Rank 1 holds twice rank 0's KV heads, so twice its share of the pool.
  EXPECT_EQ(tp["ranks"][1]["kv_bytes"].get<int64_t>(), 2 * tp["ranks"][0]["kv_bytes"].get<int64_t>());
  EXPECT_EQ(kv_bytes, static_cast<int64_t>(server->engine().model_info().kv_pool_bytes));
  const json& times = snapshot.json["last_step"]["rank_forward_s"];
  ASSERT_EQ(times.size(), 2u) << snapshot.json["last_step"].dump();
  for (const json& t : times) EXPECT_GT(t.get<double>(), 0.0);
}

}  // namespace
}  // namespace kvscope
