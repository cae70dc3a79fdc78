// BlockMapWidget: every physical KV block of the pool as one painted cell
// (thousands at once; no child widgets). Colour = owning request, shade =
// fill / block_size, a corner mark for shared blocks (ref_count > 1), a pale
// blue for cached-free ones (cellStyleFor, block_cell_style.h). Hover shows
// the block's id, ref count, fill, hash, owners and, once a token table is
// set (setTokenBytes), the text of the tokens it holds; a click selects the
// requests that use the block (the others are washed out); a click on a free
// cell clears the selection. A focused sequence (setFocusedSequence, e.g. the
// row picked in the Sequences table) has its blocks outlined and, in cells of
// kNumberedCell pixels or more, numbered with their logical position in its
// block table (0, 1, 2, ...); every other block is washed out. Blocks that the
// last step's cascade attention read once for a group of sequences
// (EngineSnapshot::cascade_groups) carry an amber bottom-right triangle, and
// their tooltip says for how many sequences and how many shared tokens.
// Blocks a context shift freed in the last kDroppedMarkSeconds
// (EngineSnapshot::recent_shifts, models/dropped_blocks.h) carry a crimson
// cross, and their tooltip says which request's shift and which positions.
// With tensor parallelism the tooltip also says that the block holds the K/V
// of every rank's KV heads (one block table serves all ranks).
// Background, free cells, marks and outlines come from the widget's palette
// at each paint (CellPalette), so a light or dark theme, or a switch between
// them at run time, needs nothing more than a repaint. Everything is drawn
// with rectangles on whole logical pixels, crisp at any device pixel ratio.
#pragma once

#include <vector>

#include <QElapsedTimer>
#include <QPixmap>
#include <QTimer>
#include <QWidget>

#include "engine_types.h"
#include "models/dropped_blocks.h"
#include "models/token_text.h"

namespace kvscope::ui {

class BlockMapWidget : public QWidget {
  Q_OBJECT
 public:
  explicit BlockMapWidget(QWidget* parent = nullptr);

  // Cells at least this large carry the focused sequence's logical numbers.
  static constexpr int kNumberedCell = 14;

  void setSnapshot(SnapshotPtr snapshot);
  // The bytes of each token id of the loaded model (sent by the engine
  // worker after a load); null: tooltips without text.
  void setTokenBytes(TokenBytesTable table) { token_bytes_ = std::move(table); }
  // Characters of a block's text shown in its tooltip (the middle is elided).
  static constexpr int kTooltipChars = 160;
  const std::vector<RequestId>& selectedRequests() const { return selected_; }

  // Focus sequence `index` of request `request_id`; request_id 0 clears. The
  // focus outlives snapshots in which the sequence is absent (or swapped out:
  // its table then holds swap-space ids), which simply show no focus.
  void setFocusedSequence(quint64 request_id, int index);
  void clearFocusedSequence() { setFocusedSequence(0, 0); }
  // The focused sequence's logical block number of physical `block` in the
  // current snapshot, or -1 (not in its table, or no focus).
  int focusedPosition(int block) const;
  // Pixels per cell (gap included) in the current layout.
  int cellSize() const { return layout_.cell; }
  // The block under a widget position, or -1.
  int blockAt(QPoint pos) const;
  // The last step's cascade group (index into the snapshot's cascade_groups)
  // whose shared pass read physical `block`, or -1 (also when the block is
  // no longer in use: its requests ended with that step).
  int cascadeGroupOf(int block) const;
  bool cascadeMarked(int block) const { return cascadeGroupOf(block) >= 0; }
  // How many of the pool's blocks the map draws: all of them unless the
  // widget is too small even for the smallest cells, when a line at the
  // bottom says how many are left out.
  int shownBlocks() const { return layout_.shown; }
  // Freed by a recent context shift and not in use since (models/dropped_blocks.h).
  bool droppedMarked(int block) const {
    return block >= 0 && static_cast<size_t>(block) < dropped_.size() && dropped_[static_cast<size_t>(block)].marked();
  }
  // The rich text shown when hovering block `block`.
  QString tooltipFor(int block) const;
  // Where block `block` is painted (gap excluded).
  QRect cellRect(int block) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void requestsSelected(const QList<quint64>& ids);

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void changeEvent(QEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Layout {
    int cell = 8;     // pixels per cell, gap included
    int columns = 1;
    int shown = 0;    // the blocks drawn: all, unless even the smallest cells do not fit
  };
  void relayout();
  int clippedNoteHeight() const;
  void refocus();
  // Drops finished requests from the click selection (and says so).
  void forgetFinishedSelection();
  void indexCascadeGroups();
  // The widget as it looks with all `num_blocks` blocks free, cached until the
  // size, layout or colours change (paintEvent draws the other cells over it).
  const QPixmap& freeGrid(int num_blocks, const QColor& base, const QColor& free);

  SnapshotPtr snapshot_;
  TokenBytesTable token_bytes_;
  std::vector<RequestId> selected_;
  quint64 focus_id_ = 0;
  int focus_index_ = 0;
  bool focus_shown_ = false;          // the focused sequence holds pool blocks in snapshot_
  std::vector<int32_t> focus_position_;  // [num_blocks] logical index in its table, or -1
  std::vector<int32_t> cascade_group_;   // [num_blocks] cascade group that read it, or -1
  std::vector<DroppedBlock> dropped_;    // [num_blocks] the recent shift that freed it, if any
  // The marks end on the snapshot's clock carried on by wall time since it
  // came: an idle engine sends no snapshot that would end them.
  QElapsedTimer since_snapshot_;
  QTimer* mark_end_timer_ = nullptr;
  void updateDroppedMarks();
  Layout layout_;
  struct FreeGridKey {
    QSize size;
    qreal pixel_ratio = 0;
    int cell = 0, columns = 0, num_blocks = 0;
    QRgb base = 0, free = 0;
    bool operator==(const FreeGridKey&) const = default;
  };
  FreeGridKey free_grid_key_;
  QPixmap free_grid_;
};

}  // namespace kvscope::ui
