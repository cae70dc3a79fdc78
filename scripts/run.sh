#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a chat with the default model:
# install dependencies, fetch SmolLM2-135M-Instruct, build, start the chat.
# Arguments are passed to `kvscope-cli chat` (e.g. --threads 4 --temp 0).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
python3 scripts/fetch_model.py --quiet
scripts/build.sh -DKVSCOPE_CUDA=OFF -DKVSCOPE_BUILD_TESTS=OFF
exec build/app/kvscope-cli chat "$@"
