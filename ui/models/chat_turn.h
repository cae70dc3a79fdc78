// ChatTurn: one message of a conversation as the chat shows and saves it. An
// assistant turn asked for with n > 1 keeps all its alternative replies; its
// content is the one selected. Engine-bound history (ChatHistory) is made
// from the contents only.
#pragma once

#include <string>
#include <vector>

#include <QString>
#include <QStringList>

namespace kvscope::ui {

struct ChatTurn {
  std::string role;          // "user", "assistant" (or "system" from an older store)
  QString content;           // for an assistant turn with alternatives: the selected one
  QStringList alternatives;  // all n replies when n > 1; empty otherwise
  int selected = 0;          // index into alternatives
  QString stats_json;        // MessageStats list (models/message_stats.h), assistant turns
};

using ChatTurns = std::vector<ChatTurn>;

}  // namespace kvscope::ui
