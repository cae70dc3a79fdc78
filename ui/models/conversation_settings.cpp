// ConversationSettings <-> JSON and QSettings (see conversation_settings.h).
#include "models/conversation_settings.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <QByteArray>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>

#include "models/sampling_sources.h"

namespace kvscope::ui {
namespace {

// Largest integer a JSON number (a double) holds exactly; larger seeds are
// written as strings of digits.
constexpr double kMaxExactJsonInteger = 9007199254740992.0;  // 2^53

// The shortest decimal that reads back as the same float, so that 0.7f is
// written "0.7" and not "0.699999988079071" in files people edit by hand.
double shortestDouble(float value) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return value;
  return QByteArray(buffer, static_cast<int>(end - buffer)).toDouble();
}

QString shortestText(float value) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return QString::number(value);
  return QString::fromLatin1(buffer, static_cast<int>(end - buffer));
}

bool sameSampling(const kvscope::SamplingParams& a, const kvscope::SamplingParams& b) {
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p && a.min_p == b.min_p &&
         a.repetition_penalty == b.repetition_penalty && a.repeat_last_n == b.repeat_last_n &&
         a.presence_penalty == b.presence_penalty && a.frequency_penalty == b.frequency_penalty &&
         a.seed == b.seed && a.max_tokens == b.max_tokens && a.stop == b.stop && a.ignore_eos == b.ignore_eos;
}

// Puts the default back into the field a validation message named; false
// when the field is unknown (the caller then starts over from the defaults).
bool resetField(ConversationSettings& c, const QString& field) {
  const ConversationSettings d;
  kvscope::SamplingParams& s = c.sampling;
  if (ConversationSettings::recommendableFields().contains(field)) {
    // Back to following the defaults.
    kvscope::copy_sampling_field(field.toStdString(), d.sampling, s);
    kvscope::copy_sampling_field(field.toStdString(), d.sampling, c.applied_defaults);
    c.chosen.removeAll(field);
    return true;
  }
  if (field == QLatin1String("n")) c.n = d.n;
  else if (field == QLatin1String("temperature")) s.temperature = d.sampling.temperature;
  else if (field == QLatin1String("top_k")) s.top_k = d.sampling.top_k;
  else if (field == QLatin1String("top_p")) s.top_p = d.sampling.top_p;
  else if (field == QLatin1String("min_p")) s.min_p = d.sampling.min_p;
  else if (field == QLatin1String("repetition_penalty")) s.repetition_penalty = d.sampling.repetition_penalty;
  else if (field == QLatin1String("repeat_last_n")) s.repeat_last_n = d.sampling.repeat_last_n;
  else if (field == QLatin1String("presence_penalty")) s.presence_penalty = d.sampling.presence_penalty;
  else if (field == QLatin1String("frequency_penalty")) s.frequency_penalty = d.sampling.frequency_penalty;
  else if (field == QLatin1String("max_tokens")) s.max_tokens = d.sampling.max_tokens;
  else if (field == QLatin1String("stop")) s.stop = d.sampling.stop;
  else return false;
  return true;
}

// Reads one field of a JSON object into `out`; false with *error set when the
// key is there with the wrong type or a value the type cannot hold.
class JsonReader {
 public:
  JsonReader(QJsonObject object, QString* error) : object_(std::move(object)), error_(error) {}

