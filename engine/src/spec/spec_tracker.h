// SpecTracker: one sequence's speculative-decoding counts, and the rule that
// switches its speculation off for a while when it does not pay.
//
// Why it can lose: each draft token is one more query row in the step, and
// on a CPU a row is far from free. A step of n rows costs about f + r * n:
// a fixed part f (every weight read, thread hand-offs, per-layer overhead)
// and a part r per row. Adding d draft rows that bring a accepted tokens
// raises the step's tokens per second iff
//     a / d  >  r * n / (f + r * n)  =  n / (n + f / r),
// i.e. the acceptance rate must beat the rows' share of the step time, which
// grows with the rows already in the step. Measured on the default model
// (SmolLM2-135M Q4_1, docs/speculative.md): a 1-row decode step 7.4 ms, a
// 5-row verification 17.6 ms, so f / r ~ 2 (kFixedCostInRows): one request
// alone pays from an acceptance of 1/3; with 16 rows in the step only from
// 0.89 (near-verbatim copying).
//
// Rule: a sequence expects the acceptance rate of its last kWindow proposals
// (draft tokens accepted / proposed), counted together with a prior of
// kPriorDrafted draft token, accepted: an unknown sequence gets one try, and
// one proposal of its own outweighs the prior. Before proposing in a step
// that already has n rows, if the expected rate is below
// n / (n + kFixedCostInRows), the sequence pauses: it proposes nothing for
// the next kBasePause decode steps, and its window starts again empty (back
// to the prior: one more try). A pause that follows another with no check
// passed on the sequence's own record in between (its window's rate without
// the prior) is twice as long, up to kMaxPause: a sequence that never
// profits spends ever less on trying, one proposal per pause. A try on the
// prior alone (the window empty) drafts a single token (try_draft_limit):
// one row is enough to learn whether the sequence deserves more.
// Steps where the proposer finds no match are not proposals and cost
// nothing, so they are not counted.
//
// Per sequence, from its own acceptance and the step's row count: the
// decision changes only speed, never the output (verification keeps exactly
// the tokens plain decoding would produce).
//
// Tests: tests/engine/runtime/spec_tracker_test.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace kvscope {

class SpecTracker {
 public:
  static constexpr int32_t kWindow = 8;
  static constexpr int32_t kPriorDrafted = 1;  // the prior: one draft token, accepted
  static constexpr double kFixedCostInRows = 2.0;
  static constexpr int32_t kBasePause = 16;
  static constexpr int32_t kMaxPause = 256;

  // The acceptance rate a proposal must expect in a step of num_rows rows.
  // draft_cost_in_rows: what drafting one token costs besides its row, in
  // target rows (a model proposer's forward passes; 0 for n-gram). With
  // d draft tokens costing d (r + c) the break-even of the header becomes
  // a / d > n (1 + c / r) / (n + f / r); above 1 no proposal can pay.
  static double required_acceptance(int32_t num_rows, double draft_cost_in_rows = 0.0) {
    return num_rows <= 0 ? 0.0 : num_rows * (1.0 + draft_cost_in_rows) / (num_rows + kFixedCostInRows);
  }
  // Accepted / proposed draft tokens over the window and the prior.
  double expected_acceptance() const;

  // Whether this decode step, whose batch already holds num_rows query rows,
  // may propose. While paused it counts the step toward the end of the
  // pause, so call it once per decode step in which the sequence could have
  // proposed; when the expected rate is too low it starts a pause.
  bool may_propose(int32_t num_rows, double draft_cost_in_rows = 0.0);
  // Draft tokens the next proposal may have, at most k: 1 while the window is
  // empty (a try on the prior alone), k otherwise.
  int32_t draft_limit(int32_t k) const { return num_recent_ == 0 ? std::min(k, 1) : k; }
  // After a verification: the drafts proposed and how many were accepted
  // (a prefix of them). Precondition: 0 <= num_accepted <= num_drafted, num_drafted >= 1.
  void record(int32_t num_drafted, int32_t num_accepted);

  bool paused() const { return pause_left_ > 0; }
  int32_t num_pauses() const { return num_pauses_; }  // times this sequence switched speculation off
  int32_t num_drafts() const { return num_drafts_; }  // proposals verified
  int32_t num_draft_tokens() const { return num_draft_tokens_; }
  int32_t num_accepted_tokens() const { return num_accepted_tokens_; }

 private:
  std::array<int32_t, kWindow> recent_drafted_{};   // ring of draft tokens per proposal
  std::array<int32_t, kWindow> recent_accepted_{};  // and of those accepted
  int32_t num_recent_ = 0;   // entries in the ring (<= kWindow)
  int32_t next_ = 0;         // where the next entry goes
  int32_t pause_left_ = 0;   // decode steps still without proposals
  int32_t num_strikes_ = 0;  // pauses since a check last passed on the window alone
  int32_t num_pauses_ = 0;
  int32_t num_drafts_ = 0;
  int32_t num_draft_tokens_ = 0;
  int32_t num_accepted_tokens_ = 0;
};

}  // namespace kvscope
