// JSON schema -> Grammar (kvscope/json_constraint.h; the subset is listed in
// docs/json-schema.md). The schema is read with nlohmann's ordered_json so
// that properties keep the order the schema gives them: that is the order
// the model writes them in.
// Tests: tests/engine/constrain/json_schema_compiler_test.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "constrain/grammar.h"
#include "kvscope/json_constraint.h"

namespace kvscope {
namespace {

using Json = nlohmann::ordered_json;

// Bounds on what one schema may build (a request body is untrusted input).
constexpr int kMaxDepth = 32;
constexpr int32_t kMaxNodes = 4096;

// Keywords that describe and never constrain.
const std::set<std::string>& annotations() {
  static const std::set<std::string> names = {"title", "description", "default", "examples", "$schema", "$id",
                                              "$comment"};
  return names;
}

class Compiler {
 public:
  Compiler(Grammar& g, const Json& root) : g_(g), root_(root) {}

  // The node for `schema` at JSON pointer `path`, or the error naming the keyword.
  Result<int32_t> compile(const Json& schema, const std::string& path, int depth) {
    if (depth > kMaxDepth) return fail(path, fmt::format("the schema nests deeper than {} levels", kMaxDepth));
    if (g_.num_nodes() > kMaxNodes) return fail(path, fmt::format("the schema has more than {} parts", kMaxNodes));
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return Grammar::kAnyValue;
      return fail(path, "the schema false accepts nothing");
    }
    if (!schema.is_object()) return fail(path, "a schema must be an object or a boolean");
    for (const auto& [key, value] : schema.items()) {
      static const std::set<std::string> known = {"type",  "properties", "required", "additionalProperties",
                                                  "items", "minItems",   "maxItems", "enum",
                                                  "const", "anyOf",      "$ref",     "$defs",
                                                  "definitions"};
      if (!known.count(key) && !annotations().count(key)) {
        return fail(path, fmt::format("keyword '{}' is not supported", key));
      }
    }
    // $defs / definitions only hold schemas for $ref to point at: they
    // constrain nothing where they stand.
    for (const char* defs : {"$defs", "definitions"}) {
      if (schema.contains(defs) && !schema[defs].is_object()) {
        return fail(path + "/" + defs, fmt::format("'{}' must be an object of schemas", defs));
      }
    }
    if (schema.contains("$ref")) return reference(schema, path, depth);
    if (schema.contains("const")) return literal_node({schema["const"]}, path);
    if (schema.contains("enum")) {
      const Json& values = schema["enum"];
      if (!values.is_array() || values.empty()) return fail(path + "/enum", "'enum' must be a non-empty array");
      return literal_node(std::vector<Json>(values.begin(), values.end()), path + "/enum");
    }
    if (schema.contains("anyOf")) {
      if (schema.contains("type")) return fail(path, "'anyOf' together with 'type' is not supported: put the type in each alternative");
      const Json& alts = schema["anyOf"];
      if (!alts.is_array() || alts.empty()) return fail(path + "/anyOf", "'anyOf' must be a non-empty array");
      GrammarNode n;
      n.kind = GrammarNodeKind::AnyOf;
      for (size_t i = 0; i < alts.size(); ++i) {
        auto alt = compile(alts[i], fmt::format("{}/anyOf/{}", path, i), depth + 1);
        if (!alt.ok()) return alt;
        add_alternative(n, *alt);
      }
      return n.alternatives.size() == 1 ? n.alternatives.front() : g_.add(std::move(n));
    }
    if (!schema.contains("type")) {
      // Only annotations (or nothing): any value.
      for (const char* k : {"properties", "required", "additionalProperties", "items", "minItems", "maxItems"}) {
        if (schema.contains(k)) return fail(path, fmt::format("'{}' needs \"type\": \"{}\"", k,
                                                              std::string(k).find("tems") != std::string::npos ? "array" : "object"));
      }
      return Grammar::kAnyValue;
    }
    const Json& type = schema["type"];
    if (type.is_string()) return typed(schema, type.get<std::string>(), path, depth);
    if (!type.is_array() || type.empty()) return fail(path + "/type", "'type' must be a type name or a non-empty array of them");
    GrammarNode n;
    n.kind = GrammarNodeKind::AnyOf;
    for (const Json& t : type) {
      if (!t.is_string()) return fail(path + "/type", "'type' must be a type name or a non-empty array of them");
      auto alt = typed(schema, t.get<std::string>(), path, depth);
      if (!alt.ok()) return alt;
      add_alternative(n, *alt);
    }
    return n.alternatives.size() == 1 ? n.alternatives.front() : g_.add(std::move(n));
  }

