"""oxblosc.Streamer over a PyTables table vs PyTables' own reads, in one PyTables process.

A table of ``--rows`` rows of ERA5-like records (3 int32 + 5 float32 columns, 32 bytes per
row: smooth fields plus a little noise) written by PyTables with its Blosc2 (zstd 5 +
shuffle) and Blosc (lz4 5 + shuffle) filters, PyTables' chunk shape for the row count. The
consumer sums one column of each block. Peers, interleaved per round:

- ``read loop``: ``for s in range(0, n, rows): t.read(s, s + rows)["air"].sum()`` (blocks of
  one chunk's rows: PyTables' usual way to go through a big table);
- ``iterrows``: ``sum(r["air"] for r in t.iterrows())`` (PyTables' row iterator);
- ``Streamer k``: ``for s, b in oxblosc.Streamer(t, nthreads=k): b["air"].sum()`` (PyTables
  gives the chunk addresses once; Rust threads read and decode ahead; no HDF5 call).

Wall and CPU seconds (the whole process) are medians of the rounds; ratio = peer time /
Streamer time (> 1: the Streamer is faster). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import oxblosc as ox
import tables

DTYPE = np.dtype(
    [("lat", "<i4"), ("lon", "<i4"), ("time", "<i4")] + [(k, "<f4") for k in ("precip", "solar", "air", "snow", "wind")]
)


def make(path: str, n: int, complib: str) -> None:
    with tables.open_file(path, "w") as f:
        t = f.create_table("/", "t", DTYPE, filters=tables.Filters(5, complib, shuffle=True), expectedrows=n)
        step = 1 << 18
        for s in range(0, n, step):
            i = np.arange(s, min(n, s + step))
            rows = np.zeros(len(i), DTYPE)
            rows["time"], rows["lat"], rows["lon"] = i // 1000, (i // 40) % 25, i % 40
            noise = np.random.default_rng(s).normal(size=len(i)) / 100
            for k, name in enumerate(("precip", "solar", "air", "snow", "wind")):
                rows[name] = np.round(np.sin(i / (500.0 + 90 * k)) * 100 + noise, 2)
            t.append(rows)


def read_loop(t) -> float:
    rows, total = t.chunkshape[0], 0.0
    for s in range(0, t.nrows, rows):
        total += float(t.read(s, s + rows)["air"].sum(dtype="f8"))
    return total


def iterrows(t) -> float:
    return float(sum(r["air"] for r in t.iterrows()))


def streamer(t, k: int) -> float:
    total = 0.0
    for _, b in ox.Streamer(t, nthreads=k):
        total += float(b["air"].sum(dtype="f8"))
    return total


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    r = fn()
    return time.perf_counter() - w, time.process_time() - c, r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=4_000_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--complibs", default="blosc2:zstd,blosc:lz4")
    p.add_argument("--no-iterrows", action="store_true")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="oxblosc-stream-table-")
    print(
        f"{args.rows} rows x {DTYPE.itemsize} bytes ({args.rows * DTYPE.itemsize / 1e6:.0f} MB), page-cached, "
        f"PyTables {tables.__version__}; load {os.getloadavg()[0]:.1f} at the start\n"
    )
    print(
        "| filter | chunk rows | peer | peer wall s | Streamer 1 wall s | Streamer 2 wall s | ratio 1 | ratio 2 "
        "| CPU ratio 1 | CPU ratio 2 |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for complib in args.complibs.split(","):
        path = os.path.join(tmp, complib.replace(":", "_") + ".h5")
        make(path, args.rows, complib)
        with tables.open_file(path, "r") as f:
            t = f.root.t
            cases = {
                "read loop": lambda t=t: read_loop(t),
                "s1": lambda t=t: streamer(t, 1),
                "s2": lambda t=t: streamer(t, 2),
            }
            if not args.no_iterrows:
                cases["iterrows"] = lambda t=t: iterrows(t)
            wall, cpu, res = {k: [] for k in cases}, {k: [] for k in cases}, {}
            for _ in range(args.rounds):
                for k, fn in cases.items():
                    w, c, r = timed(fn)
                    wall[k].append(w), cpu[k].append(c)
                    res[k] = r
            assert abs(res["s1"] - res["read loop"]) <= 1e-6 * abs(res["read loop"]) + 1e-3, res
            mw = {k: statistics.median(v) for k, v in wall.items()}
            mc = {k: statistics.median(v) for k, v in cpu.items()}
            for peer in [k for k in cases if k not in ("s1", "s2")]:
                print(
                    f"| {complib} | {t.chunkshape[0]} | {peer} | {mw[peer]:.3f} | {mw['s1']:.3f} | {mw['s2']:.3f} "
                    f"| {mw[peer] / mw['s1']:.2f} | {mw[peer] / mw['s2']:.2f} | {mc[peer] / mc['s1']:.2f} "
                    f"| {mc[peer] / mc['s2']:.2f} |",
                    flush=True,
                )
        os.remove(path)
    print(f"\nload {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
