// fittedWindowSize; see window_fit.h.
#include "window_fit.h"

namespace kvscope::ui {

QSize fittedWindowSize(QSize wanted, const QRect& room) {
  // A margin for the window frame and panels the available geometry may not count.
  return room.isValid() ? wanted.boundedTo(room.size() * 0.92) : wanted;
}

}  // namespace kvscope::ui
