// The size a window opens at: what it asks for where the screen has room,
// else most of the screen, so that no edge starts off it (a laptop at 200 %
// has 1280 x 800 logical pixels; the main window asks for 1500 x 920), and
// how the main window's width is shared between its docks and the chat.
//
// Tests: tests/ui/hidpi_test.cpp.
#pragma once

#include <QRect>
#include <QSize>

namespace kvscope::ui {

// `wanted` bounded by 92 % of `room` (a screen's available geometry); `wanted`
// itself when `room` is not valid (no screen known).
QSize fittedWindowSize(QSize wanted, const QRect& room);

// The widths of the main window's left dock (the conversations) and right
// docks (the inspector) for a window `window_width` wide, laid out for
// `designed_width` with 240 + 820 px of docks around 440 of chat: the chat
// keeps its share, the list its minimum at least, the inspector the rest
// (never negative). Fixed at 240 + 820, a 942-px window left the chat 150.
struct DockWidths {
  int list = 0;
  int inspector = 0;
};
DockWidths dockWidths(int window_width, int designed_width, int list_minimum);

}  // namespace kvscope::ui
