#!/usr/bin/env python
"""The Blosc-registered b2nd filters (NDCELL, NDMEAN): oxblosc vs python-blosc2 in one process.

Same data, same parameters (chunks, blocks, codec zstd clevel 5, the filter with cell edge 4
followed by SHUFFLE, nthreads 1 and 2); each cell builds an in-memory array from NumPy data
(compress) and reads it whole (decompress), the two libraries alternating, median of the
repetitions. Datasets: a 2-D 8-bit image (smooth gradients, edges and sensor noise) and a
3-D float32 field (smooth waves plus noise). Throughput = uncompressed bytes / time (GB/s).

    python bench/plugin_bench.py [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import blosc2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oxblosc  # noqa: E402
from _benchutil import machine_info  # noqa: E402


def image(n=2048):
    y, x = np.mgrid[0:n, 0:n].astype(np.float32) / n
    base = 120 + 80 * np.sin(6 * x) * np.cos(4 * y) + 40 * (x > 0.6)
    noise = np.random.default_rng(1).normal(0, 3, (n, n))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def field(shape=(96, 256, 256)):
    z, y, x = np.meshgrid(*(np.linspace(0, 1, s, dtype=np.float32) for s in shape), indexing="ij")
    f = np.sin(8 * x + 3 * z) * np.cos(5 * y) + 0.3 * z
    return (f + np.random.default_rng(2).normal(0, 0.01, shape).astype(np.float32)).astype(np.float32)


DATASETS = {
    "image_u8 2048x2048": (image, (512, 512), (64, 64)),
    "field_f4 96x256x256": (field, (32, 64, 256), (8, 16, 64)),
}


def run(lib, a, chunks, blocks, filt, nthreads):
    cp = {
        "codec": lib.Codec.ZSTD,
        "clevel": 5,
        "nthreads": nthreads,
        "filters": [getattr(lib.Filter, filt), lib.Filter.SHUFFLE],
        "filters_meta": [4, 0],
    }
    t0 = time.perf_counter()
    arr = lib.asarray(a, chunks=chunks, blocks=blocks, cparams=cp, dparams={"nthreads": nthreads})
    t1 = time.perf_counter()
    back = arr[...]
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, arr.schunk.cbytes, back


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    info = machine_info()
    print(
        f"Machine: {info['cpu']}, {info['cores']} cores; oxblosc {info['oxblosc']}, "
        f"python-blosc2 {info['blosc2']} (C-Blosc2 {info['c-blosc2']})\n"
    )
    print(
        "| dataset | filter | threads | ratio ox / b2 | compress GB/s ox / b2 | decompress GB/s ox / b2 | "
        "speed ratio c / d | same bytes |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, (make, chunks, blocks) in DATASETS.items():
        a = make()
        for filt in ("NDCELL", "NDMEAN"):
            if filt == "NDMEAN" and a.dtype.itemsize not in (4, 8):
                continue
            for nthreads in (1, 2):
                times = {"ox": ([], []), "b2": ([], [])}
                sizes, outs = {}, {}
                for rep in range(args.reps):
                    order = [("ox", oxblosc), ("b2", blosc2)] if rep % 2 == 0 else [("b2", blosc2), ("ox", oxblosc)]
                    for key, lib in order:
                        c, d, cbytes, back = run(lib, a, chunks, blocks, filt, nthreads)
                        times[key][0].append(c)
                        times[key][1].append(d)
                        sizes[key], outs[key] = cbytes, back
                same = np.array_equal(outs["ox"], outs["b2"])
                gb = a.nbytes / 1e9
                oc, od = (gb / statistics.median(t) for t in times["ox"])
                bc, bd = (gb / statistics.median(t) for t in times["b2"])
                print(
                    f"| {name} | {filt}:4+shuffle | {nthreads} | {a.nbytes / sizes['ox']:.2f} / "
                    f"{a.nbytes / sizes['b2']:.2f} | {oc:.3f} / {bc:.3f} | {od:.3f} / {bd:.3f} | "
                    f"{oc / bc:.2f} / {od / bd:.2f} | {'yes' if same else 'NO'} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
