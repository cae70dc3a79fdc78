// kvscope's Jinja interpreter on its own: the language features chat
// templates use (expected outputs rendered by Python's jinja2 3.1 with
// transformers' settings: trim_blocks, lstrip_blocks, loopcontrols, its
// tojson), taint through string operations, and errors that name the line
// and column instead of crashing or running forever.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/template.h"

namespace kvscope::jinja {
namespace {

Value from_json(const nlohmann::json& j) {
  if (j.is_null()) return Value(None{});
  if (j.is_boolean()) return Value(j.get<bool>());
  if (j.is_number_integer()) return Value(j.get<int64_t>());
  if (j.is_number()) return Value(j.get<double>());
  if (j.is_string()) return Value(j.get<std::string>());
  if (j.is_array()) {
    List items;
    for (const auto& e : j) items.push_back(from_json(e));
    return Value(std::move(items));
  }
  Dict d;
  for (const auto& [k, v] : j.items()) d.set(k, from_json(v));
  return Value(std::move(d));
}

Result<std::string> render(const std::string& source, const Dict& context = {}, RenderOptions options = {}) {
  Result<Template> t = Template::parse(source);
  if (!t) return Error{t.error()};
  Result<TaintedString> out = t->render(context, options);
  if (!out) return Error{out.error()};
  return out->text();
}

struct Case {
  const char* source;
  const char* context_json;
  const char* expected;
};

// Made by running each source through jinja2 (see the file comment).
const Case kCases[] = {
    {"  {% if true %}\n  x\n  {% endif %}\ny\n",
     R"json({})json",
     "  x\ny"},
    {"a  {%- if true -%}  b  {%- endif -%}  c",
     R"json({})json",
     "abc"},
    {"{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
     R"json({})json",
     "103TrueFalse3;212FalseFalse3;321FalseTrue3;"},
    {"{% for x in [] %}x{% else %}empty{% endfor %}",
     R"json({})json",
     "empty"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}",
     R"json({"d": {"a": 1, "b": "two"}})json",
     "a=1,b=two,"},
    {"{% set ns = namespace(n=0) %}{% for i in range(5) %}{% if i is odd %}{% set ns.n = ns.n + i %}{% endif %}{% endfor %}{{ ns.n }}",
     R"json({})json",
     "4"},
    {"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}",
     R"json({})json",
     "1"},
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', punct='?') }}",
     R"json({})json",
     "Hi a! Hi b?"},
    {"{{ 'abc'[::-1] }}|{{ [1,2,3][1:] }}|{{ 'héllo'[1:3] }}|{{ 'héllo'|length }}",
     R"json({})json",
     "cba|[2, 3]|él|5"},
    {"{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ 'é\"\\n'|tojson }}|{{ [1.5, none, true]|tojson }}",
     R"json({"d": {"a": [1, {"b": "x"}], "c": {}}})json",
     "{\"a\": [1, {\"b\": \"x\"}], \"c\": {}}|{\n  \"a\": [\n    1,\n    {\n      \"b\": \"x\"\n    }\n  ],\n  \"c\": {}\n}|\"é\\\"\\n\"|[1.5, null, true]"},
    {"{{ '  a b  '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'xxhixx'.strip('x') }}|{{ 'Hello'.startswith('He') }}|{{ 'ab'.upper() }}|{{ 'hello world'.title() }}|{{ 'a-b'.replace('-', '+') }}",
     R"json({})json",
     "a b|['a', 'b', '', 'c']|['a', 'b']|hi|True|AB|Hello World|a+b"},
    {"{{ missing }}|{{ missing is defined }}|{{ missing|default('d') }}|{{ none|default('d') }}|{{ missing|length }}|{% if not missing %}falsy{% endif %}",
     R"json({})json",
     "|False|d|None|0|falsy"},
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ 'a' ~ 1 ~ none }} {{ 1 == 1.0 }} {{ 'b' in 'abc' }} {{ 3 not in [1,2] }}",
     R"json({})json",
     "3 -4 1 2 3.5 1024 7 a1None True True True"},
    {"{{ 'yes' if x else 'no' }} {{ 'y' if x }}|{{ [1,2,3]|join('-') }} {{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'x'|upper }} {{ ' y '|trim }} {{ 'abc'|list }} {{ '12'|int + 1 }}",
     R"json({"x": false})json",
     "no |1-2-3 1 3 X y ['a', 'b', 'c'] 13"},
    {"{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|{{ msgs|rejectattr('role', 'equalto', 'user')|list|length }}",
     R"json({"msgs": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}, {"role": "user", "content": "c"}]})json",
     "a,c|1"},
    {"{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}",
     R"json({})json",
     "013"},
    {"{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 3.0 * 2 }} {{ 10 / 4 }} {{ none }} {{ true }} {{ [1, 'a', none] }} {{ {'k': 'v'} }}",
     R"json({})json",
     "1.0 0.30000000000000004 1e+20 6.0 2.5 None True [1, 'a', None] {'k': 'v'}"},
    {"{# comment #}\n  {# c2 #}\nx{%+ if true %} y{% endif %}\n\n",
     R"json({})json",
     "x y"},
    {"{% set s %}inner {{ 1 }}{% endset %}[{{ s }}]{{ d.get('a') }}{{ d.get('zz', 'def') }}{{ d.get('zz') }}{{ d.keys()|list }}",
     R"json({"d": {"a": 1}})json",
     "[inner 1]1defNone['a']"},
    {"{{ 'a\\tb' }}{{ \"it's\" }}{{ 'x' 'y' }}",
     R"json({})json",
     "a\tbit'sxy"},
    {"{{ '<b>'|safe + '<i>' }}|{{ '<i>' + '<b>'|safe }}|{{ '<&>'|e }}|{{ '<x>' ~ '<y>'|safe }}",
     R"json({})json",
     "<b>&lt;i&gt;|&lt;i&gt;<b>|&lt;&amp;&gt;|<x><y>"},
    {"{% if [] | select %}gen is true{% endif %}|{{ [1,2,3]|select('odd')|list }}|{{ none|map(attribute='a')|list }}|{{ [{'a':1}]|map(attribute='a')|first }}",
     R"json({})json",
     "gen is true|[1, 3]|[]|1"},
    {"{{ 'Hi {}, {name}! {{x}}'.format('A', name='B') }}{{ '{1}{0}'.format('a', 'b') }}|{{ x|trim if x is defined }}",
     R"json({})json",
     "Hi A, B! {x}ba|"},
    {"{% filter upper %}abc {{ 1 }}{% endfilter %}|{% if false %}{{ x|from_json }}{% endif %}ok",
     R"json({})json",
     "ABC 1|ok"},
    {"{{ '\\x41\\u00e9\\U0001F642' }}|{{ \"a\\\"b\" }}",
     R"json({})json",
     "Aé🙂|a\"b"},
    {"{%- for m in messages if m.role != 'system' -%}{{ loop.index }}:{{ m.content }};{%- endfor %}",
     R"json({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]})json",
     "1:u;2:a;"},
};

