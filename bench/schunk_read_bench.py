"""Whole-file reads through the Python API, oxblosc vs python-blosc2, same run.

`SChunk[:]` of a contiguous frame file and `NDArray[:]` of a b2nd file (LZ4 + shuffle,
float32 smooth field), sizes from 80 MB up; interleaved repetitions, medians of wall time
and of process CPU time, ratio = python-blosc2 time / oxblosc time (> 1: oxblosc faster).

    python bench/schunk_read_bench.py [--sizes 80,160] [--reps 7]
"""

import argparse
import os
import statistics
import tempfile
import time

import blosc2
import numpy as np
import oxblosc


def field(mb: int) -> np.ndarray:
    n = mb * (1 << 20) // 4
    x = np.linspace(0, 60, n, dtype=np.float32)
    return (np.sin(x) * 20 + 280 + np.cos(x * 7.3) * 3).astype(np.float32)


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="80,160")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    nthreads = 2
    oxblosc.set_nthreads(nthreads)
    blosc2.set_nthreads(nthreads)
    print(f"oxblosc {oxblosc.__version__}, python-blosc2 {blosc2.__version__}, {nthreads} threads, {args.reps} reps")
    print("| case | size MB | ox wall ms | b2 wall ms | ratio wall | ratio CPU |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        for mb in (int(s) for s in args.sizes.split(",")):
            data = field(mb)
            chunk_items = (4 << 20) // 4
            ox_path, b2_path = os.path.join(d, f"ox{mb}.b2frame"), os.path.join(d, f"b2{mb}.b2frame")
            cp_ox = {"codec": oxblosc.Codec.LZ4, "clevel": 5, "typesize": 4}
            cp_b2 = {"codec": blosc2.Codec.LZ4, "clevel": 5, "typesize": 4}
            for path, mod, cp in ((ox_path, oxblosc, cp_ox), (b2_path, blosc2, cp_b2)):
                sc = mod.SChunk(chunksize=chunk_items * 4, urlpath=path, mode="w", cparams=cp)
                for k in range(0, data.size, chunk_items):
                    sc.append_data(data[k : k + chunk_items])
                del sc
            ox_nd, b2_nd = os.path.join(d, f"ox{mb}.b2nd"), os.path.join(d, f"b2{mb}.b2nd")
            shape = (data.size // 4096, 4096)
            oxblosc.asarray(data.reshape(shape), urlpath=ox_nd, mode="w", cparams=cp_ox)
            blosc2.asarray(data.reshape(shape), urlpath=b2_nd, mode="w", cparams=cp_b2)
            cases = {
                "SChunk[:]": (lambda p=ox_path: oxblosc.open(p)[:], lambda p=b2_path: blosc2.open(p)[:]),
                "NDArray[:]": (lambda p=ox_nd: oxblosc.open(p)[:], lambda p=b2_nd: blosc2.open(p)[:]),
            }
            for name, (f_ox, f_b2) in cases.items():
                ox, b2 = [], []
                for _ in range(args.reps):
                    ox.append(timed(f_ox))
                    b2.append(timed(f_b2))
                ow, oc = (statistics.median(t[i] for t in ox) for i in (0, 1))
                bw, bc = (statistics.median(t[i] for t in b2) for i in (0, 1))
                print(f"| {name} | {mb} | {ow * 1e3:.1f} | {bw * 1e3:.1f} | {bw / ow:.2f} | {bc / oc:.2f} |")


if __name__ == "__main__":
    main()
