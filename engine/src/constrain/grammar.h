// Grammar: a compiled JSON constraint (docs/json-schema.md), the nodes a
// GrammarMatcher walks byte by byte. Built by compile_json_schema /
// json_object_grammar (json_schema_compiler.h); immutable afterwards, so one
// Grammar is shared by every sequence of a request (and across threads).
//
// A node is one JSON value's shape. Nodes refer to each other by index into
// `nodes`; node 0 is the root. The first few nodes are built in (any value,
// any object, any array, any string, any number, true|false|null) so that
// "any JSON" needs no recursion at compile time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope {

enum class GrammarNodeKind : uint8_t {
  Any,      // any JSON value: becomes one of the built-in nodes at its first byte
  Object,   // properties in schema order, or (free_keys) any keys with Any values
  Array,    // items, min_items..max_items of them
  String,   // any JSON string (escapes checked, UTF-8 checked)
  Number,   // any JSON number
  Integer,  // a JSON number without fraction or exponent
  Literal,  // one of `literals`, byte for byte (enum, const, true, false, null)
  AnyOf,    // one of `alternatives` (the matcher follows all that still fit)
};

struct GrammarProperty {
  std::string key_json;  // the key as JSON text, quotes included: "\"name\""
  int32_t value = 0;     // node of its value
  bool required = false;
};

struct GrammarNode {
  GrammarNodeKind kind = GrammarNodeKind::Any;
  std::vector<GrammarProperty> properties;  // Object, schema order (at most kMaxProperties)
  bool free_keys = false;                   // Object: any keys, values Any (json_object)
  int32_t items = 0;                        // Array: node of each item
  int32_t min_items = 0;
  int32_t max_items = -1;                   // -1: no limit
  std::vector<std::string> literals;        // Literal: canonical JSON texts (at most kMaxLiterals)
  std::vector<int32_t> alternatives;        // AnyOf
};

class Grammar {
 public:
  // A literal set and a run of optional keys are tracked in a 64-bit mask.
  static constexpr int32_t kMaxLiterals = 64;
  static constexpr int32_t kMaxProperties = 64;
  // Built-in nodes (always present, in this order).
  static constexpr int32_t kAnyValue = 0;
  static constexpr int32_t kAnyObject = 1;
  static constexpr int32_t kAnyArray = 2;
  static constexpr int32_t kAnyString = 3;
  static constexpr int32_t kAnyNumber = 4;
  static constexpr int32_t kTrueFalseNull = 5;
  static constexpr int32_t kNumBuiltIn = 6;

  Grammar();  // the built-in nodes; root = kAnyValue

  int32_t add(GrammarNode node);
  const GrammarNode& node(int32_t id) const { return nodes_[static_cast<size_t>(id)]; }
  GrammarNode& mutable_node(int32_t id) { return nodes_[static_cast<size_t>(id)]; }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }

  int32_t root() const { return root_; }
  void set_root(int32_t id) { root_ = id; }

 private:
  std::vector<GrammarNode> nodes_;
  int32_t root_ = kAnyValue;
};

}  // namespace kvscope
