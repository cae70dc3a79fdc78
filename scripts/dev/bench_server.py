#!/usr/bin/env python3
"""Throughput and time to first token at 1, 16 and 64 concurrent clients for
three engines on the same model, threads and machine:

  server  `kvscope-cli serve`: N streaming /v1/completions clients at once
  bench   `kvscope-cli bench --concurrency N`: the same engine in-process, N
          sequences submitted together (no HTTP, no JSON, no client threads)
  llama   llama.cpp's server as llama-cpp-python ships it (`llama_cpp.server`),
          N streaming clients at once

  python3 scripts/dev/bench_server.py --threads 2 \\
      --out docs/benchmarks/$(date +%F)_smollm2_cpu2t_server_vs_llamacpp.json

server vs bench at the same N compares the served engine with the same engine
in-process (bench runs once per round in a fresh process, so it is the noisier
and colder of the two: not a measure of the server's overhead); server vs
llama is the comparison with llama.cpp. Every request: --prompt-tokens prompt tokens, greedy,
EOS ignored, --gen-tokens generated (--gen-tokens-at-64 at 64 clients and more,
to keep the run bounded; llama.cpp's server answers one request at a time). The
servers get random prompt token ids, no two sharing a first token across the
whole run (so neither kvscope's prefix cache nor llama.cpp's reuse of the
previous prompt's KV can serve any); llama_cpp.server takes only text, so it
gets the text of the same ids (/extras/detokenize), and the record gives how
many tokens that text is to llama.cpp (/extras/tokenize/count). bench builds its
own prompts of the same length the same way (distinct first tokens). The
machine is shared: the engines alternate within each round (the order rotates
per round) and the record quotes medians over --rounds rounds, with the CPU
and the load average before and after. The clients (Python threads) run on
the same CPUs as the engines, so the two servers' rows pay for them alike.
Standard library only, besides the llama-cpp-python environment it starts; a
development tool that nothing in the project depends on.
"""
import argparse
import http.client
import json
import os
import platform
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OMP_WAIT_POLICY = "PASSIVE"  # for llama_cpp.server: see start_llama
DEFAULT_MODEL = Path.home() / ".local/share/kvscope/models/SmolLM2-135M-Instruct.Q4_1.gguf"


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def kvscope_commit():
    """HEAD, and whether the working tree the binary may have been built from differed from it."""
    def git(*a):
        return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD")
    return head + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def p90(values):
    """Nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]


def start_kvscope(cli, model, threads, max_connections):
    proc = subprocess.Popen([cli, "serve", "--model", str(model), "--port", "0", "--threads", str(threads),
                             "--max-connections", str(max_connections)], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"at http://127\.0\.0\.1:(\d+)/v1 as model \"([^\"]+)\"", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, int(m.group(1)), m.group(2)
    proc.wait()
    sys.exit("kvscope-cli serve did not start")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body, allow_error=False):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    conn.close()
    if reply.status != 200:
        if allow_error:
            return None
        sys.exit(f"POST {path}: HTTP {reply.status}: {data[:300]!r}")
    return json.loads(data)


def start_llama(python, model, threads, n_ctx):
    port = free_port()
    # interrupt_requests defaults to True: a new request would cut off the one
    # streaming, so N clients at once would not all be answered in full.
    cmd = [python, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_ctx", str(n_ctx),
           "--interrupt_requests", "False", "--verbose", "False", "--model_alias", "llama"]
    # llama.cpp's OpenMP threads spin at their barriers by default; on a
    # machine whose few CPUs other processes also use, a spinning thread holds
    # a CPU its partner needs (measured here: ~4 tok/s spinning, ~20 passive).
    env = dict(os.environ, OMP_WAIT_POLICY=OMP_WAIT_POLICY)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    for _ in range(240):
        if proc.poll() is not None:
            sys.exit(f"llama_cpp.server exited with {proc.returncode}: {' '.join(cmd)}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/v1/models")
            if conn.getresponse().status == 200:
                return proc, port, cmd
        except OSError:
            pass
        time.sleep(0.5)
    proc.kill()
    sys.exit("llama_cpp.server did not start within 120 s")


def stream_one(port, body, out):
    """One streaming request; out gets time to first chunk, end time, completion tokens."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    reply = conn.getresponse()
    if reply.status != 200:
        out.update(error=f"HTTP {reply.status}: {reply.read()[:300]!r}")
        return
    first, usage, finish, chunks, buffer = None, None, None, 0, b""
    while True:
        piece = reply.read1(65536)
        if not piece:
            break
        buffer += piece.replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            if not event.startswith(b"data: "):
                continue
            data = event[len(b"data: "):]
            if data == b"[DONE]":
                continue
            chunk = json.loads(data)
            if chunk.get("choices"):
                chunks += 1
                if first is None:
                    first = time.perf_counter() - start
                finish = chunk["choices"][0].get("finish_reason") or finish
            if chunk.get("usage"):
                usage = chunk["usage"]
    # llama_cpp.server streams no usage; with min_tokens = max_tokens its
    # "length" finish means max_tokens were generated.
    if usage:
        tokens = usage["completion_tokens"]
    elif finish == "length":
        tokens = body["max_tokens"]
    else:
        tokens = chunks
    out.update(ttft=first, end=time.perf_counter(), completion_tokens=tokens, finish=finish)
    conn.close()


