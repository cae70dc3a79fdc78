// TokenTrie / TokenConstraint (label `unit`): on a tiny hand-made vocabulary
// the trie's mask equals checking every token's bytes one by one, at every
// state along several texts; end-of-generation is allowed exactly when the
// value is complete (and alone after a closed value); masked logits are -inf
// exactly where the mask says no; cached masks equal fresh ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "constrain/token_constraint.h"
#include "constrain/token_trie.h"
#include "kvscope/json_constraint.h"

namespace kvscope {
namespace {

// Id 0 is end-of-generation, id 1 a control token (no bytes); then
// multi-byte pieces, and last every printable ASCII byte not listed yet (so
// that, as in a real byte-level vocabulary, no value is a dead end).
const std::vector<std::string>& vocab() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> pieces = {
        "", "", "{", "}", "[", "]", "\"", ":", ",", " ", "  ", "\n", "a", "b", "ab", "\"a", "\"a\"", "\":", "\": ",
        "1", "12", "0", "-", ".", "e", "true", "tr", "ue", "null", "false", "{\"", "\"}", "},", "1}", "x", "é",
        "\xc3", "\xa9", "\\", "n", "u", "00e9", "\"name\"", "\"age\"", "\"na", "me\"", "\"}\n", "{}", "[]", "\t\t"};
    for (char c = 0x20; c < 0x7f; ++c) {
      if (std::find(pieces.begin(), pieces.end(), std::string(1, c)) == pieces.end()) pieces.emplace_back(1, c);
    }
    return pieces;
  }();
  return v;
}

TokenTrie tiny_trie() { return TokenTrie(vocab(), {0}); }

// Brute force: each token's bytes fed to a copy of the state.
TokenMask brute_force(const GrammarMatcher& state, const TokenTrie& trie) {
  TokenMask mask((vocab().size() + 63) / 64, 0);
  bool any = false;
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    if (trie.bytes(id).empty() || trie.is_eog(id)) continue;
    GrammarMatcher copy(state);
    if (copy.advance(trie.bytes(id))) {
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      any = true;
    }
  }
  if (state.is_complete() || !any) mask[0] |= 1;  // id 0: end-of-generation
  return mask;
}

void expect_masks_match_along(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  const TokenTrie trie = tiny_trie();
  GrammarMatcher m(g);
  for (size_t i = 0; i <= text.size(); ++i) {
    TokenMask fast;
    trie.allowed_tokens(m, fast);
    EXPECT_EQ(fast, brute_force(m, trie)) << "after \"" << text.substr(0, i) << "\"";
    if (i < text.size()) {
      ASSERT_TRUE(m.advance(text.substr(i, 1))) << text.substr(0, i + 1);
    }
  }
}

TEST(TokenMask, TrieEqualsBruteForceAtEveryState) {
  expect_masks_match_along(json_object_grammar(), "{\"a\": [1, true, null, \"\xc3\xa9\\u00e9\"], \"ab\": {}}");
  auto schema = compile_json_schema(R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "ab"]}, "maxItems": 2}},
      "required": ["name"], "additionalProperties": false})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  expect_masks_match_along(*schema, "{\"name\": \"ab\", \"age\": -12, \"tags\": [\"a\", \"ab\"]}");
  expect_masks_match_along(*schema, "{\"name\":\"x\"}");
}

TEST(TokenMask, EndOfGenerationOnlyWhenComplete) {
  const TokenTrie trie = tiny_trie();
  TokenConstraint c(json_object_grammar());
  EXPECT_FALSE(mask_allows(c.allowed_tokens(trie), 0));
  EXPECT_FALSE(mask_allows(c.allowed_tokens(trie), 1));  // control token: never
  EXPECT_TRUE(mask_allows(c.allowed_tokens(trie), 2));   // "{"
  EXPECT_FALSE(mask_allows(c.allowed_tokens(trie), 4));  // "[": not an object
  ASSERT_TRUE(c.accept(2, trie));                        // "{"
  ASSERT_TRUE(c.accept(3, trie));                        // "}"
  const TokenMask& done = c.allowed_tokens(trie);
  for (int32_t id = 0; id < trie.vocab_size(); ++id) EXPECT_EQ(mask_allows(done, id), id == 0) << id;
  EXPECT_TRUE(c.accept(0, trie));  // end-of-generation changes nothing
}

