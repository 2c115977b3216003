#!/usr/bin/env python
"""A newcomer's first hour: write a big array slab by slab into ``empty(urlpath=...)`` with
the automatic chunks, oxblosc vs python-blosc2.

A float64 array of shape (``--rows``, 1000) (default 50 000 rows: 400 MB) is written in slabs
of ``--slab`` rows (``a[i:i + slab] = data``) into a new frame file created with ``empty`` and
default chunks, blocks and cparams. Data: a smooth field plus a little noise at a finite
resolution, so it compresses like a measurement. Measured per library, alternating, over
``--reps`` repetitions: the wall time of the whole write (create to close), the largest size
the file reaches while being written (sampled after every slab) and its final size.
Reported: medians and the ratios python-blosc2 / oxblosc (> 1: oxblosc better).

    python bench/nd_slab_bench.py            # 400 MB, 3 repetitions
    python bench/nd_slab_bench.py --rows 10000 --reps 1
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time

import blosc2
import numpy as np
import oxblosc


def field(rows: int, start: int, cols: int) -> np.ndarray:
    i = np.arange(start, start + rows, dtype=np.float64)[:, None]
    j = np.arange(cols, dtype=np.float64)[None, :]
    rng = np.random.default_rng(start)
    v = np.sin(i / 500.0) * np.cos(j / 70.0) + rng.normal(0, 0.01, size=(rows, cols))
    return np.round(v, 3)


def run(lib, path: str, rows: int, cols: int, slab: int, data: list[np.ndarray]) -> tuple:
    if os.path.exists(path):
        os.remove(path)
    peak = 0
    t0 = time.perf_counter()
    a = lib.empty((rows, cols), dtype=np.float64, urlpath=path, mode="w")
    for k, i in enumerate(range(0, rows, slab)):
        a[i : i + slab] = data[k]
        peak = max(peak, os.path.getsize(path))
    chunks = a.chunks
    del a
    gc.collect()
    t = time.perf_counter() - t0
    final = os.path.getsize(path)
    return t, max(peak, final), final, chunks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--cols", type=int, default=1000)
    ap.add_argument("--slab", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    data = [field(min(args.slab, args.rows - i), i, args.cols) for i in range(0, args.rows, args.slab)]
    libs = {"oxblosc": oxblosc, "python-blosc2": blosc2}
    res: dict[str, list] = {k: [] for k in libs}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        for r in range(args.reps):
            order = list(libs) if r % 2 == 0 else list(libs)[::-1]
            for name in order:
                res[name].append(
                    run(libs[name], os.path.join(d, f"{name}.b2nd"), args.rows, args.cols, args.slab, data)
                )
        check = oxblosc.open(os.path.join(d, "oxblosc.b2nd"))
        assert np.array_equal(check[:], np.concatenate(data)), "oxblosc wrote wrong data"
        assert np.array_equal(blosc2.open(os.path.join(d, "oxblosc.b2nd"))[-7:], data[-1][-7:])
    mb = args.rows * args.cols * 8 / 1e6
    print(f"shape ({args.rows}, {args.cols}) float64 ({mb:.0f} MB), slabs of {args.slab} rows, {args.reps} reps")
    print("| library | chunks | write s | peak file MB | final file MB |")
    print("|---|---|---|---|---|")
    med = {}
    for name, rs in res.items():
        med[name] = [statistics.median(x[i] for x in rs) for i in range(3)]
        t, peak, final = med[name]
        print(f"| {name} | {rs[0][3]} | {t:.2f} | {peak / 1e6:.1f} | {final / 1e6:.1f} |")
    o, b = med["oxblosc"], med["python-blosc2"]
    print(f"| python-blosc2 / oxblosc | | {b[0] / o[0]:.2f} | {b[1] / o[1]:.2f} | {b[2] / o[2]:.2f} |")


if __name__ == "__main__":
    main()
