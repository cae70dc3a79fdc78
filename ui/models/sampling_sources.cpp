// Sampling sources and ConversationSettings' default resolution (see
// sampling_sources.h).
#include "models/sampling_sources.h"

#include <algorithm>

namespace kvscope::ui {

QStringList ConversationSettings::recommendableFields() {
  QStringList fields;
  for (std::string_view f : kvscope::kRecommendableSamplingFields)
    fields << QString::fromLatin1(f.data(), static_cast<qsizetype>(f.size()));
  return fields;
}

QStringList ConversationSettings::chosenFields() const {
  QStringList fields;
  for (const QString& f : recommendableFields()) {
    if (chosen.contains(f) || samplingFieldDiffers(f, sampling, applied_defaults)) fields << f;
  }
  std::sort(fields.begin(), fields.end());
  return fields;
}

ConversationSettings ConversationSettings::withDefaults(const kvscope::SamplingParams& defaults) const {
  ConversationSettings c = *this;
  c.chosen = chosenFields();
  for (const QString& f : recommendableFields()) {
    if (c.chosen.contains(f)) continue;
    const std::string name = f.toStdString();
    kvscope::copy_sampling_field(name, defaults, c.sampling);
    kvscope::copy_sampling_field(name, defaults, c.applied_defaults);
  }
  return c;
}

bool samplingFieldDiffers(const QString& field, const kvscope::SamplingParams& a, const kvscope::SamplingParams& b) {
  if (field == QLatin1String("temperature")) return a.temperature != b.temperature;
  if (field == QLatin1String("top_k")) return a.top_k != b.top_k;
  if (field == QLatin1String("top_p")) return a.top_p != b.top_p;
  if (field == QLatin1String("min_p")) return a.min_p != b.min_p;
  if (field == QLatin1String("repetition_penalty")) return a.repetition_penalty != b.repetition_penalty;
  if (field == QLatin1String("repeat_last_n")) return a.repeat_last_n != b.repeat_last_n;
  return false;
}

QStringList legacyChosenFields(const kvscope::SamplingParams& sampling, const QStringList& stored) {
  kvscope::SamplingParams legacy;
  legacy.temperature = 0.7f;
  legacy.top_k = 40;
  legacy.top_p = 0.95f;
  legacy.min_p = 0.05f;
  legacy.repetition_penalty = 1.0f;
  legacy.repeat_last_n = 64;
  QStringList fields;
  for (const QString& f : ConversationSettings::recommendableFields()) {
    if (stored.contains(f) && samplingFieldDiffers(f, sampling, legacy)) fields << f;
  }
  return fields;
}

SamplingSource samplingSourceOf(const ConversationSettings& settings, const QString& field,
                                const kvscope::SamplingDefaults& defaults) {
  if (settings.chosenFields().contains(field)) return SamplingSource::Conversation;
  return defaults.is_from_model(field.toStdString()) ? SamplingSource::ModelFile : SamplingSource::Kvscope;
}

namespace {

QString number(float v) { return QString::number(static_cast<double>(v), 'g', 3); }

// The text of one field's value, or empty when it does not matter (greedy
// decoding ignores top-k, top-p and min-p).
QString valueText(const QString& field, const kvscope::SamplingParams& s) {
  const bool greedy = s.temperature == 0.0f;
  if (field == QLatin1String("temperature")) return greedy ? QStringLiteral("greedy") : "temperature " + number(s.temperature);
  if (greedy && (field == QLatin1String("top_k") || field == QLatin1String("top_p") || field == QLatin1String("min_p")))
    return {};
  if (field == QLatin1String("top_k")) return s.top_k > 0 ? QStringLiteral("top-k %1").arg(s.top_k) : "top-k off";
  if (field == QLatin1String("top_p")) return s.top_p < 1.0f ? "top-p " + number(s.top_p) : "top-p off";
  if (field == QLatin1String("min_p")) return s.min_p > 0.0f ? "min-p " + number(s.min_p) : "min-p off";
  if (field == QLatin1String("repetition_penalty"))
    return s.repetition_penalty != 1.0f ? "repeat penalty " + number(s.repetition_penalty) : "no repeat penalty";
  if (field == QLatin1String("repeat_last_n")) {
    if (s.repetition_penalty == 1.0f && s.presence_penalty == 0.0f && s.frequency_penalty == 0.0f) return {};
    if (s.repeat_last_n == -1) return QStringLiteral("over all tokens");
    return s.repeat_last_n == 0 ? QStringLiteral("penalty window off")
                                : QStringLiteral("over the last %1 tokens").arg(s.repeat_last_n);
  }
  return {};
}

}  // namespace

QStringList samplingSummary(const ConversationSettings& settings, const kvscope::SamplingDefaults& defaults) {
  const std::pair<SamplingSource, QString> sources[] = {{SamplingSource::Conversation, QStringLiteral("this conversation")},
                                                        {SamplingSource::ModelFile, QStringLiteral("model file")},
                                                        {SamplingSource::Kvscope, QStringLiteral("kvscope defaults")}};
  QStringList entries;
  for (const auto& [source, name] : sources) {
    QStringList values;
    for (const QString& field : ConversationSettings::recommendableFields()) {
      if (samplingSourceOf(settings, field, defaults) != source) continue;
      const QString text = valueText(field, settings.sampling);
      if (!text.isEmpty()) values << text;
    }
    if (!values.isEmpty()) entries << QStringLiteral("%1: %2").arg(name, values.join(QStringLiteral(", ")));
  }
  // Values no model file recommends, shown when they are not off: a reply
  // shaped by a frequency penalty of 2 must say so too.
  const kvscope::SamplingParams& s = settings.sampling;
  QStringList others;
  if (s.presence_penalty != 0.0f) others << "presence penalty " + number(s.presence_penalty);
  if (s.frequency_penalty != 0.0f) others << "frequency penalty " + number(s.frequency_penalty);
  if (s.seed != 0) others << QStringLiteral("seed %1").arg(s.seed);
  if (!others.isEmpty()) entries << others.join(QStringLiteral(", "));
  return entries;
}

}  // namespace kvscope::ui
