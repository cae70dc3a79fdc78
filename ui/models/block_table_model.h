// BlockTableModel: one row per sequence of the latest EngineSnapshot (waiting,
// running, swapped), ordered by request id then completion index: the
// request id (models/sequence_label.h: "12", or "12 #2" for parallel
// completions), state, prompt / computed / cached tokens,
// preemptions and the block table ("12 7 33 ..."); the Seq cell's tooltip is
// the sequence's text once a token table is set (setTokenBytes, see
// models/token_text.h). Fed by setSnapshot() from
// the GUI thread; rows are kept, appended or removed at the end so views keep
// their scroll position at 20 Hz (a sequence leaving from the middle shows as
// the rows after it taking new values and the last row leaving). Checked
// with QAbstractItemModelTester in tests/ui/block_table_model_test.cpp. The
// Sequences dock sorts it by any column through SortRole (MainWindow).
#pragma once

#include <QAbstractTableModel>
#include <QList>
#include <QSet>

#include "engine_types.h"
#include "models/token_text.h"

namespace kvscope::ui {

class BlockTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Sequence, State, Prompt, Computed, Cached, Preemptions, Blocks, NumColumns };
  // Data role giving the row's RequestId (quint64).
  static constexpr int RequestIdRole = Qt::UserRole + 1;
  // Data role giving which of the request's n completions the row is (int).
  static constexpr int SequenceIndexRole = Qt::UserRole + 2;
  // Data role a sorting view orders rows by: a number in every column (the
  // Seq column's request id then completion number, the state in the
  // order waiting, running, swapped, the Blocks column's block count).
  static constexpr int SortRole = Qt::UserRole + 3;

  explicit BlockTableModel(QObject* parent = nullptr);

  void setSnapshot(SnapshotPtr snapshot);
  SnapshotPtr snapshot() const { return snapshot_; }
  // Rows of these requests are drawn highlighted (a click in the block map).
  void setHighlightedRequests(const QList<quint64>& ids);
  // The bytes of each token id of the loaded model (sent by the engine
  // worker after a load); null: no text tooltips.
  void setTokenBytes(TokenBytesTable table);

  // Characters of a sequence's text shown in its tooltip (the middle is elided).
  static constexpr int kTooltipChars = 600;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // "12 7 33 ..." (at most max_ids ids, then an ellipsis).
  static QString blockList(const std::vector<int32_t>& block_table, int max_ids = 64);

 private:
  int numRows() const;
  const SequenceSnapshot& sequenceAt(int row) const;
  SnapshotPtr snapshot_;
  std::vector<int> order_;  // [snapshot's sequences] row -> index into snapshot_->sequences, by (id, index)
  QSet<quint64> parallel_;  // requests shown with their completion number
  int num_rows_ = 0;        // rows the views know of; <= order_.size() while rows come and go
  QList<quint64> highlighted_;
  TokenBytesTable token_bytes_;
};

}  // namespace kvscope::ui
