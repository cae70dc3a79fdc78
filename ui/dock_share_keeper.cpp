// Side docks that keep their share of a resized window (see dock_share_keeper.h).
#include "dock_share_keeper.h"

#include <cmath>

#include <QDockWidget>
#include <QEvent>
#include <QMainWindow>
#include <QResizeEvent>
#include <QTimer>

namespace kvscope::ui {

DockShareKeeper::DockShareKeeper(QMainWindow* window, std::vector<QDockWidget*> docks)
    : QObject(window), window_(window), docks_(std::move(docks)) {
  window_->installEventFilter(this);
}

void DockShareKeeper::rememberShares() {
  const int width = window_->width();
  if (width <= 0) return;
  if (shares_.size() != docks_.size()) shares_.assign(docks_.size(), 0.0);
  for (size_t i = 0; i < docks_.size(); ++i) {
    // A hidden or floating dock keeps the share it had.
    if (docks_[i]->isVisible() && !docks_[i]->isFloating()) {
      shares_[i] = static_cast<double>(docks_[i]->width()) / width;
    }
  }
}

std::vector<int> DockShareKeeper::dockWidths() const {
  std::vector<int> widths;
  for (const QDockWidget* dock : docks_) widths.push_back(dock->width());
  return widths;
}

void DockShareKeeper::applyShares() {
  if (shares_.size() != docks_.size()) return;
  QList<QDockWidget*> docks;
  QList<int> widths;
  for (size_t i = 0; i < docks_.size(); ++i) {
    if (!docks_[i]->isVisible() || docks_[i]->isFloating() || shares_[i] <= 0.0) continue;
    docks << docks_[i];
    widths << static_cast<int>(std::lround(shares_[i] * window_->width()));
  }
  if (!docks.isEmpty()) window_->resizeDocks(docks, widths, Qt::Horizontal);
}

bool DockShareKeeper::eventFilter(QObject* watched, QEvent* event) {
  if (watched != window_) return QObject::eventFilter(watched, event);
  switch (event->type()) {
    case QEvent::Resize: {
      const auto* resize = static_cast<QResizeEvent*>(event);
      if (resize->oldSize().width() > 0 && resize->size().width() != resize->oldSize().width()) applyShares();
      break;
    }
    case QEvent::Show:
      // Once laid out at the size it is shown at.
      if (shares_.empty()) QTimer::singleShot(0, this, [this] { rememberShares(); });
      break;
    case QEvent::MouseButtonPress:
      widths_at_press_ = dockWidths();
      break;
    case QEvent::MouseButtonRelease:
      // The end of a drag of a dock's edge, once the layout has settled. A
      // release a child left to the window (a click on the block map, the
      // status bar) moved no edge: the docks' widths say which it was.
      QTimer::singleShot(0, this, [this] {
        if (dockWidths() != widths_at_press_) rememberShares();
      });
      break;
    default:
      break;
  }
  return QObject::eventFilter(watched, event);
}

}  // namespace kvscope::ui
