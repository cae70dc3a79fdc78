#!/usr/bin/env bash
# Gets the most out of a short lease of a GPU machine (docs/cuda.md,
# "Running it on a lent GPU"): everything is built here, and the machine gets
# two prepared calls that carry the binaries and the default model (98 MB, more
# than one call may carry) and run the GPU checks and the performance table.
#
#   scripts/dev/gpu_lease.sh prepare [MODEL]
#       here: builds the bundle (scripts/gpu_check.sh --bundle) and writes
#       .gpu-lease/a (the bundle as .tar.xz, the model's first 45,000,000
#       bytes) and .gpu-lease/b (the rest of the model), ignored by git.
#   then two calls of the device tool, the second within 30 seconds of the
#   first (a machine idle longer goes back, and the first part with it):
#       run  command="bash scripts/dev/gpu_lease.sh a"  carry=[".gpu-lease/a"]
#       run  command="bash scripts/dev/gpu_lease.sh b"  carry=[".gpu-lease/b"]
#   and give the machine back. For issue 14's GUI goal (the desktop app's
#   frame gaps while the GPU serves 64 requests), also:
#       scripts/dev/gpu_lease.sh prepare-gui     (here: a CUDA + GUI build,
#                                                 the app with Qt and its
#                                                 libraries, in .gpu-lease/c)
#       run  command="bash scripts/dev/gpu_lease.sh c"  carry=[".gpu-lease/c"]
#   after call b (it needs the model b put together).
#
# Call a: every gpu-labelled test binary that needs no model (kernels, GEMM,
# NCCL on one rank, backend), gpu_kernel_bench, compute-sanitizer memcheck over
# the matmul tests and the split decode rows'; with KVSCOPE_SANITIZERS=1 also
# compute-sanitizer memcheck over the kernel tests (racecheck takes minutes:
# scripts/gpu_check.sh --prebuilt runs both). Call b: the model's reference
# test (for both settings of gpu_matmul) and scripts/bench_gpu.py (the
# issue's table), again with gpu_matmul = tensor_cores, the seed tables, and
# an Nsight Compute time per kernel of one decode step at 1 and 64 sequences.
# Everything call b makes is packed into $OUT/results.tgz after every step,
# so a call cut short still brings back what ran. Each step has its own
# timeout; the whole of b took about 90 s on an H200 before the tensor-core
# steps (about 40 s more). KVSCOPE_LEASE_F32=0 leaves out the f32 table.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
stash=/root/kvscope-lease  # on the GPU machine: survives between the calls of one lease
part_bytes=43000000  # each call carries its part plus the working tree (~10.4 MB) under 64 MiB
model_name=SmolLM2-135M-Instruct.Q4_1.gguf
model_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

prepare() {
  local model="${1:-${KVSCOPE_MODEL_DIR:-$HOME/.local/share/kvscope/models}/$model_name}"
  [[ -f "$model" ]] || { echo "gpu_lease: no model at $model (kvscope-cli fetch-model, or pass its path)" >&2; exit 1; }
  scripts/gpu_check.sh --bundle >/tmp/gpu_lease_bundle.log 2>&1 ||
    { tail -20 /tmp/gpu_lease_bundle.log; echo "gpu_lease: the bundle did not build" >&2; exit 1; }
  grep -qx '/.gpu-lease/' .git/info/exclude 2>/dev/null || echo '/.gpu-lease/' >>.git/info/exclude
  rm -rf .gpu-lease && mkdir -p .gpu-lease/a .gpu-lease/b
  tar cJf .gpu-lease/a/bundle.tar.xz -C build-cuda gpu_bundle
  head -c "$part_bytes" "$model" >.gpu-lease/a/model.part1
  tail -c +"$((part_bytes + 1))" "$model" >.gpu-lease/b/model.part2
  sha256sum "$model" | cut -d' ' -f1 >.gpu-lease/b/model.sha256
  du -b .gpu-lease/a .gpu-lease/b
  echo "gpu_lease: ready; call a carries .gpu-lease/a, call b .gpu-lease/b (within 30 s of a)"
}

