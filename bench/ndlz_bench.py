"""NDLZ (codec 32) compress and decompress, oxblosc vs python-blosc2, same run.

2-D uint8 images (a tiled texture with noise, and flat steps), b2nd arrays in memory,
cells 4x4 and 8x8, 1 thread each; interleaved repetitions, median wall times, speed ratio =
python-blosc2 time / oxblosc time (> 1: oxblosc faster) and both compression ratios.

    python bench/ndlz_bench.py [--side 2048] [--reps 7]
"""

import argparse
import statistics
import time

import blosc2
import numpy as np
import oxblosc


def image(side: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(1)
    if kind == "texture":
        rows = rng.integers(0, 256, (12, 8), dtype=np.uint8)
        a = rows[rng.integers(0, 12, (side, side // 8))].reshape(side, side)
        noise = rng.random(a.shape) < 0.01
        a[noise] = rng.integers(0, 256, int(noise.sum()), dtype=np.uint8)
        return a
    y, x = np.mgrid[0:side, 0:side]
    return ((x // 37 + y // 53) % 9 * 28).astype(np.uint8)


def run(side: int, reps: int) -> None:
    print(
        "| image | cells | ox compress ms | b2 compress ms | speed ratio"
        " | ox decompress ms | b2 decompress ms | speed ratio | ox ratio | b2 ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind in ("texture", "steps"):
        a = image(side, kind)
        for meta in (4, 8):
            chunks, blocks = (side // 2, side // 2), (min(256, side // 2),) * 2
            cp_b2 = {
                "codec": blosc2.Codec.NDLZ,
                "codec_meta": meta,
                "filters": [blosc2.Filter.NOFILTER],
                "filters_meta": [0],
                "nthreads": 1,
            }
            cp_ox = {
                "codec": oxblosc.Codec.NDLZ,
                "codec_meta": meta,
                "filters": [oxblosc.Filter.NOFILTER],
                "filters_meta": [0],
                "nthreads": 1,
            }
            t = {"oc": [], "bc": [], "od": [], "bd": []}
            for _ in range(reps):
                w = time.perf_counter()
                o = oxblosc.asarray(a, chunks=chunks, blocks=blocks, cparams=cp_ox, dparams={"nthreads": 1})
                t["oc"].append(time.perf_counter() - w)
                w = time.perf_counter()
                b = blosc2.asarray(a, chunks=chunks, blocks=blocks, cparams=cp_b2, dparams={"nthreads": 1})
                t["bc"].append(time.perf_counter() - w)
                w = time.perf_counter()
                ro = o[...]
                t["od"].append(time.perf_counter() - w)
                w = time.perf_counter()
                rb = b[...]
                t["bd"].append(time.perf_counter() - w)
            assert np.array_equal(ro, a) and np.array_equal(rb, a)
            m = {k: statistics.median(v) * 1e3 for k, v in t.items()}
            print(
                f"| {kind} {side}x{side} | {meta}x{meta} | {m['oc']:.1f} | {m['bc']:.1f} | {m['bc'] / m['oc']:.2f} | "
                f"{m['od']:.1f} | {m['bd']:.1f} | {m['bd'] / m['od']:.2f} | "
                f"{a.nbytes / o.schunk.cbytes:.2f} | {a.nbytes / b.schunk.cbytes:.2f} |"
            )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    run(args.side, args.reps)
