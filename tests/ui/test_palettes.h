// A light and a dark QPalette for the theme tests (what a desktop's light
// and dark themes hand Qt), and image helpers to check what was painted.
#pragma once

#include <QColor>
#include <QImage>
#include <QPalette>
#include <QRect>

#include "palette_colors.h"

namespace kvscope::test {

inline QPalette lightPalette() {
  QPalette p(QColor(239, 239, 239));  // button/window grey, Qt derives the rest
  p.setColor(QPalette::Window, QColor(239, 239, 239));
  p.setColor(QPalette::WindowText, Qt::black);
  p.setColor(QPalette::Base, Qt::white);
  p.setColor(QPalette::AlternateBase, QColor(247, 247, 247));
  p.setColor(QPalette::Text, Qt::black);
  p.setColor(QPalette::ButtonText, Qt::black);
  p.setColor(QPalette::Mid, QColor(160, 160, 160));
  p.setColor(QPalette::Highlight, QColor(48, 140, 198));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(110, 110, 110));
  return p;
}

// The app's own dark theme (View > Theme > Dark): what a dark desktop's
// palette looks like, and what users who choose Dark get.
inline QPalette darkPalette() { return kvscope::ui::darkAppPalette(); }

// The colour in `area` of `image` that contrasts most with `background`
// (text is antialiased, but its strokes reach the full text colour).
inline QColor mostContrasting(const QImage& image, const QRect& area, const QColor& background) {
  QColor best = background;
  double best_ratio = 1.0;
  const QRect r = area.intersected(image.rect());
  for (int y = r.top(); y <= r.bottom(); ++y) {
    for (int x = r.left(); x <= r.right(); ++x) {
      const QColor c = image.pixelColor(x, y);
      const double ratio = ui::contrastRatio(c, background);
      if (ratio > best_ratio) {
        best_ratio = ratio;
        best = c;
      }
    }
  }
  return best;
}

}  // namespace kvscope::test
