// Which vector instruction level the CPU kernels use. Detected once with
// __builtin_cpu_supports; $KVSCOPE_CPU=scalar|avx2|avx512 forces a lower level
// (never a higher one than the CPU has). Tests switch levels with
// set_cpu_level() to run every path the machine can run.
#pragma once

#include <string_view>

namespace kvscope {

enum class CpuLevel {
  kScalar = 0,  // portable C++ (the only level off x86-64)
  kAvx2 = 1,    // AVX2 + FMA + F16C: the x86-64 baseline of this build
  kAvx512 = 2,  // AVX-512 F/BW/DQ/VL + VNNI
};

// The highest level this CPU (and build) supports.
CpuLevel detected_cpu_level();

// The level the kernels use now: $KVSCOPE_CPU (clamped) on first use, or the
// last set_cpu_level().
CpuLevel cpu_level();

// Uses `level`, clamped to detected_cpu_level(); returns the level in effect.
// Not for use while kernels run on other threads.
CpuLevel set_cpu_level(CpuLevel level);

std::string_view cpu_level_name(CpuLevel level);

}  // namespace kvscope
