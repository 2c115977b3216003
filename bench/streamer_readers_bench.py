"""Streamer with 1-4 reader threads vs our plain one-thread block loop, timed side by side.

The multitables benchmark's data (normal random float64, 16 columns, chunks of ``--block``
rows, BloscLZ + shuffle at the given levels); queue access, ordered, ``--cycles`` passes with
``cyclic=True``, the consumer sums each block; the plain loop reads the same blocks as NDArray
slices (one decompression thread), as many passes. Every case, ring sizes included, runs
once per round, rounds interleaved; prints plain time / Streamer time (medians).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import oxblosc as ox


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1 << 20)
    p.add_argument("--block", type=int, default=4096)
    p.add_argument("--cycles", type=int, default=2)
    p.add_argument("--levels", default="0,3")
    p.add_argument("--readers", default="1,2,3,4", help="reader threads; N:S for N readers and S ring slots")
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args()
    rows, block = args.rows - args.rows % args.block, args.block
    data = np.random.default_rng(0).normal(size=(rows, 16))
    nblocks = rows // block * args.cycles
    tmp = Path(tempfile.mkdtemp(prefix="oxblosc-readers-"))

    def stream(path: str, n: int, nslots: int | None) -> None:
        s = ox.Streamer(path, block_rows=block, nthreads=n, ordered=True, cyclic=True, nslots=nslots)
        for _ in range(nblocks):
            with s.acquire() as slot:
                slot.block.sum()
        s.close()

    def plain(path: str) -> None:
        a = ox.open(path, mode="r")
        a.schunk.dparams = ox.DParams(nthreads=1)
        for _ in range(args.cycles):
            for i in range(0, rows, block):
                a[i : i + block].sum()

    cases = {}
    for level in (int(x) for x in args.levels.split(",")):
        path = str(tmp / f"x{level}.b2nd")
        cp = {"codec": ox.Codec.BLOSCLZ, "clevel": level, "filters": [ox.Filter.SHUFFLE]}
        ox.asarray(data, urlpath=path, mode="w", chunks=(block, 16), cparams=cp)
        cases[level, "plain"] = lambda path=path: plain(path)
        for spec in args.readers.split(","):
            n, _, slots = spec.partition(":")
            nslots = int(slots) if slots else None
            cases[level, spec] = lambda path=path, n=int(n), s=nslots: stream(path, n, s)
    print(time.strftime("%H:%M:%S UTC", time.gmtime()), "load", os.getloadavg())
    times = {k: [] for k in cases}
    for _ in range(args.rounds):
        for k, fn in cases.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    for (level, spec), t in med.items():
        print(f"level {level}, {spec}: {t * 1e3:.1f} ms, plain / this {med[level, 'plain'] / t:.2f}")
    print(time.strftime("%H:%M:%S UTC", time.gmtime()), "load", os.getloadavg())
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
