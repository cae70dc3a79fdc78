// InvarianceReport::unexercised (no engine): a setting a side asked for and
// its runs never exercised is named, with why, so that "identical" is known
// to have tested something. Its notes on settings that change the numbers by
// design are in invariance_expected_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvscope/invariance_check.h"

namespace kvscope {
namespace {

// unexercised(): a setting the sides differ in, asked for by one side and
// never done by its runs, is named once; one both sides share, or one that
// ran, is not.
TEST(InvarianceReport, NamesWhatASideAskedForButNeverDid) {
  InvarianceReport r;
  r.a.config.cascade = CascadeMode::Off;
  r.b.config.cascade = CascadeMode::On;
  r.a.concurrency = 1;
  r.b.concurrency = 8;
  r.b.config.spec = SpecMethod::Ngram;
  r.a.config.prefix_caching = r.b.config.prefix_caching = true;
  r.stats_b.max_batch_seqs = 1;
  r.stats_b.max_checked_batch_seqs = 1;
  std::vector<std::string> notes = r.unexercised();
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0].rfind("b: cascade = on, but no step ran a cascade pass", 0), 0u) << notes[0];
  EXPECT_EQ(notes[1], "b: concurrency = 8, but no step ran the checked request beside another sequence");
  EXPECT_EQ(notes[2], "b: spec = ngram, but no draft token was verified");
  r.stats_b.num_cascade_steps = 3;
  r.stats_b.max_batch_seqs = 8;
  r.stats_b.max_checked_batch_seqs = 8;
  r.stats_b.num_draft_tokens = 12;
  r.stats_b.num_spec_steps = 3;
  r.stats_b.num_decode_steps = 12;
  EXPECT_TRUE(r.unexercised().empty());
  // Drafts in 1 of 12 decoding steps: speculation paused for the rest.
  r.stats_b.num_spec_steps = 1;
  notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "b: spec = ngram, but only 1 of 12 decoding steps verified draft tokens (speculation pauses "
                      "where drafts do not pay)");
  r.stats_b.num_spec_steps = 3;
  r.a.config.prefix_caching = false;  // now under test, and b's cache never hit
  notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("b: prefix caching is on, but no prompt token came from the cache", 0), 0u) << notes[0];
}

// auto against on compares on with not-on: an auto side that never grouped
// is the baseline doing its job, not worth a note. Against off it is the
// mode under test, and its idleness is.
TEST(InvarianceReport, AnAutoBaselineAgainstOnIsNotNoted) {
  InvarianceReport r;
  r.a.config.cascade = CascadeMode::Auto;
  r.b.config.cascade = CascadeMode::On;
  r.b.concurrency = 16;
  r.stats_b.max_batch_seqs = r.stats_b.max_checked_batch_seqs = 16;
  r.stats_b.num_cascade_steps = 5;
  EXPECT_TRUE(r.unexercised().empty());
  r.b.config.cascade = CascadeMode::Off;
  const std::vector<std::string> notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("a: cascade = auto, but no step ran a cascade pass", 0), 0u) << notes[0];
}

// A cascade that could not run says why: no shared blocks without paging or
// without the prefix cache, and only then the prefix length it needs.
TEST(InvarianceReport, AnIdleCascadeNamesItsCause) {
  InvarianceReport r;
  r.a.config.cascade = CascadeMode::On;
  r.b.config.cascade = CascadeMode::Off;
  r.a.config.paged = false;
  std::vector<std::string> notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("(paged attention is off: a contiguous request shares no block)"), std::string::npos)
      << notes[0];
  r.a.config.paged = true;
  r.a.config.prefix_caching = r.b.config.prefix_caching = false;
  notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("(prefix caching is off: separate requests share no block)"), std::string::npos)
      << notes[0];
  r.a.config.prefix_caching = r.b.config.prefix_caching = true;
  notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("(concurrency = 1: one sequence has no other to share a prefix with"), std::string::npos)
      << notes[0];
  r.a.concurrency = 8;
  r.a.config.max_seqs = 1;  // then no step runs two sequences, whatever the prompts
  r.stats_a.max_batch_seqs = r.stats_a.max_checked_batch_seqs = 1;
  notes = r.unexercised();
  ASSERT_EQ(notes.size(), 2u);  // and concurrency 8 that never batched
  EXPECT_NE(notes[0].find("(no step ran 2 sequences together (at most 1: max_seqs = 1 limits a step), and a pass "
                          "needs 2)"),
            std::string::npos)
      << notes[0];
  r.a.config.max_seqs = 64;
  r.stats_a.max_batch_seqs = r.stats_a.max_checked_batch_seqs = 8;
  notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("must share at least"), std::string::npos) << notes[0];
}

// Under policy = static the companions run after the checked request, in
// steps of several sequences that never include it: concurrency was not
// exercised however large the batches were. Preemption the sides differ in
// must have happened; swap that always fell back to recompute is named.
TEST(InvarianceReport, BatchingAndPreemptionMustHappenToCount) {
  InvarianceReport r;
  r.b.concurrency = 4;
  r.b.config.policy = SchedulingPolicy::Static;
  r.stats_b.max_batch_seqs = 3;
  r.stats_b.max_checked_batch_seqs = 1;
  std::vector<std::string> notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "b: concurrency = 4, but no step ran the checked request beside another sequence (policy = "
                      "static runs a batch to its end before admitting more)");

  InvarianceReport p;
  p.a.config.preemption = PreemptionMode::Swap;
  p.b.config.preemption = PreemptionMode::Recompute;
  notes = p.unexercised();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].rfind("a: preemption = swap, but no sequence was preempted", 0), 0u) << notes[0];
  EXPECT_EQ(notes[1].rfind("b: preemption = recompute, but no sequence was preempted", 0), 0u) << notes[1];
  // One side preempted: the difference was exercised against the other's
  // unpreempted run, and the other (which may just have the default) is not
  // noted.
  p.stats_a.num_preemptions = 2;
  p.stats_a.num_swapped_out_blocks = 3;
  EXPECT_TRUE(p.unexercised().empty());
  p.stats_a.num_swapped_out_blocks = 0;
  p.stats_a.num_preemptions = p.stats_b.num_preemptions = 2;
  notes = p.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("a: preemption = swap, but every preemption recomputed", 0), 0u) << notes[0];
  p.stats_a.num_swapped_out_blocks = 3;
  EXPECT_TRUE(p.unexercised().empty());
}

// cascade = auto groups at least four sequences: with fewer the note names
// that, not the prompt's length.
TEST(InvarianceReport, AnIdleAutoCascadeNamesTooFewSequences) {
  InvarianceReport r;
  r.a.config.cascade = CascadeMode::Off;
  r.b.config.cascade = CascadeMode::Auto;
  r.b.concurrency = 3;
  std::vector<std::string> notes = r.unexercised();
  ASSERT_EQ(notes.size(), 2u);  // and concurrency 3 that never batched
  EXPECT_NE(notes[0].find("auto groups at least 4 sequences sharing a prefix; concurrency = 3 runs fewer"),
            std::string::npos)
      << notes[0];
  r.b.concurrency = 4;
  r.stats_b.max_batch_seqs = r.stats_b.max_checked_batch_seqs = 4;
  notes = r.unexercised();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("share at least 128 computed tokens"), std::string::npos) << notes[0];
}

}  // namespace
}  // namespace kvscope
