#!/usr/bin/env python3
"""kvscope and llama.cpp side by side, in one run, on the default model (or --model).

Alternates the two engines ROUNDS times (so machine noise hits both alike):
`kvscope-cli bench` and scripts/dev/bench_llama_cpp.py, same model, threads,
prompt length (128) and generated tokens (128). Prints one JSON object with
every round, the medians of the per-round medians, and the ratios.

  /opt/refenv/bin/python scripts/dev/bench_vs_llamacpp.py --threads 2 --rounds 3 \
      --out docs/benchmarks/$(date +%F)_smollm2_cpu2t_vs_llamacpp.json

Needs build/app/kvscope-cli and llama-cpp-python in /opt/refenv (see
bench_llama_cpp.py). Development tool: nothing in the project depends on it.

The summary names the CPU both engines ran on (model name, CPUs, threads and
each engine's SIMD path) and stops if the two records disagree on the CPU, or
if kvscope's prefill was served from its prefix cache (it must be 0: `bench`
gives every run a fresh prompt).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per engine per round")
    ap.add_argument("--cli", default=str(ROOT / "build/app/kvscope-cli"))
    ap.add_argument("--model", help="GGUF file for both engines (default: each one's default model)")
    ap.add_argument("--out", help="also write the JSON to this file")
    args = ap.parse_args()
    rounds = []
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        model = ["--model", args.model] if args.model else []
        ours = run_json([args.cli, "bench", "--threads", str(args.threads), "--repeats", str(args.repeats),
                         "--prompt-tokens", "128", "--gen-tokens", "128"] + model)
        theirs = run_json([sys.executable, str(ROOT / "scripts/dev/bench_llama_cpp.py"), "--threads",
                           str(args.threads), "--repeats", str(args.repeats)] + model)
        cached = ours.get("prefill_cached_prompt_tokens")
        if cached != 0:
            sys.exit(f"kvscope's prefill record has prefill_cached_prompt_tokens = {cached!r} (must be 0); "
                     "is the kvscope-cli build older than its fresh-prompt bench?")
        ours_cpu, theirs_cpu = ours["cpu"]["model_name"], theirs["cpu"]["model_name"]
        if ours_cpu != theirs_cpu:
            sys.exit(f"the two records name different CPUs: kvscope {ours_cpu!r}, llama.cpp {theirs_cpu!r}")
        rounds.append({"kvscope": ours, "llama.cpp": theirs, "loadavg": os.getloadavg()})

    def med(engine, key):
        return statistics.median(r[engine][key] for r in rounds)

    k_pre, k_dec = med("kvscope", "prefill_tok_s_median"), med("kvscope", "decode_tok_s_median")
    l_pre, l_dec = med("llama.cpp", "prefill_tok_s_median"), med("llama.cpp", "decode_tok_s_median")
    summary = {
        "threads": args.threads, "rounds": args.rounds, "repeats_per_round": args.repeats,
        "cpu": {**rounds[0]["kvscope"]["cpu"], "isa": {"kvscope": rounds[0]["kvscope"]["cpu"]["isa"],
                                                        "llama.cpp": rounds[0]["llama.cpp"]["cpu"]["isa"]}},
        "prefill_prompts": {"kvscope": rounds[0]["kvscope"]["prefill_prompts"],
                            "llama.cpp": rounds[0]["llama.cpp"]["prefill_prompts"]},
        "kvscope": {"prefill_tok_s": k_pre, "decode_tok_s": k_dec},
        "llama.cpp": {"prefill_tok_s": l_pre, "decode_tok_s": l_dec,
                      "version": rounds[0]["llama.cpp"].get("version")},
        "ratio_kvscope_over_llamacpp": {"prefill": k_pre / l_pre, "decode": k_dec / l_dec},
        # A bandwidth probe's estimate, not a bound (named decode_floor_tok_s before 2026-11-27).
        "decode_ceiling_estimate_tok_s": rounds[0]["kvscope"].get("decode_ceiling_estimate_tok_s"),
        "weight_bytes": rounds[0]["kvscope"].get("weight_bytes"),
    }
    text = json.dumps({"summary": summary, "rounds": rounds}, indent=1) + "\n"
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
