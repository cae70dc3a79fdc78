// Request parsing for the OpenAI-compatible endpoints: a request body (bytes
// as received) -> a ParsedRequest the server hands to the engine, or the
// ApiError (400) that says which field is wrong. No sockets and no engine, so
// the unit tests and the fuzzer (tests/fuzz/request_parser_fuzzer.cpp) call it
// directly; whatever the bytes, it returns one of the two, never throws.
//
// Supported fields (docs/server.md lists them with what is not supported):
//   both:  model, stream, stream_options.include_usage, n, max_tokens,
//          max_completion_tokens, temperature, top_p, stop, seed,
//          presence_penalty, frequency_penalty, and the extensions top_k,
//          min_p, repetition_penalty, repeat_last_n, ignore_eos;
//   chat:  messages (roles system/developer/user/assistant/tool; content a
//          string or text parts; assistant tool_calls, tool turns'
//          tool_call_id), tools with tool_choice auto or none, logprobs
//          (bool), top_logprobs (0..20);
//   both:  response_format text, json_object or json_schema (grammar-
//          constrained decoding, docs/json-schema.md; a schema outside the
//          supported subset is a 400 with param "response_format");
//   completions: prompt (a string, strings, token ids or lists of them),
//          logprobs (0..5 most likely tokens), echo (with logprobs, the
//          prompt's tokens scored too), max_tokens 0 (the prompt only).
// Fields that would change the output and are not implemented (tool_choice
// required or named, logit_bias, suffix, best_of > n) are
// refused with a 400 rather than ignored. Other unknown fields are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api_error.h"
#include "kvscope/chat_message.h"
#include "kvscope/sampling_params.h"

namespace kvscope::server {

enum class Endpoint { kChatCompletions, kCompletions };

// One prompt of /v1/completions: text (the engine adds BOS and tokenises) or ids.
struct ParsedPrompt {
  std::string text;
  std::vector<int32_t> tokens;
  bool is_tokens = false;
};

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string model;
  std::vector<ChatMessage> messages;  // chat: the conversation, rendered by the engine's chat template
  std::string tools_json;             // chat: the tools offered (validated JSON array), "" for none
  bool tool_calls_allowed = true;     // chat: false with tool_choice "none" (tools shown, reply not read for calls)
  std::vector<ParsedPrompt> prompts;  // completions: one engine request each (OpenAI's batch of prompts)
  SamplingParams sampling;            // validated; the defaults where the request says nothing
  int32_t n = 1;                      // completions per prompt
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  bool logprobs = false;
  int32_t top_logprobs = 0;  // alternatives per token, with logprobs
  bool echo = false;         // completions: the prompt before the completion (token ids: their text)
};

struct ParseDefaults {
  // What a request that sets nothing gets (the server fills it from the
  // model's recommended sampling, with max_tokens = the context length).
  SamplingParams sampling;
};

// Limits on what one request may ask for (a bound on the work and memory one
// body can cause).
inline constexpr int32_t kMaxChoicesPerPrompt = 64;  // Engine::submit's limit on n
inline constexpr int32_t kMaxPrompts = 64;           // prompts in one /v1/completions body
inline constexpr int32_t kMaxStopStrings = 16;
inline constexpr size_t kMaxTools = 128;
inline constexpr int32_t kMaxChatTopLogprobs = 20;
inline constexpr int32_t kMaxCompletionLogprobs = 5;

// seed 0 means "pick a random seed" to the engine (SamplingParams::seed) but
// is an ordinary seed to OpenAI clients: the request's 0 becomes the
// engine's stand-in for it.
inline constexpr uint64_t kSeedForZero = kSeedStandingForZero;

using ParseResult = std::variant<ParsedRequest, ApiError>;

ParseResult parse_chat_request(std::string_view body, const ParseDefaults& defaults);
ParseResult parse_completion_request(std::string_view body, const ParseDefaults& defaults);

inline bool parse_ok(const ParseResult& r) { return std::holds_alternative<ParsedRequest>(r); }

}  // namespace kvscope::server
