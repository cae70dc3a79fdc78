// How many CPUs this process may really keep busy: its affinity mask, lowered
// by a cgroup CPU quota (a container's --cpus, a systemd CPUQuota=), since a
// machine's CPU count says nothing about either. The thread pool's workers
// spin between phases, so a thread more than the quota allows stalls every
// step instead of helping. The parsers are pure, for tests.
//   tested by tests/kernels/usable_cpus_test.cpp
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvscope {

// max(1, min(affinity CPUs, whole CPUs of the quota)); read on every call.
int usable_cpu_count();

// CPUs a cgroup v2 "cpu.max" file allows ("150000 100000" -> 1.5); nullopt
// for "max ..." (no limit) or text that is not a quota.
std::optional<double> cgroup_v2_cpu_limit(std::string_view cpu_max);

// The same from cgroup v1 "cpu.cfs_quota_us" and "cpu.cfs_period_us" (quota -1: no limit).
std::optional<double> cgroup_v1_cpu_limit(std::string_view quota_us, std::string_view period_us);

// This process's cgroup path for `controller` from /proc/self/cgroup text:
// the "0::<path>" line for cgroup v2 (controller ""), or the v1 line whose
// controller list holds `controller`. nullopt when there is none.
std::optional<std::string> cgroup_path(std::string_view proc_self_cgroup, std::string_view controller);

}  // namespace kvscope
