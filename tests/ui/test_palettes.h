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

inline QPalette darkPalette() {
  QPalette p(QColor(53, 53, 53));
  p.setColor(QPalette::Window, QColor(45, 45, 45));
  p.setColor(QPalette::WindowText, QColor(230, 230, 230));
  p.setColor(QPalette::Base, QColor(30, 30, 30));
  p.setColor(QPalette::AlternateBase, QColor(40, 40, 40));
  p.setColor(QPalette::Text, QColor(230, 230, 230));
  p.setColor(QPalette::ButtonText, QColor(230, 230, 230));
  p.setColor(QPalette::Mid, QColor(90, 90, 90));
  p.setColor(QPalette::Highlight, QColor(42, 130, 218));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
  return p;
}

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
