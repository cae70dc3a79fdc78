#!/usr/bin/env python3
"""bench-gpu: the GPU performance table of docs/cuda.md in one run, as one JSON record.

What it runs, all on the same machine in one go:
  - gpu_kernel_bench (--kernel-bench, optional): the copy ceiling, decode
    attention's achieved bandwidth at 1k / 4k / 16k context against it,
    prefill attention's TFLOP/s;
  - `kvscope-cli bench` end to end at each --concurrency (default 1, 16, 64,
    256 sequences at once), and once more at the comparison concurrency
    (default 64) with --no-gpu-sampling, so the record shows what sampling on
    the device changes, and at each --compare-graphs-at concurrency (default
    1 and 64) with --no-gpu-graphs, for what replaying steps as CUDA graphs
    changes, and at each --compare-overlap-at concurrency (default 1 and 64)
    with --no-gpu-overlap, for what overlapping the kernels' launches
    changes, and at each --compare-attention-timing-at concurrency (default
    1 and 64) with --no-gpu-attention-timing, for what the events that time
    each layer's attention cost (one step in 16 is timed), and at each
    --compare-norm-fusion-at concurrency (default 1, 16 and 64) with
    --gpu-norm-fusion on and off, for what folding the norms into the
    matmuls changes against the default's rule (auto). Each bench record names the backend and the device, splits the
    step time into forward / sample / other, counts the steps replayed as
    a graph (its "steps") and, on a GPU, says how much of the step the
    device was busy (first kernel to last copy back) and how long per
    step it sat with nothing queued while the host worked.

Every run uses the same matmul math, --gpu-matmul (the engine setting
gpu_matmul: f32, the default, or tensor_cores); the record's "gpu_matmul"
is what the bench records report, so a table made on the tensor cores says
so. Run it once per math to compare them.

It prints a Markdown table on stderr and writes the record to --out (stdout
by default). The bench records are kept whole under "end_to_end".

On the lent GPU machine, with the bundle of `scripts/gpu_check.sh --bundle`:

  python3 scripts/bench_gpu.py --cli build-cuda/gpu_bundle/kvscope-cli \\
      --kernel-bench build-cuda/gpu_bundle/gpu_kernel_bench --model $KVSCOPE_MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --engine-option=--gpu-memory-percent=20 --out $OUT/bench_gpu.json
  (and again with --gpu-matmul tensor_cores --out $OUT/bench_gpu_tensor_cores.json)

On the CPU (what the test `BenchGpuScript` runs, to keep the script honest):

  python3 scripts/bench_gpu.py --backend cpu --quick

Exit status: 0 when every run succeeded; otherwise 1, after naming the run
that failed and its stderr.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_json(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(f"bench_gpu: {what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-4000:]}\n")
        sys.exit(1)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        sys.stderr.write(f"bench_gpu: {what} printed no JSON ({e}):\n{proc.stdout[-2000:]}\n")
        sys.exit(1)


def end_to_end(args, concurrency, gpu_sampling, gpu_graphs=True, gpu_overlap=True, gpu_attention_timing=True,
               gpu_norm_fusion=None):
    cmd = [str(args.cli), "bench", "--backend", args.backend, "--concurrency", str(concurrency),
           "--prompt-tokens", str(args.prompt_tokens), "--gen-tokens", str(args.gen_tokens),
           "--repeats", str(args.repeats)]
    if args.gpu_matmul:
        cmd += ["--gpu-matmul", args.gpu_matmul]
    if args.model:
        cmd += ["--model", str(args.model)]
    if not gpu_sampling:
        cmd.append("--no-gpu-sampling")
    if not gpu_graphs:
        cmd.append("--no-gpu-graphs")
    if not gpu_overlap:
        cmd.append("--no-gpu-overlap")
    if not gpu_attention_timing:
        cmd.append("--no-gpu-attention-timing")
    if gpu_norm_fusion:
        cmd += ["--gpu-norm-fusion", gpu_norm_fusion]
    cmd += args.engine_option
    what = (f"bench at {concurrency} sequence(s){'' if gpu_sampling else ', host sampling'}"
            f"{'' if gpu_graphs else ', no CUDA graphs'}{'' if gpu_overlap else ', launches not overlapped'}"
            f"{'' if gpu_attention_timing else ', attention not timed'}"
            f"{f', norm fusion {gpu_norm_fusion}' if gpu_norm_fusion else ''}")
    sys.stderr.write(f"bench_gpu: {what}...\n")
    return run_json(cmd, what)


def on_off(value):
    """A GPU setting in the table: None (the CPU ran the model) is n/a."""
    return "n/a" if value is None else ("on" if value else "off")


def row_of(record):
    steps = record.get("steps", {})
    return {
        "concurrency": record["concurrency"],
        "gpu_sampling": record["gpu_sampling"],
        "gpu_graphs": record.get("gpu_graphs"),
        "gpu_overlap_launches": record.get("gpu_overlap_launches"),
        "gpu_attention_timing": record.get("gpu_attention_timing"),
        "gpu_norm_fusion": record.get("gpu_norm_fusion"),
        "gpu_matmul": record.get("gpu_matmul"),
        "graph_steps": steps.get("graph_steps"),
        "steps": steps.get("count"),
        "tokens_per_s": record["tokens_per_s_median"],
        # Per request (its prompt over its own time to first token, which at
        # several sequences includes the others' prefill), and the run's in all.
        "prefill_tok_s": record["prefill_tok_s_median"],
        "prefill_tok_s_in_all": record.get("prefill_tok_s_in_all_median"),
        "decode_tok_s_per_sequence": record["decode_tok_s_median"],
        "step_s_median": steps.get("step_s_median"),
        "forward_share": steps.get("forward_share"),
        "sample_share": steps.get("sample_share"),
        "other_share": steps.get("other_share"),
        # On a GPU: its own time's share of the steps, and the median step's
        # time with nothing queued on it (None on the CPU backend).
        "device_share": steps.get("device_share"),
        "device_idle_s_median": steps.get("device_idle_s_median"),
    }


def kernel_summary(kernels):
    copy = kernels["copy_gbs"]
    return {
        "copy_gbs": copy,
        "decode_attention": [
            {"batch": a["batch"], "context": a["context"], "gbs": a["mixed_kernel_gbs"],
             "of_copy": a["mixed_kernel_of_copy"], "split_kv_gbs": a["split_kv_gbs"],
             "split_kv_of_copy": a["split_kv_of_copy"]}
            for a in kernels["decode_attention"]],
        "prefill_attention": kernels["prefill_attention"],
    }


def markdown(record):
    lines = []
    k = record.get("kernels")
    if k:
        lines.append(f"copy bandwidth: {k['copy_gbs']:,.0f} GB/s")
        lines.append("| decode attention | batch | context | GB/s | of copy | split-KV GB/s | of copy |")
        lines.append("| --- | --: | --: | --: | --: | --: | --: |")
        for a in k["decode_attention"]:
            lines.append(f"| | {a['batch']} | {a['context']} | {a['gbs']:,.1f} | {a['of_copy']:.1%} | "
                         f"{a['split_kv_gbs']:,.1f} | {a['split_kv_of_copy']:.1%} |")
        for p in k["prefill_attention"]:
            lines.append(f"prefill attention, {p['rows']} rows: {p['tflops']:.2f} TFLOP/s")
    lines.append(f"GPU matmul: {record.get('gpu_matmul')}")
    if str(record.get("device", "")).startswith("CPU"):
        lines.append("(The CPU ran the model: the GPU settings below are as given, and did nothing.)")
    lines.append("| sequences | device sampling | CUDA graphs | overlapped launches | attention timed | norm fusion | "
                 "tok/s in all | "
                 "prefill tok/s per request | prefill tok/s in all | "
                 "decode tok/s per sequence | median step ms | steps replayed | forward | sample | other | "
                 "device busy | device idle per step us |")
    lines.append("| --: | --- | --- | --- | --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: "
                 "| --: |")
    for r in record["table"]:
        step_ms = (r["step_s_median"] or 0.0) * 1e3
        replayed = f"{r['graph_steps']} / {r['steps']}" if r.get("graph_steps") is not None else "-"
        busy = f"{r['device_share']:.1%}" if r.get("device_share") is not None else "-"
        idle = f"{r['device_idle_s_median'] * 1e6:,.0f}" if r.get("device_idle_s_median") is not None else "-"
        in_all = f"{r['prefill_tok_s_in_all']:,.0f}" if r.get("prefill_tok_s_in_all") is not None else "-"
        lines.append(f"| {r['concurrency']} | {on_off(r['gpu_sampling'])} | "
                     f"{on_off(r.get('gpu_graphs'))} | {on_off(r.get('gpu_overlap_launches'))} | "
                     f"{on_off(r.get('gpu_attention_timing'))} | "
                     f"{r.get('gpu_norm_fusion') or '-'} | "
                     f"{r['tokens_per_s']:,.0f} | "
                     f"{r['prefill_tok_s']:,.0f} | {in_all} | {r['decode_tok_s_per_sequence']:,.0f} | {step_ms:.2f} | "
                     f"{replayed} | "
                     f"{r['forward_share']:.1%} | {r['sample_share']:.1%} | {r['other_share']:.1%} | "
                     f"{busy} | {idle} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", type=Path, default=ROOT / "build-cuda/app/kvscope-cli")
    ap.add_argument("--kernel-bench", type=Path, help="gpu_kernel_bench binary (skipped when not given)")
    ap.add_argument("--kernel-json", type=Path,
                    help="instead of running it, a gpu_kernel_bench record made on the same machine in the same session")
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu", "auto"])
    ap.add_argument("--model", type=Path, help="the model (default: kvscope-cli's default model)")
    ap.add_argument("--concurrency", default="1,16,64,256", help="comma-separated sequence counts")
    ap.add_argument("--compare-sampling-at", type=int, default=64,
                    help="the concurrency also run with --no-gpu-sampling (0: none)")
    ap.add_argument("--compare-graphs-at", default="1,64",
                    help="comma-separated concurrencies also run with --no-gpu-graphs (empty: none)")
    ap.add_argument("--compare-overlap-at", default="1,64",
                    help="comma-separated concurrencies also run with --no-gpu-overlap (empty: none)")
    ap.add_argument("--compare-attention-timing-at", default="1,64",
                    help="comma-separated concurrencies also run with --no-gpu-attention-timing (empty: none)")
    ap.add_argument("--compare-norm-fusion-at", default="1,16,64",
                    help="comma-separated concurrencies also run with --gpu-norm-fusion on and off (empty: none)")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gpu-matmul", choices=["f32", "tensor_cores"],
                    help="the engine setting gpu_matmul for every run (default: the engine's, f32)")
    ap.add_argument("--engine-option", action="append", default=[],
                    help="passed to every bench, e.g. --engine-option=--gpu-memory-percent=20 (repeatable)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny runs (concurrency 1,2; 8 + 2 tokens; 1 repeat; comparison at 2): checks the script")
    ap.add_argument("--out", type=Path, help="write the record here (default: stdout)")
    args = ap.parse_args()
    if args.quick:
        args.concurrency, args.compare_sampling_at, args.compare_graphs_at = "1,2", 2, "1"
        args.compare_overlap_at = args.compare_attention_timing_at = args.compare_norm_fusion_at = "1"
        args.prompt_tokens, args.gen_tokens, args.repeats = 8, 2, 1
    if not args.cli.exists():
        sys.exit(f"bench_gpu: no kvscope-cli at {args.cli} (build it, or pass --cli)")
    concurrencies = [int(c) for c in args.concurrency.split(",") if c.strip()]

    record = {"bench": "bench_gpu", "backend": args.backend, "prompt_tokens": args.prompt_tokens,
              "gen_tokens": args.gen_tokens, "repeats": args.repeats, "engine_options": args.engine_option}
    kernels = None
    if args.kernel_bench:
        sys.stderr.write("bench_gpu: gpu_kernel_bench...\n")
        kernels = run_json([str(args.kernel_bench)], "gpu_kernel_bench")
    elif args.kernel_json:
        kernels = json.loads(args.kernel_json.read_text())
        record["kernel_json"] = str(args.kernel_json)
    if kernels is not None:
        record["gpu_kernel_bench_device"] = kernels.get("device")
        record["kernels"] = kernel_summary(kernels)
    runs = [end_to_end(args, c, True) for c in concurrencies]
    if args.compare_sampling_at > 0:
        runs.append(end_to_end(args, args.compare_sampling_at, False))
    for c in [int(c) for c in args.compare_graphs_at.split(",") if c.strip()]:
        runs.append(end_to_end(args, c, True, gpu_graphs=False))
    for c in [int(c) for c in args.compare_overlap_at.split(",") if c.strip()]:
        runs.append(end_to_end(args, c, True, gpu_overlap=False))
    for c in [int(c) for c in args.compare_attention_timing_at.split(",") if c.strip()]:
        runs.append(end_to_end(args, c, True, gpu_attention_timing=False))
    for c in [int(c) for c in args.compare_norm_fusion_at.split(",") if c.strip()]:
        runs.append(end_to_end(args, c, True, gpu_norm_fusion="on"))
        runs.append(end_to_end(args, c, True, gpu_norm_fusion="off"))
    record["device"] = runs[0]["device"]
    # The math the runs report, not the option asked for; every run must report the same (below).
    record["gpu_matmul"] = runs[0].get("gpu_matmul")
    record["host_cpu"] = runs[0]["cpu"]
    record["table"] = [row_of(r) for r in runs]
    record["end_to_end"] = runs
    for r in runs:
        if r["backend"] != runs[0]["backend"] or r["device"] != runs[0]["device"]:
            sys.exit("bench_gpu: the runs did not all run on the same backend and device")
        if r.get("gpu_matmul") != record["gpu_matmul"]:
            sys.exit("bench_gpu: the runs did not all use the same GPU matmul")
    sys.stderr.write(markdown(record) + "\n")
    text = json.dumps(record, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