TEST(JinjaInterpreter, RendersAsJinja2) {
  for (const Case& c : kCases) {
    Dict context = from_json(nlohmann::json::parse(c.context_json)).as_dict();
    const Result<std::string> got = render(c.source, context);
    ASSERT_TRUE(got) << c.source << ": " << got.error();
    EXPECT_EQ(*got, c.expected) << c.source;
  }
}

TEST(JinjaInterpreter, StrftimeNowReadsThePinnedClock) {
  RenderOptions options;
  options.now_unix_seconds = 1767323045;  // 2026-01-02 03:04:05 UTC
  const Result<std::string> got = render("{{ strftime_now('%d %b %Y %H:%M') }}", {}, options);
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(*got, "02 Jan 2026 03:04");
}

// The taint of the message text, as (begin, end) pairs of the output.
std::vector<std::pair<size_t, size_t>> taint_of(const std::string& source, const std::string& message) {
  Dict context;
  context.set("m", Value(TaintedString::from_message(message)));
  Result<Template> t = Template::parse(source);
  EXPECT_TRUE(t) << t.error();
  if (!t) return {};
  Result<TaintedString> out = t->render(context);
  EXPECT_TRUE(out) << out.error();
  if (!out) return {};
  std::vector<std::pair<size_t, size_t>> spans;
  for (const TaintSpan& s : out->taint()) spans.emplace_back(s.begin, s.end);
  return spans;
}