call_a() {
  local t0=$SECONDS B="$stash/gpu_bundle"
  mkdir -p "$stash" && cp .gpu-lease/a/model.part1 "$stash/" && rm -rf "$B" &&
    tar xJf .gpu-lease/a/bundle.tar.xz -C "$stash" || exit 1
  export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64"
  export KVSCOPE_REQUIRE_GPU=1 KVSCOPE_SOURCE_DIR="$root"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
  local t s rc
  for t in cuda_kernels_test cuda_gemm_test nccl_communicator_test cuda_backend_test cuda_step_timing_test; do
    s=$SECONDS
    timeout 120 "$B/$t" >"$OUT/$t.log" 2>&1
    rc=$?
    echo "$t rc=$rc $((SECONDS - s)) s"
    grep -E '^\[  (FAILED|SKIPPED|PASSED) ' "$OUT/$t.log" | head -12
  done
  s=$SECONDS
  timeout 90 "$B/gpu_kernel_bench" >"$stash/gpu_kernels.json" 2>"$OUT/gpu_kernel_bench.log"
  echo "gpu_kernel_bench rc=$? $((SECONDS - s)) s"
  cp "$stash/gpu_kernels.json" "$OUT/"
  # memcheck over the matmul tests (their cluster-split tensor-core kernels
  # read other blocks' shared memory) and the split decode rows' test (the
  # partition states and their combine): 8 s on an H200, so every lease.
  s=$SECONDS
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 "$B/cuda_kernels_test" \
    --gtest_filter='CudaMatvecQ.*:CudaPagedPrefill.DecodeRowIsBitwiseTheRowInAChunk' >"$OUT/memcheck_matvec.log" 2>&1
  echo "memcheck (matvec and split-row tests) rc=$? $((SECONDS - s)) s"
  grep -E 'ERROR SUMMARY' "$OUT/memcheck_matvec.log" | tail -1
  if [[ "${KVSCOPE_SANITIZERS:-0}" == 1 ]]; then
    s=$SECONDS
    timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 "$B/cuda_kernels_test" \
      --gtest_filter='-CudaLaunchCheck.*:*Harness*' >"$OUT/memcheck.log" 2>&1
    echo "memcheck rc=$? $((SECONDS - s)) s"
    grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1
  fi
  echo "call a: $((SECONDS - t0)) s"
}

call_b() {
  local t0=$SECONDS B="$stash/gpu_bundle" R=/tmp/kvscope-lease-results
  [[ -f "$stash/model.part1" ]] || { echo "gpu_lease: no model part 1 here: call a first, and b within 30 s" >&2; exit 1; }
  mkdir -p "$stash/models" "$R"
  local M="$stash/models/$model_name"
  cat "$stash/model.part1" .gpu-lease/b/model.part2 >"$M"
  echo "$(cat .gpu-lease/b/model.sha256)  $M" | sha256sum -c || exit 3
  export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64"
  export KVSCOPE_REQUIRE_GPU=1 KVSCOPE_SOURCE_DIR="$root" KVSCOPE_MODEL_DIR="$stash/models" PYTHONUNBUFFERED=1
  local CLI="$B/kvscope-cli"
  step() {  # step NAME TIMEOUT COMMAND...: its output in $R/NAME.out / .err
    local name=$1 limit=$2 s=$SECONDS
    shift 2
    timeout "$limit" "$@" >"$R/$name.out" 2>"$R/$name.err"
    echo "== $name rc=$? $((SECONDS - s)) s"
    tar czf "$OUT/results.tgz" -C "$R" .
  }
  # Every reference test runs for both GPU matmuls (gpu_matmul f32 and tensor_cores).
  step reference 90 "$B/cuda_reference_test"
  grep -E '^\[  (FAILED|SKIPPED|PASSED) ' "$R/reference.out"
  local kernels=()
  [[ -f "$stash/gpu_kernels.json" ]] && kernels=(--kernel-json "$stash/gpu_kernels.json")
  # KVSCOPE_LEASE_F32=0: only the tensor-core table (for a change to the tensor-core kernels alone).
  if [[ "${KVSCOPE_LEASE_F32:-1}" == 1 ]]; then
    step bench_gpu 260 python3 scripts/bench_gpu.py --cli "$CLI" "${kernels[@]}" --model "$M" --out "$R/bench_gpu.json"
    tail -18 "$R/bench_gpu.err"
  fi
  # The same table on the tensor cores (the setting gpu_matmul, docs/cuda.md).
  step bench_gpu_tensor 240 python3 scripts/bench_gpu.py --cli "$CLI" --gpu-matmul tensor_cores \
    --compare-sampling-at 0 --compare-graphs-at "" --model "$M" --out "$R/bench_gpu_tensor.json"
  tail -10 "$R/bench_gpu_tensor.err"
  local t
  if [[ "${KVSCOPE_LEASE_SEEDS:-1}" == 1 ]]; then
    for t in 2 1 4; do
      step "seeds_t$t" 60 "$CLI" bench-seeds --model "$M" --backend cuda --only "$t" --out-dir "$R/seeds_t$t"
    done
  fi
  # The kernels of one decode step under KVSCOPE_LEASE_NCU_MATMUL (the setting gpu_matmul; f32 by default).
  local ncu c skip matmul=${KVSCOPE_LEASE_NCU_MATMUL:-f32}
  if [[ "${KVSCOPE_LEASE_NCU:-1}" != 1 ]]; then
    echo "call b: $((SECONDS - t0)) s (no Nsight Compute: KVSCOPE_LEASE_NCU=0)"
    return
  fi
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for c in 1 64; do
    skip=3000
    [[ $c == 64 ]] && skip=6000  # past the warm-up's prefill steps, into its decode steps
    step "ncu_c$c" 60 "$ncu" --clock-control none --metrics gpu__time_duration.sum --launch-skip "$skip" \
      --launch-count 600 --csv "$CLI" bench --model "$M" --backend cuda --gpu-matmul "$matmul" --concurrency "$c" \
      --prompt-tokens 128 --gen-tokens 32 --repeats 1
  done
  python3 scripts/dev/decode_step_kernels.py "$R/ncu_c1.out" "$R/ncu_c64.out" 2>&1 | tee "$R/decode_step_kernels.txt"
  tar czf "$OUT/results.tgz" -C "$R" .
  echo "call b: $((SECONDS - t0)) s"
}

