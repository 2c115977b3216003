"""ZFP (codecs 33-35) compress and decompress, oxblosc vs python-blosc2, same run.

oxblosc's ZFP is its own Rust port of the zfp 1.0 stream; python-blosc2 4.14.1 runs the zfp
1.0 C library inside C-Blosc2's plugin (what a zfp binding crate would run). Data: a 2-D
float32 image-like field and a 3-D float64 field (smooth waves plus noise), b2nd arrays in
memory, no filters, 1 thread each; interleaved repetitions, median wall times, speed ratio =
python-blosc2 time / oxblosc time (> 1: oxblosc faster), both compression ratios, and
whether the chunks are byte-identical.

    python bench/zfp_bench.py [--scale 1.0] [--reps 7]
"""

import argparse
import os
import statistics
import time

import blosc2
import numpy as np
import oxblosc

ONE = {"nthreads": 1}


def field(shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(1)
    grids = np.meshgrid(*[np.linspace(0, 6, n) for n in shape], indexing="ij", sparse=True)
    v = sum(np.sin(g * (i + 1)) for i, g in enumerate(grids)) * 20 + rng.standard_normal(shape) * 0.05
    return v.astype(dtype)


def cparams(lib, mode, meta):
    return {
        "codec": getattr(lib.Codec, mode),
        "codec_meta": meta,
        "filters": [lib.Filter.NOFILTER],
        "filters_meta": [0],
        "nthreads": 1,
    }


def run(scale: float, reps: int) -> None:
    side = int(2048 * scale**0.5)
    cube = int(128 * scale ** (1 / 3))
    datasets = [
        (f"2-D float32 {side}x{side}", field((side, side), np.float32), (side // 2, side // 2), (side // 8, side // 8)),
        (f"3-D float64 {cube}^3", field((cube,) * 3, np.float64), (cube // 2,) * 3, (cube // 4,) * 3),
    ]
    modes = [
        ("ZFP_ACC", 253, "tol 1e-3"),
        ("ZFP_PREC", 10, "meta 10"),
        ("ZFP_RATE", 25, "25%"),
        ("ZFP_RATE", 50, "50%"),
    ]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print(
        "| data | mode | ox compress ms | b2 compress ms | speed ratio"
        " | ox decompress ms | b2 decompress ms | speed ratio | ox ratio | b2 ratio | same bytes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, a, chunks, blocks in datasets:
        for mode, meta, what in modes:
            t = {"oc": [], "bc": [], "od": [], "bd": []}
            for _ in range(reps):
                w = time.perf_counter()
                o = oxblosc.asarray(a, chunks=chunks, blocks=blocks, cparams=cparams(oxblosc, mode, meta), dparams=ONE)
                t["oc"].append(time.perf_counter() - w)
                w = time.perf_counter()
                b = blosc2.asarray(a, chunks=chunks, blocks=blocks, cparams=cparams(blosc2, mode, meta), dparams=ONE)
                t["bc"].append(time.perf_counter() - w)
                w = time.perf_counter()
                ro = o[...]
                t["od"].append(time.perf_counter() - w)
                w = time.perf_counter()
                rb = b[...]
                t["bd"].append(time.perf_counter() - w)
            same = all(o.schunk.get_chunk(i) == b.schunk.get_chunk(i) for i in range(b.schunk.nchunks))
            assert ro.tobytes() == rb.tobytes()
            m = {k: statistics.median(v) * 1e3 for k, v in t.items()}
            print(
                f"| {label} | {mode} {what} | {m['oc']:.1f} | {m['bc']:.1f} | {m['bc'] / m['oc']:.2f} | "
                f"{m['od']:.1f} | {m['bd']:.1f} | {m['bd'] / m['od']:.2f} | "
                f"{a.nbytes / o.schunk.cbytes:.2f} | {a.nbytes / b.schunk.cbytes:.2f} | {'yes' if same else 'no'} |"
            )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    run(args.scale, args.reps)
