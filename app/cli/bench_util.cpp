#include "bench_util.h"

#include <algorithm>
#include <fstream>

namespace kvscope::cli {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      const size_t v = line.find_first_not_of(' ', line.find(':') + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
  }
  return "unknown";
}

std::optional<std::vector<double>> load_average() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  if (!(in >> a >> b >> c)) return std::nullopt;
  return std::vector<double>{a, b, c};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace kvscope::cli
