#!/usr/bin/env bash
# Prints the path of a Python that has the packages the Python tests need
# (tests/python_requirements.txt: the `openai` client for
# tests/app/server/openai_client_test.py), making the virtual environment
# first when it is missing or the requirements changed. Idempotent, and cached
# between runs and checkouts in $KVSCOPE_TEST_VENV, else
# ${XDG_CACHE_HOME:-~/.cache}/kvscope/test-venv; concurrent callers wait on a
# lock. Needs python3-venv (scripts/bootstrap.sh) and pip access to PyPI.
#
#   "$(scripts/test_python_env.sh)" tests/app/server/openai_client_test.py --cli build/app/kvscope-cli
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/tests/python_requirements.txt"
venv="${KVSCOPE_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/test-venv}"
stamp="$venv/.kvscope-requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
  echo "test_python_env.sh: installing $(grep -v '^#' "$requirements" | xargs) into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  echo "$want" >"$stamp"
fi
echo "$venv/bin/python"
