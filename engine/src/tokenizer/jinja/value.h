// Value: what a Jinja expression evaluates to, with Python's semantics where
// chat templates depend on them (truthiness, equality, ordering, str()).
// Lists and dicts are shared by reference, as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tokenizer/jinja/tainted_string.h"

namespace kvscope::jinja {

class Value;
using List = std::vector<Value>;

// Insertion-ordered string-keyed map (Python dicts keep insertion order).
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

struct Undefined {
  std::string name;  // what was looked up, for error messages
};
struct None {};

struct CallArgs;
using Function = std::function<Value(CallArgs&)>;

class Value {
 public:
  using ListPtr = std::shared_ptr<List>;
  using DictPtr = std::shared_ptr<Dict>;
  using FunctionPtr = std::shared_ptr<Function>;
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() : data_(Undefined{}) {}
  Value(Undefined u) : data_(std::move(u)) {}  // NOLINT: implicit by design
  Value(None n) : data_(n) {}                  // NOLINT
  Value(bool b) : data_(b) {}                  // NOLINT
  Value(int64_t i) : data_(i) {}               // NOLINT
  Value(int i) : data_(int64_t{i}) {}          // NOLINT
  Value(double d) : data_(d) {}                // NOLINT
  Value(TaintedString s) : data_(std::move(s)) {}  // NOLINT
  Value(const char* s) : data_(TaintedString(s)) {}  // NOLINT
  Value(std::string s) : data_(TaintedString(std::move(s))) {}  // NOLINT
  Value(List l) : data_(std::make_shared<List>(std::move(l))) {}  // NOLINT
  Value(Dict d) : data_(std::make_shared<Dict>(std::move(d))) {}  // NOLINT
  Value(ListPtr l) : data_(std::move(l)) {}  // NOLINT
  Value(DictPtr d) : data_(std::move(d)) {}  // NOLINT
  static Value function(Function f) { Value v; v.data_ = std::make_shared<Function>(std::move(f)); return v; }
  // namespace(): a dict whose attributes may be assigned ({% set ns.x = 1 %}).
  static Value make_namespace(Dict d) { Value v(std::move(d)); v.is_namespace_ = true; return v; }
  // Jinja2's Markup (|safe, |escape): text that `+` does not HTML-escape
  // while it escapes plain strings added to it.
  static Value markup(TaintedString s) { Value v(std::move(s)); v.is_markup_ = true; return v; }
  // What map/select/selectattr/reject/rejectattr return: Python generators.
  // They iterate like lists but are always true and have no len(), last
  // item, index or JSON form (templates that rely on those fail in Jinja2).
  static Value generator(List items) { Value v(std::move(items)); v.is_generator_ = true; return v; }

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_number() const { return kind() == Kind::kInt || kind() == Kind::kFloat; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return is_namespace_; }
  bool is_markup() const { return is_markup_; }
  bool is_generator() const { return is_generator_; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_number() const { return kind() == Kind::kInt ? static_cast<double>(as_int()) : std::get<double>(data_); }
  const TaintedString& as_string() const { return std::get<TaintedString>(data_); }
  List& as_list() const { return *std::get<ListPtr>(data_); }
  Dict& as_dict() const { return *std::get<DictPtr>(data_); }
  const Function& as_function() const { return *std::get<FunctionPtr>(data_); }
  const std::string& undefined_name() const { return std::get<Undefined>(data_).name; }

  // Python truthiness; Undefined is false.
  bool truthy() const;
  // str(): what {{ value }} prints. Undefined prints as "".
  TaintedString to_text() const;
  // Python's repr() (lists and dicts print their items this way).
  std::string repr() const;
  std::string type_name() const;

 private:
  std::variant<Undefined, None, bool, int64_t, double, TaintedString, ListPtr, DictPtr, FunctionPtr> data_;
  bool is_namespace_ = false;
  bool is_markup_ = false;
  bool is_generator_ = false;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The positional argument at `index`, else the keyword `name`, else nullopt.
  std::optional<Value> get(size_t index, std::string_view name) const;
};

// Python ==, with 1 == 1.0 and list/dict element-wise.
bool values_equal(const Value& a, const Value& b);
// Python's < on numbers, strings and lists; nullopt when not comparable.
std::optional<bool> values_less(const Value& a, const Value& b);
// Python float repr (1.0, 0.1, 1e+20).
std::string format_float(double d);

}  // namespace kvscope::jinja
