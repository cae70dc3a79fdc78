// Request bodies of /v1/chat/completions and /v1/completions -> ParsedRequest
// or a 400 naming the field (see request_parser.h). A JSON null counts as
// "not given", as in OpenAI's API.
#include "request_parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kvscope/json_constraint.h"

namespace kvscope::server {
namespace {

using Json = nlohmann::json;
using MaybeError = std::optional<ApiError>;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// The member `key` of `obj`, or nullptr when absent or null.
const Json* field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// "a string", "an array", ... for messages about the wrong type.
std::string kind_of(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: {
      // Integers beyond 64 bits are parsed as doubles too.
      const double x = v.get<double>();
      if (std::isfinite(x) && std::abs(x) >= 9.2e18 && std::nearbyint(x) == x) return "an integer beyond 64 bits";
      return "a number with a fraction or exponent";
    }
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "null";
  }
}

// A number as the request had it, for range messages.
std::string number_text(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

ApiError wrong_type(const std::string& param, const char* wanted, const Json& got) {
  return invalid_request(fmt::format("'{}' must be {}, got {}", param, wanted, kind_of(got)), param);
}

MaybeError read_bool(const Json& obj, const char* key, bool& out) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return wrong_type(key, "true or false", *v);
  out = v->get<bool>();
  return std::nullopt;
}

// An integer in [min, max]; `given` says whether the request had one.
MaybeError read_int(const Json& obj, const std::string& key, int64_t min, int64_t max, int64_t& out,
                    bool* given = nullptr) {
  const Json* v = field(obj, key.c_str());
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return wrong_type(key, "an integer", *v);
  // Unsigned when the text had no sign (it may exceed int64).
  const bool in_range = v->is_number_unsigned()
                            ? v->get<uint64_t>() <= static_cast<uint64_t>(max) &&
                                  (min <= 0 || v->get<uint64_t>() >= static_cast<uint64_t>(min))
                            : v->get<int64_t>() >= min && v->get<int64_t>() <= max;
  if (!in_range) {
    return invalid_request(fmt::format("'{}' must be an integer from {} to {}, got {}", key, min, max, number_text(*v)),
                           key);
  }
  out = v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
  if (given) *given = true;
  return std::nullopt;
}

MaybeError read_int32(const Json& obj, const std::string& key, int64_t min, int64_t max, int32_t& out,
                      bool* given = nullptr) {
  int64_t wide = out;
  if (MaybeError e = read_int(obj, key, min, max, wide, given)) return e;
  out = static_cast<int32_t>(wide);
  return std::nullopt;
}

// Whether `min` itself is allowed (top_p and repetition_penalty must be above 0).
enum class Lower { kIncluded, kExcluded };

// A finite number in [min, max] (or (min, max]).
MaybeError read_float(const Json& obj, const char* key, double min, double max, float& out,
                      Lower lower = Lower::kIncluded) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return wrong_type(key, "a number", *v);
  const double x = v->get<double>();
  const bool above_min = lower == Lower::kIncluded ? x >= min : x > min;
  if (!(std::isfinite(x) && above_min && x <= max)) {
    const std::string range = lower == Lower::kIncluded ? fmt::format("from {} to {}", min, max)
                                                        : fmt::format("above {} and at most {}", min, max);
    return invalid_request(fmt::format("'{}' must be a number {}, got {}", key, range, number_text(*v)), key);
  }
  out = static_cast<float>(x);
  return std::nullopt;
}

// seed: any 64-bit integer, negative ones taken as their two's complement.
MaybeError read_seed(const Json& obj, uint64_t& out) {
  const Json* v = field(obj, "seed");
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return wrong_type("seed", "a 64-bit integer", *v);
  out = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
  if (out == 0) out = kSeedForZero;
  return std::nullopt;
}

// stop: a string or an array of strings; empty strings are dropped.
MaybeError read_stop(const Json& obj, std::vector<std::string>& out) {
  const Json* v = field(obj, "stop");
  if (!v) return std::nullopt;
  std::vector<std::string> stops;
  if (v->is_string()) {
    stops.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > static_cast<size_t>(kMaxStopStrings)) {
      return invalid_request(fmt::format("'stop' has {} strings; at most {} are allowed", v->size(), kMaxStopStrings),
                             "stop");
    }
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) return wrong_type(fmt::format("stop[{}]", i), "a string", (*v)[i]);
      stops.push_back((*v)[i].get<std::string>());
    }
  } else {
    return wrong_type("stop", "a string or an array of strings", *v);
  }
  out.clear();
  for (std::string& s : stops) {
    if (!s.empty()) out.push_back(std::move(s));
  }
  return std::nullopt;
}

