#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the whole test suite:
# install dependencies, fetch the models (model-labelled tests need them),
# fuzz the GGUF reader briefly, build with warnings as errors and run every
# test (ctest last, so its summary closes the output). Set
# KVSCOPE_FUZZ_SECONDS=0 to skip fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
KVSCOPE_FUZZ=1 scripts/bootstrap.sh
python3 scripts/fetch_model.py --quiet --gemma
if [[ "${KVSCOPE_FUZZ_SECONDS:-60}" != 0 ]]; then
  scripts/run_fuzz.sh "${KVSCOPE_FUZZ_SECONDS:-60}"
fi
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVSCOPE_CUDA=OFF -DKVSCOPE_WERROR=ON >/dev/null
cmake --build build-test -j"$(nproc)"
ctest --test-dir build-test --output-on-failure -j"$(nproc)" --timeout 900
