// compile_json_schema (label `unit`): every keyword of the subset accepts
// what the schema allows and rejects what it does not (through
// GrammarMatcher), and everything outside the subset is refused with a
// message naming the keyword and where it is.
#include <gtest/gtest.h>

#include <string>

#include "constrain/grammar_matcher.h"
#include "kvscope/json_constraint.h"

namespace kvscope {
namespace {

std::shared_ptr<const Grammar> compile(const std::string& schema) {
  auto g = compile_json_schema(schema);
  EXPECT_TRUE(g.ok()) << schema << ": " << (g.ok() ? "" : g.error());
  return g.ok() ? *g : json_object_grammar();
}

// "dI": {"$ref": "#/$defs/dI+1"}, for a chain of references.
std::string chain_link(int i) {
  return "\"d" + std::to_string(i) + "\": {\"$ref\": \"#/$defs/d" + std::to_string(i + 1) + "\"}, ";
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.is_complete();
}

std::string refusal(const std::string& schema) {
  auto g = compile_json_schema(schema);
  return g.ok() ? "(compiled)" : g.error();
}

TEST(JsonSchemaCompiler, ScalarTypes) {
  const auto s = compile(R"({"type": "string"})");
  EXPECT_TRUE(accepts(s, "\"hi\""));
  EXPECT_FALSE(accepts(s, "1"));
  const auto n = compile(R"({"type": "number"})");
  EXPECT_TRUE(accepts(n, "-1.5e3"));
  EXPECT_FALSE(accepts(n, "\"1\""));
  const auto i = compile(R"({"type": "integer"})");
  EXPECT_TRUE(accepts(i, "17"));
  EXPECT_FALSE(accepts(i, "1.5"));
  const auto b = compile(R"({"type": "boolean"})");
  EXPECT_TRUE(accepts(b, "true"));
  EXPECT_TRUE(accepts(b, "false"));
  EXPECT_FALSE(accepts(b, "null"));
  const auto z = compile(R"({"type": "null"})");
  EXPECT_TRUE(accepts(z, "null"));
  EXPECT_FALSE(accepts(z, "false"));
}

TEST(JsonSchemaCompiler, TypeListIsAnyOfTypes) {
  const auto g = compile(R"({"type": ["integer", "null"]})");
  EXPECT_TRUE(accepts(g, "3"));
  EXPECT_TRUE(accepts(g, "null"));
  EXPECT_FALSE(accepts(g, "\"3\""));
}

TEST(JsonSchemaCompiler, PropertiesInSchemaOrderRequiredAlwaysOptionalMaySkip) {
  const auto g = compile(R"({"type": "object", "properties": {
      "name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
      "required": ["name", "email"], "additionalProperties": false})");
  EXPECT_TRUE(accepts(g, R"({"name": "a", "age": 3, "email": "e"})"));
  EXPECT_TRUE(accepts(g, R"({"name": "a", "email": "e"})"));       // optional skipped
  EXPECT_FALSE(accepts(g, R"({"age": 3, "name": "a", "email": "e"})"));  // out of order
  EXPECT_FALSE(accepts(g, R"({"name": "a"})"));                     // required missing
  EXPECT_FALSE(accepts(g, R"({"name": "a", "email": "e", "x": 1})"));  // no additional properties
  EXPECT_FALSE(accepts(g, R"({"name": "a", "name": "b", "email": "e"})"));  // no key twice
  EXPECT_FALSE(accepts(g, R"({"name": 1, "email": "e"})"));          // value of the wrong type
}

TEST(JsonSchemaCompiler, KeysSharingAPrefix) {
  const auto g = compile(R"({"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "string"}}})");
  EXPECT_TRUE(accepts(g, R"({"a": 1, "ab": "x"})"));
  EXPECT_TRUE(accepts(g, R"({"ab": "x"})"));
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_FALSE(accepts(g, R"({"ab": 1})"));
}

