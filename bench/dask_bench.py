"""Dask over oxblosc vs Zarr and HDF5 on a >= 4 GB array, threads and a 2-process cluster.

One 3-D float32 array (default (1024, 1024, 1024), 4.3 GB) made chunk by chunk by Dask
(cheap: a fixed base chunk plus an integer per chunk, values on a 1/16 grid, so it
compresses about as well as a quantised field), stored with the same chunks and the same
codec settings (LZ4, clevel 5, shuffle) in:

- an oxblosc b2nd file: ``oxblosc.dask.to_oxblosc`` / ``da.from_array(oxblosc.open(...))``;
- Zarr v2 with ``numcodecs.Blosc`` (``da.to_zarr`` / ``da.from_zarr``), and the same with
  ``oxblosc.numcodecs.Blosc`` as the compressor (our codec inside Zarr);
- HDF5 through h5py + hdf5plugin's Blosc2 filter (``da.store`` with a lock: HDF5 writes one
  chunk at a time, and from processes only one writer may have the file open), and the same
  file read through ``oxblosc.hdf5.Dataset`` (our reader of Blosc2 HDF5 chunks); writes
  through ``oxblosc.hdf5.Dataset`` (compressed outside HDF5, direct chunk writes) with the
  threaded scheduler.

Each operation (write; ``x.sum()``; a 30-plane slab across two chunk layers; a strided selection
``x[::32, ::4, ::4]``) runs on Dask's threaded scheduler (2 threads) and on a
``distributed.LocalCluster`` of 2 worker processes (1 thread each); the sources of one
operation run interleaved, ``--rounds`` times; medians; ratio = peer time / oxblosc time.
Files go to a temporary directory (``--tmp``), removed at the end. Writes the ``daskbig``
block of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

import dask
import dask.array as da
import h5py
import hdf5plugin
import numcodecs
import numpy as np
import oxblosc as ox
import oxblosc.dask
import oxblosc.hdf5
import oxblosc.numcodecs
import zarr

CHUNKS = (16, 512, 512)
_BASE: dict[tuple, np.ndarray] = {}


def _base(shape) -> np.ndarray:
    """The base chunk, made once per process (worker processes make their own)."""
    b = _BASE.get(shape)
    if b is None:
        rng = np.random.default_rng(0)
        walk = np.cumsum(rng.normal(size=shape).astype("f4"), axis=-1)
        b = _BASE[shape] = np.round(walk * 16) / np.float32(16)
    return b


def _make_chunk(block_info=None):
    info = block_info[None]
    shape = tuple(b - a for a, b in info["array-location"])
    k = sum(i * 7**n for n, i in enumerate(info["chunk-location"]))
    return _base(CHUNKS)[tuple(slice(0, n) for n in shape)] + np.float32(k % 1000)


def source(shape) -> da.Array:
    return da.map_blocks(
        _make_chunk, chunks=tuple(_split(n, c) for n, c in zip(shape, CHUNKS, strict=False)), dtype="f4"
    )


def _split(n: int, c: int) -> tuple[int, ...]:
    return tuple(min(c, n - i) for i in range(0, n, c))


class H5:
    """An HDF5 dataset as a Dask source or target that pickles as (path, name) and opens the
    file itself (h5py objects do not pickle): once per process for reading, for each write
    (another process may write next)."""

    _open: dict[tuple, tuple[int, h5py.Dataset]] = {}

    def __init__(self, path, name, shape, ours: bool = False):
        self.path, self.name, self.shape, self.ours = str(path), name, tuple(shape), ours
        self.dtype, self.ndim = np.dtype("f4"), len(shape)

    def __reduce__(self):
        return H5, (self.path, self.name, self.shape, self.ours)

    def _dataset(self):
        key = (self.path, self.name, self.ours)
        got = H5._open.get(key)
        if got is None or got[0] != os.getpid():
            d = h5py.File(self.path, "r")[self.name]
            got = H5._open[key] = (os.getpid(), oxblosc.hdf5.Dataset(d, nthreads=1) if self.ours else d)
        return got[1]

    def __getitem__(self, key):
        return self._dataset()[key]

    def __setitem__(self, key, value):
        with _open_h5(self.path) as f:
            d = f[self.name]
            if self.ours:
                oxblosc.hdf5.Dataset(d, nthreads=1)[key] = value
            else:
                d[key] = value

    @staticmethod
    def close_all():
        for _, d in H5._open.values():
            (d.close() if hasattr(d, "close") and not isinstance(d, h5py.Dataset) else d.file.close())
        H5._open.clear()


def _open_h5(path, patience: float = 600.0) -> h5py.File:
    """The file opened for writing, waiting while another process still has it open (HDF5's
    own file lock): under heavy load a ``distributed.Lock`` lease can lapse before its holder
    closes the file, and the next writer would fail with ``BlockingIOError``."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return h5py.File(path, "r+")
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def h5_create(path, shape, cname="lz4"):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=shape, chunks=CHUNKS, dtype="f4",
                         **hdf5plugin.Blosc2(cname=cname, clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))  # fmt: skip


