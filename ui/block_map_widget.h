// BlockMapWidget: every physical KV block of the pool as one painted cell
// (thousands at once; no child widgets). Colour = owning request, shade =
// fill / block_size, a corner mark for shared blocks (ref_count > 1), a pale
// blue for cached-free ones (cellStyleFor, block_cell_style.h). Hover shows
// the block's id, ref count, fill, hash and owners; a click selects the
// requests that use the block (the others are washed out); a click on a free
// cell clears the selection.
#pragma once

#include <vector>

#include <QWidget>

#include "engine_types.h"

namespace kvscope::ui {

class BlockMapWidget : public QWidget {
  Q_OBJECT
 public:
  explicit BlockMapWidget(QWidget* parent = nullptr);

  void setSnapshot(SnapshotPtr snapshot);
  const std::vector<RequestId>& selectedRequests() const { return selected_; }
  // The block under a widget position, or -1.
  int blockAt(QPoint pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void requestsSelected(const QList<quint64>& ids);

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Layout {
    int cell = 8;     // pixels per cell, gap included
    int columns = 1;
  };
  void relayout();
  QRect cellRect(int block) const;
  QString tooltipFor(int block) const;

  SnapshotPtr snapshot_;
  std::vector<RequestId> selected_;
  Layout layout_;
};

}  // namespace kvscope::ui
