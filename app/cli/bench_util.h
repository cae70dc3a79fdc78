// Small helpers the benchmark commands (bench, bench-seeds) share: what
// machine a result came from, and medians (benchmarks quote medians because
// the machines are shared and noisy).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kvscope::cli {

// The CPU's "model name" from /proc/cpuinfo, or "unknown".
std::string cpu_model_name();
// The 1, 5 and 15 minute load averages from /proc/loadavg, if readable.
std::optional<std::vector<double>> load_average();
// Median of v (mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> v);

}  // namespace kvscope::cli
