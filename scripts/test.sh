#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the whole test suite:
#   1. install dependencies (scripts/bootstrap.sh, clang for the fuzzers);
#   2. fetch the models and the tokenizer test data;
#   3. fuzz the GGUF reader, the weight loader and both tokenizers briefly
#      (scripts/run_fuzz.sh);
#   4. run the unit and ui tests under ASan + UBSan (scripts/sanitize.sh);
#   5. build with warnings as errors; build the CUDA kernels, their tests and
#      the NCCL communicator in build-cuda (compile and link only: no GPU);
#      run every test: ctest last, so its summary closes the output.
# KVSCOPE_REQUIRE_TEST_DATA=1 is set for all of it: a test whose model or data
# is missing fails with the fetch command instead of skipping
# (tests/support/require_data.h), so the run cannot pass by skipping.
# Environment: KVSCOPE_FUZZ_SECONDS (default 120, 0 skips fuzzing),
# KVSCOPE_SANITIZE_TESTS=0 skips step 4, KVSCOPE_CUDA_BUILD=0 the CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
export KVSCOPE_REQUIRE_TEST_DATA=1
# ccache hits across clones of the repository (CI runs in a fresh one): paths
# under the checkout are hashed relative to it, and -g builds (fuzz, ASan) do
# not hash the working directory.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
jobs="$(nproc)"

# The whole run needs about 10 GB of disk (the ASan tree alone is about 8 GB):
# say so up front rather than failing in a link step with ENOSPC.
free_kib="$(df -Pk . | awk 'NR == 2 { print $4 }')"
if [[ -n "$free_kib" && "$free_kib" -lt $((10 * 1024 * 1024)) ]]; then
  echo "test.sh: warning: $((free_kib / 1024 / 1024)) GiB free on $(df -P . | awk 'NR == 2 { print $6 }'); the run needs about 10 GiB" >&2
fi

# The CUDA step (5) needs nvcc, which Debian's packages here do not bring:
# say so now, not after an hour of fuzzing, sanitizing and building.
if [[ "${KVSCOPE_CUDA_BUILD:-1}" != 0 ]]; then
  nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  [[ -x "$nvcc_path" ]] || {
    echo "test.sh: nvcc not found: install the CUDA toolkit, or run KVSCOPE_CUDA_BUILD=0 scripts/test.sh to leave out the CUDA build" >&2
    exit 1
  }
fi

KVSCOPE_FUZZ=1 scripts/bootstrap.sh
python3 scripts/fetch_model.py --quiet --gemma
python3 scripts/fetch_test_data.py --quiet

fuzz_seconds="${KVSCOPE_FUZZ_SECONDS:-120}"
if [[ "$fuzz_seconds" != 0 ]]; then
  scripts/run_fuzz.sh "$fuzz_seconds"
fi
if [[ "${KVSCOPE_SANITIZE_TESTS:-1}" != 0 ]]; then
  scripts/sanitize.sh
  # On CI (a fresh clone each run) the ASan tree is not built on again: its
  # ~8 GB go before the next builds.
  if [[ -n "${CI:-}" ]]; then rm -rf build-asan build-fuzz; fi
fi

cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSCOPE_CUDA=OFF -DKVSCOPE_WERROR=ON >/dev/null
cmake --build build-test -j"$jobs"
if [[ "${KVSCOPE_CUDA_BUILD:-1}" != 0 ]]; then
  # CUDA and NCCL compile and link (CI has the toolkit, no GPU): only the CUDA
  # kernels, their test binary, the NCCL communicator with its test and the
  # engine with its CUDA backend (cuda_backend_test, cuda_reference_test) and
  # gpu_kernel_bench, not the whole project;
  # of them only the launchers' precondition checks and the backend's model
  # checks run here (they need no device; the rest of cuda_backend_test
  # skips). The GPU run is scripts/gpu_check.sh.
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc_path" \
    -DKVSCOPE_CUDA=ON -DKVSCOPE_NCCL=ON -DKVSCOPE_GUI=OFF -DKVSCOPE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  cmake --build build-cuda -j"$jobs" --target cuda_kernels_test cuda_gemm_test nccl_communicator_test cuda_backend_test \
    cuda_step_timing_test cuda_reference_test gpu_kernel_bench
  build-cuda/tests/kernels/cuda/cuda_kernels_test --gtest_filter='CudaLaunchCheck.*:*Harness*' --gtest_brief=1
  build-cuda/tests/kernels/cuda/cuda_gemm_test --gtest_filter='CudaGemmLaunchCheck.*' --gtest_brief=1
  build-cuda/tests/engine/runtime/cuda_backend_test --gtest_brief=1
  build-cuda/tests/engine/runtime/cuda_reference_test --gtest_brief=1  # skips: no device here
fi
ctest --test-dir build-test --output-on-failure -j"$jobs" --timeout 900
