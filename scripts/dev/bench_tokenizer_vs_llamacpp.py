#!/usr/bin/env python3
"""Tokenizer speed, kvscope against llama.cpp, on the same machine and text.

  /opt/llamaenv/bin/python scripts/dev/bench_tokenizer_vs_llamacpp.py \\
      --bench build/tests/engine/tokenizer/tokenizer_bench --out docs/benchmarks/FILE.json

The text is the one tests/engine/tokenizer/tokenizer_bench.cpp builds: the
texts of tests/data/tokenizer_corpus.txt (many scripts, code, emoji,
whitespace runs, numbers), each followed by a newline, repeated until it is
at least 1 MiB. Both sides encode it whole, without special-token parsing and
without BOS, single-threaded:
  * kvscope: tokenizer_bench's Encode/<vocab> cases (Google Benchmark, the
    median of --repetitions runs), and its GemmaVocabLoad case for the time to
    load Gemma 3's 262k-token vocabulary from the model file;
  * llama.cpp: llama_tokenize() through llama-cpp-python's C bindings on a
    vocab-only model (one call per run, buffer sized up front), the median of
    --repetitions runs; and the time Llama(vocab_only=True) takes on Gemma 3.
Each side's token count is recorded; they must agree (the same ids are
checked by tests/engine/tokenizer/tokenizer_corpus_test.cpp).

llama-cpp-python lives outside the project (see record_tokenizer_corpus.py).
Prints the JSON record; --out also writes it. The record names the CPU.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "scripts" / "dev"))
import fetch_test_data  # noqa: E402
from bench_cpu import cpu_model_name  # noqa: E402
from record_tokenizer_corpus import CORPUS, read_corpus  # noqa: E402

VOCABS = ["gpt-2", "llama-bpe", "qwen2", "llama-spm", "gemma-4", "gemma-3"]
GEMMA3 = Path(os.environ.get("KVSCOPE_MODEL_DIR", Path.home() / ".local/share/kvscope/models")) / \
    "gemma-3-270m-q4_k_m.gguf"


def bench_text() -> bytes:
    one = "".join(t + "\n" for t in read_corpus(CORPUS)).encode("utf-8")
    text = b""
    while len(text) < (1 << 20):
        text += one
    return text


def vocab_path(name: str) -> Path:
    return GEMMA3 if name == "gemma-3" else fetch_test_data.tokenizer_dir() / f"ggml-vocab-{name}.gguf"


def llama_cpp_side(text: bytes, repetitions: int) -> dict:
    import llama_cpp
    out = {"llama_cpp_python": llama_cpp.__version__}
    t0 = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(GEMMA3), vocab_only=True, verbose=False)
    out["gemma3_vocab_load_ms"] = (time.perf_counter() - t0) * 1e3
    del llm
    encode = {}
    for name in VOCABS:
        llm = llama_cpp.Llama(model_path=str(vocab_path(name)), vocab_only=True, verbose=False)
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        buf = (llama_cpp.llama_token * (len(text) + 16))()
        times, n = [], 0
        for _ in range(repetitions + 1):  # the first run warms up
            t0 = time.perf_counter()
            n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, len(buf), False, False)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times[1:])
        encode[name] = {"tokens": n, "median_s": med, "mb_per_s": len(text) / med / 1e6}
        del llm
    out["encode"] = encode
    return out


def kvscope_side(bench: Path, repetitions: int) -> dict:
    cmd = [str(bench), f"--benchmark_repetitions={repetitions}", "--benchmark_report_aggregates_only=true",
           "--benchmark_format=json"]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    out = {"encode": {}, "context": result.get("context", {})}
    for b in result["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        if name.startswith("Encode/"):
            vocab = name.split("/", 1)[1]
            # Wall time on both sides (Google Benchmark's bytes_per_second uses CPU time).
            median_s = b["real_time"] / 1e3  # the cases report milliseconds
            out["encode"][vocab] = {"tokens": int(b["tokens"]), "median_s": median_s,
                                    "mb_per_s": b["text_bytes"] / median_s / 1e6}
        elif name == "GemmaVocabLoad/phase:0":
            out["gemma3_vocab_load_ms"] = b["real_time"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", type=Path, default=ROOT / "build" / "tests" / "engine" / "tokenizer" / "tokenizer_bench")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    text = bench_text()
    record = {
        "what": "tokenizer encode throughput and Gemma 3 vocabulary load, kvscope vs llama.cpp, one thread",
        "how": "scripts/dev/bench_tokenizer_vs_llamacpp.py",
        "date": time.strftime("%Y-%m-%d"),
        "cpu": cpu_model_name(),
        "num_cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "text_bytes": len(text),
        "repetitions": args.repetitions,
        "kvscope": kvscope_side(args.bench, args.repetitions),
        "llama_cpp": llama_cpp_side(text, args.repetitions),
    }
    record["load_average_after"] = os.getloadavg()
    ratio = {}
    for name in VOCABS:
        k, l = record["kvscope"]["encode"].get(name), record["llama_cpp"]["encode"].get(name)
        if k and l:
            ratio[name] = {"kvscope_over_llama_cpp": k["mb_per_s"] / l["mb_per_s"],
                           "same_token_count": k["tokens"] == l["tokens"]}
    record["encode_speed_ratio"] = ratio
    text_out = json.dumps(record, indent=1)
    print(text_out)
    if args.out:
        args.out.write_text(text_out + "\n")


if __name__ == "__main__":
    main()
