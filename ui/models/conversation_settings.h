// ConversationSettings: what one conversation sends with each prompt (system
// prompt, sampling parameters, number of parallel replies), as a plain value.
// It travels as JSON (one column of the chat store, or a file) and the app's
// defaults for new conversations live in QSettings group "chat". Everything
// read from outside is checked: wrong types and out-of-range values give a
// message naming the field, never a crash. Qt Core only.
//
// Sampling fields a model file can recommend (temperature, top_k, top_p,
// min_p, repetition_penalty, repeat_last_n) are either the conversation's own
// (`chosen`, or any value that differs from `applied_defaults`) or follow the
// defaults in force, which withDefaults() fills in: the model file's
// recommendation, else kvscope's (kvscope/sampling_defaults.h). So a new
// conversation on a model that recommends temperature 0.6 samples at 0.6, and
// one where the user set 1.0 keeps 1.0 on every model.
//   tested by tests/ui/conversation_settings_test.cpp
#pragma once

#include <optional>

#include <QString>
#include <QStringList>

#include "kvscope/result.h"
#include "kvscope/sampling_defaults.h"
#include "kvscope/sampling_params.h"

class QSettings;

namespace kvscope::ui {

struct ConversationSettings {
  static constexpr int kMinReplies = 1;
  static constexpr int kMaxReplies = 8;

  QString system_prompt;           // empty: no system message
  kvscope::SamplingParams sampling = chatSampling();
  int n = 1;                       // parallel replies to one prompt, kMinReplies..kMaxReplies
  // Recommendable fields set by the user, sorted; see chosenFields().
  QStringList chosen;
  // The defaults last filled into `sampling` (withDefaults()); a recommendable
  // field whose value differs from its default here was set by the user.
  kvscope::SamplingParams applied_defaults = chatSampling();

  // kvscope's sampling defaults (llama.cpp's plus a repetition penalty, see
  // kvscope_sampling_defaults()) with replies of up to 512 tokens.
  static kvscope::SamplingParams chatSampling();
  // The SamplingParams fields a model file can recommend, by validate()'s names.
  static QStringList recommendableFields();
  // `chosen` plus every recommendable field whose value differs from
  // applied_defaults, sorted.
  QStringList chosenFields() const;
  // These settings with every recommendable field that is not chosen set to
  // `defaults` (and applied_defaults to them); chosen becomes chosenFields().
  ConversationSettings withDefaults(const kvscope::SamplingParams& defaults) const;

  // Ok, or a message naming the first bad field (n, then SamplingParams).
  kvscope::Status validate() const;

  // A JSON object with one key per field; stop strings are an array and
  // "chosen" lists chosenFields(). JSON written before "chosen" existed (every
  // value stored) counts as chosen only the fields that differ from the chat's
  // defaults of that time (temperature 0.7, top-k 40, top-p 0.95, min-p 0.05,
  // no repetition penalty over 64 tokens), so old conversations pick up the
  // model's and kvscope's defaults instead of keeping the ones that looped.
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
