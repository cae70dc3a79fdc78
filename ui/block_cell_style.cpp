// Block map colours (see block_cell_style.h).
#include "block_cell_style.h"

#include <algorithm>
#include <cmath>

namespace kvscope::ui {

int hueForRequest(RequestId id) {
  // Fractional parts of k * golden ratio are spread evenly over [0, 1), so
  // consecutive request ids get clearly different hues.
  constexpr double kGolden = 0.6180339887498949;
  const double f = std::fmod(static_cast<double>(id % 100000) * kGolden + 0.1, 1.0);
  return static_cast<int>(f * 360.0) % 360;
}

CellStyle cellStyleFor(const BlockSnapshot& block, std::span<const RequestId> owners, int block_size,
                       std::span<const RequestId> selected) {
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
      s.fill = QColor(228, 228, 228);
      break;
    case BlockState::CachedFree:
      s.kind = CellKind::CachedFree;
      s.fill = QColor(176, 196, 222);  // pale steel blue: reusable by a prefix hit
      break;
    case BlockState::Used: {
      s.kind = CellKind::Used;
      // A nearly empty block is pale, a full one deep and darker.
      const int hue = owners.empty() ? 0 : hueForRequest(owners.front());
      const int sat = owners.empty() ? 0 : 90 + static_cast<int>(std::lround(150.0 * s.fill_fraction));
      const int value = 250 - static_cast<int>(std::lround(70.0 * s.fill_fraction));
      s.fill = QColor::fromHsv(hue, sat, value);
      break;
    }
  }
  return s.dimmed ? washedOut(s) : s;
}

CellStyle washedOut(CellStyle style) {
  // Washed out so the selected requests' blocks stand out.
  const QColor c = style.fill.toHsv();
  style.fill = QColor::fromHsv(std::max(c.hsvHue(), 0), c.hsvSaturation() / 4, std::min(255, c.value() + 25));
  style.dimmed = true;
  style.highlighted = false;
  return style;
}

}  // namespace kvscope::ui
