#!/usr/bin/env bash
# GUI responsiveness of the desktop app: frame gaps of the GUI thread
# (kvscope --measure-frames) under xvfb-run, three scenarios, RUNS runs each:
#   workload64     - 64 synthetic requests sharing a prefix, engine threads = all cores
#   long_prompt    - a ~1,400-token chat prompt and its reply, same threads
#   workload64_1t  - the 64-request workload with one engine thread (a core left to the GUI)
# Prints one JSON document to stdout.
#   scripts/dev/gui_frame_times.sh [RUNS] > docs/benchmarks/DATE_gui_frame_times.json
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
APP=${KVSCOPE_APP:-build/app/gui/kvscope}
one_thread=$(mktemp --suffix=.ini)
trap 'rm -f "$one_thread"' EXIT
printf '[engine]\nthreads=1\n' > "$one_thread"
prompt=$(python3 -c "print(' '.join(['The paged attention engine stores keys and values in fixed-size blocks.']*120))")
run() {  # name, seconds, app arguments...
  local name=$1 seconds=$2; shift 2
  for _ in $(seq "$RUNS"); do
    printf '{"scenario":"%s","result":%s}\n' "$name" \
      "$(xvfb-run -a -s '-screen 0 1600x1000x24' "$APP" "$@" --measure-frames "$seconds" 2>/dev/null | tail -1)"
  done
}
{
  run workload64 10 --workload 64
  run long_prompt 8 --prompt "$prompt"
  run workload64_1t 10 --settings "$one_thread" --workload 64
} | python3 -c '
import json, os, platform, sys
runs = [json.loads(line) for line in sys.stdin]
print(json.dumps({"what": "GUI-thread frame gaps (ms) of kvscope --measure-frames under xvfb-run",
                  "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                  "machine": platform.machine(), "runs": runs}, indent=1))'
