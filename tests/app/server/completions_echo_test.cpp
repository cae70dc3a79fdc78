// /v1/completions with echo over loopback (label `unit`, a tiny random
// model): the prompt before the completion, and with logprobs the prompt's
// tokens scored as evaluation harnesses ask (token ids, echo, logprobs,
// max_tokens 1 or 0), streamed and not, placed in the echoed text, with a
// BOS the engine added as the first, unplaced entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "openai_server_fixture.h"
#include "support/tiny_model.h"
#include "test_server.h"

namespace kvscope {
namespace {

using nlohmann::json;
using test::http_post;
using test::kGreedy;
using test::parse_sse;
using test::Reply;
using OpenAiServerTest = test::OpenAiServerFixture;

// The largest log-probability of a completions top_logprobs entry.
double best_logprob(const json& top) {
  double best = -1e300;
  for (const auto& [token, value] : top.items()) best = std::max(best, value.get<double>());
  return best;
}

TEST_F(OpenAiServerTest, EchoPutsThePromptFirst) {
  json extra = kGreedy;
  extra["max_tokens"] = 3;
  const std::string plain = post("/v1/completions", completion("Hi", extra)).json["choices"][0]["text"];
  extra["echo"] = true;
  EXPECT_EQ(post("/v1/completions", completion("Hi", extra)).json["choices"][0]["text"], "Hi" + plain);
}

// Echo with logprobs scores the prompt's tokens too (how evaluation
// harnesses ask for log-likelihoods: lm-evaluation-harness sends token ids,
// echo, logprobs 1 and max_tokens 1, and sums token_logprobs over the
// continuation). The first token has no score; the others are the model's
// log-probabilities given what precedes them.
TEST_F(OpenAiServerTest, EchoWithLogprobsScoresThePromptTokens) {
  const json ids = json::array({10, 11, 12, 13, 14, 15, 16, 17, 18});
  json extra = {{"max_tokens", 1}, {"temperature", 0}, {"logprobs", 1}, {"echo", true}, {"ignore_eos", true}};
  const Reply r = post("/v1/completions", completion(ids, extra));
  ASSERT_EQ(r.status, 200) << r.body;
  const json& choice = r.json["choices"][0];
  const json& lps = choice["logprobs"];
  ASSERT_EQ(lps["tokens"].size(), 10u);  // 9 prompt tokens and the generated one
  ASSERT_EQ(lps["token_logprobs"].size(), 10u);
  EXPECT_TRUE(lps["token_logprobs"][0].is_null());
  EXPECT_TRUE(lps["top_logprobs"][0].is_null());
  std::string prompt_text;
  for (size_t k = 0; k < 9; ++k) prompt_text += lps["tokens"][k].get<std::string>();
  EXPECT_EQ(choice["text"].get<std::string>().rfind(prompt_text, 0), 0u) << "the echo is the ids' text";
  for (size_t k = 1; k < 10; ++k) {
    const double lp = lps["token_logprobs"][k];
    EXPECT_LE(lp, 0.0) << k;
    // The best alternative, and the token itself (as OpenAI writes them):
    // one entry when the token is the best, two otherwise.
    const json& top = lps["top_logprobs"][k];
    ASSERT_TRUE(top.size() == 1u || top.size() == 2u) << k << ": " << top;
    ASSERT_TRUE(top.contains(lps["tokens"][k].get<std::string>())) << k << ": " << top;
    EXPECT_EQ(top[lps["tokens"][k].get<std::string>()].get<double>(), lp) << k;
    EXPECT_GE(best_logprob(top), lp) << k;
    EXPECT_EQ(lps["text_offset"][k], lps["text_offset"][k - 1].get<int>() + lps["tokens"][k - 1].get<std::string>().size());
  }
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], 9);
  EXPECT_EQ(r.json["usage"]["completion_tokens"], 1);

