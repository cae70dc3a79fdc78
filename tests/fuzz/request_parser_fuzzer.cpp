// libFuzzer target for the server's request parsing (app/server/
// request_parser.h): any body, as both endpoints read it, must become a
// ParsedRequest the engine accepts or a 4xx ApiError with a message and a
// body that is valid JSON; never a crash, a hang or an exception.
// Run: scripts/run_fuzz.sh [seconds]  (seeds: small request bodies; dictionary: request_parser.dict)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "request_parser.h"

namespace {

void check(const kvscope::server::ParseResult& result) {
  using namespace kvscope::server;
  if (const ApiError* e = std::get_if<ApiError>(&result)) {
    if (e->status < 400 || e->status > 499 || e->message.empty()) __builtin_trap();
    // The error goes out as JSON text: it must parse back, whatever bytes the message quotes.
    if (!nlohmann::json::accept(e->body())) __builtin_trap();
    return;
  }
  const ParsedRequest& r = std::get<ParsedRequest>(result);
  if (!r.sampling.validate().ok()) __builtin_trap();  // Engine::submit would refuse it
  if (r.n < 1 || r.n > kMaxChoicesPerPrompt) __builtin_trap();
  if (r.endpoint == Endpoint::kChatCompletions && r.messages.empty()) __builtin_trap();
  if (r.endpoint == Endpoint::kCompletions && (r.prompts.empty() || r.prompts.size() > kMaxPrompts)) __builtin_trap();
  if (r.top_logprobs < 0 || r.top_logprobs > kMaxChatTopLogprobs) __builtin_trap();
  for (const ParsedPrompt& p : r.prompts) {
    if (p.is_tokens && p.tokens.empty()) __builtin_trap();
    for (int32_t t : p.tokens) {
      if (t < 0) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  kvscope::server::ParseDefaults defaults;
  defaults.sampling.max_tokens = 4096;
  check(kvscope::server::parse_chat_request(body, defaults));
  check(kvscope::server::parse_completion_request(body, defaults));
  return 0;
}
