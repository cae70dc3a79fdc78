#!/usr/bin/env python3
"""Writes tests/data/dequant_<type>.json: random blocks and the values the
`gguf` Python package's dequantiser gives for them. Run once by hand with a
Python that has gguf + numpy (e.g. /opt/refenv/bin/python); the C++ test
dequantize_gguf_test.cpp checks kernels/reference against these files.
"""
import json
import pathlib

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

# type -> (block bytes, number of blocks, byte offsets of f16 scale fields)
LAYOUTS = {
    "Q4_0": (T.Q4_0, 18, 4, [0]),
    "Q4_1": (T.Q4_1, 20, 4, [0, 2]),
    "Q5_0": (T.Q5_0, 22, 4, [0]),
    "Q5_1": (T.Q5_1, 24, 4, [0, 2]),
    "Q8_0": (T.Q8_0, 34, 4, [0]),
    "Q2_K": (T.Q2_K, 84, 2, [80, 82]),
    "Q3_K": (T.Q3_K, 110, 2, [108]),
    "Q4_K": (T.Q4_K, 144, 2, [0, 2]),
    "Q5_K": (T.Q5_K, 176, 2, [0, 2]),
    "Q6_K": (T.Q6_K, 210, 2, [208]),
}


def main():
    rng = np.random.default_rng(1234)
    out_dir = pathlib.Path(__file__).resolve().parents[1] / "data"
    for name, (qtype, block_bytes, num_blocks, f16_offsets) in LAYOUTS.items():
        raw = rng.integers(0, 256, size=(num_blocks, block_bytes), dtype=np.uint8)
        for b in range(num_blocks):
            for off in f16_offsets:  # sane, signed scales instead of random bit patterns
                v = np.float16(rng.uniform(-0.1, 0.1))
                raw[b, off:off + 2] = np.frombuffer(v.tobytes(), dtype=np.uint8)
        values = dequantize(raw.reshape(-1), qtype).astype(np.float32).reshape(-1)
        doc = {
            "type": name,
            "num_blocks": num_blocks,
            "hex": raw.tobytes().hex(),
            "expected": [float(x) for x in values],
        }
        path = out_dir / f"dequant_{name.lower()}.json"
        path.write_text(json.dumps(doc) + "\n")
        print(path, values.size)


if __name__ == "__main__":
    main()
