#include <gtest/gtest.h>

#include "scheduler/stop_matcher.h"

namespace kvscope {
namespace {

TEST(StopMatcher, PassesTextThroughWithoutStops) {
  StopMatcher m({});
  EXPECT_EQ(m.push("hello"), "hello");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsBackAPossibleStartAndReleasesItWhenItIsNot) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abc E"), "abc ");
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("x"), "ENx");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopsAcrossPiecesAndDropsTheStopString) {
  StopMatcher m({"\n\nUser:", "###"});
  EXPECT_EQ(m.push("Answer.\n"), "Answer.");
  EXPECT_EQ(m.push("\nUs"), "");
  EXPECT_EQ(m.push("er: more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("ignored"), "");
}

TEST(StopMatcher, EarliestStopWins) {
  StopMatcher m({"cd", "b"});
  EXPECT_EQ(m.push("abcd"), "a");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, FlushReturnsHeldText) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("go ST"), "go ");
  EXPECT_EQ(m.flush(), "ST");
}

}  // namespace
}  // namespace kvscope
