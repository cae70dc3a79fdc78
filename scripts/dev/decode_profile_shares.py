#!/usr/bin/env python3
"""Shares of decode time by kind of work, from a `perf record` of `kvscope-cli bench`.

  perf record -F 1999 -g -o /tmp/decode.data build/app/kvscope-cli bench --model M \\
      --prompt-tokens 8 --gen-tokens 256 --repeats 2
  python3 scripts/dev/decode_profile_shares.py /tmp/decode.data

Groups the samples of `perf report --sort symbol` into matmul kernels (by packed format),
attention, norms/rope/activations, activation quantisation, sampling and thread hand-offs
(pool spinning, yielding, waiting), leaves out setup (weight packing, page zeroing, the
bandwidth probe) and prints each group's share of what remains. docs/decode-profile.md
explains the groups and how the matmul share is split per weight. Development tool.
"""
import re
import subprocess
import sys

SETUP = ["clear_page", "PackedWeight::pack", "kquant_pack_row", "Vocab::build", "memcg", "__memset",
         "exc_page_fault", "_raw_spin_unlock_irqrestore", "rmqueue", "get_page_from_freelist",
         "prep_compound", "folio"]
HANDOFF = ["ThreadPool", "sched", "yield", "syscall", "futex", "finish_task_switch", "schedule"]


def category(symbol):
    if "measure_read_bandwidth" in symbol:
        return "SETUP probe"
    if any(k in symbol for k in SETUP):
        return "SETUP load/alloc"
    if "PackedQuants)1" in symbol:
        return "matmul byte-packed (Q8_0/Q5_x)"
    if "PackedQuants)0" in symbol:
        return "matmul nibble-packed (Q4_x)"
    if "Kind)" in symbol or "kquant" in symbol:
        return "matmul K-quant"
    if "quantize_acts" in symbol or "half_sums" in symbol:
        return "activation quantisation"
    if any(k in symbol for k in ["attend", "load_tile", "paged_attention", "softmax"]):
        return "attention"
    if any(k in symbol for k in ["rms_norm", "rope", "gelu", "silu", "add_"]):
        return "norms/rope/activations/adds"
    if "probability_distribution" in symbol or "sampl" in symbol.lower() or "argmax" in symbol:
        return "sampling"
    if any(k in symbol for k in HANDOFF):
        return "thread hand-offs (spin/yield/wait)"
    return "other"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    report = subprocess.run(["perf", "report", "-i", sys.argv[1], "--no-children", "--sort", "symbol", "-g", "none",
                             "--percent-limit", "0.05"], capture_output=True, text=True, check=True).stdout
    totals = {}
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[.\]\s+(.*?)(\s+-\s+-)?\s*$", line)
        if m:
            c = category(m.group(2))
            totals[c] = totals.get(c, 0.0) + float(m.group(1))
    decode = {k: v for k, v in totals.items() if not k.startswith("SETUP")}
    whole = sum(decode.values())
    for k, v in sorted(decode.items(), key=lambda kv: -kv[1]):
        print(f"{100 * v / whole:6.1f}%  {k}")
    setup = ", ".join(f"{k[6:]} {v:.1f}%" for k, v in totals.items() if k.startswith("SETUP"))
    print(f"(decode = {whole:.1f}% of all samples; left out: {setup})")


if __name__ == "__main__":
    main()