  // Position 5's score is what a request for the first 5 ids gives the token
  // it samples there, when that token is the prompt's.
  for (size_t k = 1; k < 9; ++k) {
    json cut = json::array();
    for (size_t j = 0; j < k; ++j) cut.push_back(ids[j]);
    const Reply alone = post("/v1/completions", completion(cut, {{"max_tokens", 1}, {"temperature", 0}, {"logprobs", 1},
                                                                  {"ignore_eos", true}}));
    ASSERT_EQ(alone.status, 200) << alone.body;
    // Its one alternative is the most likely token (besides the token it
    // drew, which the repetition penalty can make another): the best entry
    // of both rows.
    const json& drawn = alone.json["choices"][0]["logprobs"]["top_logprobs"][0];
    EXPECT_EQ(best_logprob(drawn), best_logprob(lps["top_logprobs"][k])) << "position " << k;
  }

  // max_tokens 0: the prompt alone, scored, nothing generated.
  extra["max_tokens"] = 0;
  const Reply scored_only = post("/v1/completions", completion(ids, extra));
  ASSERT_EQ(scored_only.status, 200) << scored_only.body;
  EXPECT_EQ(scored_only.json["choices"][0]["text"], prompt_text);
  EXPECT_EQ(scored_only.json["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(scored_only.json["usage"]["completion_tokens"], 0);
  json prompt_part = lps;
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) prompt_part[key].erase(9);
  EXPECT_EQ(scored_only.json["choices"][0]["logprobs"], prompt_part);

  // Streamed: the prompt's entries come with the echoed text, then the rest.
  extra["max_tokens"] = 1;
  extra["stream"] = true;
  const test::SseStream sse = parse_sse(post("/v1/completions", completion(ids, extra)).body);
  json streamed = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
                   {"text_offset", json::array()}};
  for (const json& c : sse.chunks) {
    if (c["choices"].empty() || !c["choices"][0]["logprobs"].is_object()) continue;
    for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
      for (const json& v : c["choices"][0]["logprobs"][key]) streamed[key].push_back(v);
    }
  }
  EXPECT_EQ(streamed, lps);
  EXPECT_EQ(sse.texts(), std::vector<std::string>{choice["text"].get<std::string>()});
}

