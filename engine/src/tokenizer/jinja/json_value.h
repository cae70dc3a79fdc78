// JSON (nlohmann) -> Value, for context that arrives as JSON: tool schemas,
// and messages with tool calls or tool results.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/jinja/value.h"

namespace kvscope::jinja {

// Objects become dicts (key order kept as nlohmann iterates: sorted for
// nlohmann::json, insertion order for nlohmann::ordered_json), arrays lists.
// With `tainted`, every string is message text (TaintedString::from_message).
Value value_from_json(const nlohmann::json& j, bool tainted);
Value value_from_json(const nlohmann::ordered_json& j, bool tainted);

}  // namespace kvscope::jinja
