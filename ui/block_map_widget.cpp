// BlockMapWidget (see block_map_widget.h).
#include "block_map_widget.h"

#include <algorithm>
#include <cmath>

#include <QEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "block_cell_style.h"
#include "models/rank_text.h"
#include "models/sequence_label.h"
#include "palette_colors.h"

namespace kvscope::ui {
namespace {

constexpr int kMargin = 4;
constexpr int kMinCell = 3;  // 2 px and a 1 px gap: still a dot per block
constexpr int kMaxCell = 22;

std::span<const RequestId> ownersOf(const EngineSnapshot& s, const BlockSnapshot& b) {
  const auto begin = static_cast<size_t>(std::max(b.owners_begin, 0));
  const auto end = std::min(static_cast<size_t>(std::max(b.owners_end, 0)), s.block_owners.size());
  if (begin >= end) return {};
  return std::span<const RequestId>(s.block_owners.data() + begin, end - begin);
}

// A one-logical-pixel frame just inside `r`. The rectangle is inset by half a
// pixel so the pen's width falls inside the cell at any device pixel ratio
// (an integer rectangle's edge would straddle the cell border and spill a
// device pixel into the gap at ratio 2).
void drawInnerFrame(QPainter& p, const QRect& r, const QColor& color) {
  p.setPen(QPen(color, 1.0));
  p.setBrush(Qt::NoBrush);
  p.drawRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5));
}

}  // namespace

BlockMapWidget::BlockMapWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  mark_end_timer_ = new QTimer(this);
  mark_end_timer_->setSingleShot(true);
  connect(mark_end_timer_, &QTimer::timeout, this, [this] {
    updateDroppedMarks();
    update();
  });
}

QSize BlockMapWidget::sizeHint() const { return {360, 300}; }
QSize BlockMapWidget::minimumSizeHint() const { return {120, 80}; }

void BlockMapWidget::setSnapshot(SnapshotPtr snapshot) {
  const size_t old_blocks = snapshot_ ? snapshot_->blocks.size() : 0;
  snapshot_ = std::move(snapshot);
  if (!snapshot_ || snapshot_->blocks.size() != old_blocks) relayout();
  refocus();
  indexCascadeGroups();
  since_snapshot_.start();
  updateDroppedMarks();
  forgetFinishedSelection();
  update();
}

void BlockMapWidget::updateDroppedMarks() {
  mark_end_timer_->stop();
  if (!snapshot_) {
    dropped_.clear();
    return;
  }
  const double now_s = snapshot_->time_s + static_cast<double>(since_snapshot_.elapsed()) / 1000.0;
  dropped_ = droppedBlocks(*snapshot_, now_s);
  const double left_s = secondsUntilAMarkEnds(*snapshot_, dropped_, now_s);
  if (left_s >= 0.0) mark_end_timer_->start(static_cast<int>(left_s * 1000.0) + 1);
}

void BlockMapWidget::forgetFinishedSelection() {
  // A clicked request that has finished owns no block any more: kept
  // selected, it would leave every other cell washed out until the next click.
  if (selected_.empty() || !snapshot_) return;
  const auto in_engine = [&](RequestId id) {
    return std::any_of(snapshot_->sequences.begin(), snapshot_->sequences.end(),
                       [id](const SequenceSnapshot& seq) { return seq.id == id; });
  };
  const size_t before = selected_.size();
  selected_.erase(std::remove_if(selected_.begin(), selected_.end(), [&](RequestId id) { return !in_engine(id); }),
                  selected_.end());
  if (selected_.size() == before) return;
  QList<quint64> ids;
  for (RequestId id : selected_) ids << id;
  emit requestsSelected(ids);
}

void BlockMapWidget::setFocusedSequence(quint64 request_id, int index) {
  focus_id_ = request_id;
  focus_index_ = index;
  refocus();
  update();
}

void BlockMapWidget::refocus() {
  // One pass over the focused table per snapshot, so painting looks each
  // block's logical number up in O(1).
  focus_shown_ = false;
  const size_t n = snapshot_ ? snapshot_->blocks.size() : 0;
  focus_position_.assign(n, -1);
  if (focus_id_ == 0 || !snapshot_) return;
  for (const SequenceSnapshot& seq : snapshot_->sequences) {
    if (seq.id != focus_id_ || seq.index != focus_index_) continue;
    if (seq.state == SequenceState::Swapped) return;
    for (size_t i = 0; i < seq.block_table.size(); ++i) {
      const int32_t b = seq.block_table[i];
      if (b >= 0 && static_cast<size_t>(b) < n && focus_position_[static_cast<size_t>(b)] < 0) {
        focus_position_[static_cast<size_t>(b)] = static_cast<int32_t>(i);
      }
    }
    focus_shown_ = true;
    return;
  }
}

