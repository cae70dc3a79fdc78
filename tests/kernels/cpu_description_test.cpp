// describe_cpu(): the fields every benchmark record carries are filled and
// follow the kernels' level when a test lowers it.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_description.h"
#include "kernels/cpu/cpu_features.h"

namespace kvscope::test {
namespace {

TEST(CpuDescription, NamesTheCpuAndItsCounts) {
  const CpuDescription d = describe_cpu();
  EXPECT_FALSE(d.model_name.empty());
  EXPECT_GE(d.num_cpus_online, 1);
  EXPECT_GE(d.num_cpus_usable, 1);
  EXPECT_LE(d.num_cpus_usable, d.num_cpus_online);
  EXPECT_EQ(d.isa_detected, cpu_level_name(detected_cpu_level()));
  const std::string summary = cpu_summary(d);
  EXPECT_NE(summary.find(d.model_name), std::string::npos) << summary;
  EXPECT_NE(summary.find(d.isa_detail), std::string::npos) << summary;
}

TEST(CpuDescription, ReportsTheLevelInUseNotTheDetectedOne) {
  const CpuLevel before = cpu_level();
  set_cpu_level(CpuLevel::kScalar);
  const CpuDescription scalar = describe_cpu();
  EXPECT_EQ(scalar.isa, "scalar");
  EXPECT_EQ(scalar.isa_detail, "portable C++");
  EXPECT_EQ(scalar.isa_detected, cpu_level_name(detected_cpu_level()));
  set_cpu_level(before);
  EXPECT_EQ(describe_cpu().isa, cpu_level_name(before));
}

}  // namespace
}  // namespace kvscope::test
