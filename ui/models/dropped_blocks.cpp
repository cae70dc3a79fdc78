// Blocks a recent context shift freed; see dropped_blocks.h.
#include "models/dropped_blocks.h"

#include <algorithm>

#include <QCoreApplication>

#include "models/sequence_label.h"

namespace kvscope::ui {

std::vector<DroppedBlock> droppedBlocks(const EngineSnapshot& snapshot, double now_s, double window_s) {
  const size_t n = snapshot.blocks.size();
  std::vector<DroppedBlock> out(n);
  const std::vector<ContextShiftSnapshot>& shifts = snapshot.recent_shifts;
  // Oldest first, so a later shift that freed the same block again wins.
  for (size_t k = 0; k < shifts.size(); ++k) {
    const ContextShiftSnapshot& shift = shifts[k];
    if (now_s - shift.time_s > window_s) continue;
    for (size_t i = 0; i < shift.freed_blocks.size() && i < shift.freed_from.size(); ++i) {
      const int32_t b = shift.freed_blocks[i];
      if (b < 0 || static_cast<size_t>(b) >= n) continue;
      if (snapshot.blocks[static_cast<size_t>(b)].state == BlockState::Used) continue;
      out[static_cast<size_t>(b)] = {static_cast<int32_t>(k), static_cast<int32_t>(i)};
    }
  }
  return out;
}

double secondsUntilAMarkEnds(const EngineSnapshot& snapshot, const std::vector<DroppedBlock>& marks, double now_s,
                             double window_s) {
  double first = -1.0;
  for (const DroppedBlock& mark : marks) {
    if (!mark.marked() || static_cast<size_t>(mark.shift) >= snapshot.recent_shifts.size()) continue;
    const double left = snapshot.recent_shifts[static_cast<size_t>(mark.shift)].time_s + window_s - now_s;
    if (first < 0.0 || left < first) first = std::max(left, 0.0);
  }
  return first;
}

QString droppedBlockText(const EngineSnapshot& snapshot, const DroppedBlock& block) {
  if (!block.marked() || static_cast<size_t>(block.shift) >= snapshot.recent_shifts.size()) return {};
  const ContextShiftSnapshot& shift = snapshot.recent_shifts[static_cast<size_t>(block.shift)];
  if (static_cast<size_t>(block.slot) >= shift.freed_from.size()) return {};
  const int first = shift.freed_from[static_cast<size_t>(block.slot)];
  // A finished request is gone from `sequences`; a completion index above 0 still says "n > 1".
  const bool parallel = shift.index > 0 || parallelRequests(snapshot).contains(shift.request_id);
  return QCoreApplication::translate("DroppedBlocks", "dropped by a context shift of request %1: positions %2–%3")
      .arg(sequenceLabel(shift.request_id, shift.index, parallel))
      .arg(first)
      .arg(first + snapshot.block_size - 1);
}

}  // namespace kvscope::ui
