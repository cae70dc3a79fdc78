// Grammar-constrained generation through the engine on a random tiny model
// (label `unit`): whatever the random weights prefer, greedy and sampled
// replies parse as JSON, validate against the schema and end with
// end-of-sequence; greedy output is the same alone and in a mixed batch
// (the mask is per sequence); constrained requests never speculate;
// logprobs see the constrained distribution (forbidden tokens at -inf).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvscope/engine.h"
#include "kvscope/json_constraint.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

using Json = nlohmann::json;

// Every value here has a bounded length (booleans, enums, integers of at
// most 32 digits, at most 3 items, bounded whitespace), so even a random
// model has to close the object.
constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "ok": {"type": "boolean"},
    "count": {"type": "integer"},
    "color": {"enum": ["red", "green", "blue"]},
    "sizes": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
    "maybe": {"anyOf": [{"type": "null"}, {"const": 7}]},
    "inner": {"type": "object", "properties": {"flag": {"type": "boolean"}}, "required": ["flag"],
              "additionalProperties": false}
  },
  "required": ["ok", "count", "color", "inner"],
  "additionalProperties": false
})";

// The schema's rules, checked by hand on the parsed reply.
::testing::AssertionResult validates(const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ::testing::AssertionFailure() << "not JSON: " << text;
  if (!j.is_object()) return ::testing::AssertionFailure() << "not an object: " << text;
  for (const char* key : {"ok", "count", "color", "inner"}) {
    if (!j.contains(key)) return ::testing::AssertionFailure() << "missing " << key << ": " << text;
  }
  for (const auto& [key, value] : j.items()) {
    bool good = false;
    if (key == "ok") good = value.is_boolean();
    if (key == "count") good = value.is_number_integer();
    if (key == "color") good = value == "red" || value == "green" || value == "blue";
    if (key == "sizes") {
      good = value.is_array() && value.size() <= 3;
      for (const Json& v : value) good = good && v.is_number_integer();
    }
    if (key == "maybe") good = value.is_null() || value == 7;
    if (key == "inner") good = value.is_object() && value.size() == 1 && value.contains("flag") && value["flag"].is_boolean();
    if (!good) return ::testing::AssertionFailure() << "bad " << key << ": " << text;
  }
  return ::testing::AssertionSuccess();
}

class ConstrainedGeneration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("constrained_generation");
    test::TinyModelSpec spec;
    spec.seed = 5;
    spec.context_length = 4096;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static EngineConfig config() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.block_size = 16;
    c.num_blocks = 2048;
    return c;
  }

  struct Reply {
    std::string text;
    std::vector<int32_t> tokens;
    FinishReason finish = FinishReason::None;
    RequestStats stats;
  };

  static GenerationRequest request(std::shared_ptr<const Grammar> grammar, float temperature, uint64_t seed,
                                   std::map<RequestId, Reply>* replies) {
    GenerationRequest r;
    r.prompt = "Reply with JSON:";
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    r.sampling.max_tokens = 2000;
    r.sampling.constraint = std::move(grammar);
    r.on_event = [replies](const TokenEvent& ev) {
      Reply& out = (*replies)[ev.id];
      out.text += ev.text;
      if (ev.token >= 0) out.tokens.push_back(ev.token);
      if (ev.finish != FinishReason::None) {
        out.finish = ev.finish;
        out.stats = ev.stats;
      }
    };
    return r;
  }

  static std::shared_ptr<const Grammar> schema() {
    auto g = compile_json_schema(kSchema);
    EXPECT_TRUE(g.ok()) << g.error();
    return *g;
  }

  static std::string path_;
};

std::string ConstrainedGeneration::path_;

