// One turn of a conversation, as the chat templates take it: text, and for
// tool use the calls an assistant turn made or the result a tool turn gives.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kvscope {

// A function call the model asked for (OpenAI's tool_calls[i].function).
struct ToolCall {
  std::string id;         // chosen by the front end; the tool turn answering it repeats it
  std::string name;       // the function's name
  std::string arguments;  // JSON text of the arguments object, as the model wrote it
};

struct ChatMessage {
  ChatMessage() = default;
  // A plain text turn (most turns are).
  ChatMessage(std::string role_, std::string content_) : role(std::move(role_)), content(std::move(content_)) {}

  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant turns: the calls it made (content may be empty)
  std::string tool_call_id;          // tool turns: the call this is the result of
  std::string name;                  // tool turns: the function's name, when known
};

}  // namespace kvscope