# The desktop app for call c: built with CUDA and the GUI (build-cuda-gui),
# with every shared library it loads but the C library's and the GPU
# driver's (the lent machine has no Qt), Qt's offscreen platform plugin and
# a font.
prepare_gui() {
  local build=build-cuda-gui dir=.gpu-lease/c/gui
  local nvcc_path
  nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc_path" -DKVSCOPE_CUDA=ON \
    -DKVSCOPE_NCCL=OFF -DKVSCOPE_GUI=ON -DKVSCOPE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/tmp/gpu_lease_gui.log 2>&1 &&
    cmake --build "$build" --target kvscope >>/tmp/gpu_lease_gui.log 2>&1 ||
    { tail -20 /tmp/gpu_lease_gui.log; echo "gpu_lease: the CUDA + GUI app did not build" >&2; exit 1; }
  grep -qx '/.gpu-lease/' .git/info/exclude 2>/dev/null || echo '/.gpu-lease/' >>.git/info/exclude
  rm -rf .gpu-lease/c && mkdir -p "$dir/lib" "$dir/plugins/platforms" "$dir/fonts"
  cp "$build/app/gui/kvscope" "$dir/"
  local qt_plugins
  qt_plugins="$(qtpaths6 --query QT_INSTALL_PLUGINS 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/qt6/plugins)"
  cp "$qt_plugins/platforms/libqoffscreen.so" "$dir/plugins/platforms/"
  # The C library, the loader and the driver stay (the machine's own must be used), and
  # cuBLAS and NCCL too (hundreds of MB; the machine's CUDA toolkit has them).
  for bin in "$dir/kvscope" "$dir/plugins/platforms/libqoffscreen.so"; do
    ldd "$bin" | awk '/=> \// {print $3}' |
      grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|libutil|libcuda|ld-linux-x86-64|libcublas|libcublasLt|libnccl)\.so' |
      xargs -r cp -L -n -t "$dir/lib/"
  done
  cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf "$dir/fonts/" 2>/dev/null ||
    echo "gpu_lease: no DejaVuSans.ttf here; the app runs without a font (text is not drawn)" >&2
  tar cJf .gpu-lease/c/gui.tar.xz -C .gpu-lease/c gui && rm -rf "$dir"
  du -b .gpu-lease/c
}

# The app's GUI-thread frame gaps (kvscope --measure-frames) while the GPU
# serves 64 synthetic requests of 1,024 tokens each (enough to keep it busy
# through the 10 s window, which ends early if the engine goes idle), on
# Qt's offscreen platform, three runs.
call_c() {
  local t0=$SECONDS G="$stash/gui" M="$stash/models/$model_name"
  [[ -f "$M" ]] || { echo "gpu_lease: no model here: run calls a and b first" >&2; exit 1; }
  rm -rf "$G" && tar xJf .gpu-lease/c/gui.tar.xz -C "$stash" || exit 1
  export LD_LIBRARY_PATH="$G/lib:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64"
  export QT_QPA_PLATFORM=offscreen QT_PLUGIN_PATH="$G/plugins" QT_QPA_FONTDIR="$G/fonts" HOME="$stash/home"
  mkdir -p "$HOME"
  local settings="$stash/gui_settings.ini"
  printf '[engine]\nbackend=%s\n' "${KVSCOPE_LEASE_BACKEND:-cuda}" >"$settings"
  local i
  for i in 1 2 3; do
    timeout 60 "$G/kvscope" --model "$M" --settings "$settings" --workload 64 --workload-output 1024 --measure-frames 10 \
      >"$OUT/gui_frames_$i.json" 2>"$OUT/gui_frames_$i.err"
    echo "gui run $i rc=$?: $(tail -1 "$OUT/gui_frames_$i.json" | cut -c1-300)"
  done
  echo "call c: $((SECONDS - t0)) s"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  prepare-gui) prepare_gui ;;
  a) call_a ;;
  b) call_b ;;
  c) call_c ;;
  *) echo "usage: scripts/dev/gpu_lease.sh prepare [MODEL] | prepare-gui | a | b | c" >&2; exit 2 ;;
esac