using Spans = std::vector<std::pair<size_t, size_t>>;

TEST(JinjaInterpreter, MessageTextStaysTaintedThroughStringOperations) {
  EXPECT_EQ(taint_of("<a>{{ m }}<b>", "xyz"), (Spans{{3, 6}}));
  EXPECT_EQ(taint_of("{{ '<a>' + m + '<b>' }}", "xyz"), (Spans{{3, 6}}));
  EXPECT_EQ(taint_of("{{ '<a>' ~ m|trim ~ '<b>' }}", "  xyz \n"), (Spans{{3, 6}}));
  EXPECT_EQ(taint_of("{{ m.strip() }}", " xyz "), (Spans{{0, 3}}));
  EXPECT_EQ(taint_of("{{ m[::-1] }}", "abc"), (Spans{{0, 3}}));
  EXPECT_EQ(taint_of("{{ m[1:] }}", "abc"), (Spans{{0, 2}}));
  EXPECT_EQ(taint_of("{{ m.split('|')[1] }}", "a|bc|d"), (Spans{{0, 2}}));
  EXPECT_EQ(taint_of("{{ m|upper }}", "abc"), (Spans{{0, 3}}));
  // Replacing message text with a literal: the inserted text counts as the
  // message's (conservative); the rest keeps its place.
  EXPECT_EQ(taint_of("{{ m.replace('<', '[') }}", "a<b"), (Spans{{0, 3}}));
  EXPECT_EQ(taint_of("{{ 'x-y'.replace('-', m) }}", "AB"), (Spans{{1, 3}}));
  // A JSON string holding message text is message text, quotes aside.
  EXPECT_EQ(taint_of("{{ {'k': m}|tojson }}", "a\nb"), (Spans{{7, 11}}));  // {"k": "a\nb"}
  // Template literals alone are never tainted.
  EXPECT_EQ(taint_of("{{ '<|im_end|>' }}{% set x = m %}", "abc"), (Spans{}));
}

TEST(JinjaInterpreter, ErrorsNameTheLineAndColumn) {
  const Result<std::string> unclosed = render("line one\n{% if x %}\nno end");
  ASSERT_FALSE(unclosed);
  EXPECT_NE(unclosed.error().find("line 3"), std::string::npos) << unclosed.error();
  EXPECT_NE(unclosed.error().find("endif"), std::string::npos) << unclosed.error();

  const Result<std::string> bad_filter = render("{{ x | no_such_filter }}");
  ASSERT_FALSE(bad_filter);
  EXPECT_NE(bad_filter.error().find("line 1, column 8"), std::string::npos) << bad_filter.error();

  const Result<std::string> raised = render("ok\n  {{ raise_exception('System role not supported') }}");
  ASSERT_FALSE(raised);
  EXPECT_NE(raised.error().find("line 2"), std::string::npos) << raised.error();
  EXPECT_NE(raised.error().find("System role not supported"), std::string::npos) << raised.error();

  const Result<std::string> attr_of_undefined = render("{{ missing.field }}");
  ASSERT_FALSE(attr_of_undefined);
  EXPECT_NE(attr_of_undefined.error().find("'missing' is undefined"), std::string::npos) << attr_of_undefined.error();

  for (const char* bad : {"{{ 1 +", "{% for %}", "{{ 'unterminated }}", "{% endif %}", "{{ (1, }}", "{% set = 1 %}",
                          "{{ [1, 2 }}", "{% break %}", "{% raw %}{% endraw %}", "{{ {'a': 1 }}", "{#"}) {
    EXPECT_FALSE(render(bad)) << bad;
  }
  // Generators (map/select*/reject*) have no len() and no JSON form in Jinja2.
  EXPECT_FALSE(render("{{ [1, 2]|select|length }}"));
  EXPECT_FALSE(render("{{ [1, 2]|map('string')|tojson }}"));
  // An unknown filter outside any `if` is a syntax error; inside one it fails only when run.
  EXPECT_FALSE(render("{{ x|from_json }}"));
  EXPECT_FALSE(render("{{ '{} {0}'.format('a') }}"));  // Python refuses to mix automatic and manual fields
  EXPECT_FALSE(render("{% if true %}{{ 'a'|from_json }}{% endif %}"));
  for (const char* bad : {"{{ 1 / 0 }}", "{{ (none.x).y }}", "{% for x in 5 %}{% endfor %}", "{{ 'a' + 1 }}",
                          "{{ 1 < 'a' }}", "{{ x() }}", "{{ range(1, 2, 0) }}"}) {
    EXPECT_FALSE(render(bad)) << bad;
  }
  // As in Jinja2, a failed item or attribute lookup on a defined value is Undefined, not an error.
  for (const char* ok : {"{{ none.x }}", "{{ [1][None] }}", "{{ none[0] }}", "{{ 5[0] }}", "{{ 'abc'.nope }}"}) {
    const Result<std::string> got = render(ok);
    ASSERT_TRUE(got) << ok << ": " << got.error();
    EXPECT_EQ(*got, "") << ok;
  }
}

