// How the block map draws one physical KV block: a pure function of the
// block's snapshot, so the colour/state mapping is unit-tested
// (tests/ui/block_cell_style_test.cpp) without painting anything.
#pragma once

#include <span>

#include <QColor>
#include <QPalette>

#include "kvscope/engine_snapshot.h"

namespace kvscope::ui {

enum class CellKind { Free, Used, CachedFree };

struct CellStyle {
  CellKind kind = CellKind::Free;
  QColor fill;            // the cell's colour
  bool shared = false;    // ref_count > 1: drawn with a mark
  bool cascade = false;   // read once by the last step's cascade pass: a second mark
  bool highlighted = false;  // owned by a selected request
  bool dimmed = false;    // a selection exists and this block is not part of it
  double fill_fraction = 0.0;  // fill / block_size, 0..1
};

// The colours a block map paints with besides the per-request hues, taken
// from the widget's palette so that free cells, marks and outlines read on a
// light or a dark background. The defaults are the light look.
struct CellPalette {
  bool dark = false;                            // the palette is a dark theme
  QColor background = QColor(255, 255, 255);    // behind the cells (Base)
  QColor free = QColor(228, 228, 228);          // a free block: a step off the background
  QColor cached_free = QColor(176, 196, 222);   // steel blue: reusable by a prefix hit
  QColor cached_free_edge = QColor(100, 130, 170);
  QColor mark_fill = QColor(255, 255, 255);     // the shared-block corner triangle
  QColor mark_edge = QColor(30, 30, 30);
  // The cascade mark (bottom-right triangle): amber, unlike any theme colour
  // the map uses, with the shared mark's edge so it reads on any fill.
  QColor cascade_fill = QColor(240, 150, 0);
  QColor cascade_edge = QColor(30, 30, 30);
  // The context-shift mark (a cross over a block a recent shift freed):
  // crimson, unlike the request hues' usual use and the amber cascade mark.
  QColor dropped = QColor(200, 20, 60);

  static CellPalette fromPalette(const QPalette& palette);
};

// A stable, well-spread hue (0..359) for a request id (golden-ratio steps).
int hueForRequest(RequestId id);

// The style of `block`, owned by `owners` (its slice of block_owners), in a
// pool of `block_size`-slot blocks. `selected` are the requests picked by a
// click (empty: no selection). Used blocks take the hue of their first owner,
// further from the background the fuller they are (darker on a light theme,
// brighter on a dark one); cached-free and free blocks take `colours`.
CellStyle cellStyleFor(const BlockSnapshot& block, std::span<const RequestId> owners, int block_size,
                       std::span<const RequestId> selected = {}, const CellPalette& colours = {});

// The same style washed out (low saturation, drawn towards the background)
// and marked dimmed: a block outside the current selection or focused sequence.
CellStyle washedOut(CellStyle style, const CellPalette& colours = {});

}  // namespace kvscope::ui
