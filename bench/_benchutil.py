"""Helpers shared by the benchmark scripts: machine description, machine load, logging."""

import os
import platform
import sys
import time

import blosc2
import numpy as np
import oxblosc


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def machine_info() -> dict:
    cpu, flags = "?", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu == "?":
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    simd = " ".join(x for x in ("sse2", "avx2", "avx512f") if x in flags)
    return {
        "cpu": cpu,
        "simd": simd,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "oxblosc": getattr(oxblosc, "__version__", "?"),
        "blosc2": blosc2.__version__,
        "c-blosc2": blosc2.blosclib_version.split()[0],
        "numpy": np.__version__,
        "kernel": platform.release(),
    }


def cpu_busy() -> tuple[float, float]:
    """(wall time, busy CPU-seconds of the whole machine) from /proc/stat."""
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return time.time(), (v[0] + v[1] + v[2] + v[5] + v[6]) / hz


def write_block(path, name: str, heading: str, block: str) -> None:
    """Replace the generated block ``name`` of a Markdown report (between its start/end markers),
    or append it under ``## heading`` when the report has no such block yet. Each benchmark
    script owns one block, so several scripts can share docs/benchmarks.md."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    old = path.read_text() if path.exists() else ""
    new = f"{start}\n{block}\n{end}"
    if start in old and end in old:
        a = old.index(start)
        b = old.index(end) + len(end)
        text = old[:a] + new + old[b:]
    else:
        text = old.rstrip("\n") + f"\n\n## {heading}\n\n" + new + "\n"
    path.write_text(text)
