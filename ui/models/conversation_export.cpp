// Conversation export (see conversation_export.h).
#include "models/conversation_export.h"

#include <cmath>

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QStringList>

#include "models/markdown_code_blocks.h"

namespace kvscope::ui {
namespace {

QString isoUtc(const QDateTime& t) { return t.toUTC().toString(Qt::ISODateWithMs); }

QJsonValue isoUtcOrNull(const QDateTime& t) { return t.isValid() ? QJsonValue(isoUtc(t)) : QJsonValue(); }

// The app's JSON text as a JSON value: the object or array it parses to, else
// the text itself (kept, not lost), null when empty.
QJsonValue lenientJson(const QString& text) {
  if (text.isEmpty()) return QJsonValue();
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &error);
  if (error.error != QJsonParseError::NoError) return text;
  if (doc.isObject()) return doc.object();
  if (doc.isArray()) return doc.array();
  return text;
}

// 42, 53.2, 0.05: integers without a decimal point, others to two places.
QString formatNumber(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::abs(value) < 9.0e15)
    return QString::number(static_cast<qint64>(value));
  QString text = QString::number(value, 'f', 2);
  while (text.endsWith(QLatin1Char('0'))) text.chop(1);
  if (text.endsWith(QLatin1Char('.'))) text.chop(1);
  return text;
}

// One value on one line.
QString formatValue(const QJsonValue& value) {
  switch (value.type()) {
    case QJsonValue::Bool:
      return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Double:
      return formatNumber(value.toDouble());
    case QJsonValue::String:
      return value.toString().simplified();
    case QJsonValue::Array:
      return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    case QJsonValue::Object:
      return QString::fromUtf8(QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact));
    default:
      return QStringLiteral("null");
  }
}

QString fenced(const QString& text) {
  const QString fence = fenceLongerThanAnyIn(text);
  return fence + QLatin1Char('\n') + text + QLatin1Char('\n') + fence + QStringLiteral("\n\n");
}

QString blockquote(const QString& text) {
  QString out;
  for (const QString& line : text.split(QLatin1Char('\n')))
    out += line.isEmpty() ? QStringLiteral(">\n") : QStringLiteral("> ") + line + QLatin1Char('\n');
  return out + QLatin1Char('\n');
}

QString roleName(const QString& role) {
  if (role.isEmpty()) return QStringLiteral("(no role)");
  return role.left(1).toUpper() + role.mid(1);
}

// "`num_tokens` 42 · `ttft_ms` 118.5".
QString fieldsLine(const QJsonObject& object) {
  QStringList parts;
  for (auto it = object.begin(); it != object.end(); ++it)
    parts << QStringLiteral("`%1` %2").arg(it.key(), formatValue(it.value()));
  return parts.join(QStringLiteral(" · "));
}

// "*Stats:* `num_tokens` 42 · ...", or the text when it is not an object.
// The app stores {"alternatives": [one object per reply]}
// (models/message_stats.h): a line each, not the array as JSON.
QString statsLine(const QString& stats_json) {
  const QJsonValue stats = lenientJson(stats_json);
  if (stats.isNull()) return {};
  if (!stats.isObject()) return QStringLiteral("*Stats:* ") + formatValue(stats) + QStringLiteral("\n\n");
  const QJsonObject object = stats.toObject();
  if (object.isEmpty()) return {};
  const QJsonValue alternatives = object.value(QLatin1String("alternatives"));
  if (object.size() == 1 && alternatives.isArray()) {
    const QJsonArray list = alternatives.toArray();
    QString out;
    for (qsizetype i = 0; i < list.size(); ++i) {
      if (!list[i].isObject() || list[i].toObject().isEmpty()) continue;
      out += (list.size() > 1 ? QStringLiteral("*Stats (alternative %1):* ").arg(i + 1) : QStringLiteral("*Stats:* ")) +
             fieldsLine(list[i].toObject()) + QStringLiteral("\n\n");
    }
    return out;
  }
  return QStringLiteral("*Stats:* ") + fieldsLine(object) + QStringLiteral("\n\n");
}

QString body(const QString& content) {
  return content.isEmpty() ? QStringLiteral("*(empty)*\n\n") : content + QStringLiteral("\n\n");
}

}  // namespace

