#!/usr/bin/env python3
"""Record the *exact* logits of the default model, for kvscope's reference test.

The model's weights are dequantised with the `gguf` package and run through a
plain float64 NumPy forward pass (no activation quantisation, f64 KV, exact
softmax): the arithmetic both kvscope and llama.cpp approximate. For every
prompt in tests/data/smollm2_llamacpp_reference.json it runs llama.cpp's own
sequence (prompt + its 32 greedy tokens, teacher-forced) and stores:

- `top2`: at EVERY generated position, the exact argmax id, the exact
  runner-up id and the exact top-two gap (logit of the first minus the
  second). llama.cpp's own argmax at a position is its next greedy token, so
  the test can count where each engine parts from the exact model, and weigh
  every disagreement by how close a call it was.
- `top5_exact`: at the steps where llama.cpp's top-5 was recorded, the exact
  logits of those five ids (to measure each engine's logit error).

  python3 -m venv /opt/refenv && /opt/refenv/bin/pip install gguf numpy
  /opt/refenv/bin/python scripts/dev/record_exact_reference.py

Takes a few minutes on two cores. Writes tests/data/smollm2_exact_reference.json,
one line per list so the file stays small and diffs stay readable. Logits and
gaps are rounded to 1e-4: far below the tenths of a logit the test resolves,
and far above float64's own error. Development tool only.
"""
import json
from pathlib import Path

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

ROOT = Path(__file__).resolve().parents[2]
MODEL = Path.home() / ".local/share/kvscope/models/SmolLM2-135M-Instruct.Q4_1.gguf"
DIGITS = 4


class ExactLlama:
    """Llama-architecture forward in float64 over dequantised GGUF weights."""

    def __init__(self, path):
        r = GGUFReader(str(path))
        self.w = {t.name: dequantize(t.data, t.tensor_type).astype(np.float64) for t in r.tensors}
        f = {k: v for k, v in r.fields.items()}

        def scalar(key):
            field = f[key]
            return field.parts[field.data[0]][0]

        self.layers = int(scalar("llama.block_count"))
        self.heads = int(scalar("llama.attention.head_count"))
        self.kv_heads = int(scalar("llama.attention.head_count_kv"))
        self.hidden = int(scalar("llama.embedding_length"))
        self.head_dim = self.hidden // self.heads
        self.eps = float(scalar("llama.attention.layer_norm_rms_epsilon"))
        self.base = float(scalar("llama.rope.freq_base"))
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])

    def rms(self, x, weight):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * weight

    def rope(self, x, pos):  # adjacent pairs: GGUF llama Q/K rows are permuted
        i = np.arange(self.head_dim // 2)
        theta = pos[:, None] * self.base ** (-2.0 * i / self.head_dim)
        c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
        return out

    def logits(self, tokens):
        T, hd, g = len(tokens), self.head_dim, self.heads // self.kv_heads
        pos = np.arange(T, dtype=np.float64)
        causal = np.triu(np.full((T, T), -np.inf), 1)
        x = self.w["token_embd.weight"][tokens]
        for l in range(self.layers):
            p = f"blk.{l}."
            h = self.rms(x, self.w[p + "attn_norm.weight"])
            q = self.rope((h @ self.w[p + "attn_q.weight"].T).reshape(T, self.heads, hd), pos)
            k = self.rope((h @ self.w[p + "attn_k.weight"].T).reshape(T, self.kv_heads, hd), pos)
            v = (h @ self.w[p + "attn_v.weight"].T).reshape(T, self.kv_heads, hd)
            out = np.empty((T, self.heads, hd))
            for head in range(self.heads):
                s = q[:, head, :] @ k[:, head // g, :].T / np.sqrt(hd) + causal
                s = np.exp(s - s.max(-1, keepdims=True))
                out[:, head, :] = (s / s.sum(-1, keepdims=True)) @ v[:, head // g, :]
            x = x + out.reshape(T, -1) @ self.w[p + "attn_output.weight"].T
            h = self.rms(x, self.w[p + "ffn_norm.weight"])
            gate, up = h @ self.w[p + "ffn_gate.weight"].T, h @ self.w[p + "ffn_up.weight"].T
            x = x + (gate / (1 + np.exp(-gate)) * up) @ self.w[p + "ffn_down.weight"].T
        return self.rms(x, self.w["output_norm.weight"]) @ self.out.T


def top2(row):
    """(argmax, runner-up, gap); ties go to the lowest id, as np.argmax does."""
    first = int(row.argmax())
    rest = row.copy()
    rest[first] = -np.inf
    second = int(rest.argmax())
    return [first, second, round(float(row[first] - row[second]), DIGITS)]


def record_prompt(model, p):
    tokens = p["prompt_ids"] + p["greedy_ids"][:-1]
    logits = model.logits(np.array(tokens))
    rows = logits[len(p["prompt_ids"]) - 1:]  # row i predicts generated step i
    entry = {"name": p["name"], "top2": [top2(row) for row in rows], "top5_exact": {}}
    for step, top in p["top5"].items():
        entry["top5_exact"][step] = [[i, round(float(rows[int(step)][i]), DIGITS)] for i, _ in top]
    return entry


def compact_dump(out):
    """Indented JSON whose innermost values (lists, top-5 maps) sit on one line each."""
    one = lambda v: json.dumps(v, separators=(",", ":"))
    lines = ["{"]
    for key in ("model", "method"):
        lines.append(f" {json.dumps(key)}: {json.dumps(out[key])},")
    lines.append(' "prompts": [')
    for n, e in enumerate(out["prompts"]):
        lines.append("  {")
        lines.append(f'   "name": {json.dumps(e["name"])},')
        lines.append(f'   "top2": {one(e["top2"])},')
        lines.append(f'   "top5_exact": {one(e["top5_exact"])}')
        lines.append("  }" + ("," if n + 1 < len(out["prompts"]) else ""))
    lines += [" ]", "}", ""]
    return "\n".join(lines)


def main():
    ref = json.loads((ROOT / "tests/data/smollm2_llamacpp_reference.json").read_text())
    model = ExactLlama(MODEL)
    out = {"model": ref["model"], "method": "float64 NumPy forward over gguf-dequantised weights, "
           "teacher-forced on llama.cpp's prompt + greedy tokens; top2 = [argmax id, runner-up id, "
           "top-two logit gap] at every generated step", "prompts": []}
    agree = 0
    for p in ref["prompts"]:
        entry = record_prompt(model, p)
        agree += sum(t[0] == g for t, g in zip(entry["top2"], p["greedy_ids"]))
        out["prompts"].append(entry)
        print(p["name"], "done", flush=True)
    text = compact_dump(out)
    assert json.loads(text) == out
    (ROOT / "tests/data/smollm2_exact_reference.json").write_text(text)
    total = sum(len(p["greedy_ids"]) for p in ref["prompts"])
    print(f"llama.cpp's greedy token is the exact argmax at {agree} of {total} positions")


if __name__ == "__main__":
    main()