void BlockMapWidget::indexCascadeGroups() {
  // Once per snapshot, so painting and hovering look a block's group up in O(1).
  const size_t n = snapshot_ ? snapshot_->blocks.size() : 0;
  cascade_group_.assign(n, -1);
  if (!snapshot_) return;
  const std::vector<CascadeGroupSnapshot>& groups = snapshot_->cascade_groups;
  // Only blocks still in use: when the step's requests ended with it, their
  // blocks are free or cached-free now, and no pass reads them any more.
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int32_t b : groups[g].blocks) {
      if (b < 0 || static_cast<size_t>(b) >= n) continue;
      if (snapshot_->blocks[static_cast<size_t>(b)].state != BlockState::Used) continue;
      cascade_group_[static_cast<size_t>(b)] = static_cast<int32_t>(g);
    }
  }
}

int BlockMapWidget::cascadeGroupOf(int block) const {
  if (block < 0 || static_cast<size_t>(block) >= cascade_group_.size()) return -1;
  return cascade_group_[static_cast<size_t>(block)];
}

int BlockMapWidget::focusedPosition(int block) const {
  if (!focus_shown_ || block < 0 || static_cast<size_t>(block) >= focus_position_.size()) return -1;
  return focus_position_[static_cast<size_t>(block)];
}

void BlockMapWidget::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  relayout();
}

void BlockMapWidget::relayout() {
  const int n = snapshot_ ? static_cast<int>(snapshot_->blocks.size()) : 0;
  const int w = std::max(width() - 2 * kMargin, 1);
  const int h = std::max(height() - 2 * kMargin, 1);
  if (n == 0) {
    layout_ = {};
    return;
  }
  // The largest square cell for which n cells fit in w x h.
  int cell = std::clamp(static_cast<int>(std::sqrt(double(w) * h / n)), kMinCell, kMaxCell);
  while (cell > kMinCell && (w / cell) * (h / cell) < n) --cell;
  layout_.cell = cell;
  layout_.columns = std::max(w / cell, 1);
  layout_.shown = std::min(n, layout_.columns * (h / cell));
  if (layout_.shown < n) {
    // Whole rows above the line that says what is left out.
    const int rows = std::max((h - clippedNoteHeight()) / cell, 0);
    layout_.shown = std::min(n, layout_.columns * rows);
  }
}

int BlockMapWidget::clippedNoteHeight() const { return fontMetrics().height() + 4; }

QRect BlockMapWidget::cellRect(int block) const {
  const int row = block / layout_.columns;
  const int col = block % layout_.columns;
  const int gap = layout_.cell >= 8 ? 2 : 1;
  return QRect(kMargin + col * layout_.cell, kMargin + row * layout_.cell, layout_.cell - gap, layout_.cell - gap);
}

int BlockMapWidget::blockAt(QPoint pos) const {
  if (!snapshot_) return -1;
  const int x = pos.x() - kMargin;
  const int y = pos.y() - kMargin;
  if (x < 0 || y < 0) return -1;
  const int col = x / layout_.cell;
  if (col >= layout_.columns) return -1;
  const int block = (y / layout_.cell) * layout_.columns + col;
  return block < layout_.shown ? block : -1;
}

