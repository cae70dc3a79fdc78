#!/usr/bin/env bash
# The GPU check: every test labelled gpu, on a real device, then
# compute-sanitizer memcheck and racecheck over the CUDA kernel tests, and
# gpu_kernel_bench's JSON. The default model must be present (the reference
# test on the GPU, labels gpu and model).
# KVSCOPE_REQUIRE_GPU=1 is set, so a missing device fails instead of
# skipping, and any test still reported as skipped fails the check.
#
#   scripts/gpu_check.sh             on a machine with a GPU and the project's
#                                    build dependencies: configure + build
#                                    build-cuda, ctest -L gpu, sanitizers.
#   scripts/gpu_check.sh --bundle    on a build machine (no GPU needed): build
#                                    build-cuda and copy the gpu test binaries,
#                                    gpu_kernel_bench and kvscope-cli (+ the
#                                    shared libraries an image may lack) to
#                                    build-cuda/gpu_bundle.
#   scripts/gpu_check.sh --prebuilt  on a GPU machine that cannot build the
#                                    project (the lent device machine has nvcc
#                                    but not GTest, fmt, ...): run the bundle's
#                                    binaries directly (what ctest -L gpu runs),
#                                    then the sanitizers.
# The lent device machine (docs/cuda.md, "Running it on a lent GPU"): here
# `scripts/gpu_check.sh --bundle`, then `scripts/gpu_check.sh --prebuilt`
# there with the bundle and the default model carried along (the model in
# KVSCOPE_MODEL_DIR). Logs go to "${OUT:-/tmp/gpu_check}"; the last lines
# printed are a summary table. Exit status 0 only if everything passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
mode="${1:-build}"
out="${OUT:-/tmp/gpu_check}"
mkdir -p "$out"
export KVSCOPE_REQUIRE_GPU=1
bundle=build-cuda/gpu_bundle
step_timeout="${KVSCOPE_GPU_STEP_TIMEOUT:-300}"  # seconds per step; nothing may hang the lease
summary=()
failed=0

record() {  # record NAME STATUS
  summary+=("$(printf '%-28s %s' "$1" "$2")")
  [[ "$2" == pass ]] || failed=1
}

build() {
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  local nvcc_path
  nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  if ! cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc_path" \
      -DKVSCOPE_CUDA=ON -DKVSCOPE_NCCL=ON -DKVSCOPE_GUI=OFF -DKVSCOPE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      >"$out/configure.log" 2>&1; then
    tail -20 "$out/configure.log"
    echo "gpu_check: configure failed (log: $out/configure.log). Without the project's build" \
         "dependencies, build elsewhere with --bundle and run --prebuilt here." >&2
    exit 1
  fi
  if ! cmake --build build-cuda -j"$(nproc)" --target cuda_kernels_test cuda_gemm_test nccl_communicator_test \
      cuda_backend_test cuda_step_timing_test cuda_reference_test gpu_kernel_bench kvscope-cli \
      >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log"
    echo "gpu_check: build failed (log: $out/build.log)" >&2
    exit 1
  fi
}

