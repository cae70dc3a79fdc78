// The x86-64 baseline kvscope's binaries are compiled for (CMakeLists.txt:
// -mavx2 -mfma -mf16c -mbmi2, x86-64-v3), checked when a binary starts,
// before any of its own code runs: on an older CPU (or a VM that hides AVX)
// every binary died with a bare "Illegal instruction", even for --version.
// Now it says what the CPU lacks and exits with status 1.
//
// cpu_baseline.cpp is compiled without those flags, and its code is plain C
// (libc only): an inline function shared with the rest of the program could
// be linked in its AVX2 form and run before the check.
//
// Tests: tests/app/cpu_baseline_test.cpp.
#pragma once

#include <cstddef>

namespace kvscope::app {

// Writes the comma-separated names of the baseline's features that
// `supports` (__builtin_cpu_supports's contract: nonzero when present) says
// the CPU lacks into `out` (NUL-terminated, truncated to `size`); returns
// how many are missing.
int missing_cpu_features(int (*supports)(const char* feature), char* out, size_t size);

}  // namespace kvscope::app
