#!/usr/bin/env python
"""Computing expressions whose operands are not all NDArrays of one geometry: oxblosc vs
python-blosc2 in the same run (interleaved, medians).

A (4000, 4000) float64 field `a` (chunks (500, 4000), blocks (25, 4000)) combined with a
broadcast 1-D NDArray `b` (4000,), an NDArray `c` of the same shape with other chunks and
blocks, and the NumPy array `x` itself, each `.compute()`d into a new compressed array:

    python bench/lazy_broadcast_bench.py --reps 5 --nthreads 2
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--nthreads", type=int, default=2)
    args = p.parse_args()
    import blosc2
    import oxblosc

    x = np.linspace(0, 1, 4000 * 4000).reshape(4000, 4000)
    y = np.linspace(0, 2, 4000)
    cases: dict[str, list] = {}
    for m in (oxblosc, blosc2):
        m.set_nthreads(args.nthreads)
        a = m.asarray(x, chunks=(500, 4000), blocks=(25, 4000))
        b = m.asarray(y)
        c = m.asarray(x * 2, chunks=(400, 2000), blocks=(50, 500))
        ops = {
            "a + b (b broadcast)": lambda a=a, b=b: (a + b).compute(),
            "a * b + sin(b)": lambda a=a, b=b, m=m: (a * b + m.sin(b)).compute(),
            "a + c (other chunks)": lambda a=a, c=c: (a + c).compute(),
            "a + x (NumPy operand)": lambda a=a: (a + x).compute(),
        }
        for k, f in ops.items():
            cases.setdefault(k, []).append(f)
    times: dict[str, list[list[float]]] = {k: [[], []] for k in cases}
    for fs in cases.values():
        for f in fs:
            f()  # warm up
    for _ in range(args.reps):
        for k, fs in cases.items():
            for i, f in enumerate(fs):
                t0 = time.perf_counter()
                f()
                times[k][i].append(time.perf_counter() - t0)
    print(f"(4000, 4000) float64, {args.nthreads} threads, {args.reps} interleaved reps, medians\n")
    print("| operation | oxblosc ms | python-blosc2 ms | oxblosc / blosc2 |")
    print("|---|---|---|---|")
    for k, (o, b) in times.items():
        mo, mb = statistics.median(o), statistics.median(b)
        print(f"| `{k}` | {mo * 1e3:.1f} | {mb * 1e3:.1f} | {mo / mb:.2f} |")


if __name__ == "__main__":
    main()
