// MessageStats <-> JSON and its one-line summary (see message_stats.h).
#include "models/message_stats.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>

namespace kvscope::ui {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("MessageStats", text); }

}  // namespace

MessageStats MessageStats::fromFinish(const FinishInfo& info) {
  const RequestStats& s = info.stats;
  MessageStats m;
  m.finish = QString::fromLatin1(finish_reason_name(info.reason));
  m.prompt_tokens = s.num_prompt_tokens;
  m.cached_prompt_tokens = s.num_cached_prompt_tokens;
  m.generated_tokens = s.num_generated_tokens;
  m.preemptions = s.num_preemptions;
  m.time_to_first_token_s = s.time_to_first_token_s;
  m.total_time_s = s.total_time_s;
  m.tokens_per_s = s.decode_tokens_per_s;
  m.seed = s.seed;
  m.draft_tokens = s.num_draft_tokens;
  m.accepted_draft_tokens = s.num_accepted_tokens;
  m.spec_speedup_estimate = s.spec_speedup_estimate;
  m.context_shifts = s.num_context_shifts;
  m.dropped_tokens = s.num_dropped_tokens;
  return m;
}

QString messageStatsToJson(const std::vector<MessageStats>& stats) {
  QJsonArray list;
  for (const MessageStats& m : stats) {
    QJsonObject o;
    o.insert(QStringLiteral("finish"), m.finish);
    o.insert(QStringLiteral("prompt_tokens"), m.prompt_tokens);
    o.insert(QStringLiteral("cached_prompt_tokens"), m.cached_prompt_tokens);
    o.insert(QStringLiteral("generated_tokens"), m.generated_tokens);
    o.insert(QStringLiteral("preemptions"), m.preemptions);
    o.insert(QStringLiteral("time_to_first_token_s"), m.time_to_first_token_s);
    o.insert(QStringLiteral("total_time_s"), m.total_time_s);
    o.insert(QStringLiteral("tokens_per_s"), m.tokens_per_s);
    // A string: a 64-bit seed does not survive a JSON double.
    o.insert(QStringLiteral("seed"), QString::number(m.seed));
    if (m.draft_tokens > 0) {  // absent without speculation, as in older stores
      o.insert(QStringLiteral("draft_tokens"), m.draft_tokens);
      o.insert(QStringLiteral("accepted_draft_tokens"), m.accepted_draft_tokens);
      o.insert(QStringLiteral("spec_speedup_estimate"), m.spec_speedup_estimate);
    }
    if (m.dropped_tokens > 0) {  // absent when the context never overflowed
      o.insert(QStringLiteral("context_shifts"), m.context_shifts);
      o.insert(QStringLiteral("dropped_tokens"), m.dropped_tokens);
    }
    list.append(o);
  }
  QJsonObject root;
  root.insert(QStringLiteral("alternatives"), list);
  return QString::fromUtf8(QJsonDocument(root).toJson(QJsonDocument::Compact));
}

std::vector<MessageStats> messageStatsFromJson(const QString& json) {
  std::vector<MessageStats> out;
  if (json.isEmpty()) return out;
  const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8());
  if (!doc.isObject()) return out;
  for (const QJsonValue& v : doc.object().value(QStringLiteral("alternatives")).toArray()) {
    const QJsonObject o = v.toObject();
    MessageStats m;
    m.finish = o.value(QStringLiteral("finish")).toString();
    m.prompt_tokens = o.value(QStringLiteral("prompt_tokens")).toInt();
    m.cached_prompt_tokens = o.value(QStringLiteral("cached_prompt_tokens")).toInt();
    m.generated_tokens = o.value(QStringLiteral("generated_tokens")).toInt();
    m.preemptions = o.value(QStringLiteral("preemptions")).toInt();
    m.time_to_first_token_s = o.value(QStringLiteral("time_to_first_token_s")).toDouble();
    m.total_time_s = o.value(QStringLiteral("total_time_s")).toDouble();
    m.tokens_per_s = o.value(QStringLiteral("tokens_per_s")).toDouble();
    m.seed = o.value(QStringLiteral("seed")).toString().toULongLong();
    m.draft_tokens = o.value(QStringLiteral("draft_tokens")).toInt();
    m.accepted_draft_tokens = o.value(QStringLiteral("accepted_draft_tokens")).toInt();
    m.spec_speedup_estimate = o.value(QStringLiteral("spec_speedup_estimate")).toDouble();
    m.context_shifts = o.value(QStringLiteral("context_shifts")).toInt();
    m.dropped_tokens = o.value(QStringLiteral("dropped_tokens")).toInt();
    out.push_back(m);
  }
  return out;
}

QString messageStatsLine(const MessageStats& m) {
  const QLocale locale;
  QStringList parts;
  parts << (m.generated_tokens == 1 ? tr("1 token") : tr("%1 tokens").arg(locale.toString(m.generated_tokens)));
  if (m.generated_tokens > 0) parts << tr("first token %1 s").arg(m.time_to_first_token_s, 0, 'f', 2);
  if (m.tokens_per_s > 0.0) parts << tr("%1 tok/s").arg(m.tokens_per_s, 0, 'f', 1);
  if (m.cached_prompt_tokens > 0) {
    parts << tr("%1 of %2 prompt tokens from cache")
                 .arg(locale.toString(m.cached_prompt_tokens), locale.toString(m.prompt_tokens));
  } else if (m.prompt_tokens > 0) {
    parts << tr("%1 prompt tokens").arg(locale.toString(m.prompt_tokens));
  }
  if (m.preemptions > 0) parts << tr("preempted %1×").arg(m.preemptions);
  if (m.draft_tokens > 0) {
    parts << tr("drafts accepted %1 / %2")
                 .arg(locale.toString(m.accepted_draft_tokens), locale.toString(m.draft_tokens));
    // An estimate from the step times (RequestStats::spec_speedup_estimate), so it says so.
    if (m.spec_speedup_estimate > 0.0) parts << tr("est. %1× faster").arg(m.spec_speedup_estimate, 0, 'f', 2);
  }
  if (m.dropped_tokens > 0) {
    parts << QCoreApplication::translate("MessageStats", "%n token(s) dropped from the middle", "", m.dropped_tokens);
  }
  if (!m.finish.isEmpty()) parts << m.finish;
  return parts.join(QStringLiteral(" · "));
}

}  // namespace kvscope::ui
