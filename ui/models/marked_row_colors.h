// Colours of a marked row in the inspector's tables (the current event of a
// trace replay, the sequences of a clicked block): a pale yellow background
// and, with it, dark text. A view otherwise paints the palette's text colour,
// which on a dark theme is light and all but vanishes on pale yellow.
// Checked with contrastRatio (palette_colors.h) in the models' tests.
#pragma once

#include <QColor>

namespace kvscope::ui {

inline QColor markedRowBackground() { return QColor(255, 236, 160); }
inline QColor markedRowForeground() { return QColor(32, 32, 32); }

}  // namespace kvscope::ui
