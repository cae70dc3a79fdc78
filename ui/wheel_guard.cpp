// WheelGuard; see wheel_guard.h.
#include "wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QEvent>
#include <QWidget>

namespace kvscope::ui {
namespace {

// A value field: a spin box (or its line edit) or a combo box.
QWidget* valueField(QObject* watched) {
  auto* w = qobject_cast<QWidget*>(watched);
  for (int depth = 0; w && depth < 2; ++depth, w = w->parentWidget()) {
    if (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w)) return w;
  }
  return nullptr;
}

bool insideScrolledArea(const QWidget* w) {
  for (const QWidget* p = w->parentWidget(); p; p = p->parentWidget()) {
    if (qobject_cast<const QAbstractScrollArea*>(p)) return true;
  }
  return false;
}

}  // namespace

void WheelGuard::install() { qApp->installEventFilter(new WheelGuard(qApp)); }

bool WheelGuard::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Polish) {
    // Spin boxes take the focus from a wheel turn over them (Qt::WheelFocus),
    // which QApplication gives before any filter runs: only a click or Tab
    // may give it here.
    if (auto* w = qobject_cast<QWidget*>(watched);
        w && (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w)) &&
        w->focusPolicy() == Qt::WheelFocus) {
      w->setFocusPolicy(Qt::StrongFocus);
    }
    return false;
  }
  if (event->type() != QEvent::Wheel) return false;
  QWidget* field = valueField(watched);
  if (!field || field->hasFocus() || !insideScrolledArea(field)) return false;
  // Not the field's: ignored, the event goes on to the field's parents, and
  // the scrolled area they sit in scrolls (QApplication propagates an
  // ignored wheel event up the parent chain).
  event->ignore();
  return true;
}

}  // namespace kvscope::ui
