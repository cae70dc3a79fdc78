// Replotting only what can be seen. A QCustomPlot redraws every layer of its
// paint buffers on each replot, whether or not the widget is on screen; the
// inspector's strips replot on each engine snapshot (20 Hz) and most of them
// sit out of view (scrolled past in the Plots dock, or behind another tab),
// and those redraws were most of the GUI thread's time per snapshot
// (tests/ui/bench/window_snapshot_bench.cpp).
//
// replotWhenSeen queues the replot when some of the plot is on screen, and
// otherwise keeps it (unseen_updates.h) for the plot's next paint (scrolled
// into view, its tab raised, grabbed), where it redraws the buffers before
// that paint reads them, so nothing on screen is ever behind its data.
#pragma once

#include "unseen_updates.h"

class QCustomPlot;

namespace kvscope::ui {

void replotWhenSeen(QCustomPlot* plot);

// Whether the plot waits for its next paint to replot (for tests).
bool replotIsDeferred(const QCustomPlot* plot);

}  // namespace kvscope::ui
