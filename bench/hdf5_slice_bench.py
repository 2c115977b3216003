"""The second partition through oxblosc.hdf5.Dataset on 32 MiB HDF5 chunks, after lazy block
reads: small slices (time, blocks decoded, bytes read from the file) and whole-chunk writes,
each against h5py + hdf5plugin's filter in the same run, interleaved.

    python bench/hdf5_slice_bench.py [--reps N]

Prints Markdown tables (medians; ratio = h5py + hdf5plugin time / ours).
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

SHAPE, CHUNK = (128, 512, 256), (64, 512, 256)  # float32: two 32 MiB chunks
KEYS = {
    "one item": (10, 200, 50),
    "10x10 box": (10, slice(200, 210), slice(50, 60)),
    "one row": (10, 200, slice(None)),
    "64 rows": (10, slice(0, 64), slice(None)),
}


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    z = np.linspace(0, 6, SHAPE[0] * SHAPE[1] * SHAPE[2], dtype="f4").reshape(SHAPE)
    data = (np.sin(z * 40) * 100 + rng.normal(0, 0.5, SHAPE)).astype("f4")
    opts = hdf5plugin.Blosc2("zstd", 5, hdf5plugin.Blosc2.SHUFFLE)
    reads, writes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "b.h5")
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=data, chunks=CHUNK, **opts)
        with h5py.File(path, "r") as f:
            d = f["x"]
            stored = d.id.get_chunk_info(0).size
            ours = oh5.Dataset(d, nthreads=1)
            for what, key in KEYS.items():
                assert np.array_equal(ours[key], data[key]) and np.array_equal(d[key], data[key])
                b0, r0 = ours.blocks_decoded, ours.bytes_read
                t_o, t_h = [], []
                for _ in range(args.reps):
                    t_o.append(timed(lambda k=key: ours[k]))
                    t_h.append(timed(lambda k=key: d[k]))
                mo, mh = statistics.median(t_o), statistics.median(t_h)
                blocks = (ours.blocks_decoded - b0) / args.reps
                kib = (ours.bytes_read - r0) / args.reps / 1024
                reads.append((what, mh * 1e3, mo * 1e3, mh / mo, blocks, kib))
                log(f"{what:10} h5py {mh * 1e3:8.2f} ms  ours {mo * 1e3:8.3f} ms  x{mh / mo:6.1f}  {kib:.0f} KiB")
        # Whole-chunk writes: the filter through h5py vs direct chunk writes.
        for nt in (1, 2):
            t_o, t_h = [], []
            for i in range(max(3, args.reps // 5)):
                with h5py.File(os.path.join(tmp, f"w{i}.h5"), "w") as f:
                    a = f.create_dataset("a", shape=SHAPE, dtype="f4", chunks=CHUNK, **opts)
                    b = f.create_dataset("b", shape=SHAPE, dtype="f4", chunks=CHUNK, **opts)
                    ds = oh5.Dataset(b, nthreads=nt)
                    t_h.append(timed(lambda a=a: a.__setitem__(Ellipsis, data)))
                    t_o.append(timed(lambda ds=ds: ds.__setitem__(Ellipsis, data)))
                os.remove(os.path.join(tmp, f"w{i}.h5"))
            mo, mh = statistics.median(t_o), statistics.median(t_h)
            writes.append((nt, mh * 1e3, mo * 1e3, mh / mo))
            log(f"write {nt} thread(s): h5py {mh * 1e3:.0f} ms  ours {mo * 1e3:.0f} ms")
    m = machine_info()
    print(
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; h5py {h5py.__version__}, "
        f"hdf5plugin {hdf5plugin.version}, HDF5 {h5py.version.hdf5_version}.  "
    )
    print(
        f"Dataset: float32 {SHAPE}, HDF5 chunks {CHUNK} (32 MiB, stored {stored / 2**20:.1f} MiB), "
        f"Blosc2 zstd 5 shuffle written by hdf5plugin; medians of {args.reps} interleaved reads, 1 thread.\n"
    )
    print("| slice | h5py + hdf5plugin (ms) | Dataset (ms) | speedup | blocks decoded | KiB read from the file |")
    print("|---|---:|---:|---:|---:|---:|")
    for what, mh, mo, r, b, k in reads:
        print(f"| {what} | {mh:.2f} | {mo:.3f} | {r:.0f}x | {b:g} | {k:.0f} |")
    print("\n| whole-chunk write of 64 MiB | h5py + hdf5plugin filter (ms) | Dataset direct (ms) | ratio |")
    print("|---|---:|---:|---:|")
    for nt, mh, mo, r in writes:
        print(f"| nthreads={nt} (ours; the filter: 1) | {mh:.0f} | {mo:.0f} | {r:.2f} |")


if __name__ == "__main__":
    main()
