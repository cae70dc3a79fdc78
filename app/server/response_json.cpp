// OpenAI response objects (see response_json.h).
#include "response_json.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

namespace kvscope::server {
namespace {

using Json = nlohmann::ordered_json;

Json bytes_json(const std::string& bytes) {
  Json out = Json::array();
  for (unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}

// chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}], "refusal": null}
Json chat_logprobs(const std::vector<TokenLogprob>& lps) {
  Json content = Json::array();
  for (const TokenLogprob& lp : lps) {
    Json top = Json::array();
    for (size_t i = 0; i < lp.top.size(); ++i) {
      top.push_back({{"token", lp.top_bytes[i]}, {"logprob", lp.top[i].logprob}, {"bytes", bytes_json(lp.top_bytes[i])}});
    }
    content.push_back({{"token", lp.bytes}, {"logprob", lp.logprob}, {"bytes", bytes_json(lp.bytes)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

// A completions token as text: its bytes when they are UTF-8, else
// "bytes:\xe4\xb8" (OpenAI's form for part of a character). As the raw
// bytes, every such token became "\ufffd", and the alternatives of one
// position, keyed by token, collapsed into one key.
std::string completion_token(const std::string& bytes) {
  try {
    (void)Json(bytes).dump();  // strict: throws on invalid UTF-8
    return bytes;
  } catch (const Json::type_error&) {
    std::string out = "bytes:";
    for (unsigned char c : bytes) out += fmt::format("\\x{:02x}", c);
    return out;
  }
}

}  // namespace

size_t utf8_chars_started(std::string_view bytes) {
  return static_cast<size_t>(std::count_if(bytes.begin(), bytes.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
  }));
}

namespace {

// completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}
Json completion_logprobs(const std::vector<TokenLogprob>& lps) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(), offsets = Json::array();
  for (const TokenLogprob& lp : lps) {
    tokens.push_back(completion_token(lp.bytes));
    if (lp.scored) {
      token_logprobs.push_back(lp.logprob);
      Json alternatives = Json::object();
      for (size_t i = 0; i < lp.top.size(); ++i) alternatives[completion_token(lp.top_bytes[i])] = lp.top[i].logprob;
      // The chosen token is always among them, as OpenAI's completions
      // write it: up to `logprobs` + 1 entries. (A token that renders as
      // an alternative's text already has that entry.)
      const std::string chosen = completion_token(lp.bytes);
      if (!alternatives.contains(chosen)) alternatives[chosen] = lp.logprob;
      top.push_back(alternatives);
    } else {
      token_logprobs.push_back(nullptr);
      top.push_back(nullptr);
    }
    offsets.push_back(lp.text_offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

Json logprobs_json(const ResponseContext& ctx, const std::vector<TokenLogprob>& lps) {
  if (!ctx.logprobs) return nullptr;
  return ctx.endpoint == Endpoint::kChatCompletions ? chat_logprobs(lps) : completion_logprobs(lps);
}

Json header(const ResponseContext& ctx, const char* object) {
  return {{"id", ctx.id}, {"object", object}, {"created", ctx.created}, {"model", ctx.model}};
}

Json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json call = Json::object();
    if (with_index) call["index"] = i;
    call["id"] = calls[i].id;
    call["type"] = "function";
    call["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

Json finish_reason_json(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length:
    case FinishReason::ContextFull: return "length";
    default: return nullptr;
  }
}

Json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_prompt_tokens}}}};
}

Json full_response(const ResponseContext& ctx, const std::vector<ChoiceResult>& choices, const Usage& usage) {
  const bool chat = ctx.endpoint == Endpoint::kChatCompletions;
  Json out = header(ctx, chat ? "chat.completion" : "text_completion");
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    Json choice = {{"index", i}};
    if (chat) {
      // A turn that only calls tools has content null, as OpenAI's has.
      const bool calls = !c.tool_calls.empty();
      choice["message"] = {{"role", "assistant"},
                           {"content", calls && c.text.empty() ? Json(nullptr) : Json(c.text)},
                           {"refusal", nullptr}};
      if (calls) choice["message"]["tool_calls"] = tool_calls_json(c.tool_calls, /*with_index=*/false);
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = logprobs_json(ctx, c.logprobs);
    choice["finish_reason"] = c.tool_calls.empty() ? finish_reason_json(c.finish) : Json("tool_calls");
    list.push_back(std::move(choice));
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_json(usage);
  return out;
}

Json stream_chunk(const ResponseContext& ctx, int32_t index, const std::string& text,
                  const std::optional<std::string>& role, const std::vector<TokenLogprob>& logprobs,
                  FinishReason finish, bool include_usage) {
  const bool chat = ctx.endpoint == Endpoint::kChatCompletions;
  Json out = header(ctx, chat ? "chat.completion.chunk" : "text_completion");
  Json choice = {{"index", index}};
  if (chat) {
    Json delta = Json::object();
    if (role) delta["role"] = *role;
    // The finishing chunk has an empty delta, as OpenAI's has.
    if (role || !text.empty() || finish == FinishReason::None) delta["content"] = text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs.empty() ? Json(nullptr) : logprobs_json(ctx, logprobs);
  choice["finish_reason"] = finish_reason_json(finish);
  out["choices"] = Json::array({std::move(choice)});
  if (include_usage) out["usage"] = nullptr;
  return out;
}

std::vector<Json> tool_call_chunks(const ResponseContext& ctx, int32_t index, const std::vector<ToolCall>& calls,
                                   bool include_usage) {
  std::vector<Json> out;
  for (const bool finishing : {false, true}) {
    Json chunk = header(ctx, "chat.completion.chunk");
    Json delta = Json::object();
    if (!finishing) delta["tool_calls"] = tool_calls_json(calls, /*with_index=*/true);
    chunk["choices"] = Json::array({{{"index", index},
                                     {"delta", std::move(delta)},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finishing ? Json("tool_calls") : Json(nullptr)}}});
    if (include_usage) chunk["usage"] = nullptr;
    out.push_back(std::move(chunk));
  }
  return out;
}

Json usage_chunk(const ResponseContext& ctx, const Usage& usage) {
  Json out = header(ctx, ctx.endpoint == Endpoint::kChatCompletions ? "chat.completion.chunk" : "text_completion");
  out["choices"] = Json::array();
  out["usage"] = usage_json(usage);
  return out;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string sse_event(const Json& chunk) { return "data: " + dump(chunk) + "\n\n"; }

}  // namespace kvscope::server
