// BlockTableModel (see block_table_model.h).
#include "block_table_model.h"

#include <algorithm>
#include <numeric>

#include <QColor>

#include "models/marked_row_colors.h"
#include "models/sequence_label.h"

namespace kvscope::ui {

BlockTableModel::BlockTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int BlockTableModel::numRows() const { return num_rows_; }

const SequenceSnapshot& BlockTableModel::sequenceAt(int row) const {
  return snapshot_->sequences[static_cast<size_t>(order_[static_cast<size_t>(row)])];
}

void BlockTableModel::setSnapshot(SnapshotPtr snapshot) {
  // The engine lists sequences in scheduler order; a table reads best by id.
  std::vector<int> order(snapshot ? snapshot->sequences.size() : 0);
  std::iota(order.begin(), order.end(), 0);
  if (snapshot) {
    const auto& seqs = snapshot->sequences;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const SequenceSnapshot &x = seqs[static_cast<size_t>(a)], &y = seqs[static_cast<size_t>(b)];
      return x.id != y.id ? x.id < y.id : x.index < y.index;
    });
  }
  const int new_rows = static_cast<int>(order.size());
  // Rows leave at the end while they still show the old snapshot, and arrive
  // at the end after the kept rows show the new one, so that no row changes
  // its values inside an insert or remove (QAbstractItemModelTester checks).
  if (new_rows < num_rows_) {
    beginRemoveRows({}, new_rows, num_rows_ - 1);
    num_rows_ = new_rows;
    endRemoveRows();
  }
  parallel_ = snapshot ? parallelRequests(*snapshot) : QSet<quint64>{};
  snapshot_ = std::move(snapshot);
  order_ = std::move(order);
  // Rows that stayed hold another step's values (or another sequence).
  if (num_rows_ > 0) emit dataChanged(index(0, 0), index(num_rows_ - 1, NumColumns - 1));
  if (new_rows > num_rows_) {
    beginInsertRows({}, num_rows_, new_rows - 1);
    num_rows_ = new_rows;
    endInsertRows();
  }
}

void BlockTableModel::setHighlightedRequests(const QList<quint64>& ids) {
  highlighted_ = ids;
  if (numRows() > 0) {
    emit dataChanged(index(0, 0), index(numRows() - 1, NumColumns - 1), {Qt::BackgroundRole, Qt::ForegroundRole});
  }
}

void BlockTableModel::setTokenBytes(TokenBytesTable table) {
  token_bytes_ = std::move(table);
  if (numRows() > 0) emit dataChanged(index(0, Sequence), index(numRows() - 1, Sequence), {Qt::ToolTipRole});
}

int BlockTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : numRows(); }

int BlockTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NumColumns; }

QString BlockTableModel::blockList(const std::vector<int32_t>& block_table, int max_ids) {
  QString text;
  const int n = static_cast<int>(block_table.size());
  for (int i = 0; i < n && i < max_ids; ++i) {
    if (i) text += QLatin1Char(' ');
    text += QString::number(block_table[static_cast<size_t>(i)]);
  }
  if (n > max_ids) text += QStringLiteral(" … (+%1)").arg(n - max_ids);
  return text;
}

QVariant BlockTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const SequenceSnapshot& seq = sequenceAt(index.row());
  const bool parallel = parallel_.contains(quint64{seq.id});
  if (role == RequestIdRole) return QVariant::fromValue<quint64>(seq.id);
  if (role == SequenceIndexRole) return seq.index;
  if (role == Qt::TextAlignmentRole) {
    const bool numeric = index.column() == Sequence || (index.column() >= Prompt && index.column() <= Preemptions);
    return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
  }
  if (role == Qt::BackgroundRole || role == Qt::ForegroundRole) {
    if (!highlighted_.contains(quint64{seq.id})) return {};
    return role == Qt::BackgroundRole ? markedRowBackground() : markedRowForeground();
  }
  // A swapped sequence's table holds swap-space ids (KvCacheManager): the
  // same numbers as pool blocks, so they are marked.
  const bool swapped = seq.state == SequenceState::Swapped;
  if (role == Qt::ToolTipRole && index.column() == Blocks) {
    const QString ids = blockList(seq.block_table, 100000);
    return swapped ? tr("Swapped out to host memory, in swap blocks %1 (not pool blocks)").arg(ids) : ids;
  }
  if (role == Qt::ToolTipRole && index.column() == Sequence && token_bytes_) {
    // Rich text: the escaped text keeps its spaces, and a literal
    // "<|im_start|>" is not taken for a tag.
    const QString text = visibleText(tokenText(*token_bytes_, seq.tokens), kTooltipChars);
    return tr("<b>%1</b>, %2 tokens<br>%3")
        .arg(sequenceLabel(seq.id, seq.index, parallel))
        .arg(seq.tokens.size())
        .arg(preservedSpacesHtml(text));
  }
  if (role == SortRole) {
    switch (index.column()) {
      // n <= 64 completions per request: the index fits below the id.
      case Sequence: return QVariant::fromValue<qulonglong>((qulonglong{seq.id} << 8) | static_cast<qulonglong>(seq.index & 0xff));
      case State: return static_cast<int>(seq.state);
      case Blocks: return static_cast<int>(seq.block_table.size());
      default: return data(index, Qt::DisplayRole);
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    // A plain integer where it can be one, so that a sorting proxy orders 9 before 10.
    case Sequence:
      return parallel ? QVariant(sequenceLabel(seq.id, seq.index, true)) : QVariant::fromValue<quint64>(seq.id);
    case State: return QString::fromLatin1(sequence_state_name(seq.state));
    case Prompt: return seq.num_prompt_tokens;
    case Computed: return seq.num_computed_tokens;
    case Cached: return seq.num_cached_tokens;
    case Preemptions: return seq.num_preemptions;
    case Blocks: return swapped ? tr("swap: %1").arg(blockList(seq.block_table)) : blockList(seq.block_table);
    default: return {};
  }
}

QVariant BlockTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    const QString sort = tr("Click to sort by it, again to reverse.");
    switch (section) {
      case Sequence: return tr("The request's id (\"12 #2\": its second of several parallel replies). %1").arg(sort);
      case State: return tr("Waiting (not admitted, or preempted by recompute), running, or swapped out to host "
                            "memory (preempted by swap). %1").arg(sort);
      case Prompt: return tr("Tokens of the prompt. %1").arg(sort);
      case Computed: return tr("Tokens whose K/V is in the cache now (a preemption by recompute sets it back to 0). "
                               "%1").arg(sort);
      case Cached: return tr("Prompt tokens the prefix cache served when the request was first admitted (what the "
                             "server reports as cached tokens); a later admission after a preemption is not "
                             "counted. %1").arg(sort);
      case Preemptions: return tr("Times the request was preempted (by recompute or by swap, as the preemption "
                                  "setting says), settings changes that re-queued it included. %1").arg(sort);
      case Blocks: return tr("Its block table: the physical block of each logical block, in order (\"swap:\" "
                             "while swapped out: those are blocks of the host swap space, not of the pool). %1")
                              .arg(sort);
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Sequence: return tr("Seq");
    case State: return tr("State");
    case Prompt: return tr("Prompt");
    case Computed: return tr("Computed");
    case Cached: return tr("Cached");
    case Preemptions: return tr("Preempt");
    case Blocks: return tr("Blocks");
    default: return {};
  }
}

}  // namespace kvscope::ui
