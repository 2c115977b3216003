"""oxblosc.Streamer over an HDF5 dataset vs a plain h5py + hdf5plugin block loop.

One (N, 256, 256) float32 dataset (a smooth field: cumulative sums of normal steps, rounded
to 1/64) in an HDF5 file written by h5py with hdf5plugin's Blosc2 filter (32026), chunks of
(16, 256, 256) = 4 MiB, shuffle, at each codec/clevel asked. The consumer sums each block of
``block_rows`` rows (one chunk row by default). Peers, interleaved per round:

- ``h5py``: ``for s in range(0, n, rows): d[s:s + rows].sum()`` (hdf5plugin's filter, one
  thread: the usual way to read such a file block by block);
- ``Streamer k``: ``for s, b in oxblosc.Streamer(d, block_rows=rows, nthreads=k): b.sum()``
  (h5py lists the chunks once, Rust threads read and decode ahead).

Wall and CPU seconds (the whole process, every thread) are medians of the rounds; ratio =
h5py time / Streamer time (> 1: the Streamer is faster). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import h5py
import hdf5plugin
import numpy as np
import oxblosc as ox


def make(path: str, n: int, cname: str, clevel: int) -> None:
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "x", shape=(n, 256, 256), dtype="f4", chunks=(16, 256, 256),
            **hdf5plugin.Blosc2(cname=cname, clevel=clevel, filters=hdf5plugin.Blosc2.SHUFFLE),
        )  # fmt: skip
        for s in range(0, n, 16):
            block = np.cumsum(rng.normal(size=(16, 256, 256)), axis=2)
            d[s : s + 16] = np.round(block * 64) / 64


def h5py_loop(d, rows: int) -> float:
    total = 0.0
    for s in range(0, d.shape[0], rows):
        total += float(d[s : s + rows].sum())
    return total


def streamer(d, rows: int, k: int) -> float:
    total = 0.0
    for _, b in ox.Streamer(d, block_rows=rows, nthreads=k):
        total += float(b.sum())
    return total


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    r = fn()
    return time.perf_counter() - w, time.process_time() - c, r


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=512, help="dataset rows (x 256 x 256 float32)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--codecs", default="lz4:5,zstd:5")
    p.add_argument("--tmp", default=None)
    args = p.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    out = [
        "| codec | MB | h5py wall / CPU s | Streamer 1 wall / CPU s (ratio) | Streamer 2 wall / CPU s (ratio) |",
        "|---|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for spec in args.codecs.split(","):
            cname, clevel = spec.split(":")
            path = os.path.join(tmp, f"{cname}.h5")
            make(path, args.rows, cname, int(clevel))
            with h5py.File(path, "r") as f:
                d = f["x"]
                peers = {
                    "h5py": lambda d=d: h5py_loop(d, 16),
                    "s1": lambda d=d: streamer(d, 16, 1),
                    "s2": lambda d=d: streamer(d, 16, 2),
                }
                want = h5py_loop(d, 16)
                times = {k: [] for k in peers}
                for r in range(args.rounds):
                    order = list(peers)[r % 3 :] + list(peers)[: r % 3]
                    for k in order:
                        w, c, got = timed(peers[k])
                        assert got == want, (k, got, want)
                        times[k].append((w, c))
                med = {
                    k: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v))
                    for k, v in times.items()
                }
                mb = d.nbytes / 1e6
                h = med["h5py"]
                cells = [f"{med[k][0]:.3f} / {med[k][1]:.3f} ({h[0] / med[k][0]:.2f})" for k in ("s1", "s2")]
                out.append(
                    f"| {cname} {clevel} shuffle | {mb:.0f} | {h[0]:.3f} / {h[1]:.3f} | {cells[0]} | {cells[1]} |"
                )
                print(out[-1], flush=True)
    print(f"load average at end: {os.getloadavg()}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
