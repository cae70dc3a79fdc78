#include "tokenizer/jinja/json_value.h"

#include <nlohmann/json.hpp>

namespace kvscope::jinja {

namespace {
template <typename Json>
Value convert(const Json& j, bool tainted, int depth) {
  if (depth > 200) return Value(None{});  // deeper JSON than any template reads
  if (j.is_null()) return Value(None{});
  if (j.is_boolean()) return Value(j.template get<bool>());
  if (j.is_number_integer()) return Value(j.template get<int64_t>());
  if (j.is_number()) return Value(j.template get<double>());
  if (j.is_string()) {
    std::string s = j.template get<std::string>();
    return Value(tainted ? TaintedString::from_message(std::move(s)) : TaintedString(std::move(s)));
  }
  if (j.is_array()) {
    List items;
    for (const auto& e : j) items.push_back(convert(e, tainted, depth + 1));
    return Value(std::move(items));
  }
  Dict d;
  for (const auto& [k, v] : j.items()) d.set(k, convert(v, tainted, depth + 1));
  return Value(std::move(d));
}
}  // namespace

Value value_from_json(const nlohmann::json& j, bool tainted) { return convert(j, tainted, 0); }
Value value_from_json(const nlohmann::ordered_json& j, bool tainted) { return convert(j, tainted, 0); }

}  // namespace kvscope::jinja