TEST(JsonSchemaCompiler, ObjectWithoutPropertiesIsAnyObject) {
  const auto g = compile(R"({"type": "object"})");
  EXPECT_TRUE(accepts(g, R"({"x": [1, {"y": null}]})"));
  const auto empty = compile(R"({"type": "object", "additionalProperties": false})");
  EXPECT_TRUE(accepts(empty, "{}"));
  EXPECT_FALSE(accepts(empty, R"({"x": 1})"));
}

TEST(JsonSchemaCompiler, ItemsMinItemsMaxItems) {
  const auto g = compile(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  EXPECT_FALSE(accepts(g, "[]"));
  EXPECT_TRUE(accepts(g, "[1]"));
  EXPECT_TRUE(accepts(g, "[1, 2, 3]"));
  EXPECT_FALSE(accepts(g, "[1, 2, 3, 4]"));
  EXPECT_FALSE(accepts(g, "[1, \"2\"]"));
  const auto any_items = compile(R"({"type": "array"})");
  EXPECT_TRUE(accepts(any_items, R"([1, "a", {}, []])"));
  const auto none = compile(R"({"type": "array", "maxItems": 0})");
  EXPECT_TRUE(accepts(none, "[]"));
  EXPECT_FALSE(accepts(none, "[1]"));
}

TEST(JsonSchemaCompiler, EnumAndConst) {
  const auto e = compile(R"({"enum": ["red", "green", 1, 12, null, {"a": [1]}]})");
  for (const char* ok : {"\"red\"", "\"green\"", "1", "12", "null", "{\"a\":[1]}"}) EXPECT_TRUE(accepts(e, ok)) << ok;
  for (const char* bad : {"\"re\"", "\"blue\"", "2", "123", "{\"a\": [1]}"}) EXPECT_FALSE(accepts(e, bad)) << bad;
  const auto c = compile(R"({"const": "fixed"})");
  EXPECT_TRUE(accepts(c, "\"fixed\""));
  EXPECT_FALSE(accepts(c, "\"other\""));
  // Inside an object a literal ends at the next delimiter.
  const auto o = compile(R"({"type": "object", "properties": {"n": {"enum": [1, 12]}, "m": {"const": true}},
                            "required": ["n", "m"]})");
  EXPECT_TRUE(accepts(o, R"({"n": 12, "m": true})"));
  EXPECT_TRUE(accepts(o, R"({"n": 1 , "m": true})"));
  EXPECT_FALSE(accepts(o, R"({"n": 2, "m": true})"));
}

TEST(JsonSchemaCompiler, AnyOfFollowsEveryAlternative) {
  // Two objects that share their first key: decided only later.
  const auto g = compile(R"({"anyOf": [
      {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
      {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]},
      {"type": "null"}]})");
  EXPECT_TRUE(accepts(g, R"({"kind": "circle", "r": 2})"));
  EXPECT_TRUE(accepts(g, R"({"kind": "square", "side": 2})"));
  EXPECT_TRUE(accepts(g, "null"));
  EXPECT_FALSE(accepts(g, R"({"kind": "circle", "side": 2})"));
}

TEST(JsonSchemaCompiler, NestedAnyOfIsFlattened) {
  const auto g = compile(R"({"anyOf": [{"anyOf": [{"type": "null"}, {"type": "integer"}]}, {"type": "string"},
                                       {"type": ["integer", "boolean"]}]})");
  for (const char* ok : {"null", "-4", "\"s\"", "true"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  EXPECT_FALSE(accepts(g, "1.5"));
  // A deep chain of anyOf compiles to one level (and stays cheap to match).
  std::string deep = R"({"type": "null"})";
  for (int i = 0; i < 30; ++i) deep = R"({"anyOf": [)" + deep + R"(, {"const": )" + std::to_string(i) + "}]}";
  const auto chain = compile(deep);
  EXPECT_TRUE(accepts(chain, "null"));
  EXPECT_TRUE(accepts(chain, "29"));
  EXPECT_FALSE(accepts(chain, "30"));
}

TEST(JsonSchemaCompiler, NestedObjectsAndArrays) {
  const auto g = compile(R"({"type": "object", "properties": {
      "people": {"type": "array", "items": {"type": "object", "properties": {
          "name": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
          "required": ["name", "tags"], "additionalProperties": false}}},
      "required": ["people"], "additionalProperties": false})");
  EXPECT_TRUE(accepts(g, R"({"people": [{"name": "x", "tags": ["a", "b"]}, {"name": "y", "tags": []}]})"));
  EXPECT_FALSE(accepts(g, R"({"people": [{"name": "x", "tags": ["c"]}]})"));
}

