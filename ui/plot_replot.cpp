// replotWhenSeen (see plot_replot.h).
#include "plot_replot.h"

#include <qcustomplot.h>

namespace kvscope::ui {

void replotWhenSeen(QCustomPlot* plot) {
  if (onScreen(*plot)) {
    dropDeferredUpdate(plot);
    plot->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  // Inside the paint: the buffers now, the repaint queued (an immediate
  // refresh there would repaint inside that paint).
  runWhenSeen(plot, [plot] { plot->replot(QCustomPlot::rpQueuedRefresh); }, RunDeferred::BeforePaint);
}

bool replotIsDeferred(const QCustomPlot* plot) { return updateIsDeferred(plot); }

}  // namespace kvscope::ui
