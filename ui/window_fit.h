// The size a window opens at: what it asks for where the screen has room,
// else most of the screen, so that no edge starts off it (a laptop at 200 %
// has 1280 x 800 logical pixels; the main window asks for 1500 x 920).
//
// Tests: tests/ui/hidpi_test.cpp.
#pragma once

#include <QRect>
#include <QSize>

namespace kvscope::ui {

// `wanted` bounded by 92 % of `room` (a screen's available geometry); `wanted`
// itself when `room` is not valid (no screen known).
QSize fittedWindowSize(QSize wanted, const QRect& room);

}  // namespace kvscope::ui