void BlockMapWidget::paintEvent(QPaintEvent* event) {
  QPainter p(this);
  if (!snapshot_) {
    p.fillRect(event->rect(), palette().base());
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No model loaded"));
    return;
  }
  const EngineSnapshot& s = *snapshot_;
  const int n = layout_.shown;
  const CellPalette colours = CellPalette::fromPalette(palette());
  // Free cells all look alike (a selection or a focus leaves them as they
  // are): one blit of the all-free picture, then only the other cells. A
  // pool is mostly free until it fills, and a fillRect per cell of 8,192 was
  // a third of the window's time per snapshot (window_snapshot_bench).
  p.drawPixmap(QPoint(0, 0), freeGrid(n, palette().color(QPalette::Base), colours.free));
  const QColor highlight = palette().color(QPalette::Highlight);
  const bool numbered = focus_shown_ && layout_.cell >= kNumberedCell;
  if (numbered) {
    // The widget's font (family, hinting) at a size that fits the cell: the
    // cell is sized in logical pixels, so the number scales with it and is
    // rasterised at the device pixel ratio like any text.
    QFont f = font();
    f.setPixelSize(std::max(7, (layout_.cell - 2) * 5 / 10));
    p.setFont(f);
  }
  for (int i = 0; i < n; ++i) {
    const QRect r = cellRect(i);
    if (!r.intersects(event->rect())) continue;
    const BlockSnapshot& b = s.blocks[static_cast<size_t>(i)];
    const int position = focusedPosition(i);
    if (b.state == BlockState::Free && position < 0 && !droppedMarked(i) && !cascadeMarked(i)) continue;
    CellStyle style;
    if (focus_shown_) {
      // The focused sequence wins over a click selection: its blocks in full
      // colour and outlined, everything else washed out.
      style = cellStyleFor(b, ownersOf(s, b), s.block_size, {}, colours);
      if (position >= 0) {
        style.highlighted = true;
      } else {
        style = washedOut(style, colours);
      }
    } else {
      style = cellStyleFor(b, ownersOf(s, b), s.block_size, selected_, colours);
    }
    style.cascade = cascadeMarked(i);
    p.fillRect(r, style.fill);
    if (style.kind == CellKind::CachedFree && r.width() >= 6) drawInnerFrame(p, r, colours.cached_free_edge);
    if (style.shared) {
      // A light corner triangle with a dark edge (swapped on a dark theme's
      // palette, see CellPalette): a block several sequences read. Visible
      // on pale and deep fills alike.
      const int t = std::max(3, r.width() / 2);
      const QPoint tri[3] = {r.topLeft(), r.topLeft() + QPoint(t, 0), r.topLeft() + QPoint(0, t)};
      p.setPen(style.dimmed ? Qt::NoPen : QPen(colours.mark_edge, 1));
      p.setBrush(colours.mark_fill);
      p.drawPolygon(tri, 3);
      p.setBrush(Qt::NoBrush);
    }
    if (style.cascade) {
      // The opposite corner from the shared mark, in amber: this block's K/V
      // was read once for the whole group in the last step.
      const int t = std::max(3, r.width() / 2);
      const QPoint corner = r.bottomRight();
      const QPoint tri[3] = {corner, corner - QPoint(t, 0), corner - QPoint(0, t)};
      p.setPen(style.dimmed ? Qt::NoPen : QPen(colours.cascade_edge, 1));
      p.setBrush(colours.cascade_fill);
      p.drawPolygon(tri, 3);
      p.setBrush(Qt::NoBrush);
    }
    if (droppedMarked(i)) {
      // A cross corner to corner: the block a context shift just freed (it
      // is free or cached-free, so it carries neither triangle).
      p.setPen(QPen(colours.dropped, r.width() >= 10 ? 2.0 : 1.0));
      p.drawLine(QLineF(r.topLeft(), r.bottomRight()).translated(0.5, 0.5));
      p.drawLine(QLineF(r.topRight(), r.bottomLeft()).translated(0.5, 0.5));
    }
    if (style.highlighted) drawInnerFrame(p, r, highlight);
    if (numbered && position >= 0) {
      // Black or white, whichever contrasts more with this fill (vivid
      // mid-tone fills on a dark theme defeat a plain lightness threshold).
      const QColor ink = contrastRatio(style.fill, Qt::white) >= contrastRatio(style.fill, Qt::black)
                             ? QColor(Qt::white) : QColor(Qt::black);
      p.setPen(ink);
      // Three digits and more were cut at the cell's edges ("110" as "11("):
      // such a number is drawn smaller, to fit the cell.
      const QString label = QString::number(position);
      const int room = r.width() - 2;
      const int advance = p.fontMetrics().horizontalAdvance(label);
      if (advance > room && room > 0) {
        p.save();
        QFont smaller = p.font();
        smaller.setPixelSize(std::max(5, smaller.pixelSize() * room / advance));
        p.setFont(smaller);
        p.drawText(r, Qt::AlignCenter, label);
        p.restore();
      } else {
        p.drawText(r, Qt::AlignCenter, label);
      }
    }
  }
  const int total = static_cast<int>(s.blocks.size());
  if (n < total) {
    // Too small even for the smallest cells: say so rather than leave the
    // rest out unnoticed (the header's "used" counts them all).
    const QRect note(0, height() - clippedNoteHeight(), width(), clippedNoteHeight());
    p.fillRect(note, palette().color(QPalette::Window));
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(note.adjusted(kMargin, 0, -kMargin, 0), Qt::AlignVCenter | Qt::AlignLeft,
               fontMetrics().elidedText(tr("%1 of %2 blocks shown: enlarge the panel for the rest").arg(n).arg(total),
                                        Qt::ElideRight, note.width() - 2 * kMargin));
  }
}

const QPixmap& BlockMapWidget::freeGrid(int num_blocks, const QColor& base, const QColor& free) {
  const qreal ratio = devicePixelRatioF();
  const FreeGridKey key{size(), ratio, layout_.cell, layout_.columns, num_blocks, base.rgba(), free.rgba()};
  if (free_grid_.isNull() || !(key == free_grid_key_)) {
    QPixmap grid(QSize(std::max(1, static_cast<int>(std::ceil(width() * ratio))),
                       std::max(1, static_cast<int>(std::ceil(height() * ratio)))));
    grid.setDevicePixelRatio(ratio);
    QPainter p(&grid);
    p.fillRect(rect(), base);
    for (int i = 0; i < num_blocks; ++i) p.fillRect(cellRect(i), free);
    p.end();
    free_grid_ = std::move(grid);
    free_grid_key_ = key;
  }
  return free_grid_;
}

