// Panels fed with engine snapshots 20 times a second that the user cannot
// see at the moment (a dock behind another dock's tab: Qt keeps it "visible"
// but moves it out of the window) put their updates off until they can be
// seen: the labels they rewrite make the window lay itself out again, a cost
// paid for nothing while they are hidden (tests/ui/bench/window_snapshot_bench.cpp).
//
// updateWhenSeen(widget, update) runs `update` now when some of `widget` is
// on screen, or when the widget is not in a shown window at all (being
// built, or a test's); otherwise it keeps `update` (only the newest one) and
// runs it just after the widget is next shown or painted.
#pragma once

#include <functional>

class QWidget;

namespace kvscope::ui {

void updateWhenSeen(QWidget* widget, std::function<void()> update);

// Whether `widget` holds an update for when it is seen (for tests).
bool updateIsDeferred(const QWidget* widget);

}  // namespace kvscope::ui
