"""The CPU a benchmark ran on, for the records of bench_llama_cpp.py and
bench_vs_llamacpp.py (kvscope-cli bench writes the same fields from
kernels/cpu/cpu_description.h). This project's machines have been both a
Sapphire Rapids Xeon and an AMD EPYC: a figure without its CPU cannot be
compared with another.
"""

from __future__ import annotations

import os


def cpu_model_name() -> str:
    """/proc/cpuinfo's "model name" (x86) or "Model" (ARM), else "unknown"."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return "unknown"
    for key in ("model name", "Model"):
        for line in lines:
            k, sep, value = line.partition(":")
            if sep and k.strip() == key and value.strip():
                return value.strip()
    return "unknown"


def llama_cpp_isa(system_info: str) -> str:
    """The widest x86 SIMD path a llama.cpp build reports using
    ("AVX512_VNNI = 1 | ..." in llama_print_system_info)."""
    on = set()
    for part in system_info.replace("|", "\n").splitlines():
        name, sep, value = part.partition("=")
        if sep and value.strip() == "1":
            on.add(name.strip().upper())
    for flag, label in (("AMX_INT8", "amx"), ("AVX512_VNNI", "avx512-vnni"), ("AVX512", "avx512"),
                        ("AVX2", "avx2"), ("NEON", "neon")):
        if flag in on:
            return label
    return "unknown"


def cpu_record(threads: int, isa: str) -> dict:
    """The "cpu" object of a benchmark record, with the same keys as kvscope-cli bench's."""
    return {
        "model_name": cpu_model_name(),
        "num_cpus_online": os.cpu_count(),
        "num_cpus_usable": len(os.sched_getaffinity(0)),
        "threads_used": threads,
        "isa": isa,
    }
