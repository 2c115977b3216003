"""Small-slice reads from big HDF5 chunks: oxblosc.hdf5.Dataset vs h5py + hdf5plugin's filter.

The seed's point: with 32 MB HDF5 chunks the plain filter decodes a whole chunk for any read,
while the second partition decodes only the Blosc blocks the slice touches. The file is
written by hdf5plugin (C-Blosc2 / c-blosc), so both readers see the same chunks.

    python bench/hdf5_bench.py [--quick] [--reps N]

Prints a Markdown table (medians of interleaved repetitions, ratio = h5py time / ours).
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
import oxblosc.hdf5 as oh5
from _benchutil import log, machine_info

CHUNK = (64, 512, 256)  # float32: 32 MiB per HDF5 chunk
SLICES = {
    "one item": (10, 200, 50),
    "10x10 box": (10, slice(200, 210), slice(50, 60)),
    "one row": (10, 200, slice(None)),
    "one plane (64 KB)": (slice(10, 11), slice(0, 64), slice(None)),
}


def field(shape) -> np.ndarray:
    """A smooth float32 field with a little noise (compresses ~3-5x, like real data)."""
    rng = np.random.default_rng(0)
    z, y, x = np.meshgrid(*(np.linspace(0, 6, n, dtype="f4") for n in shape), indexing="ij")
    return (np.sin(x + z) * np.cos(y) * 100 + rng.normal(0, 0.5, shape).astype("f4")).astype("f4")


def elapsed(fn, arg) -> float:
    t = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one chunk per dataset instead of two")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    shape = (CHUNK[0] * (1 if args.quick else 2), *CHUNK[1:])
    data = field(shape)
    filters = {
        "Blosc2 zstd 5 shuffle": hdf5plugin.Blosc2("zstd", 5, hdf5plugin.Blosc2.SHUFFLE),
        "Blosc2 lz4 5 shuffle": hdf5plugin.Blosc2("lz4", 5, hdf5plugin.Blosc2.SHUFFLE),
        "Blosc lz4 5 shuffle": hdf5plugin.Blosc("lz4", 5, hdf5plugin.Blosc.SHUFFLE),
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.h5")
        with h5py.File(path, "w") as f:
            for name, opts in filters.items():
                log(f"writing {name} {shape}")
                f.create_dataset(name, data=data, chunks=CHUNK, **opts)
        with h5py.File(path, "r") as f:
            for name in filters:
                d = f[name]
                ours = oh5.Dataset(d, nthreads=1)
                for what, key in SLICES.items():
                    want = data[key]
                    assert np.array_equal(ours[key], want) and np.array_equal(d[key], want)
                    b0 = ours.blocks_decoded
                    t_ours, t_h5 = [], []
                    for _ in range(args.reps):  # interleaved
                        t_ours.append(elapsed(ours.__getitem__, key))
                        t_h5.append(elapsed(d.__getitem__, key))
                    blocks = (ours.blocks_decoded - b0) / args.reps
                    mo, mh = statistics.median(t_ours), statistics.median(t_h5)
                    rows.append((name, what, mh * 1e3, mo * 1e3, mh / mo, blocks))
                    log(f"{name:24} {what:18} h5py {mh * 1e3:8.2f} ms  ours {mo * 1e3:8.3f} ms  x{mh / mo:7.1f}")
                ours.close()
    m = machine_info()
    print(
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; h5py {h5py.__version__}, "
        f"hdf5plugin {hdf5plugin.version}, HDF5 {h5py.version.hdf5_version}.  "
    )
    print(
        f"Dataset: float32 {shape}, HDF5 chunks {CHUNK} (32 MiB), written by hdf5plugin; "
        f"medians of {args.reps} interleaved reads, 1 thread.\n"
    )
    print("| filter | slice | h5py + hdf5plugin (ms) | oxblosc.hdf5.Dataset (ms) | speedup | blocks decoded per read |")
    print("|---|---|---:|---:|---:|---:|")
    for name, what, mh, mo, r, b in rows:
        print(f"| {name} | {what} | {mh:.2f} | {mo:.3f} | {r:.0f}x | {b:g} |")


if __name__ == "__main__":
    main()
