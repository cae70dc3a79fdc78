#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "kvscope/tool_calls.h"

namespace kvscope {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

size_t leading_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

std::optional<Json> parse_json(std::string_view text) {
  Json j = Json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// {"name": "...", <args_key>: {...}}; arguments given as a JSON string of an
// object (some models double-encode) are accepted too. nullopt otherwise.
std::optional<ToolCall> call_from_json(const Json& j, std::string_view args_key) {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  Json args = Json::object();
  if (const auto a = j.find(std::string(args_key)); a != j.end()) {
    if (a->is_string()) {
      std::optional<Json> inner = parse_json(a->get_ref<const std::string&>());
      if (!inner) return std::nullopt;
      args = std::move(*inner);
    } else {
      args = *a;
    }
  }
  if (!args.is_object()) return std::nullopt;
  ToolCall call;
  call.name = name->get<std::string>();
  call.arguments = args.dump();
  return call;
}

ParsedReply text_only(std::string_view reply) { return ParsedReply{std::string(reply), {}}; }

ParsedReply parse_hermes(std::string_view reply) {
  ParsedReply out;
  std::string content;
  size_t pos = 0;
  while (true) {
    const size_t open = reply.find(kHermesOpen, pos);
    if (open == std::string_view::npos) {
      content.append(reply.substr(pos));
      break;
    }
    content.append(reply.substr(pos, open - pos));
    const size_t body = open + kHermesOpen.size();
    size_t close = reply.find(kHermesClose, body);
    // A reply that stops right after the call (the stop token may have cut
    // the closing tag) still holds a complete call.
    const size_t body_end = close == std::string_view::npos ? reply.size() : close;
    std::optional<Json> j = parse_json(trim(reply.substr(body, body_end - body)));
    std::optional<ToolCall> call = j ? call_from_json(*j, "arguments") : std::nullopt;
    if (!call) return text_only(reply);
    out.tool_calls.push_back(std::move(*call));
    if (close == std::string_view::npos) break;
    pos = close + kHermesClose.size();
  }
  if (out.tool_calls.empty()) {
    // The marker may be a token the reply's text leaves out: a bare call.
    std::optional<Json> j = parse_json(trim(reply));
    std::optional<ToolCall> call = j ? call_from_json(*j, "arguments") : std::nullopt;
    if (!call) return text_only(reply);
    out.tool_calls.push_back(std::move(*call));
    return out;
  }
  out.content = std::string(trim(content));
  return out;
}

ParsedReply parse_llama3(std::string_view reply) {
  std::string_view body = trim(reply);
  if (body.starts_with(kPythonTag)) body = trim(body.substr(kPythonTag.size()));
  std::optional<Json> j = parse_json(body);
  if (!j) return text_only(reply);
  // Llama 3.1's template documents "parameters"; some fine-tunes write "arguments".
  std::optional<ToolCall> call = call_from_json(*j, j->contains("parameters") ? "parameters" : "arguments");
  if (!call) return text_only(reply);
  ParsedReply out;
  out.tool_calls.push_back(std::move(*call));
  return out;
}

ParsedReply parse_mistral(std::string_view reply) {
  std::string_view body = trim(reply);
  if (body.starts_with(kMistralMarker)) body = trim(body.substr(kMistralMarker.size()));
  std::optional<Json> j = parse_json(body);
  if (!j || !j->is_array() || j->empty()) return text_only(reply);
  ParsedReply out;
  for (const Json& item : *j) {
    std::optional<ToolCall> call = call_from_json(item, "arguments");
    if (!call) return text_only(reply);
    out.tool_calls.push_back(std::move(*call));
  }
  return out;
}

// Length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker_at_end(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::None: return "none";
    case ToolCallFormat::Hermes: return "hermes";
    case ToolCallFormat::Llama3Json: return "llama3_json";
    case ToolCallFormat::Mistral: return "mistral";
  }
  return "none";
}

ToolCallFormat detect_tool_call_format(std::string_view t) {
  if (t.find("tools") == std::string_view::npos) return ToolCallFormat::None;
  if (t.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::Hermes;
  if (t.find(kMistralMarker) != std::string_view::npos) return ToolCallFormat::Mistral;
  // Llama 3.1-3.3 describe the call as {"name": ..., "parameters": ...}
  // inside their header-id turns.
  if (t.find("<|start_header_id|>") != std::string_view::npos && t.find("\"parameters\"") != std::string_view::npos) {
    return ToolCallFormat::Llama3Json;
  }
  return ToolCallFormat::None;
}

ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view reply) {
  switch (format) {
    case ToolCallFormat::None: return text_only(reply);
    case ToolCallFormat::Hermes: return parse_hermes(reply);
    case ToolCallFormat::Llama3Json: return parse_llama3(reply);
    case ToolCallFormat::Mistral: return parse_mistral(reply);
  }
  return text_only(reply);
}

size_t streamable_prefix(ToolCallFormat format, std::string_view reply) {
  const std::string_view start = reply.substr(leading_space(reply));
  switch (format) {
    case ToolCallFormat::None: return reply.size();
    case ToolCallFormat::Hermes: {
      if (start.starts_with("{")) return 0;  // a bare call
      const size_t open = reply.find(kHermesOpen);
      if (open != std::string_view::npos) return open;
      return reply.size() - partial_marker_at_end(reply, kHermesOpen);
    }
    case ToolCallFormat::Llama3Json:
    case ToolCallFormat::Mistral: {
      // The call is the whole reply: anything that may begin one is held.
      const std::string_view marker = format == ToolCallFormat::Mistral ? kMistralMarker : kPythonTag;
      const char opener = format == ToolCallFormat::Mistral ? '[' : '{';
      if (start.empty() || start.front() == opener || start.starts_with(marker) ||
          marker.starts_with(start)) {
        return 0;
      }
      return reply.size();
    }
  }
  return reply.size();
}

}  // namespace kvscope
