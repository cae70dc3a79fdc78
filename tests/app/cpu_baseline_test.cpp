// The CPU-baseline check (app/cpu_baseline/cpu_baseline.h) on made-up CPUs:
// it names every missing feature of the x86-64 baseline, in order, and
// nothing on a CPU that has them all. The real check runs when this test's
// binary starts (it links the same object), on this machine's CPU.
#include "cpu_baseline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace kvscope::app {
namespace {

int has_all(const char*) { return 1; }
int has_none(const char*) { return 0; }
int avx_only(const char* feature) { return std::strcmp(feature, "avx2") == 0; }

TEST(CpuBaseline, NamesEveryMissingFeature) {
  char out[64];
  EXPECT_EQ(missing_cpu_features(has_all, out, sizeof out), 0);
  EXPECT_STREQ(out, "");
  EXPECT_EQ(missing_cpu_features(has_none, out, sizeof out), 4);
  EXPECT_STREQ(out, "avx2, fma, f16c, bmi2");
  EXPECT_EQ(missing_cpu_features(avx_only, out, sizeof out), 3);
  EXPECT_STREQ(out, "fma, f16c, bmi2");
  char tiny[6];  // truncated, still terminated, still counted
  EXPECT_EQ(missing_cpu_features(has_none, tiny, sizeof tiny), 4);
  EXPECT_EQ(std::string(tiny), "avx2,");
}

}  // namespace
}  // namespace kvscope::app
