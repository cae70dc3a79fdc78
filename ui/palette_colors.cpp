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

QPalette darkAppPalette() {
  const QColor window(0x2b, 0x2b, 0x2b), base(0x1e, 0x1e, 0x1e), text(0xe8, 0xe8, 0xe8);
  const QColor button(0x35, 0x35, 0x35), disabled(0x8a, 0x8a, 0x8a), highlight(0x2f, 0x6f, 0xb8);
  QPalette p;
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3a, 0x3a));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, button);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
  p.setColor(QPalette::Light, QColor(0x4a, 0x4a, 0x4a));
  p.setColor(QPalette::Midlight, QColor(0x40, 0x40, 0x40));
  p.setColor(QPalette::Mid, QColor(0x2f, 0x2f, 0x2f));
  p.setColor(QPalette::Dark, QColor(0x1a, 0x1a, 0x1a));
  p.setColor(QPalette::Shadow, QColor(0x0a, 0x0a, 0x0a));
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x6c, 0xb0, 0xff));
  p.setColor(QPalette::LinkVisited, QColor(0xb4, 0x8c, 0xff));
  for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) {
    p.setColor(QPalette::Disabled, role, disabled);
  }
  p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x4a, 0x4a, 0x4a));
  return p;
}

}  // namespace kvscope::ui
