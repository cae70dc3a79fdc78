// Replotting only what can be seen. A QCustomPlot redraws every layer of its
// paint buffers on each replot, whether or not the widget is on screen; the
// inspector's strips replot on each engine snapshot (20 Hz) and most of them
// sit out of view (scrolled past in the Plots dock, or behind another tab),
// and those redraws were most of the GUI thread's time per snapshot
// (tests/ui/bench/window_snapshot_bench.cpp).
//
// replotWhenSeen queues the replot when some of the plot is on screen, and
// otherwise marks it stale; a stale plot is redrawn as it is next painted
// (scrolled into view, its tab raised, grabbed), before that paint reads
// the buffers, so nothing on screen is ever behind its data.
#pragma once

class QCustomPlot;

namespace kvscope::ui {

void replotWhenSeen(QCustomPlot* plot);

// Whether the plot waits for its next paint to replot (for tests).
bool replotIsDeferred(const QCustomPlot* plot);

}  // namespace kvscope::ui