def _disk_read() -> int:
    """Bytes this process has read from storage (not the page cache), per /proc/self/io."""
    try:
        with open("/proc/self/io") as f:
            return int(next(line for line in f if line.startswith("read_bytes:")).split()[1])
    except (OSError, StopIteration):
        return 0


def timed(fn) -> tuple[float, float, float]:
    """Wall seconds, this process's CPU seconds (all its threads) and MB read from disk."""
    t, c, d = time.perf_counter(), time.process_time(), _disk_read()
    fn()
    return time.perf_counter() - t, time.process_time() - c, (_disk_read() - d) / 1e6


# CPU seconds and disk MB (medians) of the threaded runs: (op, source) -> (cpu, disk)
EXTRA: dict[tuple[str, str], tuple[float, float]] = {}


def interleaved(cases: dict, rounds: int, log, op: str | None = None) -> dict[str, float]:
    got = {k: [] for k in cases}
    keys = list(cases)
    for r in range(rounds):
        # Each round starts with another source: the first compute of an operation on a
        # cluster can pay a one-off client cost (0.4-0.6 s of CPU seen in session 8), which
        # always fell on oxblosc, the first source, before.
        for k in keys[r % len(keys) :] + keys[: r % len(keys)]:
            fn = cases[k]
            got[k].append(timed(fn))
            w, c, d = got[k][-1]
            log(f"  round {r} {k}: {w:.2f} s, process CPU {c:.2f} s, {d:.0f} MB read from disk")
    if op is not None:
        for k, v in got.items():
            EXTRA[(op, k)] = (statistics.median(x[1] for x in v), statistics.median(x[2] for x in v))
    return {k: statistics.median(x[0] for x in v) for k, v in got.items()}


def dir_size(p: Path) -> int:
    return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def run(tmp: Path, shape, rounds: int, log, scheds=("threads", "processes")) -> list[str]:
    x = source(shape)
    paths = {
        "ox": tmp / "x.b2nd",
        "zarr": tmp / "x.zarr",
        "zarr+ox": tmp / "xo.zarr",
        "h5": tmp / "x.h5",
        "h5+ox": tmp / "xo.h5",
    }
    cp = {"codec": ox.Codec.LZ4, "clevel": 5, "nthreads": 1}
    lock = threading.Lock()

    def w_ox():
        oxblosc.dask.to_oxblosc(x, paths["ox"], chunks=CHUNKS, cparams=cp)

    def w_zarr(codec, key):
        def go():
            z = zarr.create_array(str(paths[key]), shape=shape, chunks=CHUNKS, dtype="f4", zarr_format=2,
                                  compressors=codec, overwrite=True)  # fmt: skip
            da.to_zarr(x, z)

        return go

    def w_h5(ours, key, lk):
        def go():
            h5_create(paths[key], shape)
            da.store(x, H5(paths[key], "x", shape, ours), lock=lk)

        return go

    def readers():
        H5.close_all()
        a = ox.open(str(paths["ox"]))
        a.schunk.dparams = ox.DParams(nthreads=1)  # Dask supplies the parallelism
        return {
            "ox": da.from_array(a, chunks=CHUNKS),
            "zarr": da.from_zarr(zarr.open_array(str(paths["zarr"]), mode="r")),
            "zarr+ox": da.from_zarr(zarr.open_array(str(paths["zarr+ox"]), mode="r")),
            "h5": da.from_array(H5(paths["h5"], "x", shape), chunks=CHUNKS),
            "h5+ox": da.from_array(H5(paths["h5"], "x", shape, ours=True), chunks=CHUNKS),
        }

    ops = {
        "sum": lambda y: y.sum(dtype="f8").compute(),
        "slab": lambda y: y[shape[0] // 2 - 12 : shape[0] // 2 + 18].compute(),
        "strided": lambda y: y[::32, ::4, ::4].compute(),
    }
    results = {}
    zblosc = numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)
    oblosc = oxblosc.numcodecs.Blosc("lz4", 5, oxblosc.numcodecs.Blosc.SHUFFLE)
    for sched in scheds:
        log(f"scheduler: {sched}")
        if sched == "threads":
            ctx = dask.config.set(scheduler="threads", num_workers=2)
            client = cluster = None
            h5lock = lock
        else:
            from distributed import Client, LocalCluster, Lock

            # A lock lease must outlive a write on a loaded machine (the default 30 s did not).
            dask.config.set({"distributed.scheduler.locks.lease-timeout": "600s"})
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
            ctx = dask.config.set(scheduler=client.get)
            h5lock = Lock("h5-writer")
        try:
            with ctx:
                writes = {
                    "ox": w_ox,
                    "zarr": w_zarr(zblosc, "zarr"),
                    "zarr+ox": w_zarr(oblosc, "zarr+ox"),
                    "h5": w_h5(False, "h5", h5lock),
                }
                if sched == "threads":  # one h5py file handle in one process
                    writes["h5+ox"] = w_h5(True, "h5+ox", h5lock)
                results[(sched, "write")] = interleaved(writes, rounds, log)
                srcs = readers()
                if sched == "threads":  # every source holds the same values (h5+ox was written by us)
                    ref = srcs["ox"][::64, ::64, ::64].compute()
                    for k, y in srcs.items():
                        assert np.array_equal(y[::64, ::64, ::64].compute(), ref), k
                    with h5py.File(paths["h5+ox"], "r") as f:
                        assert np.array_equal(f["x"][::64, ::64, ::64], ref)
                for op, fn in ops.items():
                    cases = {k: partial(fn, y) for k, y in srcs.items()}
                    results[(sched, op)] = interleaved(cases, rounds, log, op if sched == "threads" else None)
        finally:
            H5.close_all()
            if client is not None:
                client.close()
                cluster.close()
    sizes = {k: dir_size(p) / 1e6 for k, p in paths.items() if p.exists()}
    return tables(results, sizes, shape)


