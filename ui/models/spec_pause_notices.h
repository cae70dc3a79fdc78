// SpecPauseNotices: the status-line note when speculative decoding switches
// itself off for a request because its drafts were not paying
// (docs/speculative.md, "When speculation switches itself off"), from the
// snapshots. Not spammy: each request is named once, at its first pause (a
// paused request retries and may pause again and again; that is the rule
// working, not news), and a note is given at most every kMinIntervalMs, the
// requests that paused in between gathered into it. The request comes from
// SequenceSnapshot::spec_paused (StepStats::num_spec_pauses has no request);
// a pause lasts at least 16 decode steps, longer than the ~50 ms between two
// snapshots, so the snapshots see it.
#pragma once

#include <set>
#include <vector>

#include <QString>
#include <QtGlobal>

#include "engine_types.h"

namespace kvscope::ui {

class SpecPauseNotices {
 public:
  static constexpr qint64 kMinIntervalMs = 5000;

  // The note to show now, or "" (nothing new, or one was shown less than
  // kMinIntervalMs ago: what is new waits for the next call).
  QString update(const EngineSnapshot& snapshot, qint64 now_ms);
  void clear();

 private:
  std::set<RequestId> named_;        // requests already named (or waiting to be), while they exist
  std::vector<RequestId> unreported_;
  qint64 last_note_ms_ = 0;
  bool noted_ = false;
  uint64_t last_step_ = 0;
};

}  // namespace kvscope::ui