 private:
  // anyOf inside anyOf is flattened (and repeats dropped), so that the
  // matcher expands one level per value, never a tree of them at one byte.
  // A $ref's node is not: while its schema compiles it has no alternatives yet.
  void add_alternative(GrammarNode& any_of, int32_t alt) const {
    const GrammarNode& a = g_.node(alt);
    const bool flatten = a.kind == GrammarNodeKind::AnyOf && !ref_nodes_.count(alt);
    const std::vector<int32_t> flat = flatten ? a.alternatives : std::vector<int32_t>{alt};
    for (int32_t f : flat) {
      if (std::find(any_of.alternatives.begin(), any_of.alternatives.end(), f) == any_of.alternatives.end()) {
        any_of.alternatives.push_back(f);
      }
    }
  }

  static Error fail(const std::string& path, const std::string& what) {
    return Error{fmt::format("schema at {}: {}", path, what)};
  }

  // {"$ref": "#/$defs/Name"}: a JSON pointer into this schema (what Pydantic
  // and the OpenAI SDKs write for nested and recursive models). Each target
  // is compiled once, into a node of its own: an anyOf of one alternative,
  // reserved before the target compiles so that a recursive model's $ref
  // refers back to it. A cycle that passes through no object or array would
  // let the matcher expand forever without reading a byte, so it is refused.
  Result<int32_t> reference(const Json& schema, const std::string& path, int depth) {
    for (const auto& [key, value] : schema.items()) {
      if (key != "$ref" && key != "$defs" && key != "definitions" && !annotations().count(key)) {
        return fail(path, fmt::format("'$ref' together with '{}' is not supported", key));
      }
    }
    const Json& ref = schema["$ref"];
    if (!ref.is_string()) return fail(path + "/$ref", "'$ref' must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#') {
      return fail(path + "/$ref", fmt::format("'{}' is not a reference into this schema (only '#...' is supported)", target));
    }
    if (auto known = ref_targets_.find(target); known != ref_targets_.end()) {
      const auto open = open_refs_.find(target);
      if (open != open_refs_.end() && open->second == containers_) {
        return fail(path + "/$ref", fmt::format("'{}' refers to itself without an object or array in between", target));
      }
      return known->second;
    }
    const Json* resolved = nullptr;
    try {
      const Json::json_pointer pointer(target.substr(1));
      if (root_.contains(pointer)) resolved = &root_.at(pointer);
    } catch (const Json::exception&) {
      return fail(path + "/$ref", fmt::format("'{}' is not a valid JSON pointer", target));
    }
    if (!resolved) return fail(path + "/$ref", fmt::format("'{}' points to nothing in the schema", target));
    GrammarNode placeholder;
    placeholder.kind = GrammarNodeKind::AnyOf;
    const int32_t id = g_.add(std::move(placeholder));
    ref_nodes_.insert(id);
    ref_targets_.emplace(target, id);
    open_refs_.emplace(target, containers_);
    // Compiled once, where it is first used: later uses share the node.
    auto body = compile(*resolved, target, depth + 1);
    open_refs_.erase(target);
    if (!body.ok()) return body;
    g_.mutable_node(id).alternatives = {*body};
    return id;
  }

  // A keyword that belongs to another type (e.g. items on a string) is refused.
  Result<int32_t> refuse_foreign(const Json& schema, const std::string& type, const std::string& path) {
    const bool object = type == "object", array = type == "array";
    for (const char* k : {"properties", "required", "additionalProperties"}) {
      if (!object && schema.contains(k)) return fail(path, fmt::format("keyword '{}' applies to objects, not {}", k, type));
    }
    for (const char* k : {"items", "minItems", "maxItems"}) {
      if (!array && schema.contains(k)) return fail(path, fmt::format("keyword '{}' applies to arrays, not {}", k, type));
    }
    return 0;
  }

  Result<int32_t> typed(const Json& schema, const std::string& type, const std::string& path, int depth) {
    if (auto r = refuse_foreign(schema, type, path); !r.ok()) return r;
    GrammarNode n;
    if (type == "string") return Grammar::kAnyString;
    if (type == "number") return Grammar::kAnyNumber;
    if (type == "integer") {
      n.kind = GrammarNodeKind::Integer;
      return g_.add(std::move(n));
    }
    if (type == "boolean") return literal_node({Json(true), Json(false)}, path);
    if (type == "null") return literal_node({Json(nullptr)}, path);
    if (type == "array") return array(schema, path, depth);
    if (type == "object") return object(schema, path, depth);
    return fail(path + "/type", fmt::format("type '{}' is not a JSON schema type", type));
  }