TEST(TokenMask, NumberAtTopLevelAllowsMoreDigitsAndEnd) {
  const TokenTrie trie = tiny_trie();
  auto g = compile_json_schema(R"({"type": "integer"})");
  ASSERT_TRUE(g.ok());
  TokenConstraint c(*g);
  ASSERT_TRUE(c.accept(19, trie));  // "1"
  const TokenMask& m = c.allowed_tokens(trie);
  EXPECT_TRUE(mask_allows(m, 0));    // complete: may end
  EXPECT_TRUE(mask_allows(m, 20));   // "12": more digits
  EXPECT_FALSE(mask_allows(m, 23));  // ".": not an integer
  EXPECT_FALSE(mask_allows(m, 9));   // no whitespace after the value
}

TEST(TokenMask, MaskedLogitsAreMinusInfinityExactlyWhereForbidden) {
  const TokenTrie trie = tiny_trie();
  TokenConstraint c(json_object_grammar());
  std::vector<float> logits(vocab().size());
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i) * 0.1f;
  ASSERT_TRUE(c.accept(30, trie));  // "{\""
  const TokenMask mask = c.allowed_tokens(trie);
  const float* row = c.mask_logits(logits.data(), static_cast<int32_t>(logits.size()), trie);
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    if (mask_allows(mask, id)) {
      EXPECT_EQ(row[id], logits[static_cast<size_t>(id)]) << id;
    } else {
      EXPECT_TRUE(std::isinf(row[id]) && row[id] < 0) << id;
    }
  }
}

TEST(TokenMask, CachedMaskEqualsFreshOne) {
  const TokenTrie trie = tiny_trie();
  TokenConstraint c(json_object_grammar());
  ASSERT_TRUE(c.accept(30, trie));  // "{\"": inside a key
  const TokenMask first = c.allowed_tokens(trie);
  ASSERT_TRUE(c.accept(12, trie));  // "a": same state (inside a string, no UTF-8 pending)
  const TokenMask cached = c.allowed_tokens(trie);
  TokenMask fresh;
  trie.allowed_tokens(c.matcher(), fresh);
  EXPECT_EQ(cached, fresh);
  EXPECT_EQ(first, fresh);
}

TEST(TokenMask, CachedMasksEqualFreshOnesAlongLongArrays) {
  // The cache key treats item counts past an array's bounds as one (token_constraint.cpp).
  const TokenTrie trie = tiny_trie();
  for (const char* schema : {R"({"type": "array", "items": {"type": "string"}})",
                             R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4})"}) {
    auto g = compile_json_schema(schema);
    ASSERT_TRUE(g.ok()) << g.error();
    const bool strings = std::string(schema).find("string") != std::string::npos;
    const std::string text = strings ? R"(["a", "ab", "b", "", "ab", "a"])" : "[1, 12, 0, -1]";
    TokenConstraint c(*g);
    for (size_t i = 0; i <= text.size(); ++i) {
      TokenMask fresh;
      trie.allowed_tokens(c.matcher(), fresh);
      EXPECT_EQ(c.allowed_tokens(trie), fresh) << schema << " after " << text.substr(0, i);
      if (i < text.size()) {
        ASSERT_TRUE(c.advance(text.substr(i, 1)));
      }
    }
  }
}

// Random walks: every token the mask allows is accepted, and a walk that
// ends with end-of-generation has written JSON that parses (and, for the
// schema, has its required key).
TEST(TokenMask, RandomWalksThroughTheMaskEndInValidJson) {
  const TokenTrie trie = tiny_trie();
  auto schema = compile_json_schema(R"({"type": "object", "properties": {"a": {"type": "array",
      "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "maxItems": 3}, "ab": {"type": "boolean"}},
      "required": ["ab"]})");
  ASSERT_TRUE(schema.ok()) << schema.error();
  std::mt19937 rng(3);
  int num_ended = 0;
  for (int walk = 0; walk < 400; ++walk) {
    const bool use_schema = walk % 2 == 1;
    TokenConstraint c(use_schema ? *schema : json_object_grammar());
    std::string text;
    bool ended = false;
    for (int step = 0; step < 300 && !ended; ++step) {
      const TokenMask& mask = c.allowed_tokens(trie);
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < trie.vocab_size(); ++id) {
        if (mask_allows(mask, id)) allowed.push_back(id);
      }
      ASSERT_FALSE(allowed.empty()) << text;
      const int32_t token = allowed[rng() % allowed.size()];
      ASSERT_TRUE(c.accept(token, trie)) << text << " + " << trie.bytes(token);
      if (trie.is_eog(token)) {
        ended = true;
      } else {
        text += trie.bytes(token);
      }
    }
    if (!ended) continue;
    ++num_ended;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << text;
    ASSERT_TRUE(j.is_object()) << text;
    if (use_schema) {
      EXPECT_TRUE(j.contains("ab") && j["ab"].is_boolean()) << text;
    }
  }
  EXPECT_GT(num_ended, 20);  // enough walks get to the end to mean something
}

}  // namespace
}  // namespace kvscope