// Fields that would change the output if honoured: refused rather than ignored.
MaybeError refuse_unsupported(const Json& obj, int32_t n) {
  if (const Json* v = field(obj, "functions"); v && !(v->is_array() && v->empty())) {
    return invalid_request("'functions' (OpenAI's deprecated form) is not supported: use 'tools'", "functions");
  }
  if (const Json* v = field(obj, "logit_bias"); v && !(v->is_object() && v->empty())) {
    return invalid_request("'logit_bias' is not supported", "logit_bias");
  }
  if (const Json* v = field(obj, "suffix"); v && !(v->is_string() && v->get<std::string>().empty())) {
    return invalid_request("'suffix' (fill in the middle) is not supported", "suffix");
  }
  // Audio out: the answer would be text where sound was asked for.
  if (field(obj, "audio")) {
    return invalid_request("'audio' output is not supported: this server answers in text", "audio");
  }
  if (const Json* v = field(obj, "modalities")) {
    const bool text_only = v->is_array() && std::all_of(v->begin(), v->end(), [](const Json& m) { return m == "text"; });
    if (!text_only) return invalid_request("'modalities' other than [\"text\"] are not supported", "modalities");
  }
  if (const Json* v = field(obj, "best_of")) {
    if (!v->is_number_integer() || v->get<int64_t>() != n) {
      return invalid_request("'best_of' other than n is not supported", "best_of");
    }
  }
  return std::nullopt;
}

// response_format: {"type": "text"} (nothing to do), {"type": "json_object"}
// or {"type": "json_schema", "json_schema": {"name", "schema", "strict"}},
// compiled into a grammar the engine constrains decoding with
// (docs/json-schema.md). The schema's text comes from a second, key-order-
// preserving parse of the body: the order of its properties is the order the
// model writes them in. "strict" is accepted and changes nothing: the grammar
// is always enforced.
MaybeError read_response_format(const Json& obj, std::string_view body, SamplingParams& sampling) {
  const Json* v = field(obj, "response_format");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("response_format", "an object", *v);
  const Json* type = field(*v, "type");
  const char* types = "\"text\", \"json_object\" or \"json_schema\"";
  if (!type || !type->is_string()) {
    return invalid_request(fmt::format("'response_format.type' must be {}", types), "response_format");
  }
  if (*type == "text") return std::nullopt;
  if (*type == "json_object") {
    sampling.constraint = json_object_grammar();
    return std::nullopt;
  }
  if (*type != "json_schema") {
    return invalid_request(fmt::format("'response_format.type' must be {}, got '{}'", types, type->get<std::string>()),
                           "response_format");
  }
  const Json* spec = field(*v, "json_schema");
  if (!spec || !spec->is_object()) {
    return invalid_request("'response_format.json_schema' (an object with \"name\" and \"schema\") is required with "
                           "type json_schema", "response_format");
  }
  if (const Json* name = field(*spec, "name"); name && !name->is_string()) {
    return invalid_request("'response_format.json_schema.name' must be a string", "response_format");
  }
  if (const Json* strict = field(*spec, "strict"); strict && !strict->is_boolean()) {
    return invalid_request("'response_format.json_schema.strict' must be true or false", "response_format");
  }
  const Json* schema = field(*spec, "schema");
  if (!schema || !(schema->is_object() || schema->is_boolean())) {
    return invalid_request("'response_format.json_schema.schema' (a JSON schema object) is required", "response_format");
  }
  using Ordered = nlohmann::ordered_json;
  const Ordered ordered = Ordered::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  std::string schema_text = schema->dump(-1, ' ', false, Json::error_handler_t::replace);
  // The first parse found every level an object, so this one does too.
  const Ordered* node = &ordered;
  for (const char* key : {"response_format", "json_schema", "schema"}) {
    if (!node->is_object()) break;
    const auto it = node->find(key);
    node = it == node->end() ? nullptr : &*it;
    if (!node) break;
  }
  if (node) schema_text = node->dump(-1, ' ', false, Ordered::error_handler_t::replace);
  auto grammar = compile_json_schema(schema_text);
  if (!grammar.ok()) {
    return invalid_request(fmt::format("'response_format.json_schema.schema': {}", grammar.error()), "response_format");
  }
  sampling.constraint = std::move(grammar).value();
  return std::nullopt;
}

