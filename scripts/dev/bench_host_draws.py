#!/usr/bin/env python3
"""Host token draws before vs after, end to end, alternated in one run.

Two kvscope-cli binaries (--old, --new) run `bench` greedy at many sequences
at once, where drawing each row's token on the host is a visible part of a
step, on Gemma 3 270M (vocabulary 262,144) and SmolLM2 (49,152). Per round
and model: old (its defaults), new (its defaults: the CPU backend draws the
rows on the engine's threads, greedy reads the row in place), and new with
--no-gpu-sampling (the engine's sampler, one row after another, greedy in
place). Rounds alternate the order. Prints one JSON record with every run's
tokens/s and step split, the medians, and the CPU.

  python3 scripts/dev/bench_host_draws.py --old /tmp/kv-old/build/app/kvscope-cli \\
      --new build-test/app/kvscope-cli --rounds 4 --out docs/benchmarks/DATE_host_token_draws_cpu2t.json

Development tool: nothing in the project depends on it.
"""
import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

MODELS = {
    "gemma-3-270m-q4_k_m": ("gemma-3-270m-q4_k_m.gguf", 32),
    "smollm2-135m-q4_1": ("SmolLM2-135M-Instruct.Q4_1.gguf", 64),
}


def bench(cli, model, concurrency, threads, extra):
    cmd = [str(cli), "bench", "--model", str(model), "--threads", str(threads), "--prompt-tokens", "16",
           "--gen-tokens", "16", "--repeats", "2", "--concurrency", str(concurrency)] + extra
    j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    steps = j.get("steps", {})
    return {"tokens_per_s": j["tokens_per_s_median"], "step_s_median": steps.get("step_s_median"),
            "sample_share": steps.get("sample_share"), "cpu": j["cpu"]["model_name"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--new", type=Path, required=True)
    ap.add_argument("--model-dir", type=Path, default=Path.home() / ".local/share/kvscope/models")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    variants = {"old": (args.old, []), "new": (args.new, []), "new_engine_sampling": (args.new, ["--no-gpu-sampling"])}
    record = {"what": __doc__.split("\n")[0], "threads": args.threads, "rounds": args.rounds,
              "loadavg_before": os.getloadavg(), "models": {}}
    for name, (file, concurrency) in MODELS.items():
        runs = {v: [] for v in variants}
        for r in range(args.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for v in order:
                cli, extra = variants[v]
                runs[v].append(bench(cli, args.model_dir / file, concurrency, args.threads, extra))
        med = {v: statistics.median(x["tokens_per_s"] for x in runs[v]) for v in variants}
        record["cpu"] = runs["new"][0]["cpu"]
        record["models"][name] = {
            "concurrency": concurrency,
            "runs": runs,
            "tokens_per_s_median": med,
            "new_over_old": med["new"] / med["old"],
            "new_over_new_engine_sampling": med["new"] / med["new_engine_sampling"],
            "round_ratios_new_over_old": [n["tokens_per_s"] / o["tokens_per_s"]
                                          for n, o in zip(runs["new"], runs["old"])],
        }
    record["loadavg_after"] = os.getloadavg()
    text = json.dumps(record, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
