// Palette-derived colours (see palette_colors.h).
#include "palette_colors.h"

#include <algorithm>
#include <cmath>

namespace kvscope::ui {

bool isDarkPalette(const QPalette& palette) {
  return palette.color(QPalette::Base).lightness() < palette.color(QPalette::Text).lightness();
}

QColor mixColors(const QColor& a, const QColor& b, double t) {
  // In 8-bit channels, as they are painted: a colour that went through a
  // QImage compares equal to the one computed here.
  t = std::clamp(t, 0.0, 1.0);
  const auto mix = [t](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * t)); };
  const QColor ra = a.toRgb();
  const QColor rb = b.toRgb();
  return QColor(mix(ra.red(), rb.red()), mix(ra.green(), rb.green()), mix(ra.blue(), rb.blue()),
                mix(ra.alpha(), rb.alpha()));
}

QColor errorTextColor(const QPalette& palette) {
  return isDarkPalette(palette) ? QColor(255, 120, 120) : QColor(176, 0, 32);
}

QPalette withErrorText(QPalette palette) {
  const QColor error = errorTextColor(palette);
  palette.setColor(QPalette::WindowText, error);
  palette.setColor(QPalette::Text, error);
  return palette;
}

QColor draftTokenBackground(const QPalette& palette) {
  // A dark theme needs a stronger blend for the same visible difference.
  const QColor green = isDarkPalette(palette) ? QColor(70, 190, 110) : QColor(60, 180, 90);
  return mixColors(palette.color(QPalette::Base), green, isDarkPalette(palette) ? 0.28 : 0.22);
}

namespace {

double relativeLuminance(const QColor& c) {
  const auto channel = [](float v) {
    return v <= 0.03928f ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  const QColor rgb = c.toRgb();
  return 0.2126 * channel(rgb.redF()) + 0.7152 * channel(rgb.greenF()) + 0.0722 * channel(rgb.blueF());
}

}  // namespace

double contrastRatio(const QColor& a, const QColor& b) {
  const double la = relativeLuminance(a);
  const double lb = relativeLuminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

}  // namespace kvscope::ui
