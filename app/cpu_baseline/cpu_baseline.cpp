// The start-up check of the CPU baseline; see cpu_baseline.h. Plain C on
// purpose (no inline function or template shared with the AVX2-compiled rest).
#include "cpu_baseline.h"

#include <stdio.h>
#include <unistd.h>

namespace kvscope::app {

int missing_cpu_features(int (*supports)(const char* feature), char* out, size_t size) {
  static const char* const kBaseline[] = {"avx2", "fma", "f16c", "bmi2"};
  int missing = 0;
  size_t used = 0;
  if (size > 0) out[0] = '\0';
  for (const char* feature : kBaseline) {
    if (supports(feature)) continue;
    if (size > used) {
      const int n = snprintf(out + used, size - used, "%s%s", missing > 0 ? ", " : "", feature);
      if (n > 0) used += static_cast<size_t>(n);
    }
    ++missing;
  }
  return missing;
}

}  // namespace kvscope::app

#if defined(__x86_64__)
namespace {

int cpu_supports(const char* feature) {
  // __builtin_cpu_supports needs a constant argument: one call per feature.
  __builtin_cpu_init();
  if (feature[0] == 'a') return __builtin_cpu_supports("avx2");
  if (feature[0] == 'f' && feature[1] == 'm') return __builtin_cpu_supports("fma");
  if (feature[0] == 'f') return __builtin_cpu_supports("f16c");
  return __builtin_cpu_supports("bmi2");
}

// Priority 101: before the program's own static constructors (default
// priority), which may already use AVX2.
__attribute__((constructor(101))) void check_cpu_baseline() {
  char missing[64];
  if (kvscope::app::missing_cpu_features(cpu_supports, missing, sizeof missing) == 0) return;
  fprintf(stderr,
          "kvscope: this CPU lacks %s, which this build of kvscope needs (x86-64 with AVX2, FMA, F16C and BMI2: "
          "Intel Haswell, AMD Excavator or later; in a virtual machine, pass the host CPU's features through)\n",
          missing);
  _exit(1);
}

}  // namespace
#endif