QString conversationToMarkdown(const ConversationSummary& conversation, const QString& settings_json,
                               const std::vector<StoredMessage>& messages) {
  const QString title = conversation.title.simplified();
  QString out = QStringLiteral("# %1\n\n").arg(title.isEmpty() ? QStringLiteral("Untitled conversation") : title);
  QStringList dates;
  if (conversation.created_at.isValid()) dates << QStringLiteral("Created %1").arg(isoUtc(conversation.created_at));
  if (conversation.updated_at.isValid()) dates << QStringLiteral("updated %1").arg(isoUtc(conversation.updated_at));
  if (!dates.isEmpty()) out += QStringLiteral("*%1*\n\n").arg(dates.join(QStringLiteral(", ")));

  const QJsonValue settings = lenientJson(settings_json);
  QJsonObject shown_settings = settings.toObject();
  QString system_prompt = conversation.system_prompt;
  if (system_prompt.isEmpty() && shown_settings.value(QLatin1String("system_prompt")).isString())
    system_prompt = shown_settings.value(QLatin1String("system_prompt")).toString();
  if (!system_prompt.isEmpty()) {
    out += QStringLiteral("## System prompt\n\n") + blockquote(system_prompt);
    // Not listed twice; a different one in the settings stays listed.
    if (shown_settings.value(QLatin1String("system_prompt")).toString() == system_prompt)
      shown_settings.remove(QLatin1String("system_prompt"));
  }

  if (settings.isObject() && !shown_settings.isEmpty()) {
    out += QStringLiteral("## Settings\n\n");
    for (auto it = shown_settings.begin(); it != shown_settings.end(); ++it)
      out += QStringLiteral("- `%1`: %2\n").arg(it.key(), formatValue(it.value()));
    out += QLatin1Char('\n');
  } else if (!settings.isNull() && !settings.isObject()) {
    out += QStringLiteral("## Settings\n\n") + fenced(settings_json);
  }

  int number = 0;
  for (const StoredMessage& m : messages) {
    ++number;
    const int num_alternatives = static_cast<int>(m.alternatives.size());
    out += QStringLiteral("## %1. %2").arg(number).arg(roleName(m.role));
    if (num_alternatives > 1) out += QStringLiteral(" (%1 alternatives)").arg(num_alternatives);
    out += QStringLiteral("\n\n");
    if (num_alternatives > 1) {
      for (int i = 0; i < num_alternatives; ++i) {
        out += QStringLiteral("### Alternative %1 of %2").arg(i + 1).arg(num_alternatives);
        if (i == m.selected_alternative) out += QStringLiteral(" (selected)");
        out += QStringLiteral("\n\n") + body(m.alternatives[i]);
      }
    } else {
      out += body(m.content);
    }
    out += statsLine(m.stats_json);
  }
  if (messages.empty()) out += QStringLiteral("*No messages.*\n");
  while (out.endsWith(QStringLiteral("\n\n"))) out.chop(1);  // one newline at the end
  return out;
}

QByteArray conversationToJson(const ConversationSummary& conversation, const QString& settings_json,
                              const std::vector<StoredMessage>& messages) {
  QJsonArray message_array;
  for (const StoredMessage& m : messages) {
    QJsonObject message;
    message.insert(QLatin1String("role"), m.role);
    message.insert(QLatin1String("content"), m.content);
    message.insert(QLatin1String("created_at"), isoUtcOrNull(m.created_at));
    message.insert(QLatin1String("stats"), lenientJson(m.stats_json));
    message.insert(QLatin1String("alternatives"), QJsonArray::fromStringList(m.alternatives));
    message.insert(QLatin1String("selected"), m.selected_alternative);
    message_array.append(message);
  }
  QJsonObject root;
  root.insert(QLatin1String("format"), QLatin1String(kConversationExportFormat));
  root.insert(QLatin1String("version"), kConversationExportVersion);
  root.insert(QLatin1String("title"), conversation.title);
  root.insert(QLatin1String("system_prompt"), conversation.system_prompt);
  root.insert(QLatin1String("created_at"), isoUtcOrNull(conversation.created_at));
  root.insert(QLatin1String("updated_at"), isoUtcOrNull(conversation.updated_at));
  root.insert(QLatin1String("settings"), lenientJson(settings_json));
  root.insert(QLatin1String("messages"), message_array);
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

bool writeExportFile(const QString& path, const QByteArray& bytes, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = QStringLiteral("cannot write %1: %2").arg(QDir::toNativeSeparators(path), why);
    return false;
  };
  if (path.isEmpty()) {
    if (error) *error = QStringLiteral("cannot write the export: no file name given");
    return false;
  }
  // Checked first: QSaveFile's own message for these is a bare "No such file or directory".
  const QFileInfo info(path);
  if (info.isDir()) return fail(QStringLiteral("it is a folder"));
  if (!info.absoluteDir().exists())
    return fail(QStringLiteral("the folder %1 does not exist").arg(QDir::toNativeSeparators(info.absolutePath())));

  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return fail(file.errorString());
  if (file.write(bytes) != bytes.size()) {
    const QString why = file.errorString();
    file.cancelWriting();
    return fail(why);
  }
  if (!file.commit()) return fail(file.errorString());
  if (error) error->clear();
  return true;
}

QString exportFileStem(const QString& title) {
  QString stem = title;
  stem.remove(QStringLiteral("…"));
  for (QChar& c : stem) {
    if (QStringLiteral("/\\:*?\"<>|").contains(c) || c.unicode() < 0x20) c = QLatin1Char('-');
  }
  stem = stem.trimmed();
  while (stem.endsWith(QLatin1Char('.'))) stem.chop(1);
  stem = stem.trimmed();
  return stem.isEmpty() ? QStringLiteral("conversation") : stem;
}

}  // namespace kvscope::ui
