#!/usr/bin/env bash
# The unit and ui tests under AddressSanitizer + UBSan (LeakSanitizer included).
#
#   scripts/sanitize.sh                 # configure + build build-asan, run ctest -L unit|ui
#   scripts/sanitize.sh -R tokenizer    # extra arguments go to ctest (a subset)
#
# Configures build-asan (RelWithDebInfo, -DKVSCOPE_SANITIZE=ON, tests and GUI on),
# builds everything and runs every test labelled `unit` or `ui` (the ui tests
# that need the default model included, so fetch it first). UBSan is compiled
# with -fno-sanitize-recover (top-level CMakeLists.txt): undefined behaviour
# aborts the test that hits it. The ui tests add the LSan suppressions of
# tests/ui/lsan.supp. Exits non-zero if any test fails or any sanitizer reports.
#
# Debug information is line tables only (-g1): enough for the file:line of
# every frame in a sanitizer report, and each of the ~300 statically linked test
# binaries stays small. With full -g the tree reached 16 GB and a CI machine
# ran out of disk while linking.
#
# No -Werror here: GCC's flow warnings (-Wmaybe-uninitialized and friends) are
# unreliable on sanitizer-instrumented code; the plain -Werror build in
# scripts/test.sh holds the warning bar.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-asan"
jobs="$(nproc)"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DKVSCOPE_SANITIZE=ON -DKVSCOPE_BUILD_TESTS=ON -DKVSCOPE_GUI=ON -DKVSCOPE_CUDA=OFF >/dev/null
start=$SECONDS
cmake --build "$build" -j"$jobs"
echo "sanitize.sh: built in $((SECONDS - start))s ($(du -sh "$build" | cut -f1) on disk)"

# abort_on_error: a report ends the process with SIGABRT, which ctest shows as
# a failure with the report above it; check_initialization_order catches static
# initialisation order bugs between translation units.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:check_initialization_order=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
start=$SECONDS
ctest --test-dir "$build" -L 'unit|ui' --output-on-failure -j"$jobs" --timeout 900 "$@"
echo "sanitize.sh: unit and ui tests passed under ASan+UBSan in $((SECONDS - start))s"
