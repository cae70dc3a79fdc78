// How the block map draws one physical KV block: a pure function of the
// block's snapshot, so the colour/state mapping is unit-tested
// (tests/ui/block_cell_style_test.cpp) without painting anything.
#pragma once

#include <span>

#include <QColor>

#include "kvscope/engine_snapshot.h"

namespace kvscope::ui {

enum class CellKind { Free, Used, CachedFree };

struct CellStyle {
  CellKind kind = CellKind::Free;
  QColor fill;            // the cell's colour
  bool shared = false;    // ref_count > 1: drawn with a mark
  bool highlighted = false;  // owned by a selected request
  bool dimmed = false;    // a selection exists and this block is not part of it
  double fill_fraction = 0.0;  // fill / block_size, 0..1
};

// A stable, well-spread hue (0..359) for a request id (golden-ratio steps).
int hueForRequest(RequestId id);

// The style of `block`, owned by `owners` (its slice of block_owners), in a
// pool of `block_size`-slot blocks. `selected` are the requests picked by a
// click (empty: no selection). Used blocks take the hue of their first owner,
// darker the fuller they are; cached-free blocks are pale grey-blue; free ones
// a neutral light grey.
CellStyle cellStyleFor(const BlockSnapshot& block, std::span<const RequestId> owners, int block_size,
                       std::span<const RequestId> selected = {});

// The same style washed out (low saturation, lighter) and marked dimmed: a
// block outside the current selection or focused sequence.
CellStyle washedOut(CellStyle style);

}  // namespace kvscope::ui