TEST(JsonSchemaCompiler, BooleanSchemasAndAnnotations) {
  EXPECT_TRUE(accepts(compile("true"), "[1]"));
  EXPECT_TRUE(accepts(compile("{}"), "\"s\""));
  const auto g = compile(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T",
                            "description": "d", "type": "integer", "default": 1, "examples": [1]})");
  EXPECT_TRUE(accepts(g, "5"));
  EXPECT_NE(refusal("false").find("accepts nothing"), std::string::npos);
}

// What Pydantic's model_json_schema() (and so the OpenAI SDK's parse()) writes
// for a model with a nested model, an optional one and a list of them.
TEST(JsonSchemaCompiler, RefsIntoDefsAsPydanticWritesThem) {
  const auto g = compile(R"({
      "$defs": {"Address": {"title": "Address", "type": "object", "additionalProperties": false,
                            "properties": {"city": {"title": "City", "type": "string"}}, "required": ["city"]}},
      "title": "Person", "type": "object", "additionalProperties": false,
      "properties": {"home": {"$ref": "#/$defs/Address"},
                     "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                     "past": {"type": "array", "items": {"$ref": "#/$defs/Address", "description": "d"}}},
      "required": ["home", "work", "past"]})");
  EXPECT_TRUE(accepts(g, R"({"home":{"city":"Oslo"},"work":null,"past":[{"city":"Rome"},{"city":"Graz"}]})"));
  EXPECT_TRUE(accepts(g, R"({"home":{"city":"Oslo"},"work":{"city":"Bern"},"past":[]})"));
  EXPECT_FALSE(accepts(g, R"({"home":{"town":"Oslo"},"work":null,"past":[]})"));
  EXPECT_FALSE(accepts(g, R"({"home":{"city":"Oslo"},"work":1,"past":[]})"));
  EXPECT_FALSE(accepts(g, R"({"home":{"city":"Oslo"},"work":null,"past":[{"city":1}]})"));
  // draft-07's "definitions", and a target that is itself a $ref.
  const auto d = compile(R"({"definitions": {"A": {"$ref": "#/definitions/B"}, "B": {"type": "integer"}},
                             "type": "array", "items": {"$ref": "#/definitions/A"}})");
  EXPECT_TRUE(accepts(d, "[1,2]"));
  EXPECT_FALSE(accepts(d, "[1.5]"));
}

TEST(JsonSchemaCompiler, RecursiveRefsThroughObjectsAndArrays) {
  // A tree: each node holds a list of nodes ("#" is the whole schema).
  const auto tree = compile(R"({"type": "object", "additionalProperties": false,
      "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
      "required": ["name", "children"]})");
  EXPECT_TRUE(accepts(tree, R"({"name":"a","children":[{"name":"b","children":[]},{"name":"c","children":[]}]})"));
  EXPECT_TRUE(accepts(tree, R"({"name":"a","children":[{"name":"b","children":[{"name":"d","children":[]}]}]})"));
  EXPECT_FALSE(accepts(tree, R"({"name":"a","children":[{"name":"b"}]})"));
  // A linked list through two definitions and an optional link.
  const auto list = compile(R"({"$defs": {
      "Node": {"type": "object", "additionalProperties": false,
               "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/Next"}}, "required": ["v"]},
      "Next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
      "$ref": "#/$defs/Node"})");
  EXPECT_TRUE(accepts(list, R"({"v":1,"next":{"v":2,"next":{"v":3,"next":null}}})"));
  EXPECT_TRUE(accepts(list, R"({"v":1})"));
  EXPECT_FALSE(accepts(list, R"({"v":1,"next":{"v":"x"}})"));
}

