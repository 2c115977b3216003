#!/usr/bin/env python
"""NDArray with automatic chunks/blocks, oxblosc vs python-blosc2 (docs/decisions/0002).

An ERA5-like float32 field (T x 721 x 1440), LZ4 clevel 5 + shuffle, 2 threads: ``asarray``
(write), ``[:]`` (full read) and three slices, in memory and on a file; 5 interleaved
repetitions (``REPS``, default 5), medians of wall time and of process CPU time (the machine
may be shared: CPU time compares the work, wall time the parallel speed).

    python bench/nd_auto_bench.py 30                          # automatic shapes for both
    python bench/nd_auto_bench.py 30 2,721,1440 1,45,1440     # oxblosc with given chunks/blocks
"""

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(os.environ.get("OXBLOSC_SHARED", REPO.parent / "shared")) / "bench"))

import _datasets  # noqa: E402
import blosc2  # noqa: E402
import oxblosc  # noqa: E402

T = int(sys.argv[1]) if len(sys.argv) > 1 else 50
a = _datasets.make("climate_f4", (T + 2) * 721 * 1440 * 4).reshape(-1)[: T * 721 * 1440].reshape(T, 721, 1440)
a = np.ascontiguousarray(a)
CH = tuple(map(int, sys.argv[2].split(","))) if len(sys.argv) > 2 else None
BL = tuple(map(int, sys.argv[3].split(","))) if len(sys.argv) > 3 else None
print("field", a.shape, a.nbytes / 1e6, "MB", f"load average {os.getloadavg()[0]:.1f} at the start")
for lib in (oxblosc, blosc2):
    lib.set_nthreads(2)


def cp(lib):
    return lib.CParams(codec=lib.Codec.LZ4, clevel=5, typesize=4, nthreads=2)


REPS = int(os.environ.get("REPS", "5"))
res = {}


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(t0: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - t0[0], time.process_time() - t0[1]


for rep in range(REPS):
    for name, lib in [("ox", oxblosc), ("b2", blosc2)] if rep % 2 == 0 else [("b2", blosc2), ("ox", oxblosc)]:
        for where in ("mem", "file"):
            up = f"/tmp/eng_nd_{name}.b2nd" if where == "file" else None
            if up and os.path.exists(up):
                os.remove(up)
            t = clock()
            kw = dict(chunks=CH, blocks=BL) if (lib is oxblosc and CH) else {}
            x = (
                lib.asarray(a, cparams=cp(lib), urlpath=up, mode="w", **kw)
                if up
                else lib.asarray(a, cparams=cp(lib), **kw)
            )
            tw = since(t)
            if up:
                del x
                x = lib.open(up)
            t = clock()
            b = x[:]
            tr = since(t)
            t = clock()
            _ = (x[T // 2], x[:, 300, :], x[:, :, 700])
            ts = since(t)
            assert np.array_equal(b, a)
            ratio = x.schunk.nbytes / x.schunk.cbytes
            res.setdefault((name, where), []).append((tw, tr, ts, ratio, x.chunks, x.blocks))


def med(rows: list, i: int, k: int) -> float:
    return statistics.median(r[i][k] for r in rows)


for where in ("mem", "file"):
    o, b = res[("ox", where)], res[("b2", where)]
    print(f"{where}: ox chunks {o[0][4]} blocks {o[0][5]} ratio {o[0][3]:.2f}", end=" | ")
    print(f"b2 chunks {b[0][4]} blocks {b[0][5]} ratio {b[0][3]:.2f}")
    for k, clk in enumerate(("wall", "CPU")):
        speeds = f"write {med(b, 0, k) / med(o, 0, k):.2f}  read {med(b, 1, k) / med(o, 1, k):.2f}"
        speeds += f"  slices {med(b, 2, k) / med(o, 2, k):.2f}"
        gbs = f"ox {a.nbytes / med(o, 0, k) / 1e9:.2f}/{a.nbytes / med(o, 1, k) / 1e9:.2f} GB/s"
        print(f"  ox/b2 speed ({clk}): {speeds}  ({gbs} write/read {clk})")
        ops = enumerate(("write", "read", "slices"))
        ms = "  ".join(f"{op} {med(o, i, k) * 1e3:.1f}/{med(b, i, k) * 1e3:.1f}" for i, op in ops)
        print(f"    ms ox/b2 ({clk}): {ms}")
print(f"load average {os.getloadavg()[0]:.1f} at the end ({os.getloadavg()[2]:.1f} over 15 min)")
