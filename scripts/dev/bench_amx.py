#!/usr/bin/env python3
"""AMX tiles against the AVX-512 VNNI kernel for the packed integer matmul, in one run.

The same binaries run twice per round, once with AMX (the default where the
CPU has it) and once with KVSCOPE_AMX=0, alternating ROUNDS times so machine
noise hits both alike:
  - kernel_bench's BM_PackedMatmul on SmolLM2's shapes (0-4) at 32 and 128
    tokens and the K-quant shapes (7-13: Q4_K, Q5_K, Q6_K) at 64, 1 and 2
    threads (the kernels alone);
  - `kvscope-cli bench` on the default model and on Gemma 3 270M Q4_K_M (or
    --model, repeatable): prefill at 128 and 512 prompt tokens, 2 threads (end
    to end; decode, one token a step, never uses AMX and is a control).
Prints one JSON object: every round, medians, ratios, and the CPU.

  python3 scripts/dev/bench_amx.py --rounds 3 --out docs/benchmarks/$(date +%F)_amx_vs_vnni_cpu.json

Needs build-test/ (or --build) with kvscope-cli and kernel_bench. Development
tool: nothing in the project depends on it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(cmd, amx):
    env = dict(os.environ, KVSCOPE_AMX="1" if amx else "0")
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout


def kernels(build, amx):
    out = run([str(build / "tests/kernels/bench/kernel_bench"),
               "--benchmark_filter=BM_PackedMatmul/shape:([0-4]/tokens:(32|128)|([7-9]|1[0-3])/tokens:64)/threads:[12]/l3:0",
               "--benchmark_min_time=0.2", "--benchmark_format=json"], amx)
    return {b["name"]: {"us": b["real_time"] / 1e3, "label": b.get("label", "")}
            for b in json.loads(out)["benchmarks"]}


def end_to_end(build, model, prompt, amx):
    out = run([str(build / "app/kvscope-cli"), "bench", "--model", model, "--threads", "2",
               "--prompt-tokens", str(prompt), "--gen-tokens", "16", "--repeats", "3"], amx)
    j = json.loads(out)
    return {"prefill_tok_s": j["prefill_tok_s_median"], "decode_tok_s": j["decode_tok_s_median"],
            "cached_prompt_tokens": j["prefill_cached_prompt_tokens"], "cpu": j["cpu"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default=str(ROOT / "build-test"))
    models = Path.home() / ".local/share/kvscope/models"
    ap.add_argument("--model", action="append",
                    help="GGUF file (repeatable; default: SmolLM2-135M-Instruct Q4_1 and Gemma 3 270M Q4_K_M)")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not a.model:
        a.model = [str(models / "SmolLM2-135M-Instruct.Q4_1.gguf"), str(models / "gemma-3-270m-q4_k_m.gguf")]
    build = Path(a.build)
    rounds = []
    for r in range(a.rounds):
        rnd = {"load_before": os.getloadavg()}
        for amx in (True, False) if r % 2 == 0 else (False, True):  # both orders
            key = "amx" if amx else "vnni"
            rnd[key] = {"kernels": kernels(build, amx),
                        "e2e": {(m, p): end_to_end(build, m, p, amx) for m in a.model for p in (128, 512)}}
        rnd["load_after"] = os.getloadavg()
        rounds.append(rnd)
        print(f"round {r + 1}/{a.rounds} done", flush=True, file=sys.stderr)

    def med(f):
        return statistics.median(f(rnd) for rnd in rounds)

    names = sorted(rounds[0]["amx"]["kernels"])
    summary = {"kernels_vnni_over_amx_time": {}, "e2e": {}}
    for n in names:
        summary["kernels_vnni_over_amx_time"][n + " " + rounds[0]["amx"]["kernels"][n]["label"]] = round(
            med(lambda rnd: rnd["vnni"]["kernels"][n]["us"] / rnd["amx"]["kernels"][n]["us"]), 3)
    for m in a.model:
        for p in (128, 512):
            summary["e2e"][f"{Path(m).name} prompt {p}"] = {
                "prefill_tok_s_amx": round(med(lambda rnd: rnd["amx"]["e2e"][(m, p)]["prefill_tok_s"]), 1),
                "prefill_tok_s_vnni": round(med(lambda rnd: rnd["vnni"]["e2e"][(m, p)]["prefill_tok_s"]), 1),
                "prefill_ratio": round(med(lambda rnd: rnd["amx"]["e2e"][(m, p)]["prefill_tok_s"] /
                                           rnd["vnni"]["e2e"][(m, p)]["prefill_tok_s"]), 3),
                "decode_ratio_control": round(med(lambda rnd: rnd["amx"]["e2e"][(m, p)]["decode_tok_s"] /
                                                  rnd["vnni"]["e2e"][(m, p)]["decode_tok_s"]), 3),
            }
    for rnd in rounds:  # JSON keys must be strings
        for key in ("amx", "vnni"):
            rnd[key]["e2e"] = {f"{Path(m).name} prompt {p}": v for (m, p), v in rnd[key]["e2e"].items()}
    record = {"what": "packed integer matmul: AMX tiles vs AVX-512 VNNI, same binaries, KVSCOPE_AMX=1/0 alternated",
              "cpu": next(iter(rounds[0]["amx"]["e2e"].values()))["cpu"], "models": a.model, "rounds": a.rounds,
              "summary": summary, "raw_rounds": rounds,
              "rerun": "python3 scripts/dev/bench_amx.py --rounds 3 --out FILE"}
    text = json.dumps(record, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