TEST(JsonSchemaCompiler, RefusesRefsItCannotFollow) {
  EXPECT_EQ(refusal(R"({"$ref": "https://example.com/s.json"})"),
            "schema at #/$ref: 'https://example.com/s.json' is not a reference into this schema (only '#...' is supported)");
  EXPECT_EQ(refusal(R"({"$ref": "#/$defs/missing", "$defs": {}})"),
            "schema at #/$ref: '#/$defs/missing' points to nothing in the schema");
  EXPECT_EQ(refusal(R"({"$ref": "#nope"})"), "schema at #/$ref: '#nope' is not a valid JSON pointer");
  EXPECT_EQ(refusal(R"({"$ref": 3})"), "schema at #/$ref: '$ref' must be a string");
  EXPECT_EQ(refusal(R"({"$ref": "#/$defs/a", "type": "string", "$defs": {"a": {}}})"),
            "schema at #: '$ref' together with 'type' is not supported");
  EXPECT_EQ(refusal(R"({"$defs": []})"), "schema at #/$defs: '$defs' must be an object of schemas");
  // Cycles that pass through no object or array: the matcher would expand them forever.
  EXPECT_EQ(refusal(R"({"$ref": "#"})"), "schema at #/$ref: '#' refers to itself without an object or array in between");
  EXPECT_EQ(refusal(R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]}, "b": {"$ref": "#/$defs/a"}},
                       "$ref": "#/$defs/a"})"),
            "schema at #/$defs/b/$ref: '#/$defs/a' refers to itself without an object or array in between");
  // A target's errors are named where the target is.
  EXPECT_EQ(refusal(R"({"$defs": {"a": {"type": "string", "pattern": "x"}}, "$ref": "#/$defs/a"})"),
            "schema at #/$defs/a: keyword 'pattern' is not supported");
  // A chain of references nests: bounded like any nesting.
  std::string chain = R"({"$defs": {)";
  for (int i = 0; i < 40; ++i) chain += chain_link(i);
  chain += R"("d40": {"type": "integer"}}, "$ref": "#/$defs/d0"})";
  EXPECT_NE(refusal(chain).find("deeper than"), std::string::npos);
}

TEST(JsonSchemaCompiler, RefusesWhatItDoesNotSupportNamingKeywordAndPlace) {
  EXPECT_EQ(refusal(R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}})"),
            "schema at #/properties/age: keyword 'minimum' is not supported");
  EXPECT_EQ(refusal(R"({"type": "string", "pattern": "^a$"})"), "schema at #: keyword 'pattern' is not supported");
  EXPECT_EQ(refusal(R"({"type": "string", "format": "date"})"), "schema at #: keyword 'format' is not supported");
  EXPECT_EQ(refusal(R"({"$ref": "#/$defs/x"})"), "schema at #/$ref: '#/$defs/x' points to nothing in the schema");
  EXPECT_EQ(refusal(R"({"oneOf": [{"type": "string"}]})"), "schema at #: keyword 'oneOf' is not supported");
  EXPECT_NE(refusal(R"({"type": "object", "properties": {"a": {}}, "additionalProperties": true})")
                .find("additionalProperties true together with properties"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "additionalProperties": {"type": "string"}})").find("#/additionalProperties"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"type": "object", "properties": {}, "required": ["x"]})"),
            "schema at #/required: 'x' is required but not in 'properties'");
  EXPECT_NE(refusal(R"({"type": "strin"})").find("type 'strin' is not a JSON schema type"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "string", "items": {}})").find("'items' applies to arrays"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "array", "minItems": 3, "maxItems": 2})").find("minItems"), std::string::npos);
  EXPECT_NE(refusal(R"({"enum": []})").find("non-empty"), std::string::npos);
  EXPECT_EQ(refusal("{not json"), "the schema is not valid JSON");
  std::string deep = "true";
  for (int i = 0; i < 40; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(refusal(deep).find("deeper than"), std::string::npos);
  std::string many = R"({"enum": [)";
  for (int i = 0; i < 65; ++i) {
    if (i > 0) many += ",";
    many += std::to_string(i);
  }
  EXPECT_NE(refusal(many + "]}").find("at most 64 enum values"), std::string::npos);
}

}  // namespace
}  // namespace kvscope