  Result<int32_t> array(const Json& schema, const std::string& path, int depth) {
    GrammarNode n;
    n.kind = GrammarNodeKind::Array;
    n.items = Grammar::kAnyValue;
    if (schema.contains("items")) {
      ++containers_;
      auto items = compile(schema["items"], path + "/items", depth + 1);
      --containers_;
      if (!items.ok()) return items;
      n.items = *items;
    }
    for (const char* k : {"minItems", "maxItems"}) {
      if (!schema.contains(k)) continue;
      const Json& v = schema[k];
      if (!v.is_number_unsigned() || v.get<uint64_t>() > 1'000'000) {
        return fail(path + "/" + k, fmt::format("'{}' must be an integer from 0 to 1000000", k));
      }
      (std::string(k) == "minItems" ? n.min_items : n.max_items) = static_cast<int32_t>(v.get<uint64_t>());
    }
    if (n.max_items >= 0 && n.min_items > n.max_items) return fail(path, "'minItems' is above 'maxItems'");
    return g_.add(std::move(n));
  }

  Result<int32_t> object(const Json& schema, const std::string& path, int depth) {
    GrammarNode n;
    n.kind = GrammarNodeKind::Object;
    const bool has_properties = schema.contains("properties");
    if (schema.contains("additionalProperties")) {
      const Json& extra = schema["additionalProperties"];
      if (!extra.is_boolean()) {
        return fail(path + "/additionalProperties", "only additionalProperties false (or true without properties) is supported");
      }
      if (extra.get<bool>() && has_properties) {
        return fail(path + "/additionalProperties", "additionalProperties true together with properties is not supported; use false");
      }
      n.free_keys = extra.get<bool>();
    } else {
      n.free_keys = !has_properties;  // {"type": "object"} alone: any object
    }
    std::set<std::string> required;
    if (schema.contains("required")) {
      const Json& req = schema["required"];
      if (!req.is_array()) return fail(path + "/required", "'required' must be an array of property names");
      for (const Json& r : req) {
        if (!r.is_string()) return fail(path + "/required", "'required' must be an array of property names");
        required.insert(r.get<std::string>());
      }
    }
    if (has_properties) {
      const Json& props = schema["properties"];
      if (!props.is_object()) return fail(path + "/properties", "'properties' must be an object");
      if (props.size() > static_cast<size_t>(Grammar::kMaxProperties)) {
        return fail(path + "/properties", fmt::format("an object may have at most {} properties", Grammar::kMaxProperties));
      }
      for (const auto& [key, sub] : props.items()) {
        GrammarProperty p;
        p.key_json = Json(key).dump();
        p.required = required.count(key) > 0;
        ++containers_;
        auto value = compile(sub, path + "/properties/" + key, depth + 1);
        --containers_;
        if (!value.ok()) return value;
        p.value = *value;
        n.properties.push_back(std::move(p));
      }
    }
    for (const std::string& r : required) {
      const bool listed = std::any_of(n.properties.begin(), n.properties.end(),
                                      [&](const GrammarProperty& p) { return p.key_json == Json(r).dump(); });
      if (!listed) return fail(path + "/required", fmt::format("'{}' is required but not in 'properties'", r));
    }
    return g_.add(std::move(n));
  }

  Result<int32_t> literal_node(const std::vector<Json>& values, const std::string& path) {
    if (values.size() > static_cast<size_t>(Grammar::kMaxLiterals)) {
      return fail(path, fmt::format("at most {} enum values are supported, got {}", Grammar::kMaxLiterals, values.size()));
    }
    GrammarNode n;
    n.kind = GrammarNodeKind::Literal;
    for (const Json& v : values) {
      std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (std::find(n.literals.begin(), n.literals.end(), text) == n.literals.end()) n.literals.push_back(std::move(text));
    }
    return g_.add(std::move(n));
  }

  Grammar& g_;
  const Json& root_;
  std::map<std::string, int32_t> ref_targets_;  // $ref target -> its node
  std::set<int32_t> ref_nodes_;                 // those nodes
  std::map<std::string, int> open_refs_;        // targets still compiling -> containers_ when they began
  int containers_ = 0;                          // object properties and array items entered
};

}  // namespace

Result<std::shared_ptr<const Grammar>> compile_json_schema(std::string_view schema_json) {
  Json schema = Json::parse(schema_json.begin(), schema_json.end(), nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return Error{"the schema is not valid JSON"};
  auto g = std::make_shared<Grammar>();
  Compiler compiler(*g, schema);
  auto root = compiler.compile(schema, "#", 0);
  if (!root.ok()) return Error{root.error()};
  g->set_root(*root);
  return std::shared_ptr<const Grammar>(std::move(g));
}

std::shared_ptr<const Grammar> json_object_grammar() {
  static const std::shared_ptr<const Grammar> g = [] {
    auto grammar = std::make_shared<Grammar>();
    grammar->set_root(Grammar::kAnyObject);
    return grammar;
  }();
  return g;
}

}  // namespace kvscope
