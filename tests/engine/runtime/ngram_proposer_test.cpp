// NgramProposer (spec/ngram_proposer.h), label `unit`: the longest suffix that
// occurred before wins, the most recent occurrence with k tokens after it,
// else the earliest; nothing without a match; min/max match lengths; k cut
// where the sequence ends.
#include <gtest/gtest.h>

#include <vector>

#include "spec/ngram_proposer.h"

namespace kvscope {
namespace {

using Tokens = std::vector<int32_t>;

Tokens propose(int32_t min_match, int32_t max_match, const Tokens& tokens, int32_t k) {
  NgramProposer p(min_match, max_match);
  return p.propose(tokens, k);
}

TEST(NgramProposer, ProposesWhatFollowedTheSuffixBefore) {
  //              0  1  2  3  4  5  6  7  8  9
  const Tokens t = {1, 2, 3, 4, 5, 6, 9, 9, 2, 3};
  EXPECT_EQ(propose(1, 4, t, 3), (Tokens{4, 5, 6}));  // "2 3" at 1 -> 4 5 6
  EXPECT_EQ(propose(1, 4, t, 1), (Tokens{4}));
  EXPECT_EQ(propose(1, 4, t, 5), (Tokens{4, 5, 6, 9, 9}));
}

TEST(NgramProposer, NothingWithoutAMatch) {
  EXPECT_TRUE(propose(1, 4, {1, 2, 3, 4, 5}, 4).empty());
  EXPECT_TRUE(propose(1, 4, {7}, 4).empty());
  EXPECT_TRUE(propose(1, 4, {}, 4).empty());
  // A match only shorter than min_match does not count.
  EXPECT_EQ(propose(1, 4, {5, 1, 2, 9, 2}, 2), (Tokens{9, 2}));
  EXPECT_TRUE(propose(2, 4, {5, 1, 2, 9, 2}, 2).empty());
}

TEST(NgramProposer, LongestMatchWins) {
  // "3" alone last occurred at 6 (-> 8); "2 3" occurred at 1 (-> 4).
  //              0  1  2  3  4  5  6  7  8  9
  const Tokens t = {0, 2, 3, 4, 7, 7, 3, 8, 2, 3};
  EXPECT_EQ(propose(1, 4, t, 2), (Tokens{4, 7}));
  EXPECT_EQ(propose(1, 1, t, 2), (Tokens{8, 2}));  // max 1: only the one-token suffix is looked up
}

TEST(NgramProposer, MaxMatchBoundsTheSuffixLength) {
  // "1 2 3 4" occurs at 0 (-> 5); a 3-token match "2 3 4" last at 7 (-> 6).
  //              0  1  2  3  4  5  6  7  8  9 10 11 12 13 14
  const Tokens t = {1, 2, 3, 4, 5, 9, 9, 2, 3, 4, 6, 1, 2, 3, 4};
  EXPECT_EQ(propose(1, 4, t, 1), (Tokens{5}));
  EXPECT_EQ(propose(1, 3, t, 1), (Tokens{6}));
}

TEST(NgramProposer, MostRecentOccurrenceFollowedByKTokens) {
  // "5" at 0 (10 tokens after it), at 4 (6 after), at 8 (2 after: 3, then
  // the final 5 itself).
  //              0  1  2  3  4  5  6  7  8  9 10
  const Tokens t = {5, 1, 1, 1, 5, 2, 2, 2, 5, 3, 5};
  EXPECT_EQ(propose(1, 1, t, 1), (Tokens{3}));
  EXPECT_EQ(propose(1, 1, t, 2), (Tokens{3, 5}));
  EXPECT_EQ(propose(1, 1, t, 3), (Tokens{2, 2, 2}));  // the most recent has fewer than 3 after it
  EXPECT_EQ(propose(1, 1, t, 9), (Tokens{1, 1, 1, 5, 2, 2, 2, 5, 3}));
  // None is followed by 12: the earliest, which has the most.
  EXPECT_EQ(propose(1, 1, t, 12), (Tokens{1, 1, 1, 5, 2, 2, 2, 5, 3, 5}));
}

TEST(NgramProposer, KIsCutWhereTheSequenceEnds) {
  // A loop of period 3: the only earlier occurrence of the suffix is followed
  // by three tokens, the last of them the end of the sequence.
  const Tokens t = {7, 8, 9, 7, 8};
  EXPECT_EQ(propose(1, 2, t, 4), (Tokens{9, 7, 8}));
  EXPECT_EQ(propose(1, 2, {4, 4}, 3), (Tokens{4}));  // overlapping: "4" at 0, then the end
}

// The engine's settings: off makes no proposer; a min above the max means
// the max only, so every in-range pair works.
TEST(NgramProposer, MadeFromTheSettings) {
  EngineConfig c;
  EXPECT_EQ(make_proposer(c), nullptr);
  c.spec = SpecMethod::Ngram;
  c.spec_ngram_min = 5;
  c.spec_ngram_max = 2;
  std::unique_ptr<Proposer> p = make_proposer(c);
  ASSERT_NE(p, nullptr);
  EXPECT_STREQ(p->name(), "ngram");
  EXPECT_TRUE(p->deterministic());
  const Tokens t = {1, 2, 3, 9, 9, 2, 3};
  EXPECT_EQ(p->propose(t, 2), (Tokens{9, 9}));          // "2 3" (length 2) matched
  EXPECT_TRUE(p->propose(Tokens{1, 2, 3, 4, 3}, 2).empty());  // "3" alone is shorter than 2
}

}  // namespace
}  // namespace kvscope
