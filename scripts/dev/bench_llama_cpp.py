#!/usr/bin/env python3
"""Benchmark llama.cpp (through llama-cpp-python) on the kvscope default model.

One sequence, CPU only:
  * prefill: one llm.eval() of a fixed 128-token prompt (n_batch = n_ubatch =
    512, so it is a single batch);
  * decode: 128 greedy tokens, each fed back with llm.eval([tok]); only the
    eval calls are timed (argmax and logits copies are outside the timer).
A warmup (one prefill + 8 decode steps) runs once before the timed runs.
llama.cpp's own counters (llama_perf_context: t_p_eval_ms / t_eval_ms) are
reported next to the Python-side wall times; the record's "cpu" names the
CPU and the SIMD path this llama.cpp build uses (bench_cpu.py).  With OpenMP
threads, another busy process on the same cores slows llama.cpp down by up to
30x, so the output also has the best run and the load averages; compare only
runs taken on an idle machine.

Development-only; llama-cpp-python lives outside the project:

    python3 -m venv /opt/refenv && /opt/refenv/bin/pip install llama-cpp-python gguf
    /opt/refenv/bin/python scripts/dev/bench_llama_cpp.py --threads 2 --repeats 5

(On machines whose CPU has AMX, see record_llama_reference.py for the
CMAKE_ARGS that build llama-cpp-python without it.)  Prints one JSON object on
stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from bench_cpu import cpu_record, llama_cpp_isa

DEFAULT_MODEL = os.path.expanduser(
    "~/.local/share/kvscope/models/SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPT_TOKENS = 128
GEN_TOKENS = 128

PROMPT_TEXT = (
    "The history of the lighthouse is closely tied to the history of seafaring. "
    "Long before electric lamps and rotating lenses, coastal communities lit fires "
    "on hilltops to warn sailors of dangerous rocks and to guide them toward safe "
    "harbors. The most famous ancient example was the Pharos of Alexandria, built "
    "in the third century BC on a small island at the entrance to the city's port. "
    "Contemporary writers described a tower so tall that its light could be seen "
    "from many miles out at sea, and for centuries it was counted among the wonders "
    "of the world. After the fall of Rome, the practice of maintaining lights "
    "declined in many places, but it never disappeared entirely."
)


def fixed_prompt_ids(llm) -> list[int]:
    ids = llm.tokenize(PROMPT_TEXT.encode("utf-8"), add_bos=False, special=False)
    while len(ids) < PROMPT_TOKENS:  # pad by repetition (only if the text is short)
        ids = ids + ids
    return ids[:PROMPT_TOKENS]


def last_logits(llm, llama_cpp) -> np.ndarray:
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))


def perf(llm, llama_cpp) -> dict | None:
    if not hasattr(llama_cpp, "llama_perf_context"):
        return None
    d = llama_cpp.llama_perf_context(llm.ctx)
    return {"t_p_eval_ms": d.t_p_eval_ms, "n_p_eval": d.n_p_eval,
            "t_eval_ms": d.t_eval_ms, "n_eval": d.n_eval}


def perf_reset(llm, llama_cpp) -> None:
    if hasattr(llama_cpp, "llama_perf_context_reset"):
        llama_cpp.llama_perf_context_reset(llm.ctx)


def one_run(llm, llama_cpp, ids: list[int], n_gen: int) -> dict:
    llm.reset()
    perf_reset(llm, llama_cpp)
    t0 = time.perf_counter()
    llm.eval(ids)
    t_prefill = time.perf_counter() - t0

    tok = int(np.argmax(last_logits(llm, llama_cpp)))
    t_decode = 0.0
    generated = [tok]
    for _ in range(n_gen):
        t0 = time.perf_counter()
        llm.eval([tok])
        t_decode += time.perf_counter() - t0
        tok = int(np.argmax(last_logits(llm, llama_cpp)))
        generated.append(tok)

    run = {
        "prefill_s": t_prefill,
        "prefill_tok_s": len(ids) / t_prefill,
        "decode_s": t_decode,
        "decode_tok_s": n_gen / t_decode,
    }
    p = perf(llm, llama_cpp)
    if p is not None:
        run["internal"] = p
        if p["t_p_eval_ms"] > 0:
            run["internal_prefill_tok_s"] = p["n_p_eval"] / (p["t_p_eval_ms"] / 1e3)
        if p["t_eval_ms"] > 0:
            run["internal_decode_tok_s"] = p["n_eval"] / (p["t_eval_ms"] / 1e3)
    run["first_tokens"] = generated[:8]
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description="llama.cpp prefill/decode speed")
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    import llama_cpp

    llm = llama_cpp.Llama(model_path=args.model, n_ctx=1024, n_batch=512, n_ubatch=512,
                          n_threads=args.threads, n_threads_batch=args.threads,
                          logits_all=False, seed=0, verbose=False)
    ids = fixed_prompt_ids(llm)
    assert len(ids) == PROMPT_TOKENS

    load_before = os.getloadavg()
    one_run(llm, llama_cpp, ids, 8)  # warmup (page in weights, allocate buffers)
    runs = [one_run(llm, llama_cpp, ids, GEN_TOKENS) for _ in range(args.repeats)]

    system_info = llama_cpp.llama_print_system_info().decode().strip()
    med = lambda k: statistics.median(r[k] for r in runs if k in r) if any(k in r for r in runs) else None
    out = {
        "engine": "llama.cpp",
        "version": llama_cpp.__version__,
        "model": os.path.basename(args.model),
        "cpu": cpu_record(args.threads, llama_cpp_isa(system_info)),
        "threads": args.threads,
        # llm.reset() before each run: llama.cpp recomputes the whole prompt
        # (Llama.eval has no prefix reuse), as kvscope's fresh prompts do.
        "prefill_prompts": "the same prompt each run, KV cleared by llm.reset()",
        "prompt_tokens": PROMPT_TOKENS,
        "gen_tokens": GEN_TOKENS,
        "repeats": args.repeats,
        "prefill_tok_s_median": med("prefill_tok_s"),
        "decode_tok_s_median": med("decode_tok_s"),
        "internal_prefill_tok_s_median": med("internal_prefill_tok_s"),
        "internal_decode_tok_s_median": med("internal_decode_tok_s"),
        # On a shared machine the best run is the closest to the uncontended speed.
        "prefill_tok_s_max": max(r["prefill_tok_s"] for r in runs),
        "decode_tok_s_max": max(r["decode_tok_s"] for r in runs),
        # 1/5/15-min load averages before and after; > threads means contention.
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "system_info": system_info,
        "runs": runs,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
