#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the default model running:
# install dependencies, build, fetch SmolLM2-135M-Instruct (with the built
# `kvscope-cli fetch-model`: size and SHA-256 checked, resumable), then open
# the desktop app when a display is available ($DISPLAY or $WAYLAND_DISPLAY),
# else the terminal chat.
#   scripts/run.sh                       # desktop app (or terminal chat without a display)
#   scripts/run.sh --cli --temp 0        # terminal chat; other arguments go to the program started
#   scripts/run.sh --prompt "Hello"      # desktop app with its own options (kvscope --help)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=gui
[[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]] && mode=cli
args=()
for a in "$@"; do
  if [[ "$a" == --cli ]]; then mode=cli; else args+=("$a"); fi
done

scripts/bootstrap.sh
scripts/build.sh -DKVSCOPE_CUDA=OFF -DKVSCOPE_BUILD_TESTS=OFF
build/app/kvscope-cli fetch-model --quiet

if [[ "$mode" == gui ]]; then
  if [[ -x build/app/gui/kvscope ]]; then
    exec build/app/gui/kvscope "${args[@]}"
  fi
  echo "run.sh: the desktop app was not built (Qt 6 missing?); starting the terminal chat" >&2
fi
exec build/app/kvscope-cli chat "${args[@]}"
