// The rule that picks which CUDA forward passes time their attention
// (runtime/attention_timing_sampler.h, the setting gpu_attention_timing).
// Plain host code, tested here without a GPU; that the timed steps carry an
// attention time on a device is cuda_step_timing_test's.
#include "runtime/attention_timing_sampler.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvscope {
namespace {

constexpr int32_t kInterval = AttentionTimingSampler::kInterval;

std::vector<int32_t> timed_passes(AttentionTimingSampler& sampler, int32_t passes) {
  std::vector<int32_t> timed;
  for (int32_t i = 0; i < passes; ++i) {
    if (sampler.next(true)) timed.push_back(i);
  }
  return timed;
}

TEST(AttentionTimingSampler, TimesTheFirstPassThenOneInTheInterval) {
  AttentionTimingSampler sampler(true);
  EXPECT_EQ(timed_passes(sampler, 3 * kInterval + 1), (std::vector<int32_t>{0, kInterval, 2 * kInterval, 3 * kInterval}));
}

TEST(AttentionTimingSampler, OffTimesNothingHoweverLongItRuns) {
  AttentionTimingSampler sampler(false);
  EXPECT_TRUE(timed_passes(sampler, 100 * kInterval).empty());
}

// An early-exit draft's passes (fewer layers) are neither timed nor counted:
// with three drafts per step (spec_k + 1 = 4 divides the interval) the
// engine's own passes are still timed, one in kInterval of them.
TEST(AttentionTimingSampler, PartialPassesNeitherTimedNorCounted) {
  AttentionTimingSampler sampler(true);
  std::vector<int32_t> timed_steps;
  for (int32_t step = 0; step < 3 * kInterval; ++step) {
    for (int32_t draft = 0; draft < 3; ++draft) EXPECT_FALSE(sampler.next(false)) << "step " << step;
    if (sampler.next(true)) timed_steps.push_back(step);
  }
  EXPECT_EQ(timed_steps, (std::vector<int32_t>{0, kInterval, 2 * kInterval}));
}

}  // namespace
}  // namespace kvscope
