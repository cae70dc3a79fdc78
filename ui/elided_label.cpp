// ElidedLabel; see elided_label.h.
#include "elided_label.h"

#include <QPainter>
#include <QStyle>

namespace kvscope::ui {

ElidedLabel::ElidedLabel(const QString& text, QWidget* parent) : QWidget(parent), text_(text) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  updateToolTip();
}

void ElidedLabel::setText(const QString& text) {
  if (text == text_) return;
  text_ = text;
  updateGeometry();  // the width hint follows the text
  updateToolTip();
  update();
}

QString ElidedLabel::shownText() const { return fontMetrics().elidedText(text_, Qt::ElideRight, contentsRect().width()); }

QSize ElidedLabel::sizeHint() const {
  const QFontMetrics metrics = fontMetrics();
  return {metrics.horizontalAdvance(text_) + 2, metrics.height()};
}

QSize ElidedLabel::minimumSizeHint() const {
  const QFontMetrics metrics = fontMetrics();
  return {metrics.horizontalAdvance(QStringLiteral("xxxxxxxx…")), metrics.height()};
}

void ElidedLabel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setPen(palette().color(QPalette::WindowText));
  style()->drawItemText(&painter, contentsRect(), Qt::AlignLeft | Qt::AlignVCenter, palette(), isEnabled(),
                        shownText());
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  updateToolTip();
}

void ElidedLabel::updateToolTip() { setToolTip(shownText() == text_ ? QString() : text_); }

}  // namespace kvscope::ui
