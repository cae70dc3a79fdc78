// SpecTracker (spec/spec_tracker.h), label `unit`: the auto-disable rule.
// The required acceptance grows with the rows in the step; an unknown
// sequence gets one try (the prior); a sequence expecting less than required
// pauses for kBasePause decode steps, consecutive pauses double up to
// kMaxPause and a check passed on its own record resets them; the counts add up.
#include <gtest/gtest.h>

#include "spec/spec_tracker.h"

namespace kvscope {
namespace {

// Decode steps in a row that may_propose(num_rows) refuses, the refusing
// check that starts a pause included.
int32_t refused_steps(SpecTracker& t, int32_t num_rows) {
  int32_t n = 0;
  while (!t.may_propose(num_rows)) ++n;
  return n;
}

TEST(SpecTracker, RequiredAcceptanceIsTheRowsShareOfTheStep) {
  EXPECT_NEAR(SpecTracker::required_acceptance(1), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(SpecTracker::required_acceptance(2), 0.5, 1e-12);
  EXPECT_NEAR(SpecTracker::required_acceptance(16), 16.0 / 18.0, 1e-12);
  for (int32_t n = 1; n < 64; ++n) EXPECT_LT(SpecTracker::required_acceptance(n), SpecTracker::required_acceptance(n + 1));
}

TEST(SpecTracker, AnUnknownSequenceGetsOneTry) {
  SpecTracker t;
  EXPECT_DOUBLE_EQ(t.expected_acceptance(), 1.0);
  EXPECT_TRUE(t.may_propose(16));  // even in a full step
  t.record(4, 2);                  // (2 + 1) of (4 + 1) with the prior
  EXPECT_DOUBLE_EQ(t.expected_acceptance(), 0.6);
  EXPECT_TRUE(t.may_propose(1));    // 0.6 >= 1/3: alone it pays
  EXPECT_FALSE(t.may_propose(16));  // 0.6 < 16/18: with 16 rows it does not
  EXPECT_TRUE(t.paused());
  EXPECT_EQ(t.num_pauses(), 1);
  // A try on the prior alone drafts one token; with a record, up to k.
  SpecTracker fresh;
  EXPECT_EQ(fresh.draft_limit(4), 1);
  fresh.record(1, 1);
  EXPECT_EQ(fresh.draft_limit(4), 4);
  // One failed try outweighs the prior.
  SpecTracker u;
  EXPECT_TRUE(u.may_propose(1));
  u.record(4, 0);
  EXPECT_FALSE(u.may_propose(1));
}

TEST(SpecTracker, GoodProposalsNeverPause) {
  SpecTracker t;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(t.may_propose(1)) << i;
    t.record(4, i % 2 ? 0 : 3);  // 3 of 8 per two proposals: 0.375
  }
  EXPECT_FALSE(t.paused());
  EXPECT_EQ(t.num_pauses(), 0);
  EXPECT_EQ(t.num_drafts(), 100);
  EXPECT_EQ(t.num_draft_tokens(), 400);
  EXPECT_EQ(t.num_accepted_tokens(), 150);
}

TEST(SpecTracker, TheRateCountsTokensNotProposals) {
  // Seven one-token drafts all accepted and one 12-token draft all rejected:
  // (7 + 1) of (19 + 1) = 0.4, enough alone, not with 2 rows in the step (0.5).
  SpecTracker t;
  for (int i = 0; i < 7; ++i) t.record(1, 1);
  t.record(12, 0);
  EXPECT_DOUBLE_EQ(t.expected_acceptance(), 0.4);
  EXPECT_TRUE(t.may_propose(1));
  EXPECT_FALSE(t.may_propose(2));
}

TEST(SpecTracker, PausesDoubleUntilACheckPassesOnTheSequencesOwnRecord) {
  SpecTracker t;
  t.record(4, 1);  // 2 of 5
  EXPECT_TRUE(t.may_propose(1));
  t.record(4, 0);  // 2 of 9
  EXPECT_EQ(refused_steps(t, 1), SpecTracker::kBasePause);
  EXPECT_EQ(t.num_pauses(), 1);
  // After the pause the window is empty: back to the prior, one more try.
  EXPECT_DOUBLE_EQ(t.expected_acceptance(), 1.0);
  int32_t expected = 2 * SpecTracker::kBasePause;
  for (int k = 0; k < 6; ++k) {
    t.record(4, 0);  // the try fails: 1 of 5
    EXPECT_EQ(refused_steps(t, 1), std::min(expected, SpecTracker::kMaxPause)) << "pause " << k + 2;
    expected *= 2;
  }
  EXPECT_EQ(t.num_pauses(), 7);
  // Passing thanks to the prior (2 of 5; 1 of 4 alone) does not reset the doubling...
  t.record(4, 1);
  EXPECT_TRUE(t.may_propose(1));
  t.record(4, 0);
  EXPECT_EQ(refused_steps(t, 1), SpecTracker::kMaxPause);
  // ...passing on its own record (2 of 4) does.
  t.record(4, 2);
  EXPECT_TRUE(t.may_propose(1));
  t.record(4, 0);
  t.record(4, 0);  // 3 of 13
  EXPECT_EQ(refused_steps(t, 1), SpecTracker::kBasePause);
  EXPECT_EQ(t.num_pauses(), 9);
}

TEST(SpecTracker, TheWindowSlides) {
  SpecTracker t;
  t.record(4, 4);
  for (int i = 0; i < SpecTracker::kWindow - 1; ++i) t.record(4, 0);
  EXPECT_DOUBLE_EQ(t.expected_acceptance(), 5.0 / 33.0);  // the good one is still in the last 8
  t.record(4, 0);
  EXPECT_DOUBLE_EQ(t.expected_acceptance(), 1.0 / 33.0);  // now it is not
}

}  // namespace
}  // namespace kvscope
