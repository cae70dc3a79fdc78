#!/usr/bin/env python3
"""Where one decode step's GPU time goes, from Nsight Compute's CSV.

Input: the --csv output of
  ncu --metrics gpu__time_duration.sum --launch-skip N --launch-count 600 --csv kvscope-cli bench ...
(scripts/dev/gpu_lease.sh b makes it), one file per concurrency. A step
starts at an embedding launch; the first whole step in the file (from one
embedding launch to the next) is summed per kernel name. Each kernel was
timed alone (ncu serialises them), so the sum is an upper bound of the step.

Usage: decode_step_kernels.py NCU_CSV [NCU_CSV ...] [--json]
"""
import collections
import csv
import json
import sys


def step_kernels(path):
    rows = [r for r in csv.reader(open(path, newline="")) if len(r) > 5]
    if not rows:
        raise ValueError(f"{path}: no CSV rows")
    header, rows = rows[0], rows[1:]
    name_at, value_at = header.index("Kernel Name"), header.index("Metric Value")
    unit_at = header.index("Metric Unit") if "Metric Unit" in header else None
    starts = [i for i, r in enumerate(rows) if "embedding" in r[name_at]]
    if len(starts) < 2:
        raise ValueError(f"{path}: fewer than two embedding launches, so no whole step")
    per_name = collections.Counter()
    launches = collections.Counter()
    for r in rows[starts[0]:starts[1]]:
        name = r[name_at].split("(")[0].split("<")[0].replace("void ", "").strip().split("::")[-1]
        value = float(r[value_at].replace(",", ""))
        unit = r[unit_at] if unit_at is not None else "ns"
        per_name[name] += value / {"ns": 1e3, "us": 1.0, "usecond": 1.0, "nsecond": 1e3, "ms": 1e-3}.get(unit, 1e3)
        launches[name] += 1
    return {"file": path, "kernels": sum(launches.values()), "total_us": round(sum(per_name.values()), 1),
            "by_kernel": [{"name": n, "launches": launches[n], "us": round(us, 1)} for n, us in per_name.most_common()]}


def main():
    paths = [a for a in sys.argv[1:] if a != "--json"]
    if not paths:
        sys.exit(__doc__)
    steps = [step_kernels(p) for p in paths]
    if "--json" in sys.argv:
        print(json.dumps(steps, indent=1))
        return
    for s in steps:
        print(f"{s['file']}: {s['kernels']} kernels, {s['total_us']:,.1f} us")
        for k in s["by_kernel"]:
            print(f"  {k['name']:<32} {k['launches']:>4} {k['us']:>10,.1f} us {k['us'] / s['total_us']:>6.1%}")


if __name__ == "__main__":
    main()
