// LiveLabel (see live_label.h).
#include "live_label.h"

#include <algorithm>
#include <climits>

#include <QEvent>
#include <QPainter>
#include <QStyle>

namespace kvscope::ui {

LiveLabel::LiveLabel(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

int LiveLabel::textFlags() const {
  return Qt::AlignLeft | Qt::AlignVCenter | (wrap_ ? Qt::TextWordWrap : 0);
}

int LiveLabel::textWidth() const { return fontMetrics().horizontalAdvance(text_); }

void LiveLabel::setText(const QString& text) {
  if (text == text_) return;
  const int lines_before = wrap_ && width() > 0 ? heightForWidth(width()) : 0;
  text_ = text;
  setAccessibleName(text_);
  bool relayout = false;
  const int w = textWidth();
  if (w > widest_) {
    widest_ = w;
    relayout = !wrap_;  // wrapped, the width follows the layout: only the line count matters
  }
  if (wrap_ && width() > 0 && heightForWidth(width()) != lines_before) relayout = true;
  if (relayout) updateGeometry();
  updateElidedToolTip();
  update();
}

void LiveLabel::setElided(bool on) {
  if (elide_ == on) return;
  elide_ = on;
  updateGeometry();  // the minimum width changes
  updateElidedToolTip();
  update();
}

QString LiveLabel::shownText() const {
  // Whole when its (rounded) width fits: the size hint gives exactly that,
  // and elidedText's fractional widths would cut a text the hint made room for.
  const int room = contentsRect().width();
  if (!elide_ || textWidth() <= room) return text_;
  return fontMetrics().elidedText(text_, Qt::ElideRight, room);
}

void LiveLabel::updateElidedToolTip() {
  if (elide_) setToolTip(shownText() == text_ ? QString() : text_);
}

void LiveLabel::setWordWrap(bool on) {
  if (wrap_ == on) return;
  wrap_ = on;
  updateGeometry();
  update();
}

QSize LiveLabel::sizeHint() const {
  const QMargins m = contentsMargins();
  const int w = std::max(widest_, textWidth());
  if (!wrap_) return {w + m.left() + m.right(), fontMetrics().height() + m.top() + m.bottom()};
  // Wrapped: ask for the text on one line, settle for what the layout gives.
  return {w + m.left() + m.right(), heightForWidth(w + m.left() + m.right())};
}

QSize LiveLabel::minimumSizeHint() const {
  const QMargins m = contentsMargins();
  if (!wrap_ && !elide_) return sizeHint();
  return {fontMetrics().averageCharWidth() * 8 + m.left() + m.right(), fontMetrics().height() + m.top() + m.bottom()};
}

int LiveLabel::heightForWidth(int width) const {
  const QMargins m = contentsMargins();
  if (!wrap_) return sizeHint().height();
  const int inner = std::max(1, width - m.left() - m.right());
  const QRect r = fontMetrics().boundingRect(QRect(0, 0, inner, INT_MAX), textFlags(), text_);
  return std::max(r.height(), fontMetrics().height()) + m.top() + m.bottom();
}

void LiveLabel::paintEvent(QPaintEvent*) {
  QPainter p(this);
  style()->drawItemText(&p, contentsRect(), textFlags(), palette(), isEnabled(), shownText(), foregroundRole());
}

void LiveLabel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  updateElidedToolTip();  // what fits changed
}

void LiveLabel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::FontChange) {
    widest_ = 0;  // measured in the old font
    updateGeometry();
  }
}

}  // namespace kvscope::ui