  bool readString(const char* key, QString& out) {
    const QJsonValue v = object_.value(QLatin1String(key));
    if (v.isUndefined()) return true;
    if (!v.isString()) return fail(key, QStringLiteral("must be a string"));
    out = v.toString();
    return true;
  }
  bool readFloat(const char* key, float& out) {
    const QJsonValue v = object_.value(QLatin1String(key));
    if (v.isUndefined()) return true;
    if (!v.isDouble()) return fail(key, QStringLiteral("must be a number"));
    const double d = v.toDouble();
    if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max())
      return fail(key, QStringLiteral("must be a finite number"));
    out = static_cast<float>(d);
    return true;
  }
  bool readInt(const char* key, int32_t& out) {
    const QJsonValue v = object_.value(QLatin1String(key));
    if (v.isUndefined()) return true;
    const double d = v.toDouble();
    if (!v.isDouble() || d != std::trunc(d) || d < std::numeric_limits<int32_t>::min() ||
        d > std::numeric_limits<int32_t>::max())
      return fail(key, QStringLiteral("must be a whole number"));
    out = static_cast<int32_t>(d);
    return true;
  }
  bool readBool(const char* key, bool& out) {
    const QJsonValue v = object_.value(QLatin1String(key));
    if (v.isUndefined()) return true;
    if (!v.isBool()) return fail(key, QStringLiteral("must be true or false"));
    out = v.toBool();
    return true;
  }
  // A number up to 2^53 or a string of digits (for larger 64-bit seeds).
  bool readSeed(const char* key, uint64_t& out) {
    const QJsonValue v = object_.value(QLatin1String(key));
    if (v.isUndefined()) return true;
    if (v.isDouble()) {
      const double d = v.toDouble();
      if (d < 0 || d != std::trunc(d) || d > kMaxExactJsonInteger)
        return fail(key, QStringLiteral("must be a whole number >= 0 (0 = random)"));
      out = static_cast<uint64_t>(d);
      return true;
    }
    bool ok = false;
    const qulonglong value = v.toString().toULongLong(&ok);
    if (!v.isString() || !ok) return fail(key, QStringLiteral("must be a whole number >= 0 (0 = random)"));
    out = value;
    return true;
  }
  bool readStringList(const char* key, std::vector<std::string>& out) {
    const QJsonValue v = object_.value(QLatin1String(key));
    if (v.isUndefined()) return true;
    if (!v.isArray()) return fail(key, QStringLiteral("must be an array of strings"));
    std::vector<std::string> list;
    for (const QJsonValue& item : v.toArray()) {
      if (!item.isString()) return fail(key, QStringLiteral("must be an array of strings"));
      list.push_back(item.toString().toStdString());
    }
    out = std::move(list);
    return true;
  }

 private:
  bool fail(const char* key, const QString& what) {
    if (error_) *error_ = QStringLiteral("%1 %2").arg(QLatin1String(key), what);
    return false;
  }
  const QJsonObject object_;
  QString* error_;
};

// To the caller's list, which it reports; to the terminal when there is none.
void addProblem(QStringList* problems, const QString& problem) {
  if (problems) problems->append(problem);
  else qWarning("kvscope: chat settings: %s", qPrintable(problem));
}

// Every key saveChatDefaults writes.
const QStringList& chatKeys() {
  static const QStringList keys = {QStringLiteral("system_prompt"),     QStringLiteral("n"),
                                   QStringLiteral("temperature"),       QStringLiteral("top_k"),
                                   QStringLiteral("top_p"),             QStringLiteral("min_p"),
                                   QStringLiteral("repetition_penalty"), QStringLiteral("repeat_last_n"),
                                   QStringLiteral("presence_penalty"),  QStringLiteral("frequency_penalty"),
                                   QStringLiteral("seed"),              QStringLiteral("max_tokens"),
                                   QStringLiteral("stop"),              QStringLiteral("ignore_eos"),
                                   QStringLiteral("chosen")};
  return keys;
}

}  // namespace

kvscope::SamplingParams ConversationSettings::chatSampling() {
  kvscope::SamplingParams s = kvscope::kvscope_sampling_defaults();
  s.max_tokens = 512;
  return s;
}

kvscope::Status ConversationSettings::validate() const {
  if (n < kMinReplies || n > kMaxReplies) {
    return kvscope::Error{QStringLiteral("n must be in [%1, %2] (parallel replies), got %3")
                              .arg(kMinReplies)
                              .arg(kMaxReplies)
                              .arg(n)
                              .toStdString()};
  }
  // The engine takes 0 (score the prompt, no reply); a chat needs a reply.
  if (sampling.max_tokens < 1) {
    return kvscope::Error{QStringLiteral("max_tokens must be >= 1 (a reply of at least one token), got %1")
                              .arg(sampling.max_tokens)
                              .toStdString()};
  }
  return sampling.validate();
}

bool ConversationSettings::operator==(const ConversationSettings& other) const {
  return system_prompt == other.system_prompt && n == other.n && sameSampling(sampling, other.sampling) &&
         chosenFields() == other.chosenFields();
}

