// BlockTableModel (see block_table_model.h).
#include "block_table_model.h"

#include <QColor>

#include "models/marked_row_colors.h"

namespace kvscope::ui {

BlockTableModel::BlockTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int BlockTableModel::numRows() const { return snapshot_ ? static_cast<int>(snapshot_->sequences.size()) : 0; }

void BlockTableModel::setSnapshot(SnapshotPtr snapshot) {
  const int old_rows = numRows();
  const int new_rows = snapshot ? static_cast<int>(snapshot->sequences.size()) : 0;
  if (new_rows < old_rows) {
    beginRemoveRows({}, new_rows, old_rows - 1);
    snapshot_ = std::move(snapshot);
    endRemoveRows();
  } else if (new_rows > old_rows) {
    beginInsertRows({}, old_rows, new_rows - 1);
    snapshot_ = std::move(snapshot);
    endInsertRows();
  } else {
    snapshot_ = std::move(snapshot);
  }
  // Rows that stayed hold another step's values (or another sequence).
  const int kept = std::min(old_rows, new_rows);
  if (kept > 0) emit dataChanged(index(0, 0), index(kept - 1, NumColumns - 1));
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
  const SequenceSnapshot& seq = snapshot_->sequences[static_cast<size_t>(index.row())];
  if (role == RequestIdRole) return QVariant::fromValue<quint64>(seq.id);
  if (role == SequenceIndexRole) return seq.index;
  if (role == Qt::TextAlignmentRole) {
    const bool numeric = index.column() >= Prompt && index.column() <= Preemptions;
    return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
  }
  if (role == Qt::BackgroundRole || role == Qt::ForegroundRole) {
    if (!highlighted_.contains(quint64{seq.id})) return {};
    return role == Qt::BackgroundRole ? markedRowBackground() : markedRowForeground();
  }
  if (role == Qt::ToolTipRole && index.column() == Blocks) return blockList(seq.block_table, 100000);
  if (role == Qt::ToolTipRole && index.column() == Sequence && token_bytes_) {
    // Rich text: the escaped text keeps its spaces, and a literal
    // "<|im_start|>" is not taken for a tag.
    const QString text = visibleText(tokenText(*token_bytes_, seq.tokens), kTooltipChars);
    return tr("<b>%1.%2</b>, %3 tokens<br>%4")
        .arg(seq.id)
        .arg(seq.index)
        .arg(seq.tokens.size())
        .arg(preservedSpacesHtml(text));
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Sequence: return QStringLiteral("%1.%2").arg(seq.id).arg(seq.index);
    case State: return QString::fromLatin1(sequence_state_name(seq.state));
    case Prompt: return seq.num_prompt_tokens;
    case Computed: return seq.num_computed_tokens;
    case Cached: return seq.num_cached_tokens;
    case Preemptions: return seq.num_preemptions;
    case Blocks: return blockList(seq.block_table);
    default: return {};
  }
}

QVariant BlockTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
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
