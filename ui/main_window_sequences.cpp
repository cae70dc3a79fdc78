// MainWindow's Sequences table (see main_window.h): the sequences of each
// snapshot, sortable by any column, with the chosen sequence kept selected
// as rows move and shown in the block map.
//   tested by tests/ui/sequences_table_test.cpp
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QSortFilterProxyModel>
#include <QTableView>

#include "block_map_widget.h"
#include "main_window.h"
#include "models/block_table_model.h"
#include "server_request_tags.h"

namespace kvscope::ui {

void MainWindow::createSequencesTable() {
  table_model_ = new BlockTableModel(this);
  table_view_ = new QTableView(this);
  table_view_->setAccessibleName(tr("Sequences and their block tables"));
  server_tags_ = new ServerRequestTags(this);
  server_tags_->setSourceModel(table_model_);
  // Sortable by any column (click a header): the most preempted sequences,
  // or those holding the most blocks, come to the top while they change.
  auto* sorted = new QSortFilterProxyModel(this);
  sorted->setSourceModel(server_tags_);
  sorted->setSortRole(BlockTableModel::SortRole);
  table_view_->setModel(sorted);
  table_view_->setSortingEnabled(true);
  table_view_->sortByColumn(BlockTableModel::Sequence, Qt::AscendingOrder);
  table_view_->verticalHeader()->hide();
  table_view_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
  table_view_->horizontalHeader()->setStretchLastSection(true);
  table_view_->horizontalHeader()->setDefaultSectionSize(fontMetrics().horizontalAdvance(QStringLiteral("Computed")) + 16);
  table_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_view_->setWordWrap(false);
  connect(block_map_, &BlockMapWidget::requestsSelected, table_model_, &BlockTableModel::setHighlightedRequests);
  // A row of the sequence table shows that sequence's blocks in the map, numbered in logical order.
  connect(table_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (!current.isValid()) {
              focused_sequence_.reset();
              return block_map_->clearFocusedSequence();
            }
            focused_sequence_ = {current.data(BlockTableModel::RequestIdRole).value<quint64>(),
                                 current.data(BlockTableModel::SequenceIndexRole).toInt()};
            block_map_->setFocusedSequence(focused_sequence_->first, focused_sequence_->second);
          });
}

void MainWindow::keepSequenceSelected() {
  // The model keeps its rows and gives them new values when a sequence
  // leaves from the middle, so the selection stays on a row that may now be
  // another sequence: move it back to the one chosen, or drop it when that
  // one is gone.
  if (!focused_sequence_) return;
  const QAbstractItemModel* model = table_view_->model();
  const QModelIndex current = table_view_->currentIndex();
  const auto is_focused = [&](const QModelIndex& index) {
    return index.isValid() &&
           index.data(BlockTableModel::RequestIdRole).value<quint64>() == focused_sequence_->first &&
           index.data(BlockTableModel::SequenceIndexRole).toInt() == focused_sequence_->second;
  };
  if (is_focused(current)) {
    block_map_->setFocusedSequence(focused_sequence_->first, focused_sequence_->second);
    return;
  }
  for (int row = 0; row < model->rowCount(); ++row) {
    const QModelIndex index = model->index(row, current.isValid() ? current.column() : 0);
    if (!is_focused(index)) continue;
    table_view_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                              QItemSelectionModel::Rows);
    block_map_->setFocusedSequence(focused_sequence_->first, focused_sequence_->second);
    return;
  }
  table_view_->selectionModel()->clear();  // gone: currentRowChanged clears the map's focus
  focused_sequence_.reset();
  block_map_->clearFocusedSequence();
}

}  // namespace kvscope::ui
