// ConversationSettings: what one conversation sends with each prompt (system
// prompt, sampling parameters, number of parallel replies), as a plain value.
// It travels as JSON (one column of the chat store, or a file) and the app's
// defaults for new conversations live in QSettings group "chat". Everything
// read from outside is checked: wrong types and out-of-range values give a
// message naming the field, never a crash. Qt Core only.
//   tested by tests/ui/conversation_settings_test.cpp
#pragma once

#include <optional>

#include <QString>
#include <QStringList>

#include "kvscope/result.h"
#include "kvscope/sampling_params.h"

class QSettings;

namespace kvscope::ui {

struct ConversationSettings {
  static constexpr int kMinReplies = 1;
  static constexpr int kMaxReplies = 8;

  QString system_prompt;           // empty: no system message
  kvscope::SamplingParams sampling = chatSampling();
  int n = 1;                       // parallel replies to one prompt, kMinReplies..kMaxReplies

  // The engine's sampling defaults with the values the chat has always used:
  // a little cooler than the engine (0.7) and longer replies (512 tokens).
  static kvscope::SamplingParams chatSampling();

  // Ok, or a message naming the first bad field (n, then SamplingParams).
  kvscope::Status validate() const;

  // A JSON object with one key per field; stop strings are an array.
  QString toJson() const;
  // Missing keys take the defaults above; a key of the wrong type, a value out
  // of range or text that is not a JSON object gives nullopt and *error names
  // the field (error may be null).
  static std::optional<ConversationSettings> fromJson(const QString& json, QString* error);

  bool operator==(const ConversationSettings& other) const;
};

// The name of the field a SamplingParams::validate() or
// ConversationSettings::validate() message is about ("top_p", "stop", "n"),
// or an empty string when the message names none of them. The editors use it
// to show a message next to the offending control.
QString conversationFieldOf(const std::string& message);

// Chat defaults for new conversations, QSettings group "chat". Values that are
// missing, unreadable or out of range fall back to the defaults one field at a
// time; each such fallback adds a line to *problems (may be null) and is logged.
ConversationSettings loadChatDefaults(QSettings& settings, QStringList* problems = nullptr);
void saveChatDefaults(QSettings& settings, const ConversationSettings& chat);

}  // namespace kvscope::ui
