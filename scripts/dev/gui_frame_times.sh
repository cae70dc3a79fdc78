#!/usr/bin/env bash
# GUI responsiveness of the desktop app: frame gaps of the GUI thread
# (kvscope --measure-frames: from the model loaded until the engine is idle
# or SECONDS pass) under xvfb-run, four scenarios, RUNS runs each:
#   workload64     - 64 synthetic requests sharing a prefix, engine threads = all cores
#   long_prompt    - a ~1,400-token chat prompt and its reply, same threads
#   workload64_1t  - the 64-request workload with one engine thread (a core left to the GUI)
#   gpu_rate       - 64 requests of 1,024 tokens each from a small random model
#                    (tests/support/write_tiny_model: 2 layers, 128 wide, Q8_0) on one
#                    engine thread: ~6k decode tok/s here, the rate at which a GPU
#                    streams 64 requests into the window, all through the window
# Prints one JSON document to stdout.
#   scripts/dev/gui_frame_times.sh [RUNS] > docs/benchmarks/DATE_gui_frame_times.json
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
APP=${KVSCOPE_APP:-build/app/gui/kvscope}
WRITE_TINY=${KVSCOPE_WRITE_TINY_MODEL:-$(dirname "$(dirname "$(dirname "$APP")")")/tests/write_tiny_model}
MODEL=${KVSCOPE_MODEL:-${XDG_DATA_HOME:-$HOME/.local/share}/kvscope/models/SmolLM2-135M-Instruct.Q4_1.gguf}
[[ -f "$MODEL" ]] || { echo "gui_frame_times: no model at $MODEL (kvscope-cli fetch-model, or KVSCOPE_MODEL)" >&2; exit 1; }
one_thread=$(mktemp --suffix=.ini)
fast_model=$(mktemp --suffix=.gguf)
# The app keeps its settings (the last model opened among them) and chats
# here for these runs, not in the user's: each run starts from the same state.
scratch_home=$(mktemp -d)
export XDG_CONFIG_HOME="$scratch_home/config" XDG_DATA_HOME="$scratch_home/data" XDG_CACHE_HOME="$scratch_home/cache"
trap 'rm -rf "$one_thread" "$fast_model" "$scratch_home"' EXIT
printf '[engine]\nthreads=1\n' > "$one_thread"
"$WRITE_TINY" "$fast_model" --q8 --layers 2 --hidden 128 --ffn 256 --heads 4 --kv-heads 2 --head-dim 32 --context 2048
prompt=$(python3 -c "print(' '.join(['The paged attention engine stores keys and values in fixed-size blocks.']*120))")
run() {  # name, seconds, app arguments...
  local name=$1 seconds=$2; shift 2
  for _ in $(seq "$RUNS"); do
    printf '{"scenario":"%s","result":%s}\n' "$name" \
      "$(xvfb-run -a -s '-screen 0 1600x1000x24' "$APP" "$@" --measure-frames "$seconds" 2>/dev/null | tail -1)"
  done
}
{
  run workload64 10 --model "$MODEL" --workload 64
  run long_prompt 8 --model "$MODEL" --prompt "$prompt"
  run workload64_1t 10 --settings "$one_thread" --model "$MODEL" --workload 64
  run gpu_rate 10 --settings "$one_thread" --model "$fast_model" --workload 64 --workload-output 1024
} | python3 -c '
import json, os, platform, sys
runs = [json.loads(line) for line in sys.stdin]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
print(json.dumps({"what": "GUI-thread frame gaps (ms) of kvscope --measure-frames under xvfb-run, from the model "
                          "loaded until the engine is idle or the seconds pass", "cpu": cpu,
                  "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                  "machine": platform.machine(), "runs": runs}, indent=1))'