// Fields both endpoints share: model, stream, n, sampling.
MaybeError read_common(const Json& obj, const ParseDefaults& defaults, ParsedRequest& out) {
  const Json* model = field(obj, "model");
  if (!model) return invalid_request("'model' is required (GET /v1/models lists the model this server runs)", "model");
  if (!model->is_string()) return wrong_type("model", "a string", *model);
  out.model = model->get<std::string>();

  if (MaybeError e = read_bool(obj, "stream", out.stream)) return e;
  if (const Json* options = field(obj, "stream_options")) {
    if (!options->is_object()) return wrong_type("stream_options", "an object", *options);
    if (const Json* v = field(*options, "include_usage")) {
      if (!v->is_boolean()) return wrong_type("stream_options.include_usage", "true or false", *v);
      out.include_usage = v->get<bool>() && out.stream;
    }
    // As OpenAI (and vLLM) answer it: options for a stream that is not one
    // are a mistake in the request, not something to ignore.
    if (!out.stream) return invalid_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
  }
  if (MaybeError e = read_int32(obj, "n", 1, kMaxChoicesPerPrompt, out.n)) return e;

  SamplingParams& s = out.sampling;
  s = defaults.sampling;
  // max_completion_tokens is the newer name of max_tokens; it wins when both
  // are given. Completions take 0: the prompt is run (and with echo and
  // logprobs scored), nothing generated, as OpenAI's legacy scoring asks.
  const int32_t fewest_tokens = out.endpoint == Endpoint::kCompletions ? 0 : 1;
  if (MaybeError e = read_int32(obj, "max_tokens", fewest_tokens, kInt32Max, s.max_tokens)) return e;
  if (MaybeError e = read_int32(obj, "max_completion_tokens", fewest_tokens, kInt32Max, s.max_tokens)) return e;
  if (MaybeError e = read_float(obj, "temperature", 0.0, 2.0, s.temperature)) return e;
  if (MaybeError e = read_float(obj, "top_p", 0.0, 1.0, s.top_p, Lower::kExcluded)) return e;
  if (MaybeError e = read_float(obj, "presence_penalty", -2.0, 2.0, s.presence_penalty)) return e;
  if (MaybeError e = read_float(obj, "frequency_penalty", -2.0, 2.0, s.frequency_penalty)) return e;
  // Extensions that llama.cpp's server and vLLM also take.
  // top_k: 0 is off, as in llama.cpp; vLLM's -1 for off is taken too.
  if (MaybeError e = read_int32(obj, "top_k", -1, kInt32Max, s.top_k)) return e;
  if (s.top_k < 0) s.top_k = 0;
  if (MaybeError e = read_float(obj, "min_p", 0.0, 1.0, s.min_p)) return e;
  if (MaybeError e = read_float(obj, "repetition_penalty", 0.0, 100.0, s.repetition_penalty, Lower::kExcluded)) return e;
  if (MaybeError e = read_int32(obj, "repeat_last_n", -1, kInt32Max, s.repeat_last_n)) return e;
  if (MaybeError e = read_bool(obj, "ignore_eos", s.ignore_eos)) return e;
  if (MaybeError e = read_seed(obj, s.seed)) return e;
  if (MaybeError e = read_stop(obj, s.stop)) return e;
  if (MaybeError e = refuse_unsupported(obj, out.n)) return e;
  // The engine's own check: its messages start with the field's name.
  if (Status status = s.validate(); !status.ok()) {
    const std::string& m = status.error();
    return invalid_request(m, m.substr(0, m.find_first_of(" [")));
  }
  return std::nullopt;
}

