#!/usr/bin/env python3
"""Record llama.cpp's perplexity of SmolLM2-135M-Instruct (Q4_1) on a text.

kvscope's `kvscope-cli perplexity` follows llama.cpp's perplexity procedure;
tests/app/cli_model_test.cpp (CliPerplexity) holds its figure against the
JSON this script writes (tests/data/smollm2_perplexity_reference.json).

The procedure (llama.cpp's tools/perplexity): the text is tokenized once,
BOS first when the vocabulary asks for it (SmolLM2 does not); it is cut into
windows of WINDOW tokens (a last part that does not fill one is left out),
each window's first token replaced by BOS where there is one; each window is
evaluated from an empty KV cache, and only the tokens at positions
WINDOW / 2 + 1 .. WINDOW - 1 are scored, each by the logits of the row before
it. PPL = exp(mean of -log p(token)), computed here in float64 from the raw
logits.

Development-only: llama-cpp-python is not a dependency of kvscope. Install it
outside the project:

    python3 -m venv /opt/refenv && /opt/refenv/bin/pip install llama-cpp-python gguf numpy
    /opt/refenv/bin/python scripts/dev/record_perplexity_reference.py

Options: --model PATH, --text PATH, --window N, --threads N, --out PATH.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_MODEL = os.path.expanduser("~/.local/share/kvscope/models/SmolLM2-135M-Instruct.Q4_1.gguf")
DEFAULT_TEXT = os.path.join(REPO_ROOT, "tests", "data", "perplexity_text.txt")
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "data", "smollm2_perplexity_reference.json")


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--text", default=DEFAULT_TEXT)
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()

    import llama_cpp

    llm = llama_cpp.Llama(model_path=args.model, n_ctx=args.window, n_batch=args.window, n_ubatch=args.window,
                          n_threads=args.threads, logits_all=True, verbose=False)
    with open(args.text, "rb") as f:
        text = f.read()
    add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true"
    tokens = llm.tokenize(text, add_bos=add_bos, special=False)
    bos = llm.token_bos()
    window = args.window
    first = window // 2
    num_windows = len(tokens) // window
    nll_sum = 0.0
    count = 0
    window_ppl = []
    for w in range(num_windows):
        chunk = list(tokens[w * window:(w + 1) * window])
        if add_bos:
            chunk[0] = bos
        llm.reset()
        llm.eval(chunk)
        logits = np.array(llm.scores[:window], dtype=np.float64)  # [window][vocab], row i predicts token i + 1
        rows = logits[first:window - 1]
        targets = np.array(chunk[first + 1:window])
        peak = rows.max(axis=1)
        lse = np.log(np.exp(rows - peak[:, None]).sum(axis=1)) + peak
        nll = lse - rows[np.arange(len(targets)), targets]
        nll_sum += float(nll.sum())
        count += len(targets)
        window_ppl.append(float(np.exp(nll.mean())))
    ppl = float(np.exp(nll_sum / count))

    out = {
        "what": "llama.cpp's perplexity procedure on tests/data/perplexity_text.txt (see the script's docstring)",
        "model_file": os.path.basename(args.model),
        "model_sha256": sha256(args.model),
        "text_file": os.path.relpath(args.text, REPO_ROOT),
        "text_sha256": sha256(args.text),
        "llama_cpp_python": llama_cpp.__version__,
        "cpu": cpu_name(),
        "threads": args.threads,
        "kv_cache_type": "f16 (llama.cpp's default)",
        "window": window,
        "num_tokens": len(tokens),
        "num_windows": num_windows,
        "num_scored_tokens": count,
        "ppl": ppl,
        "window_ppl": window_ppl,
        "token_ids": list(tokens),
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"PPL = {ppl:.4f} over {count} tokens in {num_windows} windows of {window} -> {args.out}")


if __name__ == "__main__":
    main()
