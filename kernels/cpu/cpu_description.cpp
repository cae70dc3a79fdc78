// describe_cpu(): see cpu_description.h.
#include "kernels/cpu/cpu_description.h"

#include <unistd.h>

#include <fstream>

#include "kernels/cpu/amx.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/usable_cpus.h"

namespace kvscope {
namespace {

// The value of the first /proc/cpuinfo line whose key is `key`, or "".
std::string cpuinfo_value(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k != key) continue;
    const size_t v = line.find_first_not_of(" \t", colon + 1);
    return v == std::string::npos ? std::string() : line.substr(v);
  }
  return {};
}

std::string_view level_detail(CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar: return "portable C++";
    case CpuLevel::kAvx2: return "AVX2 + FMA + F16C";
    case CpuLevel::kAvx512: return "AVX-512 F/BW/DQ/VL + VNNI";
  }
  return "?";
}

}  // namespace

CpuDescription describe_cpu() {
  CpuDescription d;
  // x86 names the CPU in "model name"; ARM kernels use "Model" or only "CPU part".
  for (const char* key : {"model name", "Model", "CPU part"}) {
    d.model_name = cpuinfo_value(key);
    if (!d.model_name.empty()) break;
  }
  if (d.model_name.empty()) d.model_name = "unknown";
  d.num_cpus_online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  d.num_cpus_usable = usable_cpu_count();
  const CpuLevel level = cpu_level();
  d.isa = std::string(cpu_level_name(level));
  d.isa_detail = std::string(level_detail(level));
  if (amx_enabled()) d.isa_detail += "; AMX tiles for prefill";
  d.isa_detected = std::string(cpu_level_name(detected_cpu_level()));
  return d;
}

std::string cpu_summary(const CpuDescription& cpu) {
  return cpu.model_name + ", " + std::to_string(cpu.num_cpus_usable) + " of " + std::to_string(cpu.num_cpus_online) +
         " CPUs usable, " + cpu.isa + " (" + cpu.isa_detail + ")";
}

}  // namespace kvscope