TEST_F(ConstrainedGeneration, GreedyAndSampledRepliesValidate) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  std::map<RequestId, Reply> replies;
  const auto grammar = schema();
  ASSERT_TRUE((*engine)->submit(request(grammar, 0.0f, 1, &replies)).ok());
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    ASSERT_TRUE((*engine)->submit(request(grammar, 1.0f, seed, &replies)).ok());
  }
  (*engine)->run_until_idle();
  ASSERT_EQ(replies.size(), 7u);
  for (const auto& [id, reply] : replies) {
    EXPECT_EQ(reply.finish, FinishReason::Stop) << "request " << id << ": " << reply.text;
    EXPECT_TRUE(validates(reply.text)) << "request " << id;
  }
}

TEST_F(ConstrainedGeneration, JsonObjectModeGivesAnObject) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  std::map<RequestId, Reply> replies;
  GenerationRequest r = request(json_object_grammar(), 0.0f, 1, &replies);
  r.sampling.max_tokens = 64;
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  (*engine)->run_until_idle();
  ASSERT_EQ(replies.size(), 1u);
  const Reply& reply = replies.begin()->second;
  // A random model may not close the object in 64 tokens; what it wrote is
  // still the start of an object.
  ASSERT_FALSE(reply.text.empty());
  EXPECT_EQ(reply.text.find_first_not_of(" \n\r\t"), reply.text.find('{'));
  if (reply.finish == FinishReason::Stop) {
    EXPECT_TRUE(Json::parse(reply.text, nullptr, false).is_object());
  }
}

TEST_F(ConstrainedGeneration, GreedyOutputDoesNotDependOnTheBatch) {
  const auto grammar = schema();
  std::vector<int32_t> alone;
  {
    auto engine = Engine::create(config());
    ASSERT_TRUE(engine.ok());
    std::map<RequestId, Reply> replies;
    ASSERT_TRUE((*engine)->submit(request(grammar, 0.0f, 1, &replies)).ok());
    (*engine)->run_until_idle();
    alone = replies.begin()->second.tokens;
  }
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  std::map<RequestId, Reply> replies;
  // Unconstrained and differently constrained neighbours, before and after.
  GenerationRequest plain = request(nullptr, 0.7f, 3, &replies);
  plain.sampling.max_tokens = 40;
  ASSERT_TRUE((*engine)->submit(std::move(plain)).ok());
  ASSERT_TRUE((*engine)->submit(request(json_object_grammar(), 1.0f, 4, &replies)).ok());
  auto id = (*engine)->submit(request(grammar, 0.0f, 1, &replies));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*engine)->submit(request(grammar, 1.0f, 9, &replies)).ok());
  (*engine)->run_until_idle();
  EXPECT_EQ(replies.at(*id).tokens, alone);
}

TEST_F(ConstrainedGeneration, ConstrainedRequestsDoNotSpeculate) {
  EngineConfig c = config();
  c.spec = SpecMethod::Ngram;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  std::map<RequestId, Reply> replies;
  auto id = (*engine)->submit(request(schema(), 0.0f, 1, &replies));
  ASSERT_TRUE(id.ok());
  (*engine)->run_until_idle();
  const Reply& reply = replies.at(*id);
  EXPECT_EQ(reply.stats.num_drafts, 0);
  EXPECT_TRUE(validates(reply.text));
}

TEST_F(ConstrainedGeneration, LogitsSeenByCallbacksAreMasked) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  std::map<RequestId, Reply> replies;
  GenerationRequest r = request(schema(), 0.0f, 1, &replies);
  int32_t num_rows = 0, num_first_allowed = -1;
  r.on_logits = [&](int32_t, int32_t, const float* logits, int32_t vocab) {
    int32_t allowed = 0;
    for (int32_t i = 0; i < vocab; ++i) allowed += std::isfinite(logits[i]) ? 1 : 0;
    if (num_rows++ == 0) num_first_allowed = allowed;
  };
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  (*engine)->run_until_idle();
  EXPECT_GT(num_rows, 0);
  // First token: whitespace or "{" only (byte tokens; the tiny vocabulary's
  // merges do not start with those), a handful out of 300.
  EXPECT_GT(num_first_allowed, 0);
  EXPECT_LT(num_first_allowed, 10);
}

}  // namespace
}  // namespace kvscope
