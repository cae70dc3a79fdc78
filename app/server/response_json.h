// OpenAI's response objects, built from what a GenerationJob collected:
//   chat:        chat.completion / chat.completion.chunk (delta.role, delta.content,
//                delta.tool_calls; message.tool_calls)
//   completions: text_completion (whole, and each streamed chunk)
// with `usage` (prompt, completion and cached prompt tokens) and, when asked
// for, `logprobs` in each endpoint's own shape. Pure functions of values, so
// the tests can check shapes without a socket.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvscope/request.h"
#include "logprobs.h"
#include "request_parser.h"

namespace kvscope::server {

// What every object of one response repeats.
struct ResponseContext {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string id;        // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;   // Unix seconds
  std::string model;
  bool logprobs = false;
};

// One choice as it accumulates.
struct ChoiceResult {
  std::string text;                    // the reply's text (without its tool calls once they are parsed out)
  std::vector<ToolCall> tool_calls;    // chat with tools: the calls the reply made (finish_reason "tool_calls")
  std::vector<TokenLogprob> logprobs;  // with logprobs: one per generated token
  FinishReason finish = FinishReason::None;
  std::string error;
  RequestStats stats;  // from the finishing event
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // usage.prompt_tokens_details.cached_tokens
};

// Characters (Unicode code points) that begin in `bytes`: completions
// logprobs' text_offset counts characters, as OpenAI's and vLLM's do
// (clients slice Python strings by it), not UTF-8 bytes. Used on the echoed
// prompt; a generated token's offset comes from the engine (TokenEvent).
size_t utf8_chars_started(std::string_view bytes);

// "stop" / "length"; null while running (and for Cancelled / Error, which never reach a client as a finish).
nlohmann::ordered_json finish_reason_json(FinishReason reason);

nlohmann::ordered_json usage_json(const Usage& usage);

// The whole response of a request that did not stream.
nlohmann::ordered_json full_response(const ResponseContext& ctx, const std::vector<ChoiceResult>& choices,
                                     const Usage& usage);

// One streamed chunk for choice `index`: chat puts `text` in delta.content
// (and `role` in delta.role when given), completions in "text". `logprobs`
// are this chunk's tokens' entries. With include_usage every chunk carries
// "usage": null, as OpenAI's do.
nlohmann::ordered_json stream_chunk(const ResponseContext& ctx, int32_t index, const std::string& text,
                            const std::optional<std::string>& role, const std::vector<TokenLogprob>& logprobs,
                            FinishReason finish, bool include_usage);

// The streamed end of a reply that called tools: one chunk whose delta
// carries every call whole (index, id, type, function name and arguments),
// then the finishing chunk with finish_reason "tool_calls".
std::vector<nlohmann::ordered_json> tool_call_chunks(const ResponseContext& ctx, int32_t index,
                                                     const std::vector<ToolCall>& calls, bool include_usage);

// The last chunk with stream_options.include_usage: no choices, the usage.
nlohmann::ordered_json usage_chunk(const ResponseContext& ctx, const Usage& usage);

// "data: <json>\n\n", the server-sent-event framing of one chunk.
std::string sse_event(const nlohmann::ordered_json& chunk);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// JSON text with invalid UTF-8 (a token's partial character) replaced, never thrown on.
std::string dump(const nlohmann::ordered_json& j);

}  // namespace kvscope::server