QString ConversationSettings::toJson() const {
  const kvscope::SamplingParams& s = sampling;
  QJsonArray stop;
  for (const std::string& text : s.stop) stop.append(QString::fromStdString(text));
  QJsonObject o;
  o.insert(QStringLiteral("system_prompt"), system_prompt);
  o.insert(QStringLiteral("n"), n);
  o.insert(QStringLiteral("temperature"), shortestDouble(s.temperature));
  o.insert(QStringLiteral("top_k"), s.top_k);
  o.insert(QStringLiteral("top_p"), shortestDouble(s.top_p));
  o.insert(QStringLiteral("min_p"), shortestDouble(s.min_p));
  o.insert(QStringLiteral("repetition_penalty"), shortestDouble(s.repetition_penalty));
  o.insert(QStringLiteral("repeat_last_n"), s.repeat_last_n);
  o.insert(QStringLiteral("presence_penalty"), shortestDouble(s.presence_penalty));
  o.insert(QStringLiteral("frequency_penalty"), shortestDouble(s.frequency_penalty));
  if (static_cast<double>(s.seed) <= kMaxExactJsonInteger)
    o.insert(QStringLiteral("seed"), static_cast<qint64>(s.seed));
  else
    o.insert(QStringLiteral("seed"), QString::number(static_cast<qulonglong>(s.seed)));
  o.insert(QStringLiteral("max_tokens"), s.max_tokens);
  o.insert(QStringLiteral("stop"), stop);
  o.insert(QStringLiteral("ignore_eos"), s.ignore_eos);
  o.insert(QStringLiteral("chosen"), QJsonArray::fromStringList(chosenFields()));
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

std::optional<ConversationSettings> ConversationSettings::fromJson(const QString& json, QString* error) {
  QJsonParseError parse_error;
  const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8(), &parse_error);
  if (parse_error.error != QJsonParseError::NoError) {
    if (error) *error = QStringLiteral("not valid JSON: %1 at offset %2").arg(parse_error.errorString()).arg(parse_error.offset);
    return std::nullopt;
  }
  if (!doc.isObject()) {
    if (error) *error = QStringLiteral("conversation settings must be a JSON object");
    return std::nullopt;
  }
  ConversationSettings c;
  kvscope::SamplingParams& s = c.sampling;
  JsonReader r(doc.object(), error);
  int32_t n = c.n;
  const bool read = r.readString("system_prompt", c.system_prompt) && r.readInt("n", n) &&
                    r.readFloat("temperature", s.temperature) && r.readInt("top_k", s.top_k) &&
                    r.readFloat("top_p", s.top_p) && r.readFloat("min_p", s.min_p) &&
                    r.readFloat("repetition_penalty", s.repetition_penalty) &&
                    r.readInt("repeat_last_n", s.repeat_last_n) &&
                    r.readFloat("presence_penalty", s.presence_penalty) &&
                    r.readFloat("frequency_penalty", s.frequency_penalty) && r.readSeed("seed", s.seed) &&
                    r.readInt("max_tokens", s.max_tokens) && r.readStringList("stop", s.stop) &&
                    r.readBool("ignore_eos", s.ignore_eos);
  if (!read) return std::nullopt;
  c.n = n;
  std::vector<std::string> chosen;
  if (!r.readStringList("chosen", chosen)) return std::nullopt;
  if (!doc.object().contains(QStringLiteral("chosen"))) {
    QStringList stored;
    for (const QString& f : recommendableFields())
      if (doc.object().contains(f)) stored << f;
    c.chosen = legacyChosenFields(s, stored);
  } else {
    for (const std::string& field : chosen) {
      const QString f = QString::fromStdString(field);
      if (!recommendableFields().contains(f)) {
        if (error) *error = QStringLiteral("chosen: \"%1\" is not one of %2").arg(f, recommendableFields().join(QStringLiteral(", ")));
        return std::nullopt;
      }
      c.chosen << f;
    }
  }
  c.applied_defaults = s;  // the stored values of fields not chosen are the defaults of their time
  if (const kvscope::Status status = c.validate(); !status.ok()) {
    if (error) *error = QString::fromStdString(status.error());
    return std::nullopt;
  }
  return c;
}

QString conversationFieldOf(const std::string& message) {
  // Both validate() functions start their message with the field's name, and
  // stop strings with "stop[i]".
  const QString text = QString::fromStdString(message);
  QString first = text.section(QLatin1Char(' '), 0, 0);
  if (first.startsWith(QLatin1String("stop["))) first = QStringLiteral("stop");
  // Every field validate() names is a stored key (chatKeys() also has ignore_eos and chosen,
  // which it never names).
  return chatKeys().contains(first) ? first : QString();
}

