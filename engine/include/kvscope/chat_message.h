// One turn of a conversation, as the chat templates take it.
#pragma once

#include <string>

namespace kvscope {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

}  // namespace kvscope
