#!/usr/bin/env bash
# Configures and builds kvscope into build/ (Release, CPU; CUDA when nvcc is
# found unless KVSCOPE_CUDA=OFF). Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