ConversationSettings loadChatDefaults(QSettings& settings, QStringList* problems) {
  ConversationSettings c;
  kvscope::SamplingParams& s = c.sampling;
  settings.beginGroup(QStringLiteral("chat"));
  for (const QString& key : settings.childKeys()) {
    if (!chatKeys().contains(key)) addProblem(problems, QStringLiteral("chat/%1 is not a setting; ignored").arg(key));
  }
  auto text = [&](const char* key) { return settings.value(QLatin1String(key)).toString().trimmed(); };
  auto has = [&](const char* key) { return settings.contains(QLatin1String(key)); };
  auto bad = [&](const char* key, const QString& what) {
    addProblem(problems, QStringLiteral("chat/%1 = \"%2\" %3; using the default")
                             .arg(QLatin1String(key), text(key), what));
  };
  auto readFloat = [&](const char* key, float& out) {
    if (!has(key)) return;
    bool ok = false;
    const float value = text(key).toFloat(&ok);
    if (ok && std::isfinite(value)) out = value;
    else bad(key, QStringLiteral("is not a number"));
  };
  auto readInt = [&](const char* key, int32_t& out) {
    if (!has(key)) return;
    bool ok = false;
    const int value = text(key).toInt(&ok);
    if (ok) out = value;
    else bad(key, QStringLiteral("is not a whole number"));
  };

  if (has("system_prompt")) c.system_prompt = settings.value(QStringLiteral("system_prompt")).toString();
  int32_t n = c.n;
  readInt("n", n);
  c.n = n;
  readFloat("temperature", s.temperature);
  readInt("top_k", s.top_k);
  readFloat("top_p", s.top_p);
  readFloat("min_p", s.min_p);
  readFloat("repetition_penalty", s.repetition_penalty);
  readInt("repeat_last_n", s.repeat_last_n);
  readFloat("presence_penalty", s.presence_penalty);
  readFloat("frequency_penalty", s.frequency_penalty);
  if (has("seed")) {
    bool ok = false;
    const qulonglong seed = text("seed").toULongLong(&ok);
    if (ok) s.seed = seed;
    else bad("seed", QStringLiteral("is not a whole number >= 0"));
  }
  readInt("max_tokens", s.max_tokens);
  if (has("stop")) {
    s.stop.clear();
    for (const QString& stop : settings.value(QStringLiteral("stop")).toStringList()) s.stop.push_back(stop.toStdString());
  }
  if (has("chosen")) {
    c.chosen = settings.value(QStringLiteral("chosen")).toStringList();
  } else {
    // Stored and read (a value that could not be read kept the default).
    QStringList stored;
    for (const QString& f : ConversationSettings::recommendableFields())
      if (has(qPrintable(f)) && samplingFieldDiffers(f, s, ConversationSettings().sampling)) stored << f;
    c.chosen = legacyChosenFields(s, stored);
  }
  for (const QString& field : QStringList(c.chosen)) {
    if (!ConversationSettings::recommendableFields().contains(field)) {
      addProblem(problems, QStringLiteral("chat/chosen names \"%1\", which is not a sampling field; ignored").arg(field));
      c.chosen.removeAll(field);
    }
  }
  c.applied_defaults = s;  // values not chosen are the defaults of their time; withDefaults() renews them
  if (has("ignore_eos")) {
    const QString value = text("ignore_eos").toLower();
    if (value == QLatin1String("true") || value == QLatin1String("false")) s.ignore_eos = value == QLatin1String("true");
    else bad("ignore_eos", QStringLiteral("is not true or false"));
  }
  settings.endGroup();

  // Values of the right type can still be out of range: put back the default
  // of each field validate() names, until it passes (at most once per field).
  for (int attempt = 0; attempt < 16; ++attempt) {
    const kvscope::Status status = c.validate();
    if (status.ok()) return c;
    addProblem(problems, QStringLiteral("chat: %1; using the default").arg(QString::fromStdString(status.error())));
    if (!resetField(c, conversationFieldOf(status.error()))) break;
  }
  return ConversationSettings();
}

void saveChatDefaults(QSettings& settings, const ConversationSettings& c) {
  const kvscope::SamplingParams& s = c.sampling;
  QStringList stop;
  for (const std::string& text : s.stop) stop.append(QString::fromStdString(text));
  settings.beginGroup(QStringLiteral("chat"));
  settings.setValue(QStringLiteral("system_prompt"), c.system_prompt);
  settings.setValue(QStringLiteral("n"), c.n);
  settings.setValue(QStringLiteral("temperature"), shortestText(s.temperature));
  settings.setValue(QStringLiteral("top_k"), s.top_k);
  settings.setValue(QStringLiteral("top_p"), shortestText(s.top_p));
  settings.setValue(QStringLiteral("min_p"), shortestText(s.min_p));
  settings.setValue(QStringLiteral("repetition_penalty"), shortestText(s.repetition_penalty));
  settings.setValue(QStringLiteral("repeat_last_n"), s.repeat_last_n);
  settings.setValue(QStringLiteral("presence_penalty"), shortestText(s.presence_penalty));
  settings.setValue(QStringLiteral("frequency_penalty"), shortestText(s.frequency_penalty));
  settings.setValue(QStringLiteral("seed"), QString::number(static_cast<qulonglong>(s.seed)));
  settings.setValue(QStringLiteral("max_tokens"), s.max_tokens);
  settings.setValue(QStringLiteral("stop"), stop);
  settings.setValue(QStringLiteral("ignore_eos"), s.ignore_eos);
  settings.setValue(QStringLiteral("chosen"), c.chosenFields());
  for (const QString& key : settings.childKeys()) {
    if (!chatKeys().contains(key)) settings.remove(key);  // keys of older versions
  }
  settings.endGroup();
}

}  // namespace kvscope::ui
