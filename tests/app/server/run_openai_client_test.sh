#!/usr/bin/env bash
# ctest's entry to tests/app/server/openai_client_test.py (label `model`):
#   run_openai_client_test.sh PATH/TO/kvscope-cli
# Makes (once) the virtual environment with the `openai` client, then runs
# the test with it. A venv that cannot be made fails the test.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="$("$here/../../../scripts/test_python_env.sh")"
exec "$python" "$here/openai_client_test.py" --cli "$1"
