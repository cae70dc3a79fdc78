// Tensor-parallel ranks in words (rank_text.h).
#include "models/rank_text.h"

#include <QStringList>

#include "models/memory_estimate.h"

namespace kvscope::ui {
namespace {

QString mib(int64_t bytes) { return QStringLiteral("%1 MiB").arg(toMiB(bytes), 0, 'f', 2); }

// Whether another rank stores a copy of rank r's KV heads.
bool sharesAKvHead(const TensorParallelMemory& tp, const RankMemory& r) {
  for (const RankMemory& o : tp.ranks) {
    if (o.rank == r.rank) continue;
    if (o.kv_head_begin < r.kv_head_begin + r.num_kv_heads && r.kv_head_begin < o.kv_head_begin + o.num_kv_heads)
      return true;
  }
  return false;
}

}  // namespace

QString headRangeText(int begin, int num) {
  if (num <= 1) return QString::number(begin);
  return QStringLiteral("%1–%2").arg(begin).arg(begin + num - 1);
}

QString rankKvHeadsText(const TensorParallelMemory& tp) {
  if (tp.ranks.size() < 2) return {};
  QStringList parts;
  for (const RankMemory& r : tp.ranks) {
    parts << QStringLiteral("rank %1: KV %2 %3%4")
                 .arg(r.rank)
                 .arg(r.num_kv_heads == 1 ? QStringLiteral("head") : QStringLiteral("heads"))
                 .arg(headRangeText(r.kv_head_begin, r.num_kv_heads))
                 .arg(sharesAKvHead(tp, r) ? QStringLiteral(" (a copy)") : QString());
  }
  return parts.join(QStringLiteral(", "));
}

QString blockSharedAcrossRanksText(const TensorParallelMemory& tp) {
  if (tp.ranks.size() < 2) return {};
  return QStringLiteral("one block table for all %1 ranks: each block holds the K/V of every rank's heads (%2)")
      .arg(tp.ranks.size())
      .arg(rankKvHeadsText(tp));
}

QString rankTableHtml(const TensorParallelMemory& tp) {
  if (tp.ranks.size() < 2) return {};
  QString rows = QStringLiteral(
      "<tr><th align=left>rank</th><th>query heads</th><th>KV heads</th><th>weights</th><th>KV</th>"
      "<th>workspace</th></tr>");
  for (const RankMemory& r : tp.ranks) {
    rows += QStringLiteral("<tr><td>%1</td><td align=center>%2</td><td align=center>%3</td>"
                           "<td align=right>%4</td><td align=right>%5</td><td align=right>%6</td></tr>")
                .arg(r.rank)
                .arg(headRangeText(r.q_head_begin, r.num_q_heads), headRangeText(r.kv_head_begin, r.num_kv_heads),
                     mib(r.weight_bytes), mib(r.kv_bytes), mib(r.workspace_bytes));
  }
  rows += QStringLiteral("<tr><td><b>all</b></td><td></td><td></td><td align=right><b>%1</b></td>"
                         "<td align=right><b>%2</b></td><td align=right><b>%3</b></td></tr>")
              .arg(mib(tp.total_weight_bytes()), mib(tp.total_kv_bytes()), mib(tp.total_workspace_bytes()));
  QString html = QStringLiteral("<b>Tensor parallelism: %1 ranks</b> (tp_reduce = %2)<table cellspacing=3>%3</table>")
                     .arg(tp.ranks.size())
                     .arg(tp.deterministic ? QStringLiteral("deterministic") : QStringLiteral("fast"))
                     .arg(rows);
  html += QStringLiteral("<i>Weights: the slices of the model's matrices each rank multiplies. KV: the pool's "
                         "bytes of its heads; one block table serves every rank. Workspace: the activation "
                         "buffers of the rank's own runner, each with the full hidden width.</i>");
  if (tp.kv_heads_replicated) {
    html += QStringLiteral("<br><i>More ranks than the model's %1 KV heads: a rank keeps its own copy of the KV "
                           "head it reads, so the pool stores %2 KV heads instead of %1.</i>")
                .arg(tp.num_kv_heads)
                .arg(tp.num_kv_head_slots);
  }
  return html;
}

}  // namespace kvscope::ui
