// GrammarMatcher on json_object_grammar and hand-made grammars (label
// `unit`): JSON syntax byte by byte, the whitespace and digit bounds,
// completion, and that a rejected advance leaves the state unchanged.
#include "constrain/grammar_matcher.h"

#include <gtest/gtest.h>

#include <string>

#include "constrain/grammar.h"
#include "kvscope/json_constraint.h"

namespace kvscope {
namespace {

// The whole text is a complete value of g.
bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.is_complete();
}

// The text can start a value of g.
bool is_prefix(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.advance(text);
}

std::shared_ptr<const Grammar> any_value() { return std::make_shared<const Grammar>(); }

TEST(GrammarMatcher, JsonObjectAcceptsObjects) {
  const auto g = json_object_grammar();
  for (const char* text : {"{}", "{\"a\":1}", "{\"a\": [1, 2.5, -3e+2, true, false, null], \"b\": {\"c\": \"d\"}}",
                           "{\"\\u00e9\\n\": \"caf\xc3\xa9\"}", " {\n  \"x\": []\n}", "{\"a\":{},\"a\":[]}"}) {
    EXPECT_TRUE(accepts(g, text)) << text;
  }
}

TEST(GrammarMatcher, JsonObjectRejectsNonObjectsAndBadSyntax) {
  const auto g = json_object_grammar();
  for (const char* text : {"[]", "1", "\"a\"", "true", "{a:1}", "{\"a\" 1}", "{\"a\":1,}", "{,}", "{\"a\":01}",
                           "{\"a\":1.}", "{\"a\":-}", "{\"a\":tru}", "{\"a\":\"\\x\"}", "{\"a\":\"\x01\"}",
                           "{\"a\":\"\xff\"}", "{\"a\":\"\xc3\"}", "{}}", "{} ", "{\"a\":[1 2]}", "{\"a\":\"\\u12g4\"}"}) {
    EXPECT_FALSE(accepts(g, text)) << text;
  }
}

TEST(GrammarMatcher, PrefixesAreAcceptedButNotComplete) {
  const auto g = json_object_grammar();
  for (const char* text : {"{", "{\"a", "{\"a\":", "{\"a\": [1,", "{\"a\": \"x\\", "{\"a\": \"\xc3"}) {
    GrammarMatcher m(g);
    EXPECT_TRUE(m.advance(text)) << text;
    EXPECT_FALSE(m.is_complete()) << text;
  }
}

TEST(GrammarMatcher, ClosedValueTakesNothingMore) {
  GrammarMatcher m(json_object_grammar());
  ASSERT_TRUE(m.advance("{}"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.is_closed());
  EXPECT_FALSE(m.advance(" "));
  EXPECT_FALSE(m.advance("{"));
}

TEST(GrammarMatcher, RejectedAdvanceLeavesStateUnchanged) {
  GrammarMatcher m(json_object_grammar());
  ASSERT_TRUE(m.advance("{\"k\":"));
  EXPECT_FALSE(m.advance("1x"));  // '1' fits, 'x' does not: nothing of it is taken
  EXPECT_TRUE(m.advance("2}"));
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarMatcher, WhitespaceIsBounded) {
  const auto g = json_object_grammar();
  const std::string max_run(GrammarMatcher::kMaxWhitespace, ' ');
  EXPECT_TRUE(accepts(g, "{" + max_run + "\"a\"" + max_run + ":" + max_run + "1" + max_run + "}"));
  EXPECT_FALSE(is_prefix(g, "{" + max_run + " "));
  EXPECT_FALSE(is_prefix(g, max_run + " {"));
  // Whitespace runs are counted per gap, so many gaps of the maximum are fine.
  EXPECT_TRUE(accepts(g, "{\"a\":[" + max_run + "1," + max_run + "2" + max_run + "]}"));
}

TEST(GrammarMatcher, DigitsAreBounded) {
  const auto g = any_value();
  const std::string digits(GrammarMatcher::kMaxDigits, '7');
  EXPECT_TRUE(accepts(g, digits));
  const std::string exponent(GrammarMatcher::kMaxExponentDigits, '3');
  EXPECT_TRUE(accepts(g, "-" + digits + "." + digits + "e-" + exponent));
  EXPECT_FALSE(is_prefix(g, digits + "7"));
  EXPECT_FALSE(is_prefix(g, "1." + digits + "7"));
  EXPECT_FALSE(is_prefix(g, "1e" + exponent + "3"));
}

TEST(GrammarMatcher, StringsAreStrictUnicode) {
  const auto g = any_value();
  EXPECT_TRUE(accepts(g, "\"\\ud83d\\ude00 \\u00E9\""));     // a surrogate pair, then U+00E9
  EXPECT_FALSE(accepts(g, "\"\\ud83d\""));                      // a high surrogate alone
  EXPECT_FALSE(is_prefix(g, "\"\\ud83dx"));
  EXPECT_FALSE(is_prefix(g, "\"\\ud83d\\u0041"));               // not followed by a low one
  EXPECT_FALSE(is_prefix(g, "\"\\udc"));                         // a low surrogate alone, seen at its 2nd digit
  EXPECT_TRUE(accepts(g, "\"\xe2\x82\xac \xf0\x9f\x98\x80\""));  // euro sign, emoji
  EXPECT_FALSE(is_prefix(g, "\"\xed\xa0"));                      // UTF-8 of a surrogate
  EXPECT_FALSE(is_prefix(g, "\"\xe0\x80"));                      // overlong
  EXPECT_FALSE(is_prefix(g, "\"\xf4\x90"));                      // above U+10FFFF
  EXPECT_FALSE(is_prefix(g, "\"\xc0"));
}

TEST(GrammarMatcher, NestingIsBounded) {
  const auto g = any_value();
  const size_t depth = GrammarMatcher::kMaxDepth;
  EXPECT_TRUE(accepts(g, std::string(depth, '[') + std::string(depth, ']')));
  EXPECT_FALSE(is_prefix(g, std::string(depth + 1, '[')));
}

TEST(GrammarMatcher, TopLevelNumberAndLiteralCompleteWithoutDelimiter) {
  const auto g = any_value();
  GrammarMatcher m(g);
  ASSERT_TRUE(m.advance("12"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.is_closed());  // more digits may follow
  EXPECT_TRUE(m.advance("3"));
  EXPECT_FALSE(m.advance(" "));  // no whitespace after the top-level value
  EXPECT_TRUE(accepts(g, "true"));
  EXPECT_TRUE(accepts(g, "null"));
  EXPECT_FALSE(accepts(g, "nul"));
  EXPECT_TRUE(accepts(g, "\"x\""));
  EXPECT_TRUE(accepts(g, "[[], {}, [1, [2]]]"));
}

TEST(GrammarMatcher, IntegerRefusesFractionAndExponent) {
  auto g = std::make_shared<Grammar>();
  GrammarNode n;
  n.kind = GrammarNodeKind::Integer;
  g->set_root(g->add(n));
  EXPECT_TRUE(accepts(g, "-42"));
  EXPECT_TRUE(accepts(g, "0"));
  EXPECT_FALSE(accepts(g, "4.2"));
  EXPECT_FALSE(accepts(g, "4e2"));
  EXPECT_FALSE(accepts(g, "-"));
}

}  // namespace
}  // namespace kvscope