def run_clients(port, bodies):
    results = [dict() for _ in bodies]
    threads = [threading.Thread(target=stream_one, args=(port, b, r)) for b, r in zip(bodies, results)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        sys.exit(f"{len(errors)} of {len(bodies)} clients failed: {errors[0]}")
    wall = max(r["end"] for r in results) - start
    tokens = sum(r["completion_tokens"] for r in results)
    ttfts = [r["ttft"] for r in results]
    return {"wall_s": wall, "completion_tokens": tokens, "tokens_per_s": tokens / wall,
            "ttft_median_s": statistics.median(ttfts), "ttft_p90_s": p90(ttfts), "ttft_max_s": max(ttfts),
            "finish_reasons": sorted({str(r["finish"]) for r in results})}


def run_bench(cli, model, threads, clients, prompt_tokens, gen_tokens):
    record = json.loads(subprocess.run(
        [cli, "bench", "--model", str(model), "--threads", str(threads), "--prompt-tokens", str(prompt_tokens),
         "--gen-tokens", str(gen_tokens), "--repeats", "1", "--concurrency", str(clients)],
        check=True, capture_output=True, text=True).stdout)
    run = record["runs"][0]
    return {"wall_s": run.get("wall_s", run.get("total_s")),
            "completion_tokens": run["generated_tokens"], "tokens_per_s": record["tokens_per_s_median"],
            "ttft_median_s": record["time_to_first_token_s_median"],
            "ttft_p90_s": record["time_to_first_token_s_p90"], "isa": record["cpu"]["isa_detail"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=str(ROOT / "build/app/kvscope-cli"))
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--llama-python", default="/opt/llamaenv/bin/python",
                    help="a Python with llama-cpp-python[server]; '' leaves llama.cpp out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--levels", default="1,16,64", help="concurrent clients, comma-separated")
    ap.add_argument("--rounds", type=int, default=3, help="each engine runs each level this many times, alternating")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens-at-64", type=int, default=32, help="generated tokens at 64 clients and more")
    ap.add_argument("--out", help="also write the JSON to this file")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    gen_for = {n: (args.gen_tokens_at_64 if n >= 64 else args.gen_tokens) for n in levels}
    loadavg_before = os.getloadavg()

    rng = random.Random(20261123)
    total = 2 + 3 * args.rounds * sum(levels)  # a fresh prompt per request, whichever engine
    firsts = iter(rng.sample(range(1000, 40000), total))  # distinct first tokens over the whole run

    def prompt():
        return [next(firsts)] + [rng.randrange(1000, 40000) for _ in range(args.prompt_tokens - 1)]

    def make_record(rounds_done):
        def summary(engine, n):
            runs = rows[engine][n]
            return {"tokens_per_s_median": statistics.median(r["tokens_per_s"] for r in runs),
                    "ttft_median_s": statistics.median(r["ttft_median_s"] for r in runs),
                    "ttft_p90_s": statistics.median(r["ttft_p90_s"] for r in runs)}

        table = []
        for n in levels:
            entry = {"clients": n, "gen_tokens": gen_for[n]}
            for engine in engines:
                entry[engine] = summary(engine, n)
            s, b = entry["server"], entry["bench"]
            entry["server_over_bench"] = {"tokens_per_s_ratio": s["tokens_per_s_median"] / b["tokens_per_s_median"],
                                          "ttft_median_ratio": s["ttft_median_s"] / b["ttft_median_s"]}
            if llama:
                entry["server_over_llama"] = {
                    "tokens_per_s_ratio": s["tokens_per_s_median"] / entry["llama"]["tokens_per_s_median"],
                    "ttft_median_ratio": s["ttft_median_s"] / entry["llama"]["ttft_median_s"]}
            table.append(entry)
        llama_version = None
        if llama:
            llama_version = subprocess.run([args.llama_python, "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                                           capture_output=True, text=True).stdout.strip()
        record = {
            "what": "throughput and time to first token at N concurrent clients: kvscope-cli serve (streaming "
                    "/v1/completions), kvscope-cli bench --concurrency N (in-process), llama_cpp.server (streaming)",
            "date": time.strftime("%Y-%m-%d"),
            "kvscope_commit": kvscope_commit(),
        "model": kv_model,
            "model_path": str(args.model),
            "cpu": {"model_name": cpu_name(), "num_cpus": os.cpu_count(), "threads": args.threads,
                    "isa": rows["bench"][levels[0]][0]["isa"]},
            "loadavg_before": loadavg_before,
            "loadavg_after": os.getloadavg(),
            "rounds": rounds_done,
            "prompt_tokens": args.prompt_tokens,
            "gen_tokens": gen_for,
            "llama_cpp": None if not llama else {
                "llama_cpp_python_version": llama_version,
                "command": llama["cmd"],
                "n_ctx": llama["n_ctx"],
                "environment": {"OMP_WAIT_POLICY": OMP_WAIT_POLICY},
                "why_passive": "llama.cpp's OpenMP threads spin at barriers by default; on these 2 shared CPUs that "
                               "measured ~4 generated tok/s against ~20 with passive waiting, so the comparison uses "
                               "passive waiting (kvscope's threads block when idle too)",
                "concurrency": "one request at a time: llama_cpp.server 0.3.x has one llama.cpp context behind a lock "
                               "and no parallel-slot setting, so N clients queue; each waits for those before it",
                "prompt": "text of the same token ids (/extras/detokenize), EOS held off by min_tokens = max_tokens",
                "prompt_tokens_as_llama_tokenizes": None if not llama_prompt_tokens else {
                    "median": statistics.median(llama_prompt_tokens), "min": min(llama_prompt_tokens),
                    "max": max(llama_prompt_tokens)},
            },
            "medians": table,
            "runs": {e: {str(n): rows[e][n] for n in levels} for e in engines},
            "notes": [
                "medians over rounds; each round runs every engine at every level, engines alternating",
                "tokens_per_s: generated tokens of all clients over the wall time from the first request sent to the "
                "last token received (bench: from submitting the N sequences to the engine going idle)",
                "ttft: per request, from sending it to its first streamed chunk (bench: submit to first token); "
                "ttft_median_s / ttft_p90_s are medians over rounds of each round's median / p90",
                f"at 64 clients and more each request generates {args.gen_tokens_at_64} tokens, not {args.gen_tokens}, "
                "to keep the run bounded",
                "bench's prompts are its own (the benchmark paragraph, distinct first tokens), of the same length",
                "the clients (Python threads parsing every chunk) share the CPUs with the servers",
            ],
        }
        return record

    kv_proc, kv_port, kv_model = start_kvscope(args.cli, args.model, args.threads, max(levels) + 16)
    llama = None
    try:
        if args.llama_python:
            # Requests are served one at a time, so the context holds one request.
            n_ctx = max(512, args.prompt_tokens + args.gen_tokens + 64)
            llama_proc, llama_port, llama_cmd = start_llama(args.llama_python, args.model, args.threads, n_ctx)
            llama = {"proc": llama_proc, "port": llama_port, "cmd": llama_cmd, "n_ctx": n_ctx}

        def kv_bodies(prompts, gen):
            return [{"model": kv_model, "prompt": p, "max_tokens": gen, "temperature": 0, "ignore_eos": True,
                     "stream": True, "stream_options": {"include_usage": True}} for p in prompts]

        llama_prompt_tokens = []

        def llama_bodies(prompts, gen):
            bodies = []
            for p in prompts:
                # Some runs of random ids are not whole UTF-8 characters, which
                # /extras/detokenize refuses; such a prompt keeps its first
                # token and draws the rest again.
                text = None
                while text is None:
                    text = post(llama["port"], "/extras/detokenize", {"tokens": p}, allow_error=True)
                    if text is None:
                        p = p[:1] + [rng.randrange(1000, 40000) for _ in range(len(p) - 1)]
                text = text["text"]
                llama_prompt_tokens.append(post(llama["port"], "/extras/tokenize/count", {"input": text})["count"])
                bodies.append({"model": "llama", "prompt": text, "max_tokens": gen, "min_tokens": gen,
                               "temperature": 0, "stream": True})
            return bodies

        run_clients(kv_port, kv_bodies([prompt()], 8))  # warm-up
        if llama:
            run_clients(llama["port"], llama_bodies([prompt()], 8))
        engines = ["server", "bench"] + (["llama"] if llama else [])
        rows = {e: {n: [] for n in levels} for e in engines}
        for rnd in range(args.rounds):
            order = engines[rnd % len(engines):] + engines[:rnd % len(engines)]
            for n in levels:
                for engine in order:
                    print(f"round {rnd + 1}/{args.rounds}, {n} clients: {engine}", file=sys.stderr, flush=True)
                    prompts = [prompt() for _ in range(n)]
                    if engine == "server":
                        row = run_clients(kv_port, kv_bodies(prompts, gen_for[n]))
                    elif engine == "bench":
                        row = run_bench(args.cli, args.model, args.threads, n, args.prompt_tokens, gen_for[n])
                    else:
                        row = run_clients(llama["port"], llama_bodies(prompts, gen_for[n]))
                    row["loadavg_1min"] = os.getloadavg()[0]
                    print(f"  {row['tokens_per_s']:.1f} tok/s, ttft median {row['ttft_median_s']:.3f} s",
                          file=sys.stderr, flush=True)
                    rows[engine][n].append(row)
            if args.out:  # a record so far, should a later round not finish
                Path(args.out).write_text(json.dumps(make_record(rnd + 1), indent=2) + "\n")
    finally:
        kv_proc.send_signal(2)
        kv_proc.wait(timeout=60)
        if llama:
            llama["proc"].terminate()
            llama["proc"].wait(timeout=60)

    record = make_record(args.rounds)
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
