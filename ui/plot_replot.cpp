// replotWhenSeen (see plot_replot.h).
#include "plot_replot.h"

#include <QEvent>
#include <QObject>
#include <QPointer>
#include <qcustomplot.h>

namespace kvscope::ui {
namespace {

// Lives as a child of its plot (found by type: Q_OBJECT makes the type
// findable), filtering the plot's events.
class DeferredReplot : public QObject {
  Q_OBJECT

 public:
  explicit DeferredReplot(QCustomPlot* plot) : QObject(plot), plot_(plot) { plot->installEventFilter(this); }

  bool stale = false;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == plot_ && event->type() == QEvent::Paint && stale) {
      stale = false;
      // The buffers now; the paint under way then draws them. (An immediate
      // refresh here would repaint inside this paint.)
      plot_->replot(QCustomPlot::rpQueuedRefresh);
    }
    return false;
  }

 private:
  QPointer<QCustomPlot> plot_;
};

DeferredReplot* deferredOf(const QCustomPlot* plot) { return plot->findChild<DeferredReplot*>(QString(), Qt::FindDirectChildrenOnly); }

}  // namespace

void replotWhenSeen(QCustomPlot* plot) {
  DeferredReplot* deferred = deferredOf(plot);
  if (!deferred) deferred = new DeferredReplot(plot);
  if (plot->isVisible() && !plot->visibleRegion().isEmpty()) {
    deferred->stale = false;
    plot->replot(QCustomPlot::rpQueuedReplot);
  } else {
    deferred->stale = true;
  }
}

bool replotIsDeferred(const QCustomPlot* plot) {
  const DeferredReplot* deferred = deferredOf(plot);
  return deferred && deferred->stale;
}

}  // namespace kvscope::ui

#include "plot_replot.moc"
