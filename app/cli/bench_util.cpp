#include "bench_util.h"

#include <algorithm>
#include <ctime>
#include <fstream>

namespace kvscope::cli {

nlohmann::ordered_json cpu_json(const CpuDescription& cpu, int threads) {
  return {{"model_name", cpu.model_name},
          {"num_cpus_online", cpu.num_cpus_online},
          {"num_cpus_usable", cpu.num_cpus_usable},
          {"threads_used", threads},
          {"isa", cpu.isa},
          {"isa_detail", cpu.isa_detail},
          {"isa_detected", cpu.isa_detected}};
}

std::optional<std::vector<double>> load_average() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  if (!(in >> a >> b >> c)) return std::nullopt;
  return std::vector<double>{a, b, c};
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace kvscope::cli
