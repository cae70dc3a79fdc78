// Conversation export: one stored conversation as readable Markdown or as a
// JSON document, and an atomic file write for either (Qt Core only, part of
// kvscope_ui_store). Pure functions of what ChatStore returns, so the tests
// need no database:
//   ctest --test-dir build -R conversation_export_test
//
// The JSON document (UTF-8, keys sorted):
//   { "format": "kvscope-conversation", "version": 1,
//     "title", "system_prompt",
//     "created_at", "updated_at",          ISO 8601 UTC with ms, or null
//     "settings": {...} | [...] | "text" | null   object when settings_json parses,
//                                                  else the text, null when empty
//     "messages": [ { "role", "content", "created_at",
//                     "stats": {...} | "text" | null,   like settings
//                     "alternatives": ["..."],           [] = just content
//                     "selected": 0 } ] }
#pragma once

#include <vector>

#include <QByteArray>
#include <QString>

#include "models/chat_store.h"

namespace kvscope::ui {

inline constexpr char kConversationExportFormat[] = "kvscope-conversation";
inline constexpr int kConversationExportVersion = 1;

// Title, timestamps, system prompt (the conversation's, else a "system_prompt"
// string in the settings), the settings keys found in `settings_json` (shown
// raw when it is not a JSON object), then each message under a numbered
// heading with its alternatives ("Alternative 2 of 3", the selected one marked)
// and a one-line summary of its stats.
QString conversationToMarkdown(const ConversationSummary& conversation, const QString& settings_json,
                               const std::vector<StoredMessage>& messages);

// The JSON document described above, indented.
QByteArray conversationToJson(const ConversationSummary& conversation, const QString& settings_json,
                              const std::vector<StoredMessage>& messages);

// Writes `bytes` to `path` atomically (a temporary file renamed over it, so a
// failure never leaves half a file). False with `*error` (when not null) set
// to a message naming the file and the reason.
bool writeExportFile(const QString& path, const QByteArray& bytes, QString* error);

// A conversation title as the file name (without extension) an export
// suggests: no path separators or characters other systems refuse ("1/2"
// would name a folder), no trailing dots ("colors." + ".md" gave "..md");
// "conversation" when nothing is left.
QString exportFileStem(const QString& title);

}  // namespace kvscope::ui