// A message's content: a string, null (an assistant turn with none) or text
// parts; an assistant turn's parts may also be refusals (what OpenAI's
// replies hold when the model refused), which are its text.
MaybeError read_content(const Json& message, const std::string& where, bool assistant, std::string& out) {
  const Json* content = field(message, "content");
  if (!content) return std::nullopt;
  if (content->is_string()) {
    out = content->get<std::string>();
    return std::nullopt;
  }
  if (!content->is_array()) return wrong_type(where + ".content", "a string or an array of content parts", *content);
  for (size_t i = 0; i < content->size(); ++i) {
    const Json& part = (*content)[i];
    const std::string at = fmt::format("{}.content[{}]", where, i);
    if (!part.is_object()) return wrong_type(at, "an object", part);
    const Json* type = field(part, "type");
    if (!type) return invalid_request(fmt::format("{}.type is required (\"text\")", at), at + ".type");
    const bool refusal = assistant && *type == "refusal";
    if (!type->is_string() || (*type != "text" && !refusal)) {
      return invalid_request(fmt::format("{}: only content parts of type \"text\" are supported{}", at,
                                         assistant ? " (and \"refusal\" in an assistant turn)" : ""),
                             at + ".type");
    }
    const char* key = refusal ? "refusal" : "text";
    const Json* text = field(part, key);
    if (!text || !text->is_string()) {
      return invalid_request(fmt::format("{}.{} must be a string", at, key), fmt::format("{}.{}", at, key));
    }
    out += text->get<std::string>();
  }
  return std::nullopt;
}

// An assistant turn's tool_calls: [{"id", "type": "function", "function": {"name", "arguments": JSON text}}].
MaybeError read_tool_calls(const Json& calls, const std::string& where, std::vector<ToolCall>& out) {
  if (!calls.is_array()) return wrong_type(where, "an array", calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    const Json& c = calls[i];
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!c.is_object()) return wrong_type(at, "an object", c);
    const Json* function = field(c, "function");
    if (!function || !function->is_object()) {
      return invalid_request(fmt::format("{}.function (an object) is required", at), at + ".function");
    }
    const Json* name = field(*function, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty()) {
      return invalid_request(fmt::format("{}.function.name (a non-empty string) is required", at), at + ".function.name");
    }
    ToolCall call;
    call.name = name->get<std::string>();
    if (const Json* id = field(c, "id"); id && id->is_string()) call.id = id->get<std::string>();
    // OpenAI sends the arguments as JSON text; an object is taken as well.
    if (const Json* args = field(*function, "arguments")) {
      if (args->is_string()) {
        call.arguments = args->get<std::string>();
      } else if (args->is_object()) {
        call.arguments = args->dump(-1, ' ', false, Json::error_handler_t::replace);
      } else {
        return wrong_type(at + ".function.arguments", "JSON text of an object", *args);
      }
    } else {
      call.arguments = "{}";
    }
    out.push_back(std::move(call));
  }
  return std::nullopt;
}

// tools: [{"type": "function", "function": {"name", "description"?, "parameters"?}}], kept as JSON
// text for the chat template; tool_choice: "auto" (default), "none" (the
// tools are shown to the model, as OpenAI does, but its reply is not read
// for calls). "required" and a named function would need the reply forced
// into a call: refused.
MaybeError read_tools(const Json& obj, ParsedRequest& out) {
  // tool_choice first: "required" or a named function is refused with or
  // without tools (without, it would otherwise pass unnoticed).
  std::string choice = "auto";
  if (const Json* v = field(obj, "tool_choice"); v && !v->is_null()) {
    if (v->is_string()) {
      choice = v->get<std::string>();
    } else if (v->is_object()) {
      choice = "a named function";
    } else {
      return wrong_type("tool_choice", "\"none\", \"auto\", \"required\" or {\"type\": \"function\", ...}", *v);
    }
  }
  if (choice != "auto" && choice != "none") {
    return invalid_request(fmt::format("tool_choice {} is not supported: only \"auto\" and \"none\" (the model "
                                       "decides whether to call a tool)", choice == "a named function" ? choice : "'" + choice + "'"),
                           "tool_choice");
  }
  const Json* tools = field(obj, "tools");
  if (!tools || tools->is_null()) return std::nullopt;
  if (!tools->is_array()) return wrong_type("tools", "an array", *tools);
  if (tools->size() > kMaxTools) {
    return invalid_request(fmt::format("'tools' holds {} tools; at most {} are accepted", tools->size(), kMaxTools),
                           "tools");
  }
  for (size_t i = 0; i < tools->size(); ++i) {
    const Json& t = (*tools)[i];
    const std::string at = fmt::format("tools[{}]", i);
    if (!t.is_object()) return wrong_type(at, "an object", t);
    const Json* type = field(t, "type");
    if (!type || !type->is_string() || *type != "function") {
      return invalid_request(fmt::format("{}.type must be \"function\"", at), at + ".type");
    }
    const Json* function = field(t, "function");
    if (!function || !function->is_object()) {
      return invalid_request(fmt::format("{}.function (an object) is required", at), at + ".function");
    }
    const Json* name = field(*function, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty()) {
      return invalid_request(fmt::format("{}.function.name (a non-empty string) is required", at), at + ".function.name");
    }
    if (const Json* params = field(*function, "parameters"); params && !params->is_object()) {
      return wrong_type(at + ".function.parameters", "a JSON schema object", *params);
    }
  }
  if (tools->empty()) return std::nullopt;
  out.tools_json = tools->dump(-1, ' ', false, Json::error_handler_t::replace);
  out.tool_calls_allowed = choice != "none";
  return std::nullopt;
}

