// fittedWindowSize; see window_fit.h.
#include "window_fit.h"

#include <algorithm>

namespace kvscope::ui {

QSize fittedWindowSize(QSize wanted, const QRect& room) {
  // A margin for the window frame and panels the available geometry may not count.
  return room.isValid() ? wanted.boundedTo(room.size() * 0.92) : wanted;
}

DockWidths dockWidths(int window_width, int designed_width, int list_minimum) {
  const double scale = std::min(1.0, static_cast<double>(window_width) / designed_width);
  DockWidths w;
  w.list = std::max(static_cast<int>(240 * scale), list_minimum);
  const int chat = static_cast<int>(440 * scale);
  w.inspector = std::max(window_width - w.list - chat, 0);
  return w;
}

}  // namespace kvscope::ui
