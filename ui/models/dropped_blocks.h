// Blocks a recent context shift freed (EngineSnapshot::recent_shifts,
// docs/context-overflow.md), for the block map's "dropped" mark and tooltip.
//
// How long a shift stays marked: kDroppedMarkSeconds of snapshot time (and
// wall time after the last snapshot), not a number of steps. The app samples snapshots at a steady rate while steps
// range from milliseconds (batch-1 decode) to seconds (a long prefill), so N
// steps would flash by too fast to see or linger; two seconds is long enough
// to notice and much shorter than the quarter of a context that passes before
// the same sequence shifts again. A block that is in use again (its slot
// reallocated) loses the mark at once: it holds other tokens now.
//   tested by tests/ui/block_map_widget_test.cpp
#pragma once

#include <cstdint>
#include <vector>

#include <QString>

#include "engine_types.h"

namespace kvscope::ui {

inline constexpr double kDroppedMarkSeconds = 2.0;

// Where a block's mark comes from: recent_shifts[shift].freed_blocks[slot].
struct DroppedBlock {
  int32_t shift = -1;  // -1: not marked
  int32_t slot = -1;
  bool marked() const { return shift >= 0; }
};

// [num_blocks] for each physical block, the latest shift within `window_s`
// seconds of `now_s` that freed it and that is not in use now. `now_s` is on
// the snapshot's clock: its time_s, or later while no newer snapshot comes
// (an idle engine sends none, and its last shift's marks must still end).
std::vector<DroppedBlock> droppedBlocks(const EngineSnapshot& snapshot, double now_s,
                                        double window_s = kDroppedMarkSeconds);
inline std::vector<DroppedBlock> droppedBlocks(const EngineSnapshot& snapshot) {
  return droppedBlocks(snapshot, snapshot.time_s);
}

// Seconds after `now_s` when the first of `marks` ends; a negative number
// when none is marked.
double secondsUntilAMarkEnds(const EngineSnapshot& snapshot, const std::vector<DroppedBlock>& marks, double now_s,
                             double window_s = kDroppedMarkSeconds);

// "dropped by a context shift of request R: positions a–b" (positions in the
// context as it was before that shift); empty when `block` is not marked.
QString droppedBlockText(const EngineSnapshot& snapshot, const DroppedBlock& block);

}  // namespace kvscope::ui