MaybeError read_messages(const Json& obj, std::vector<ChatMessage>& out) {
  const Json* messages = field(obj, "messages");
  if (!messages) return invalid_request("'messages' is required: an array of {\"role\", \"content\"}", "messages");
  if (!messages->is_array()) return wrong_type("messages", "an array", *messages);
  if (messages->empty()) return invalid_request("'messages' must hold at least one message", "messages");
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) return wrong_type(where, "an object", m);
    const Json* role = field(m, "role");
    if (!role) return invalid_request(fmt::format("{}.role is required", where), where + ".role");
    if (!role->is_string()) return wrong_type(where + ".role", "a string", *role);
    ChatMessage message;
    message.role = role->get<std::string>();
    if (message.role == "developer") message.role = "system";  // OpenAI's newer name for the system turn
    if (message.role != "system" && message.role != "user" && message.role != "assistant" && message.role != "tool") {
      return invalid_request(fmt::format("{}.role '{}' is not supported: use system, developer, user, assistant "
                                         "or tool", where, message.role), where + ".role");
    }
    if (const Json* calls = field(m, "tool_calls")) {
      if (message.role != "assistant") {
        return invalid_request(fmt::format("{}.tool_calls: only assistant turns make tool calls", where),
                               where + ".tool_calls");
      }
      if (MaybeError e = read_tool_calls(*calls, where + ".tool_calls", message.tool_calls)) return e;
    }
    if (message.role == "tool") {
      const Json* id = field(m, "tool_call_id");
      if (!id || !id->is_string()) {
        return invalid_request(fmt::format("{}.tool_call_id (a string) is required in a tool turn", where),
                               where + ".tool_call_id");
      }
      message.tool_call_id = id->get<std::string>();
      if (const Json* name = field(m, "name"); name && name->is_string()) message.name = name->get<std::string>();
    }
    // An assistant turn that only calls tools may have no content.
    if (!field(m, "content") && message.role != "assistant") {
      return invalid_request(fmt::format("{}.content is required", where), where + ".content");
    }
    if (MaybeError e = read_content(m, where, message.role == "assistant", message.content)) return e;
    out.push_back(std::move(message));
  }
  return std::nullopt;
}

