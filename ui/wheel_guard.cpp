// WheelGuard; see wheel_guard.h.
#include "wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QEvent>
#include <QWheelEvent>
#include <QWidget>
#include <qcustomplot.h>

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

// A plot that does nothing with the wheel (no zoom). QCustomPlot accepts
// every wheel event all the same and stops it going to its parents
// (Qt::WA_NoMousePropagation), so over the Plots dock's strips the wheel did
// not scroll the dock.
QWidget* inertPlot(QObject* watched) {
  auto* plot = qobject_cast<QCustomPlot*>(watched);
  return plot && !plot->interactions().testFlag(QCP::iRangeZoom) ? plot : nullptr;
}

// The scrolled area `w` sits in, within its own window.
QAbstractScrollArea* scrolledAreaOf(QWidget* w) {
  for (QWidget* p = w; !p->isWindow() && p->parentWidget(); p = p->parentWidget()) {
    if (auto* area = qobject_cast<QAbstractScrollArea*>(p->parentWidget())) return area;
  }
  return nullptr;
}

bool insideScrolledArea(QWidget* w) { return scrolledAreaOf(w) != nullptr; }

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
  if (QWidget* plot = inertPlot(watched)) {
    QAbstractScrollArea* area = scrolledAreaOf(plot);
    // (A plot that is the area's viewport itself would get the event back.)
    if (!area || area->viewport() == plot) return false;
    // Given to the area's viewport directly: the plot would not pass it up.
    const auto* wheel = static_cast<QWheelEvent*>(event);
    QWheelEvent moved(area->viewport()->mapFromGlobal(wheel->globalPosition()), wheel->globalPosition(),
                      wheel->pixelDelta(), wheel->angleDelta(), wheel->buttons(), wheel->modifiers(), wheel->phase(),
                      wheel->inverted(), wheel->source());
    QCoreApplication::sendEvent(area->viewport(), &moved);
    return true;
  }
  QWidget* field = valueField(watched);
  if (!field || field->hasFocus() || !insideScrolledArea(field)) return false;
  // Not the field's: ignored, the event goes on to the field's parents, and
  // the scrolled area they sit in scrolls (QApplication propagates an
  // ignored wheel event up the parent chain).
  event->ignore();
  return true;
}

}  // namespace kvscope::ui
