// How a tensor-parallel split is put into words for the UI (TensorParallelMemory,
// kvscope/rank_memory.h): the memory panel's per-rank table and the block
// map's note that one physical block holds every rank's KV heads (one block
// table serves all ranks: docs/tensor-parallel.md). Pure functions of the
// values, so tests check the text without a widget.
//   tested by tests/ui/panels_test.cpp and tests/ui/block_map_widget_test.cpp
#pragma once

#include <QString>

#include "kvscope/rank_memory.h"

namespace kvscope::ui {

// "3" or "3–5": heads [begin, begin + num).
QString headRangeText(int begin, int num);
// "rank 0: KV heads 0–1, rank 1: KV head 2"; with copies, "(copies)" after
// the ranks sharing a head. Empty for one rank.
QString rankKvHeadsText(const TensorParallelMemory& tp);
// The block map's line: every physical block holds the K/V of every rank's
// KV heads, then rankKvHeadsText. Empty for one rank.
QString blockSharedAcrossRanksText(const TensorParallelMemory& tp);
// An HTML table, one row per rank: query heads, KV heads, weight MiB, KV MiB,
// workspace MiB,
// with a totals row and, when KV heads are copied, a line saying how many.
// Empty for one rank.
QString rankTableHtml(const TensorParallelMemory& tp);

}  // namespace kvscope::ui
