#!/usr/bin/env bash
# Fuzzes the GGUF reader with libFuzzer + AddressSanitizer.
#
#   scripts/run_fuzz.sh [SECONDS]      (default 60)
#
# Configures a clang build in build-fuzz (-DKVSCOPE_FUZZ=ON), builds gguf_fuzzer
# and the seed writer, seeds a corpus from the shared tokenizer fixtures
# (../shared/fixtures/tokenizer/*.gguf, when present) plus a few GgufWriter-made
# files, and runs for SECONDS. Exits non-zero if the fuzzer finds a crash, a
# leak or a hang; the reproducer is left in build-fuzz/fuzz-artifacts/.
# Environment: FUZZ_MAX_LEN (default 65536) caps input size; the fixture seeds
# are megabytes, and their first 64 KiB holds all the structure worth mutating.
set -euo pipefail

seconds="${1:-60}"
max_len="${FUZZ_MAX_LEN:-65536}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
fixtures="${KVSCOPE_FIXTURES_DIR:-$root/../shared/fixtures/tokenizer}"

if ! command -v clang++ >/dev/null; then
  echo "run_fuzz.sh: clang++ not found (libFuzzer needs clang)" >&2
  exit 2
fi

cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSCOPE_FUZZ=ON -DKVSCOPE_CUDA=OFF >/dev/null
ninja -C "$build" -j2 gguf_fuzzer gguf_fuzz_seeds

seeds="$build/fuzz-seeds/gguf"
corpus="$build/fuzz-corpus/gguf"
artifacts="$build/fuzz-artifacts/"
mkdir -p "$seeds" "$corpus" "$artifacts"
if compgen -G "$fixtures/*.gguf" >/dev/null; then
  cp -f "$fixtures"/*.gguf "$seeds/"
fi
"$build/tests/gguf_fuzz_seeds" "$seeds"
echo "run_fuzz.sh: $(ls "$seeds" | wc -l) seeds, fuzzing for ${seconds}s"

# New inputs go to $corpus (kept between runs); $seeds is read only.
# libFuzzer's progress lines go to build-fuzz/fuzz.log; on failure its tail is shown.
log="$build/fuzz.log"
if "$build/tests/gguf_fuzzer" "$corpus" "$seeds" \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts" >"$log" 2>&1; then
  echo "run_fuzz.sh: no crash, leak or hang; $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs in ${seconds}s"
else
  status=$?
  tail -n 60 "$log" >&2
  echo "run_fuzz.sh: the fuzzer failed (exit $status); reproducer in $artifacts" >&2
  exit "$status"
fi
