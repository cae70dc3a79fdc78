// usable_cpu_count() and the cgroup parsers it reads quotas with.
#include <gtest/gtest.h>

#include <sched.h>

#include "kernels/cpu/usable_cpus.h"

namespace kvscope {
namespace {

TEST(UsableCpus, CgroupV2CpuMax) {
  EXPECT_EQ(cgroup_v2_cpu_limit("150000 100000\n"), 1.5);
  EXPECT_EQ(cgroup_v2_cpu_limit("400000 100000"), 4.0);
  EXPECT_EQ(cgroup_v2_cpu_limit("max 100000\n"), std::nullopt);
  EXPECT_EQ(cgroup_v2_cpu_limit(""), std::nullopt);
  EXPECT_EQ(cgroup_v2_cpu_limit("100000"), std::nullopt);
  EXPECT_EQ(cgroup_v2_cpu_limit("-5 100000"), std::nullopt);
  EXPECT_EQ(cgroup_v2_cpu_limit("12abc 100000"), std::nullopt);
}

TEST(UsableCpus, CgroupV1Quota) {
  EXPECT_EQ(cgroup_v1_cpu_limit("200000\n", "100000\n"), 2.0);
  EXPECT_EQ(cgroup_v1_cpu_limit("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(cgroup_v1_cpu_limit("50000", "0"), std::nullopt);
  EXPECT_EQ(cgroup_v1_cpu_limit("", ""), std::nullopt);
}

TEST(UsableCpus, CgroupPathForV2AndV1Controllers) {
  const char* v1 = "9:name=systemd:/\n4:cpu,cpuacct:/docker/abc\n3:memory:/m\n0::/\n";
  EXPECT_EQ(cgroup_path(v1, "cpu"), "/docker/abc");
  EXPECT_EQ(cgroup_path(v1, "cpuacct"), "/docker/abc");
  EXPECT_EQ(cgroup_path(v1, ""), "/");
  EXPECT_EQ(cgroup_path(v1, "cpuset"), std::nullopt);
  EXPECT_EQ(cgroup_path("0::/user.slice/app.scope\n", ""), "/user.slice/app.scope");
  EXPECT_EQ(cgroup_path("0::/user.slice\n", "cpu"), std::nullopt);
  EXPECT_EQ(cgroup_path("garbage", ""), std::nullopt);
}

TEST(UsableCpus, NeverMoreThanTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int n = usable_cpu_count();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, CPU_COUNT(&set));
}

}  // namespace
}  // namespace kvscope
