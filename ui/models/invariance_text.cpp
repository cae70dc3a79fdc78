// Invariance check text (see invariance_text.h).
#include "invariance_text.h"

#include <algorithm>
#include <span>

#include <QCoreApplication>
#include <QStringList>

#include "kvscope/setting_table.h"
#include "models/counted_text.h"
#include "models/token_text.h"

namespace kvscope::ui {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("kvscope::ui::InvarianceText", text); }

QString escaped(const QString& text) { return text.toHtmlEscaped(); }

struct Cut {
  QString before, marked, after;
  bool ended = false;  // this side had no token at the divergence
};

Cut cutWithTable(const std::vector<int32_t>& tokens, int k, const std::vector<std::string>& table) {
  const std::span<const int32_t> all(tokens);
  const auto n = static_cast<int>(tokens.size());
  const int at = std::clamp(k, 0, n);
  Cut cut;
  cut.before = tokenText(table, all.first(static_cast<size_t>(at)));
  if (at < n) {
    cut.marked = tokenText(table, all.subspan(static_cast<size_t>(at), 1));
    cut.after = tokenText(table, all.subspan(static_cast<size_t>(at) + 1));
  } else {
    cut.ended = true;
  }
  return cut;
}

Cut cutWithoutTable(const QString& text, const QString& other, const QString& token_text, bool ended) {
  // The texts agree up to the divergent tokens, and may agree a little into
  // them (" the" against " then"): the mark starts where this side's token
  // text, found at or before that point, begins.
  qsizetype common = 0;
  while (common < text.size() && common < other.size() && text[common] == other[common]) ++common;
  Cut cut;
  if (ended) {
    cut.before = text;
    cut.ended = true;
    return cut;
  }
  qsizetype start = common;
  if (!token_text.isEmpty()) {
    const qsizetype found = text.lastIndexOf(token_text, common);
    if (found >= 0 && found + token_text.size() >= common) start = found;
  }
  const qsizetype length = token_text.isEmpty() ? std::min<qsizetype>(1, text.size() - start) : token_text.size();
  cut.before = text.left(start);
  cut.marked = text.mid(start, length);
  cut.after = text.mid(start + length);
  return cut;
}

}  // namespace

QString continuationHtml(const PromptVerdict& verdict, bool side_b, const std::vector<std::string>* token_bytes,
                         const QColor& mark, const QColor& mark_text) {
  const QString text = QString::fromStdString(side_b ? verdict.text_b : verdict.text_a);
  const QString open = QStringLiteral("<div style=\"white-space:pre-wrap\">");
  const QString close = QStringLiteral("</div>");
  if (verdict.identical || verdict.first_divergence < 0) return open + escaped(text) + close;

  const std::vector<int32_t>& tokens = side_b ? verdict.tokens_b : verdict.tokens_a;
  const int32_t token = side_b ? verdict.token_b : verdict.token_a;
  const bool ended = token < 0 || verdict.first_divergence >= static_cast<int32_t>(tokens.size());
  Cut cut;
  if (token_bytes && !token_bytes->empty()) {
    cut = cutWithTable(tokens, verdict.first_divergence, *token_bytes);
  } else {
    const QString other = QString::fromStdString(side_b ? verdict.text_a : verdict.text_b);
    cut = cutWithoutTable(text, other, QString::fromStdString(side_b ? verdict.token_text_b : verdict.token_text_a),
                          ended);
  }
  const QString span = QStringLiteral("<span style=\"background-color:%1; color:%2; font-weight:bold\">")
                           .arg(mark.name(), mark_text.name());
  const QString finish = QString::fromStdString(side_b ? verdict.finish_b : verdict.finish_a);
  const QString marked = cut.ended ? tr("[ended: %1]").arg(finish.isEmpty() ? tr("finished") : finish)
                                   : escaped(cut.marked);
  return open + escaped(cut.before) + span + marked + QStringLiteral("</span>") + escaped(cut.after) + close;
}

QString runStatsText(const InvarianceRunStats& stats) {
  QString text = tr("%1, up to %2 a step, %3 mixed prefill+decode, %4 with a cascade pass, %5 from the prefix cache")
                     .arg(counted(stats.num_steps, tr("step"), tr("steps")))
                     .arg(counted(stats.max_batch_seqs, tr("sequence"), tr("sequences")))
                     .arg(stats.num_mixed_steps)
                     .arg(stats.num_cascade_steps)
                     .arg(counted(stats.num_prefix_hit_tokens, tr("prompt token"), tr("prompt tokens")));
  if (stats.num_graph_steps > 0) text += tr(", %1 replayed as a GPU graph").arg(stats.num_graph_steps);
  // What the CLI's report says too: whether speculation and preemption,
  // often the mode under test, happened at all.
  if (stats.num_draft_tokens > 0) {
    text += tr(", %1 of %2 accepted in %3 of %4 decoding steps")
                .arg(stats.num_accepted_draft_tokens)
                .arg(counted(stats.num_draft_tokens, tr("draft token"), tr("draft tokens")))
                .arg(stats.num_spec_steps)
                .arg(stats.num_decode_steps);
  }
  if (stats.num_context_shifts > 0) text += QStringLiteral(", ") + counted(stats.num_context_shifts, tr("context shift"), tr("context shifts"));
  if (stats.num_preemptions > 0) {
    text += tr(", %1 (%2 swapped out)")
                .arg(counted(stats.num_preemptions, tr("preemption"), tr("preemptions")))
                .arg(counted(stats.num_swapped_out_blocks, tr("block"), tr("blocks")));
  }
  return text;
}

QString checkedSettingsText(const EngineConfig& config) {
  QStringList items;
  for (const char* key : {"block_size", "paged", "prefix_caching", "cascade", "max_batched_tokens", "kv_cache_type",
                          "preemption", "spec", "tp", "backend", "threads"}) {
    const SettingSpec* row = find_setting(key);
    if (!row) continue;  // a key renamed in the table: left out rather than shown wrong
    items << QStringLiteral("%1=%2").arg(QLatin1String(key), QString::fromStdString(row->format(row->get(config))));
  }
  return items.join(QStringLiteral(", "));
}

QString verdictText(const PromptVerdict& verdict) {
  if (verdict.identical && verdict.logits_identical) return tr("identical");
  if (verdict.identical) {
    return tr("identical tokens (logits differ by %1)").arg(static_cast<double>(verdict.max_logit_diff), 0, 'g', 3);
  }
  return tr("diverges at token %1 (position %2)").arg(verdict.first_divergence).arg(verdict.divergence_position);
}

}  // namespace kvscope::ui