// Token ids: a non-empty array of integers in [0, 2^31).
MaybeError read_token_ids(const Json& array, const std::string& where, std::vector<int32_t>& out) {
  if (array.empty()) return invalid_request(fmt::format("'{}' is empty", where), "prompt");
  for (size_t i = 0; i < array.size(); ++i) {
    const Json& t = array[i];
    const bool ok = t.is_number_unsigned() ? t.get<uint64_t>() <= static_cast<uint64_t>(kInt32Max)
                                           : t.is_number_integer() && t.get<int64_t>() >= 0 &&
                                                 t.get<int64_t>() <= kInt32Max;
    if (!ok) {
      return invalid_request(fmt::format("{}[{}] must be a token id (an integer >= 0)", where, i), "prompt");
    }
    out.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return std::nullopt;
}

// prompt: "text", ["text", ...], [id, ...] or [[id, ...], ...].
MaybeError read_prompts(const Json& obj, std::vector<ParsedPrompt>& out) {
  const Json* prompt = field(obj, "prompt");
  if (!prompt) return invalid_request("'prompt' is required: a string, strings, or token ids", "prompt");
  if (prompt->is_string()) {
    out.push_back({prompt->get<std::string>(), {}, false});
    return std::nullopt;
  }
  const char* wanted = "a string, an array of strings, an array of token ids or an array of arrays of token ids";
  if (!prompt->is_array()) return wrong_type("prompt", wanted, *prompt);
  if (prompt->empty()) return invalid_request("'prompt' is an empty array", "prompt");
  if ((*prompt)[0].is_number()) {
    ParsedPrompt p;
    p.is_tokens = true;
    if (MaybeError e = read_token_ids(*prompt, "prompt", p.tokens)) return e;
    out.push_back(std::move(p));
    return std::nullopt;
  }
  if (prompt->size() > static_cast<size_t>(kMaxPrompts)) {
    return invalid_request(fmt::format("'prompt' holds {} prompts; at most {} are allowed", prompt->size(), kMaxPrompts),
                           "prompt");
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const Json& item = (*prompt)[i];
    const std::string where = fmt::format("prompt[{}]", i);
    if (item.is_string()) {
      out.push_back({item.get<std::string>(), {}, false});
    } else if (item.is_array()) {
      ParsedPrompt p;
      p.is_tokens = true;
      if (MaybeError e = read_token_ids(item, where, p.tokens)) return e;
      out.push_back(std::move(p));
    } else {
      return wrong_type(where, "a string or an array of token ids", item);
    }
  }
  return std::nullopt;
}

// The body as a JSON object, or the 400 that says why it is not one.
std::variant<Json, ApiError> parse_object(std::string_view body) {
  Json j;
  try {
    j = Json::parse(body.begin(), body.end());
  } catch (const Json::exception& e) {
    // Without nlohmann's "[json.exception.parse_error.101] " tag: the rest says where and why.
    std::string_view why = e.what();
    if (!why.empty() && why.front() == '[') why.remove_prefix(std::min(why.size(), why.find("] ") + 2));
    return invalid_request(fmt::format("the body is not valid JSON: {}", why), "", "invalid_json");
  }
  if (!j.is_object()) return invalid_request(fmt::format("the body must be a JSON object, got {}", kind_of(j)));
  return j;
}

}  // namespace

ParseResult parse_chat_request(std::string_view body, const ParseDefaults& defaults) {
  auto parsed = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
  const Json& obj = std::get<Json>(parsed);
  ParsedRequest out;
  out.endpoint = Endpoint::kChatCompletions;
  if (MaybeError e = read_common(obj, defaults, out)) return *e;
  if (MaybeError e = read_response_format(obj, body, out.sampling)) return *e;
  if (MaybeError e = read_messages(obj, out.messages)) return *e;
  if (MaybeError e = read_tools(obj, out)) return *e;
  if (MaybeError e = read_bool(obj, "logprobs", out.logprobs)) return *e;
  bool top_given = false;
  if (MaybeError e = read_int32(obj, "top_logprobs", 0, kMaxChatTopLogprobs, out.top_logprobs, &top_given)) return *e;
  if (top_given && !out.logprobs && out.top_logprobs > 0) {
    return invalid_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  }
  return out;
}

ParseResult parse_completion_request(std::string_view body, const ParseDefaults& defaults) {
  auto parsed = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return std::move(*e);
  const Json& obj = std::get<Json>(parsed);
  ParsedRequest out;
  out.endpoint = Endpoint::kCompletions;
  if (MaybeError e = read_common(obj, defaults, out)) return *e;
  if (MaybeError e = read_response_format(obj, body, out.sampling)) return *e;
  if (MaybeError e = read_prompts(obj, out.prompts)) return *e;
  if (const Json* v = field(obj, "tools"); v && !(v->is_array() && v->empty())) {
    return invalid_request("'tools' are offered on /v1/chat/completions only", "tools");
  }
  bool logprobs_given = false;
  if (MaybeError e = read_int32(obj, "logprobs", 0, kMaxCompletionLogprobs, out.top_logprobs, &logprobs_given)) {
    return *e;
  }
  out.logprobs = logprobs_given;
  if (MaybeError e = read_bool(obj, "echo", out.echo)) return *e;
  return out;
}

}  // namespace kvscope::server
