// Block map colours (see block_cell_style.h).
#include "block_cell_style.h"

#include <algorithm>
#include <cmath>

#include "palette_colors.h"

namespace kvscope::ui {

CellPalette CellPalette::fromPalette(const QPalette& palette) {
  CellPalette c;
  const QColor base = palette.color(QPalette::Base);
  const QColor text = palette.color(QPalette::Text);
  c.dark = isDarkPalette(palette);
  c.background = base;
  // Free cells sit a small step from the background towards the text colour:
  // visible as a grid of empty slots on either theme, yet quieter than any
  // used block. Cached-free ones are steel blue at the same kind of step.
  const QColor steel(70, 110, 170);
  c.free = mixColors(base, text, c.dark ? 0.16 : 0.11);
  c.cached_free = mixColors(base, c.dark ? QColor(110, 150, 210) : steel, c.dark ? 0.45 : 0.45);
  c.cached_free_edge = mixColors(base, c.dark ? QColor(140, 175, 230) : steel, 0.8);
  // The corner mark is the lighter of base and text with the darker as its
  // edge, so it shows on pale and deep fills on both themes.
  c.mark_fill = c.dark ? text : base;
  c.mark_edge = c.dark ? base : text;
  // Amber for the cascade mark: deeper on a light theme, lighter on a dark
  // one, so the triangle itself stands off the background either way.
  c.cascade_fill = c.dark ? QColor(255, 190, 60) : QColor(230, 135, 0);
  c.cascade_edge = c.mark_edge;
  c.dropped = c.dark ? QColor(255, 90, 110) : QColor(200, 20, 60);  // stands off either background
  return c;
}

int hueForRequest(RequestId id) {
  // Fractional parts of k * golden ratio are spread evenly over [0, 1), so
  // consecutive request ids get clearly different hues.
  // t - floor(t) is fmod(t, 1) exactly for t >= 0, without the library call
  // (the block map asks once per cell per repaint).
  constexpr double kGolden = 0.6180339887498949;
  const double t = static_cast<double>(id % 100000) * kGolden + 0.1;
  const double f = t - std::floor(t);
  return static_cast<int>(f * 360.0) % 360;
}

CellStyle cellStyleFor(const BlockSnapshot& block, std::span<const RequestId> owners, int block_size,
                       std::span<const RequestId> selected, const CellPalette& colours) {
  CellStyle s;
  const int size = std::max(block_size, 1);
  s.fill_fraction = std::clamp(static_cast<double>(block.fill) / size, 0.0, 1.0);
  s.shared = block.shared();
  bool in_selection = false;
  for (RequestId owner : owners) {
    if (std::find(selected.begin(), selected.end(), owner) != selected.end()) in_selection = true;
  }
  s.highlighted = in_selection;
  s.dimmed = !selected.empty() && !in_selection;

  switch (block.state) {
    case BlockState::Free:
      s.kind = CellKind::Free;
      s.fill = colours.free;
      break;
    case BlockState::CachedFree:
      s.kind = CellKind::CachedFree;
      s.fill = colours.cached_free;
      break;
    case BlockState::Used: {
      s.kind = CellKind::Used;
      // A nearly empty block stays close to the background, a full one stands
      // out: on a light theme pale -> deep and darker, on a dark theme dim ->
      // vivid and brighter.
      const int hue = owners.empty() ? 0 : hueForRequest(owners.front());
      const double f = s.fill_fraction;
      int sat = 0;
      int value = 0;
      if (colours.dark) {
        sat = 110 + static_cast<int>(std::lround(120.0 * f));
        value = 120 + static_cast<int>(std::lround(110.0 * f));
      } else {
        sat = 90 + static_cast<int>(std::lround(150.0 * f));
        value = 250 - static_cast<int>(std::lround(70.0 * f));
      }
      s.fill = QColor::fromHsv(hue, owners.empty() ? 0 : sat, value);
      break;
    }
  }
  return s.dimmed ? washedOut(s, colours) : s;
}

CellStyle washedOut(CellStyle style, const CellPalette& colours) {
  // Washed out so the selected requests' blocks stand out: little colour
  // left, and drawn towards the background (lighter on a light theme,
  // darker on a dark one).
  // A free cell has no colour to give up; it stays as it is, so the pool's
  // empty slots remain visible around a selection.
  style.dimmed = true;
  style.highlighted = false;
  if (style.kind == CellKind::Free) return style;
  const QColor c = style.fill.toHsv();
  const QColor grey = QColor::fromHsv(std::max(c.hsvHue(), 0), c.hsvSaturation() / 4, c.value());
  style.fill = colours.dark ? mixColors(grey, colours.background, 0.45)
                            : QColor::fromHsv(std::max(c.hsvHue(), 0), c.hsvSaturation() / 4,
                                              std::min(255, c.value() + 25));
  return style;
}

}  // namespace kvscope::ui