make_bundle() {
  rm -rf "$bundle" && mkdir -p "$bundle/lib"
  cp build-cuda/tests/kernels/cuda/cuda_kernels_test build-cuda/tests/kernels/cuda/cuda_gemm_test \
    build-cuda/tests/engine/parallel/nccl_communicator_test build-cuda/tests/engine/runtime/cuda_backend_test \
    build-cuda/tests/engine/runtime/cuda_step_timing_test \
    build-cuda/tests/engine/runtime/cuda_reference_test build-cuda/tests/kernels/bench/gpu_kernel_bench \
    build-cuda/app/kvscope-cli "$bundle/"
  # Shared libraries a CUDA image may lack (kvscope-cli's curl, zip, httplib
  # and theirs too). The C library (libresolv too), libstdc++, and libnccl / libcublas
  # (hundreds of MB) stay behind: --prebuilt finds those on the device (the
  # CUDA toolkit, or pip's nvidia-nccl for NCCL).
  for bin in "$bundle"/*_test "$bundle"/gpu_kernel_bench "$bundle"/kvscope-cli; do
    ldd "$bin" | awk '/=> \// {print $3}' |
      grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libnccl)\.so' |
      xargs -r cp -L -t "$bundle/lib/"
  done
  ls -l "$bundle" "$bundle/lib"
}

# Where libnccl.so.2 is on a machine whose loader does not find it.
find_nccl_dir() {
  local d
  for d in /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
    [[ -e "$d/libnccl.so.2" ]] && { echo "$d"; return; }
  done
  python3 - 2>/dev/null <<'EOF' || true
import glob, os, sys
for p in sys.path:
    for f in glob.glob(os.path.join(p, "nvidia", "nccl", "lib", "libnccl.so*")):
        print(os.path.dirname(f)); raise SystemExit
EOF
}

# Fails the check when a gtest log shows a skipped test (the NCCL test skips
# on its own when it finds no device, whatever KVSCOPE_REQUIRE_GPU says).
no_skips() { ! grep -q '\[  SKIPPED \]' "$1"; }

run_tests_ctest() {
  timeout "$step_timeout" ctest --test-dir build-cuda -L gpu --output-on-failure --timeout "$step_timeout" \
    >"$out/ctest.log" 2>&1
  local rc=$?
  tail -15 "$out/ctest.log"
  if [[ $rc == 0 ]] && ! grep -q 'Skipped' "$out/ctest.log"; then record "ctest -L gpu" pass; else record "ctest -L gpu" "FAIL (rc $rc, $out/ctest.log)"; fi
}

run_tests_prebuilt() {
  local nccl_dir
  nccl_dir="$(find_nccl_dir)"
  local cuda_lib=""
  [[ -d /usr/local/cuda/lib64 ]] && cuda_lib=/usr/local/cuda/lib64  # libcublas for cuda_gemm_test
  export LD_LIBRARY_PATH="$PWD/$bundle/lib${nccl_dir:+:$nccl_dir}${cuda_lib:+:$cuda_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local bin name rc
  # cuda_reference_test reads tests/data from this tree and the default model
  # from KVSCOPE_MODEL_DIR (or ~/.local/share/kvscope/models): without it, it fails.
  export KVSCOPE_SOURCE_DIR="$PWD"
  for bin in "$bundle"/cuda_kernels_test "$bundle"/cuda_gemm_test "$bundle"/nccl_communicator_test \
      "$bundle"/cuda_backend_test "$bundle"/cuda_step_timing_test "$bundle"/cuda_reference_test; do
    name="$(basename "$bin")"
    timeout "$step_timeout" "$bin" --gtest_output="xml:$out/$name.xml" >"$out/$name.log" 2>&1
    rc=$?
    tail -8 "$out/$name.log"
    if [[ $rc != 0 ]]; then
      record "$name" "FAIL (rc $rc, $out/$name.log)"
    elif ! no_skips "$out/$name.log"; then
      record "$name" "FAIL (a test skipped, $out/$name.log)"
    else
      record "$name" pass
    fi
  done
}

# The kernels timed alone (docs/cuda.md, "Performance"); JSON in $out.
run_kernel_bench() {
  local bin="$1"
  timeout "$step_timeout" "$bin" >"$out/gpu_kernels.json" 2>"$out/gpu_kernel_bench.log"
  local rc=$?
  tail -4 "$out/gpu_kernel_bench.log"
  if [[ $rc == 0 ]]; then record "gpu_kernel_bench" pass; else record "gpu_kernel_bench" "FAIL (rc $rc, $out/gpu_kernel_bench.log)"; fi
}

run_sanitizers() {
  local bin="$1" sanitizer tool rc
  sanitizer="$(command -v compute-sanitizer || find /usr/local/cuda*/bin -name compute-sanitizer 2>/dev/null | head -1)"
  if [[ "$have_device" != 1 ]]; then
    record "compute-sanitizer" "FAIL (not run: no GPU)"
    return
  fi
  if [[ -z "$sanitizer" ]]; then
    record "compute-sanitizer" "FAIL (not found)"
    return
  fi
  # Launch checks need no device; the rest runs every kernel under the tool.
  for tool in memcheck racecheck; do
    timeout "$step_timeout" "$sanitizer" --tool "$tool" --error-exitcode 1 "$bin" --gtest_filter='-CudaLaunchCheck.*:*Harness*' \
      >"$out/sanitizer_$tool.log" 2>&1
    rc=$?
    tail -4 "$out/sanitizer_$tool.log"
    if [[ $rc == 0 ]]; then record "sanitizer $tool" pass; else record "sanitizer $tool" "FAIL (rc $rc, $out/sanitizer_$tool.log)"; fi
  done
}

have_device=0
device_report() {
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >"$out/device.txt" 2>&1; then
    cat "$out/device.txt"
    have_device=1
  else
    echo "gpu_check: no GPU visible (nvidia-smi missing or failing); the tests will fail with the reason" | tee "$out/device.txt"
  fi
}

case "$mode" in
  build)
    build
    device_report
    run_tests_ctest
    run_kernel_bench build-cuda/tests/kernels/bench/gpu_kernel_bench
    run_sanitizers build-cuda/tests/kernels/cuda/cuda_kernels_test
    ;;
  --bundle)
    build
    make_bundle
    exit 0
    ;;
  --prebuilt)
    [[ -x "$bundle/cuda_kernels_test" ]] || { echo "gpu_check: no $bundle (run --bundle on the build machine and carry it)" >&2; exit 1; }
    device_report
    run_tests_prebuilt
    run_kernel_bench "$bundle/gpu_kernel_bench"
    run_sanitizers "$bundle/cuda_kernels_test"
    ;;
  *)
    echo "usage: scripts/gpu_check.sh [--bundle | --prebuilt]" >&2
    exit 2
    ;;
esac

echo "---- gpu_check summary (logs in $out) ----"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit "$failed"
