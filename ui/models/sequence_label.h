// How the inspector names a sequence: by its request id, an integer ("12"),
// and only for the n > 1 completions of one request by id and 1-based
// completion number ("12 #2"). "12.0" read as a decimal number and sorted as
// text ("10.0" before "9.0"); the tables also order rows by (id, index).
// Header-only (used by BlockTableModel and SharedPrefixModel).
//   tested by tests/ui/block_table_model_test.cpp, shared_prefix_model_test.cpp
#pragma once

#include <QSet>
#include <QString>

#include "engine_types.h"

namespace kvscope::ui {

// Requests with more than one completion in `snapshot` (or one whose index is
// above 0: its siblings may have finished already).
inline QSet<quint64> parallelRequests(const EngineSnapshot& snapshot) {
  QSet<quint64> seen, parallel;
  for (const SequenceSnapshot& seq : snapshot.sequences) {
    if (seq.index > 0 || seen.contains(seq.id)) parallel.insert(seq.id);
    seen.insert(seq.id);
  }
  return parallel;
}

inline QString sequenceLabel(quint64 id, int index, bool parallel) {
  return parallel ? QStringLiteral("%1 #%2").arg(id).arg(index + 1) : QString::number(id);
}

}  // namespace kvscope::ui
