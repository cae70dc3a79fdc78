#!/usr/bin/env python3
"""Record llama.cpp's logits for the tiny random model of each family.

kvscope's tests/engine/runtime/model_family_test.cpp compares against the
JSON this writes (tests/data/model_family_references.json): for every case
of tests/support/tiny_families.cpp (llama, qwen2, qwen3, phi3, llama31 with
rope_freqs), the FNV-1a 64 of the GGUF file and llama.cpp's logits at every
position of one teacher-forced prefill, for every ID_STEP-th token id (an
error anywhere in the forward pass shows in every logit; the subset keeps the
file small).

Development only; llama-cpp-python is not a dependency of kvscope:

    python3 -m venv /opt/refenv && /opt/refenv/bin/pip install llama-cpp-python
    cmake --build build --target write_tiny_families
    /opt/refenv/bin/python scripts/dev/record_family_references.py --writer build/tests/write_tiny_families

llama.cpp runs with an f32 KV cache and no flash attention, so that the
comparison is of the two forward passes (the weights are f32 too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "data", "model_family_references.json")


ID_STEP = 5


def tokens() -> list[int]:
    # Must equal tiny_family_tokens() in tests/support/tiny_families.cpp.
    return [(i * 37 + 11) % 250 for i in range(40)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writer", required=True, help="the write_tiny_families executable")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import llama_cpp  # the reference: imported here so --help works without it
    import numpy as np

    ids = tokens()
    out = {
        "source": "scripts/dev/record_family_references.py",
        "llama_cpp_python": llama_cpp.__version__,
        "tokens": ids,
        "id_step": ID_STEP,
        "cases": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        listing = subprocess.run([args.writer, tmp], check=True, capture_output=True, text=True).stdout
        for line in listing.splitlines():
            name, fnv = line.split()
            llm = llama_cpp.Llama(
                model_path=os.path.join(tmp, name + ".gguf"),
                n_ctx=64, n_batch=64, n_threads=args.threads, logits_all=True,
                type_k=0, type_v=0,  # GGML_TYPE_F32
                flash_attn=False, verbose=False)
            llm.eval(ids)
            scores = np.array(llm.scores[: len(ids)], dtype=np.float64)
            out["cases"][name] = {
                "fnv1a64": fnv,
                "vocab": int(scores.shape[1]),
                "logits": [[float(f"{x:.7g}") for x in row[::ID_STEP]] for row in scores],
            }
            print(f"{name}: {scores.shape[0]} positions x {scores.shape[1]}", file=sys.stderr)
            del llm
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