// A text prompt's echo is the text as sent; its entries lie in it.
TEST_F(OpenAiServerTest, EchoedTextPromptEntriesLieInTheText) {
  const std::string text = "Hello there, friend";
  const Reply r = post("/v1/completions", completion(text, {{"max_tokens", 0}, {"logprobs", 0}, {"echo", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["choices"][0]["text"], text);
  const json& lps = r.json["choices"][0]["logprobs"];
  ASSERT_EQ(lps["tokens"].size(), r.json["usage"]["prompt_tokens"].get<size_t>());
  for (size_t k = 0; k < lps["tokens"].size(); ++k) {
    const std::string token = lps["tokens"][k];
    const size_t at = lps["text_offset"][k];
    EXPECT_EQ(text.compare(at, token.size(), token), 0) << "token " << k << " '" << token << "' at " << at;
    if (k > 0) {
      // logprobs 0: no alternatives, only the token itself.
      EXPECT_EQ(lps["top_logprobs"][k], json({{token, lps["token_logprobs"][k]}})) << k;
    }
  }
}

// Characters (code points) that begin in `text`, which is valid UTF-8.
size_t num_chars(const std::string& text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// text_offset counts characters, as OpenAI's and vLLM's do (a client slices
// its string by it), not UTF-8 bytes: in "é你好 world" the space-led token
// starts at character 3, byte 8.
TEST_F(OpenAiServerTest, TextOffsetCountsCharactersNotBytes) {
  const std::string text = "\u00e9\u4f60\u597d world";
  const Reply r = post("/v1/completions", completion(text, {{"max_tokens", 0}, {"logprobs", 0}, {"echo", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string all = r.json["choices"][0]["text"];
  ASSERT_EQ(all, text);
  // Byte index where each character starts, and one past the end.
  std::vector<size_t> starts;
  for (size_t b = 0; b < all.size(); ++b) {
    if ((static_cast<unsigned char>(all[b]) & 0xC0) != 0x80) starts.push_back(b);
  }
  starts.push_back(all.size());
  const json& lps = r.json["choices"][0]["logprobs"];
  bool saw_space = false;
  for (size_t k = 0; k < lps["tokens"].size(); ++k) {
    const std::string token = lps["tokens"][k];
    const size_t at = lps["text_offset"][k];
    ASSERT_LT(at, starts.size()) << k;
    if (token.rfind("bytes:", 0) == 0) continue;  // part of a character
    EXPECT_EQ(all.compare(starts[at], token.size(), token), 0) << "token " << k << " '" << token << "' at " << at;
    if (!saw_space && token.rfind(' ', 0) == 0) {  // the echo's first space-led token: " world" or " w"
      EXPECT_EQ(at, 3u) << token;
      saw_space = true;
    }
  }
  EXPECT_TRUE(saw_space) << r.body;
}

// A generated token's text_offset is where its text starts in the text as
// the client reads it: after the echo, and past what the tokens before it
// showed. Sampled from the random model, a reply has tokens that are part
// of a character, hidden control tokens and stray bytes (U+FFFD), whose
// bytes do not read as the text does; each such case once broke the test's
// first form, which followed tokens' bytes. Streamed, each chunk's entry
// starts where the chunks before it end; whole, the entries are the same.
TEST_F(OpenAiServerTest, GeneratedTokensStartWhereTheTextBeforeThemEnds) {
  const std::string prompt = "\u00e9\u4f60 ok";
  for (const int seed : {1, 2, 3, 4}) {
    json extra = {{"max_tokens", 24}, {"logprobs", 0}, {"echo", true}, {"seed", seed}, {"ignore_eos", true},
                  {"temperature", 1.5}};
    const Reply whole = post("/v1/completions", completion(prompt, extra));
    ASSERT_EQ(whole.status, 200) << whole.body;
    const json& lps = whole.json["choices"][0]["logprobs"];
    const size_t num_prompt = whole.json["usage"]["prompt_tokens"];
    ASSERT_EQ(lps["text_offset"].size(), num_prompt + 24) << seed;

    extra["stream"] = true;
    const test::SseStream sse = parse_sse(post("/v1/completions", completion(prompt, extra)).body);
    std::string text;
    json offsets = json::array();
    for (const json& c : sse.chunks) {
      if (c["choices"].empty()) continue;
      const json& lp = c["choices"][0]["logprobs"];
      if (lp.is_object() && lp["tokens"].size() == 1) {  // a generated token, with the text it completed
        EXPECT_EQ(lp["text_offset"][0], num_chars(text)) << "seed " << seed << ", after \"" << text << "\"";
        offsets.push_back(lp["text_offset"][0]);
      }
      text += c["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, whole.json["choices"][0]["text"]) << seed;
    EXPECT_EQ(offsets, json(std::vector<json>(lps["text_offset"].begin() + static_cast<std::ptrdiff_t>(num_prompt),
                                               lps["text_offset"].end())))
        << seed;
  }
}

// A vocabulary that asks for BOS: the engine puts it before the text, so it
// is the first entry (unscored) but takes no room in the echoed text.
TEST(OpenAiServerBos, TheAddedBosIsTheFirstEntryAndNotInTheText) {
  const std::string path = test::tiny_model_temp_path("openai_server_bos");
  test::TinyModelSpec spec;
  spec.add_bos = true;
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 2;
  server::ServerOptions options;
  options.model_id = "tiny";
  auto server = test::TestServer::start(c, options);
  ASSERT_TRUE(server);
  const std::string text = "Hello there";
  const Reply r = http_post(server->port(), "/v1/completions",
                            {{"model", "tiny"}, {"prompt", text}, {"max_tokens", 0}, {"logprobs", 0}, {"echo", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["choices"][0]["text"], text);
  const json& lps = r.json["choices"][0]["logprobs"];
  ASSERT_GE(lps["tokens"].size(), 3u);
  EXPECT_EQ(lps["tokens"][0], "<|endoftext|>");
  EXPECT_TRUE(lps["token_logprobs"][0].is_null());
  std::string rest;
  for (size_t k = 1; k < lps["tokens"].size(); ++k) {
    EXPECT_EQ(lps["text_offset"][k], rest.size()) << k;
    rest += lps["tokens"][k].get<std::string>();
    EXPECT_TRUE(lps["token_logprobs"][k].is_number()) << k;
  }
  EXPECT_EQ(rest, text);
  EXPECT_EQ(lps["text_offset"][0], 0);
  server.reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvscope
