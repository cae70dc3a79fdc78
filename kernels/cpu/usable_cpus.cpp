#include "kernels/cpu/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

namespace kvscope {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::optional<double> positive_number(std::string_view s) {
  s = trim(s);
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0) return std::nullopt;
  return static_cast<double>(v);
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The quota of this process's cgroup, v2 first, then v1 (both mount layouts).
std::optional<double> cgroup_cpu_limit() {
  const std::string self = read_file("/proc/self/cgroup");
  if (auto path = cgroup_path(self, "")) {
    if (auto limit = cgroup_v2_cpu_limit(read_file("/sys/fs/cgroup" + *path + "/cpu.max"))) return limit;
  }
  if (auto path = cgroup_path(self, "cpu")) {
    for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      const std::string dir = mount + *path;
      if (auto limit = cgroup_v1_cpu_limit(read_file(dir + "/cpu.cfs_quota_us"), read_file(dir + "/cpu.cfs_period_us")))
        return limit;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> cgroup_v2_cpu_limit(std::string_view cpu_max) {
  cpu_max = trim(cpu_max);
  const size_t space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto quota = positive_number(cpu_max.substr(0, space));  // "max" is not a number: no limit
  const auto period = positive_number(cpu_max.substr(space + 1));
  if (!quota || !period) return std::nullopt;
  return *quota / *period;
}

std::optional<double> cgroup_v1_cpu_limit(std::string_view quota_us, std::string_view period_us) {
  const auto quota = positive_number(quota_us);  // -1: no limit
  const auto period = positive_number(period_us);
  if (!quota || !period) return std::nullopt;
  return *quota / *period;
}

std::optional<std::string> cgroup_path(std::string_view text, std::string_view controller) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    // hierarchy-id:controller-list:path
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view list = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    if (controller.empty()) {
      if (line.substr(0, a) == "0" && list.empty()) return std::string(path);
      continue;
    }
    for (std::string_view rest = list; !rest.empty();) {
      const size_t comma = rest.find(',');
      if (rest.substr(0, comma) == controller) return std::string(path);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return std::nullopt;
}

int usable_cpu_count() {
  int cpus = affinity_cpus();
  // Whole CPUs only: 1.5 CPUs of quota run two spinning threads at 75% each,
  // and a step waits for the slower one.
  if (const auto limit = cgroup_cpu_limit()) cpus = std::min(cpus, std::max(1, static_cast<int>(std::floor(*limit))));
  return cpus;
}

}  // namespace kvscope
