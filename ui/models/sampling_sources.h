// Where each sampling value of a conversation comes from: the conversation
// itself (the user set it), the model file's recommendation, or kvscope's
// defaults; and the header line that says so ("model file: temperature 0.6 ·
// kvscope defaults: top-k 40, …"). Also defines ConversationSettings'
// chosenFields() / withDefaults(). Qt Core only.
//   tested by tests/ui/conversation_settings_test.cpp
#pragma once

#include <QString>
#include <QStringList>

#include "kvscope/sampling_defaults.h"
#include "models/conversation_settings.h"

namespace kvscope::ui {

enum class SamplingSource { Conversation, ModelFile, Kvscope };

// Whether recommendable field `field` differs between a and b.
bool samplingFieldDiffers(const QString& field, const kvscope::SamplingParams& a, const kvscope::SamplingParams& b);

// The fields of `stored` (recommendable fields a setting stored without
// "chosen" holds a value for) whose values differ from the chat's defaults
// before kvscope took them from model files (temperature 0.7, top-k 40,
// top-p 0.95, min-p 0.05, repetition penalty 1 over 64 tokens): what such a
// setting is taken to have chosen.
QStringList legacyChosenFields(const kvscope::SamplingParams& sampling, const QStringList& stored);

SamplingSource samplingSourceOf(const ConversationSettings& settings, const QString& field,
                                const kvscope::SamplingDefaults& defaults);

// The header's sampling part for settings already resolved with `defaults`
// (ConversationSettings::withDefaults): one "source: values" entry per source
// that supplies a value, in the order conversation, model file, kvscope
// defaults; values of top-k, top-p and min-p are left out when greedy. Then
// the presence and frequency penalties and the seed, when not off.
// Plain text (callers escape it for rich text).
QStringList samplingSummary(const ConversationSettings& settings, const kvscope::SamplingDefaults& defaults);

}  // namespace kvscope::ui
