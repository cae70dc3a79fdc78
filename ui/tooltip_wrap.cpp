// See tooltip_wrap.h.
#include "tooltip_wrap.h"

#include <QApplication>
#include <QHelpEvent>
#include <QTextDocument>
#include <QToolTip>
#include <QWidget>

namespace kvscope::ui {

void ToolTipWrap::install() { qApp->installEventFilter(new ToolTipWrap(qApp)); }

QString ToolTipWrap::wrapped(const QString& text) {
  if (text.size() <= kWrapAfterChars || Qt::mightBeRichText(text)) return text;
  // Escaped, with its own line breaks kept: the text stays what it said. In
  // a table of a set width: a bare paragraph wraps at Qt's guess of a
  // pleasing shape, about 200 px, eight lines for two sentences.
  return QStringLiteral("<table width='%1'><tr><td style='white-space:pre-wrap'>%2</td></tr></table>")
      .arg(kWrapWidthPx)
      .arg(text.toHtmlEscaped());
}

bool ToolTipWrap::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() != QEvent::ToolTip) return false;
  auto* widget = qobject_cast<QWidget*>(watched);
  if (!widget) return false;
  const QString tip = widget->toolTip();
  const QString shown = wrapped(tip);
  if (shown == tip) return false;  // Qt's own handling
  QToolTip::showText(static_cast<QHelpEvent*>(event)->globalPos(), shown, widget, {}, widget->toolTipDuration());
  return true;
}

}  // namespace kvscope::ui
