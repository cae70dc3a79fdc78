// Small helpers the benchmark commands (bench, bench-seeds) share: what
// machine a result came from, and medians (benchmarks quote medians because
// the machines are shared and noisy).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cpu/cpu_description.h"

namespace kvscope::cli {

// The "cpu" object of every benchmark record: the CPU's model name, logical
// CPUs online and usable, the threads the run used, and the kernels' ISA path
// (see kernels/cpu/cpu_description.h). Figures from different CPUs must never
// be compared as if they were one machine's.
nlohmann::ordered_json cpu_json(const CpuDescription& cpu, int threads);
// The 1, 5 and 15 minute load averages from /proc/loadavg, if readable.
std::optional<std::vector<double>> load_average();
// Median of v (mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> v);
// Now, as an ISO 8601 UTC time ("2026-11-27T09:12:00Z"): when a record was made.
std::string utc_now();

}  // namespace kvscope::cli
