#include "spec/spec_tracker.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace kvscope {

double SpecTracker::expected_acceptance() const {
  // Entries past num_recent_ are zero (the ring is cleared on a pause).
  const int32_t drafted = std::accumulate(recent_drafted_.begin(), recent_drafted_.end(), kPriorDrafted);
  const int32_t accepted = std::accumulate(recent_accepted_.begin(), recent_accepted_.end(), kPriorDrafted);
  return static_cast<double>(accepted) / static_cast<double>(drafted);
}

bool SpecTracker::may_propose(int32_t num_rows, double draft_cost_in_rows) {
  if (pause_left_ > 0) {
    --pause_left_;
    return false;
  }
  const double required = required_acceptance(num_rows, draft_cost_in_rows);
  if (expected_acceptance() >= required) {
    const int32_t drafted = std::accumulate(recent_drafted_.begin(), recent_drafted_.end(), 0);
    const int32_t accepted = std::accumulate(recent_accepted_.begin(), recent_accepted_.end(), 0);
    if (drafted > 0 && accepted >= required * drafted) num_strikes_ = 0;  // passed on its own record
    return true;
  }
  // The pause starts with this step.
  pause_left_ = std::min(kMaxPause, kBasePause << std::min(num_strikes_, 8)) - 1;
  ++num_strikes_;
  ++num_pauses_;
  recent_drafted_.fill(0);
  recent_accepted_.fill(0);
  num_recent_ = 0;
  next_ = 0;
  return false;
}

void SpecTracker::record(int32_t num_drafted, int32_t num_accepted) {
  assert(num_drafted >= 1 && num_accepted >= 0 && num_accepted <= num_drafted && "record: bad counts");
  ++num_drafts_;
  num_draft_tokens_ += num_drafted;
  num_accepted_tokens_ += num_accepted;
  recent_drafted_[static_cast<size_t>(next_)] = num_drafted;
  recent_accepted_[static_cast<size_t>(next_)] = num_accepted;
  next_ = (next_ + 1) % kWindow;
  num_recent_ = std::min(num_recent_ + 1, kWindow);
}

}  // namespace kvscope