NAMES = {
    "ox": "oxblosc b2nd",
    "zarr": "Zarr v2, numcodecs.Blosc",
    "zarr+ox": "Zarr v2, oxblosc.numcodecs.Blosc",
    "h5": "HDF5, h5py + hdf5plugin Blosc2",
    "h5+ox": "HDF5 via oxblosc.hdf5.Dataset",
}


def tables(results: dict, sizes: dict, shape) -> list[str]:
    """The markdown tables (and the plot, with ``--plot``) of a run's medians."""
    names = NAMES
    mb = np.prod(shape) * 4 / 1e6
    sized = ("file sizes (MB): " + ", ".join(f"{names[k]} {v:.0f}" for k, v in sizes.items())) if sizes else (
        "file sizes: not recorded (tables rebuilt from a run's log)")  # fmt: skip
    rows = [
        f"Array {shape} float32 ({mb:.0f} MB), chunks {CHUNKS}, LZ4 clevel 5 + shuffle everywhere; " + sized + ". "
        "Seconds (median of the rounds) and ratio = that source's time / oxblosc b2nd time (> 1: oxblosc faster). "
        "`threads`: Dask's threaded scheduler, 2 threads; `processes`: `distributed.LocalCluster(n_workers=2, "
        "threads_per_worker=1)`. Slab = `x[n/2-12 : n/2+18]` (30 planes, three chunk layers), "
        "strided = `x[::32, ::4, ::4]`. "
        "HDF5 reads of `oxblosc.hdf5.Dataset` are of the h5py + hdf5plugin file.",
        "",
        "| scheduler | op | " + " | ".join(names.values()) + " |",
        "|---|---|" + "---:|" * len(names),
    ]
    for (sched, op), t in results.items():
        cells = []
        for k in names:
            if k not in t:
                cells.append("-")
            elif k == "ox":
                cells.append(f"{t[k]:.2f} s")
            else:
                cells.append(f"{t[k]:.2f} s ({t[k] / t['ox']:.2f})")
        rows.append(f"| {sched} | {op} | " + " | ".join(cells) + " |")
    rows += [
        "",
        "Threaded reads, the same runs: CPU seconds of the whole process (every thread; median) / MB "
        "read from disk rather than the page cache (median; /proc/self/io).",
        "",
        "| op | " + " | ".join(names.values()) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for op in ("sum", "slab", "strided"):
        cells = [f"{EXTRA[(op, k)][0]:.2f} s / {EXTRA[(op, k)][1]:.0f}" if (op, k) in EXTRA else "-" for k in names]
        rows.append(f"| {op} | " + " | ".join(cells) + " |")
    if PLOT is not None:
        plot(results, names, shape, PLOT)
    return rows


def from_log(text: str) -> dict:
    """The medians of a run from its log (the ``round r source: s, process CPU c, d MB``
    lines, in the order ``run`` makes them: per scheduler, write then each read op), for
    ``--from-log``; fills ``EXTRA`` for the threaded reads like ``interleaved``."""
    ops = ["write", "sum", "slab", "strided"]
    results, blocks, sched = {}, [], None
    for line in text.splitlines():
        if line.startswith("scheduler: "):
            sched = line.split()[1]
            continue
        m = re.match(r"\s+round (\d+) (\S+): ([\d.]+) s, process CPU ([\d.]+) s, (\d+) MB", line)
        if not m:
            continue
        r, k = int(m[1]), m[2]
        if not blocks or blocks[-1][0] != sched or (r == 0 and k in blocks[-1][1] and len(blocks[-1][1][k]) > 0
                                                        and blocks[-1][2] > 0):  # fmt: skip
            blocks.append((sched, {}, 0))
        sc, got, _ = blocks[-1]
        got.setdefault(k, []).append(tuple(float(m[i]) for i in (3, 4, 5)))
        blocks[-1] = (sc, got, r)
    for n, (sc, got, _) in enumerate(blocks):
        op = ops[sum(1 for b in blocks[:n] if b[0] == sc)]
        results[(sc, op)] = {k: statistics.median(x[0] for x in v) for k, v in got.items()}
        if sc == "threads" and op != "write":
            for k, v in got.items():
                EXTRA[(op, k)] = (statistics.median(x[1] for x in v), statistics.median(x[2] for x in v))
    return results


PLOT: Path | None = None


def plot(results: dict, names: dict, shape, png: Path) -> None:
    """Seconds per operation and source, one panel per scheduler (oxblosc b2nd in red)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scheds = sorted({s for s, _ in results}, reverse=True)
    ops = [op for s, op in results if s == scheds[0]]
    fig, axes = plt.subplots(len(scheds), len(ops), figsize=(13, 2.4 * len(scheds) + 0.8), dpi=80, squeeze=False)
    for r, sched in enumerate(scheds):
        for c, op in enumerate(ops):
            ax, t = axes[r][c], results.get((sched, op), {})
            keys = [k for k in names if k in t]
            ax.barh([names[k].replace(", ", "\n", 1) for k in keys], [t[k] for k in keys],
                    color=["tab:red" if k == "ox" else "tab:gray" for k in keys])  # fmt: skip
            ax.set_title(f"{sched}: {op} (s)", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.invert_yaxis()
            if c and keys == [k for k in names if k in results.get((sched, ops[0]), {})]:
                ax.set_yticklabels([])  # the same sources as the first panel of the row
    title = f"Dask over a {shape} float32 array (chunks {CHUNKS}, LZ4 5 + shuffle); shorter is better"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png)


def main() -> None:
    from _benchutil import cpu_busy, log, machine_info, write_block

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="1024,1024,1024")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scheds", default="threads,processes", help="schedulers to run, comma-separated")
    p.add_argument("--tmp", default=None, help="directory for the files (default: the system's temp)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"))
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument("--plot", default=None, help="write a PNG of the seconds here (needs matplotlib)")
    p.add_argument("--from-log", default=None, help="rebuild the tables from this log of a run instead of running")
    args = p.parse_args()
    global PLOT
    PLOT = Path(args.plot) if args.plot else None
    if PLOT is not None:
        import matplotlib  # noqa: F401  (fail now, not after the run)
    shape = tuple(int(s) for s in args.shape.split(","))
    m = machine_info()
    if args.from_log:
        rows = tables(from_log(Path(args.from_log).read_text()), {}, shape)
        busy = "(load: see the text)"
    else:
        tmp = Path(tempfile.mkdtemp(prefix="oxblosc-daskbig-", dir=args.tmp))
        w0, c0 = cpu_busy()
        try:
            rows = run(tmp, shape, args.rounds, log, tuple(args.scheds.split(",")))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        w1, c1 = cpu_busy()
        busy = (f"{100 * (c1 - c0) / (w1 - w0) / m['cores']:.0f}% busy on average during the run (ours included); "
                f"{(w1 - w0) / 60:.0f} min in all.")  # fmt: skip
    head = [
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, dask {dask.__version__}, zarr "
        f"{zarr.__version__}, numcodecs {numcodecs.__version__}, h5py {h5py.__version__}, hdf5plugin "
        f"{hdf5plugin.version}; oxblosc release build; {args.rounds} interleaved rounds, medians. The machine was "
        f"shared with other jobs: {busy}",
        "",
    ]
    text = "\n".join(head + rows)
    print(text)
    if not args.no_write:
        write_block(Path(args.out), "daskbig", "Dask on a >= 4 GB array: oxblosc vs Zarr and HDF5", text)


if __name__ == "__main__":
    # Run as the importable module `dask_bench` so that worker processes unpickle its
    # functions and classes by reference (they import it from this directory).
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(importlib.import_module("dask_bench").main())
