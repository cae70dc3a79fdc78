#!/usr/bin/env python3
"""The OpenAI-compatible server's throughput and time to first token at 1, 16
and 64 concurrent streaming clients, beside `kvscope-cli bench` (the engine
in-process, one sequence) on the same model and threads.

  python3 scripts/dev/bench_server.py --threads 2 --out docs/benchmarks/$(date +%F)_smollm2_cpu2t_server.json

Starts `kvscope-cli serve --port 0`, then for each concurrency N runs N
clients at once, each streaming one /v1/completions request: its own 128
random prompt token ids (no two share a first token, so no prefix-cache hit,
as `bench` gives every run a fresh prompt), 128 generated tokens (greedy, EOS
ignored). Per level: wall time, generated tokens per second over the wall
time (all clients), and each client's time to first token (first streamed
chunk), median and max. `kvscope-cli bench` with the same prompt and reply
lengths gives the in-process single-sequence figures: its time to first
token (128 / prefill tok/s) and end-to-end tok/s (128 tokens over that time
plus 127 decode steps) are what the server's N=1 row is compared with.
`bench` has no concurrency option, so at 16 and 64 clients the record holds
the server's figures alone. The clients run on the same machine, so with few
cores they take CPU time from the engine; the record names the CPU and the
load average before and after. Standard library only; a development tool
that nothing in the project depends on.
"""
import argparse
import http.client
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def start_server(cli, threads, max_connections):
    proc = subprocess.Popen([cli, "serve", "--port", "0", "--threads", str(threads), "--max-connections",
                             str(max_connections)], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"at http://127\.0\.0\.1:(\d+)/v1 as model \"([^\"]+)\"", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, int(m.group(1)), m.group(2)
    proc.wait()
    sys.exit("kvscope-cli serve did not start")


def stream_one(port, body, out):
    """One streaming request; out gets (time to first chunk, end time, completion tokens)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    reply = conn.getresponse()
    if reply.status != 200:
        out.update(error=f"HTTP {reply.status}: {reply.read()[:300]!r}")
        return
    first, usage, buffer = None, None, b""
    while True:
        piece = reply.read1(65536) if hasattr(reply, "read1") else reply.read(1)
        if not piece:
            break
        buffer += piece
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            data = event[len(b"data: "):]
            if data == b"[DONE]":
                continue
            chunk = json.loads(data)
            if chunk.get("choices") and first is None:
                first = time.perf_counter() - start
            if chunk.get("usage"):
                usage = chunk["usage"]
    out.update(ttft=first, end=time.perf_counter(), completion_tokens=usage["completion_tokens"] if usage else 0)
    conn.close()


def run_level(port, model, clients, prompt_tokens, gen_tokens, level_seed):
    rng = random.Random(level_seed)
    firsts = rng.sample(range(1000, 40000), clients)  # distinct first tokens: no prefix-cache hit
    bodies = [{"model": model, "prompt": [first] + [rng.randrange(1000, 40000) for _ in range(prompt_tokens - 1)],
               "max_tokens": gen_tokens, "temperature": 0, "ignore_eos": True, "stream": True,
               "stream_options": {"include_usage": True}} for first in firsts]
    results = [dict() for _ in range(clients)]
    threads = [threading.Thread(target=stream_one, args=(port, b, r)) for b, r in zip(bodies, results)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        sys.exit(f"{len(errors)} of {clients} clients failed: {errors[0]}")
    wall = max(r["end"] for r in results) - start
    tokens = sum(r["completion_tokens"] for r in results)
    ttfts = [r["ttft"] for r in results]
    return {"clients": clients, "wall_s": wall, "completion_tokens": tokens, "tokens_per_s": tokens / wall,
            "ttft_median_s": statistics.median(ttfts), "ttft_max_s": max(ttfts), "ttft_min_s": min(ttfts)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=str(ROOT / "build/app/kvscope-cli"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--levels", default="1,16,64", help="concurrent clients, comma-separated")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--out", help="also write the JSON to this file")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    loadavg_before = os.getloadavg()

    print("kvscope-cli bench (in-process, one sequence)", file=sys.stderr, flush=True)
    bench = json.loads(subprocess.run(
        [args.cli, "bench", "--threads", str(args.threads), "--prompt-tokens", str(args.prompt_tokens),
         "--gen-tokens", str(args.gen_tokens), "--repeats", "3"], check=True, capture_output=True, text=True).stdout)
    bench_ttft = args.prompt_tokens / bench["prefill_tok_s_median"]
    bench_total = bench_ttft + (args.gen_tokens - 1) / bench["decode_tok_s_median"]
    baseline = {"ttft_s": bench_ttft, "tokens_per_s": args.gen_tokens / bench_total,
                "prefill_tok_s": bench["prefill_tok_s_median"], "decode_tok_s": bench["decode_tok_s_median"],
                "record": bench}

    proc, port, model = start_server(args.cli, args.threads, max(levels) + 16)
    try:
        run_level(port, model, 1, args.prompt_tokens, 8, level_seed=1)  # warm-up
        rows = []
        for i, n in enumerate(levels):
            print(f"server, {n} concurrent clients", file=sys.stderr, flush=True)
            rows.append(run_level(port, model, n, args.prompt_tokens, args.gen_tokens, level_seed=100 + i))
    finally:
        proc.send_signal(2)
        proc.wait(timeout=60)
    one = next((r for r in rows if r["clients"] == 1), None)
    record = {
        "what": "kvscope-cli serve: streaming /v1/completions clients at once vs kvscope-cli bench (one sequence)",
        "date": time.strftime("%Y-%m-%d"),
        "model": model,
        "cpu": {"model_name": cpu_name(), "num_cpus": os.cpu_count(), "threads": args.threads,
                "isa": bench.get("cpu", {}).get("isa_detail")},
        "loadavg_before": loadavg_before,
        "loadavg_after": os.getloadavg(),
        "prompt_tokens": args.prompt_tokens,
        "gen_tokens": args.gen_tokens,
        "bench_baseline": baseline,
        "server": rows,
        "server_vs_bench_at_1_client": None if one is None else {
            "ttft_ratio": one["ttft_median_s"] / bench_ttft,
            "tokens_per_s_ratio": one["tokens_per_s"] / baseline["tokens_per_s"]},
        "notes": [
            "kvscope-cli bench runs one sequence: at 16 and 64 clients there is no in-process figure to compare",
            "the clients (Python threads parsing every chunk) run on the same CPUs as the server's engine threads, "
            "so on a machine with few cores the server's rows also pay for the clients",
        ],
    }
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
