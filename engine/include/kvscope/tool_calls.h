// Tool calls in a model's reply. Chat templates that offer tools teach the
// model one of three ways to write a call; which one follows from the
// template's text (detect_tool_call_format), and parse_tool_calls reads the
// calls back out of a finished reply, so a front end can return them as
// OpenAI's message.tool_calls instead of as text.
//
//   Hermes      <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>   (Qwen 2.5, Qwen 3)
//   Llama3Json  {"name": "f", "parameters": {...}}  the whole reply,
//               optionally after <|python_tag|>                                 (Llama 3.1-3.3)
//   Mistral     [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]           (Mistral Nemo)
//
// The markers may be control tokens a reply's text leaves out (Mistral's
// [TOOL_CALLS] is one), so each parser also accepts the bare JSON that follows
// its marker. A reply that is not a well-formed call stays text: a model that
// half-writes a call gets its words back, not a made-up call.
//
// Tests: tests/engine/tokenizer/tool_calls_test.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/chat_message.h"

namespace kvscope {

enum class ToolCallFormat {
  None,  // the template does not offer tools
  Hermes,
  Llama3Json,
  Mistral,
};

// "none", "hermes", "llama3_json", "mistral".
const char* tool_call_format_name(ToolCallFormat format);

// The format a Jinja chat template teaches, from its text; None when it
// never reads `tools` or writes none of the known call markers.
ToolCallFormat detect_tool_call_format(std::string_view template_text);

// A reply split into its text and its calls. Call ids are left empty (the
// front end names them); arguments are compact JSON text of an object.
struct ParsedReply {
  std::string content;               // the reply without its calls (trimmed when calls were found)
  std::vector<ToolCall> tool_calls;  // in the order written
};
ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view reply);

// How many leading bytes of `reply` (a reply so far, while it streams) are
// text for certain: everything before the first place a call may begin (a
// call marker, a prefix of one at the end, or, for formats whose call is the
// whole reply, bare JSON at its start). A streaming front end sends those as
// content and holds the rest until the reply ends.
size_t streamable_prefix(ToolCallFormat format, std::string_view reply);

}  // namespace kvscope
