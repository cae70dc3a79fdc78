#!/usr/bin/env bash
# Installs what kvscope needs to build and test on Debian 12, from Debian's
# packages. Idempotent and quiet when everything is already there.
#   scripts/bootstrap.sh          # build + test dependencies
#   KVSCOPE_FUZZ=1 scripts/bootstrap.sh   # also clang + libFuzzer runtime
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git python3 python3-pip python3-venv
  libsentencepiece-dev libpcre2-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # the manual pages' test renders them (tests/app/man_page_check.sh)
  groff-base
  # fetching the default model from the installed programs (app/fetch): HTTP, SHA-256, zip
  libcurl4-openssl-dev libssl-dev libzip-dev
  # kvscope-cli serve (app/server): HTTP server library
  libcpp-httplib-dev
  # desktop app (KVSCOPE_GUI): Qt 6 Widgets/Sql/Test, QCustomPlot, SQLite driver, GL headers Qt6Gui needs
  qt6-base-dev libqcustomplot-dev libqt6sql6-sqlite libgl-dev
)
if [[ "${KVSCOPE_FUZZ:-0}" == 1 ]]; then
  packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
