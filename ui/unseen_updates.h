// Work for a widget the user cannot see at the moment, put off until it can
// be seen. The inspector is fed engine snapshots 20 times a second, and much
// of it is out of view at any time: strips scrolled past in the Plots dock,
// docks behind another dock's tab (Qt keeps such a dock visible, moved out
// of the window). Redrawing their plots and rewriting their labels (which
// makes the window lay itself out again) was most of the GUI thread's time
// per snapshot (tests/ui/bench/window_snapshot_bench.cpp).
//
// One mechanism, two callers:
//   - updateWhenSeen (panels: MemoryPanel, SharedPrefixPanel) runs `update`
//     now when some of the widget is on screen, or when the widget is not in
//     a shown window at all (being built, or a test's); otherwise it keeps
//     the newest `update` and runs it just after the widget is next shown
//     or painted.
//   - replotWhenSeen (plot_replot.h) keeps a plot's replot for inside its
//     next paint, before the plot paints its buffers.
#pragma once

#include <functional>

class QWidget;

namespace kvscope::ui {

// Whether some of `widget` is on screen now.
bool onScreen(const QWidget& widget);

enum class RunDeferred {
  AfterShowOrPaint,  // queued after the widget's next Show or Paint event
  BeforePaint,       // inside its next Paint event, before the widget paints
};

// Keeps `update` for `widget` (replacing one kept before) until `when`.
void runWhenSeen(QWidget* widget, std::function<void()> update, RunDeferred when);
// Forgets the update kept for `widget`, if any (a newer one ran at once).
void dropDeferredUpdate(QWidget* widget);
// Whether `widget` holds an update for when it is seen (for tests).
bool updateIsDeferred(const QWidget* widget);

void updateWhenSeen(QWidget* widget, std::function<void()> update);

}  // namespace kvscope::ui