TEST(JinjaInterpreter, RunawayTemplatesStopWithAnError) {
  RenderOptions options;
  options.limits.max_steps = 100'000;
  const Result<std::string> loops = render(
      "{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}", {}, options);
  ASSERT_FALSE(loops);
  EXPECT_NE(loops.error().find("too long"), std::string::npos) << loops.error();

  const Result<std::string> recursion = render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}");
  ASSERT_FALSE(recursion);
  EXPECT_NE(recursion.error().find("nested too deeply"), std::string::npos) << recursion.error();

  options.limits.max_output_bytes = 1000;
  const Result<std::string> output = render("{% for a in range(100) %}{{ 'x' * 100 }}{% endfor %}", {}, options);
  ASSERT_FALSE(output);
  EXPECT_NE(output.error().find("too much output"), std::string::npos) << output.error();

  // Lists grow only by +, whose copies the step budget pays for: doubling one
  // 40 times (2^40 items) stops there, long before memory runs out, and so
  // does appending one item at a time in a long loop (quadratic copying).
  const Result<std::string> doubled = render(
      "{% set ns = namespace(s=[1]) %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"
      "{{ ns.s|length }}",
      {}, options);
  ASSERT_FALSE(doubled);
  EXPECT_NE(doubled.error().find("list items copied"), std::string::npos) << doubled.error();
  const Result<std::string> appended = render(
      "{% set ns = namespace(s=[]) %}{% for i in range(5000) %}{% set ns.s = ns.s + [i] %}{% endfor %}"
      "{{ ns.s|length }}",
      {}, options);
  ASSERT_FALSE(appended);
  EXPECT_NE(appended.error().find("too long"), std::string::npos) << appended.error();
  // 400 appends copy 80,000 items: within the budget of 100,000.
  EXPECT_EQ(*render("{% set ns = namespace(s=[]) %}{% for i in range(400) %}{% set ns.s = ns.s + [i] %}{% endfor %}"
                    "{{ ns.s|length }}",
                    {}, options),
            "400");

  // Python's integers are unbounded; here leaving 64 bits is an error, not UB.
  for (const char* overflow : {"{{ 9223372036854775807 + 1 }}", "{{ -9223372036854775807 - 2 }}",
                               "{{ 4611686018427387904 * 2 }}", "{{ 2 ** 64 }}", "{{ (-9223372036854775807 - 1) // -1 }}",
                               "{{ -(-9223372036854775807 - 1) }}"}) {
    EXPECT_FALSE(render(overflow)) << overflow;
  }
  EXPECT_EQ(*render("{{ 9223372036854775807 - 1 }}"), "9223372036854775806");
  EXPECT_EQ(*render("{{ ''  * 1000000000000 }}|{{ [1, 2, 3][::9223372036854775807] }}"), "|[1]");
  // Doubling a string stops at the output limit, long before memory runs out.
  options.limits.max_output_bytes = 1 << 20;
  EXPECT_FALSE(render("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                      {}, options));

  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += "(";
  EXPECT_FALSE(render("{{ " + deep + " }}"));
}

}  // namespace
}  // namespace kvscope::jinja