QString BlockMapWidget::tooltipFor(int block) const {
  if (!snapshot_ || block < 0 || static_cast<size_t>(block) >= snapshot_->blocks.size()) return {};
  const EngineSnapshot& s = *snapshot_;
  const BlockSnapshot& b = s.blocks[static_cast<size_t>(block)];
  QStringList owners;
  for (RequestId id : ownersOf(s, b)) owners << QString::number(id);
  QString text = tr("<b>Block %1</b> (%2)<br>ref count %3<br>fill %4 / %5")
                     .arg(block)
                     .arg(QString::fromLatin1(block_state_name(b.state)))
                     .arg(b.ref_count)
                     .arg(b.fill)
                     .arg(s.block_size);
  text += tr("<br>hash %1").arg(b.hash ? QStringLiteral("0x%1").arg(b.hash, 16, 16, QLatin1Char('0')) : tr("none"));
  if (!owners.isEmpty()) text += tr("<br>owners: %1").arg(owners.join(QStringLiteral(", ")));
  // Held but empty: with paged attention off a request reserves its whole
  // length up front, so most of its run is such blocks (the waste the
  // summary's percentage counts); paged, a block is taken as tokens arrive.
  if (b.state == BlockState::Used && b.fill == 0 && !owners.isEmpty()) {
    text += tr("<br>reserved, nothing written yet (it waits for the request's later tokens)");
  }
  if (const BlockTokens held = blockTokens(s, block); held.sequence && !held.ids.empty()) {
    // Positions in the first owner's tokens (a shared block holds the same
    // tokens for all), then their text: a character cut by the block's edge
    // shows as U+FFFD.
    text += tr("<br>tokens %1–%2 of request %3")
                .arg(held.first_token)
                .arg(held.first_token + static_cast<int>(held.ids.size()) - 1)
                .arg(sequenceLabel(held.sequence->id, held.sequence->index,
                                   parallelRequests(s).contains(held.sequence->id)));
    if (token_bytes_) {
      const QString words = visibleText(tokenText(*token_bytes_, held.ids), kTooltipChars);
      text += QStringLiteral("<br>“%1”").arg(preservedSpacesHtml(words));
    }
  }
  if (const int g = cascadeGroupOf(block); g >= 0) {
    const CascadeGroupSnapshot& group = s.cascade_groups[static_cast<size_t>(g)];
    text += tr("<br>read once by the cascade pass for %1 sequences (%2 shared tokens)")
                .arg(static_cast<int>(group.request_ids.size()))
                .arg(group.num_shared_tokens);
  }
  if (droppedMarked(block)) {
    text += QStringLiteral("<br>") + droppedBlockText(s, dropped_[static_cast<size_t>(block)]).toHtmlEscaped();
  }
  if (const int position = focusedPosition(block); position >= 0) {
    text += tr("<br>logical block %1 of request %2")
                .arg(position)
                .arg(sequenceLabel(focus_id_, focus_index_,
                                   focus_index_ > 0 || parallelRequests(s).contains(focus_id_)));
  }
  // Tensor parallelism: the block id indexes every rank's KV heads.
  if (const QString ranks = blockSharedAcrossRanksText(s.tensor_parallel); !ranks.isEmpty()) {
    text += QStringLiteral("<br>") + ranks;
  }
  return text;
}

void BlockMapWidget::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) update();  // colours are read from the palette at paint
  if (event->type() == QEvent::FontChange) {
    relayout();  // the line under a clipped map is a line of this font
    update();
  }
}

bool BlockMapWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int block = blockAt(help->pos());
    if (block >= 0) {
      QToolTip::showText(help->globalPos(), tooltipFor(block), this, cellRect(block));
    } else {
      QToolTip::hideText();
      event->ignore();
    }
    return true;
  }
  return QWidget::event(event);
}

void BlockMapWidget::mousePressEvent(QMouseEvent* event) {
  const int block = blockAt(event->position().toPoint());
  selected_.clear();
  if (block >= 0) {
    const BlockSnapshot& b = snapshot_->blocks[static_cast<size_t>(block)];
    for (RequestId id : ownersOf(*snapshot_, b)) selected_.push_back(id);
  }
  QList<quint64> ids;
  for (RequestId id : selected_) ids << id;
  emit requestsSelected(ids);
  update();
}

}  // namespace kvscope::ui
