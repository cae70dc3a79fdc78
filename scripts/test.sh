#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the whole test suite:
# install dependencies, fetch the default model (model-labelled tests need it),
# build with warnings as errors, run every test, then fuzz the GGUF reader
# briefly. Set KVSCOPE_FUZZ_SECONDS=0 to skip fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
KVSCOPE_FUZZ=1 scripts/bootstrap.sh
python3 scripts/fetch_model.py --quiet --gemma
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSCOPE_CUDA=OFF -DKVSCOPE_WERROR=ON >/dev/null
cmake --build build-test -j"$(nproc)"
ctest --test-dir build-test --output-on-failure -j"$(nproc)" --timeout 900
if [[ "${KVSCOPE_FUZZ_SECONDS:-60}" != 0 && -x scripts/run_fuzz.sh ]]; then
  scripts/run_fuzz.sh "${KVSCOPE_FUZZ_SECONDS:-60}"
fi
