// Run-time CPU level detection; see cpu_features.h.
#include "kernels/cpu/cpu_features.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kvscope {
namespace {

CpuLevel detect() {
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512vnni")) {
    return CpuLevel::kAvx512;
  }
  return CpuLevel::kAvx2;  // the build's baseline (-mavx2 -mfma -mf16c)
#else
  return CpuLevel::kScalar;
#endif
}

CpuLevel from_env(CpuLevel detected) {
  const char* env = std::getenv("KVSCOPE_CPU");
  if (env == nullptr) return detected;
  const std::string v(env);
  CpuLevel wanted = detected;
  if (v == "scalar") wanted = CpuLevel::kScalar;
  if (v == "avx2") wanted = CpuLevel::kAvx2;
  if (v == "avx512") wanted = CpuLevel::kAvx512;
  if (v != "scalar" && v != "avx2" && v != "avx512" && !v.empty()) {
    // Read once per process, before any kernel runs: a typo would otherwise
    // leave a benchmark comparing the level it meant to leave out.
    std::fprintf(stderr, "kvscope: KVSCOPE_CPU=%s is not scalar, avx2 or avx512; using the detected level (%s)\n",
                 env, std::string(cpu_level_name(detected)).c_str());
  }
  return std::min(wanted, detected);
}

std::atomic<int>& current() {
  static std::atomic<int> level{static_cast<int>(from_env(detected_cpu_level()))};
  return level;
}

}  // namespace

CpuLevel detected_cpu_level() {
  static const CpuLevel level = detect();
  return level;
}

CpuLevel cpu_level() { return static_cast<CpuLevel>(current().load(std::memory_order_relaxed)); }

CpuLevel set_cpu_level(CpuLevel level) {
  const CpuLevel effective = std::min(level, detected_cpu_level());
  current().store(static_cast<int>(effective), std::memory_order_relaxed);
  return effective;
}

std::string_view cpu_level_name(CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar: return "scalar";
    case CpuLevel::kAvx2: return "avx2";
    case CpuLevel::kAvx512: return "avx512";
  }
  return "?";
}

}  // namespace kvscope
