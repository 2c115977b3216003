#!/usr/bin/env python
"""N-dimensional arrays: oxblosc vs python-blosc2, zarr and h5py+hdf5plugin, in the same run.

The seed article's 4-d case: a float64 array of shape (50, 100, 300, 250) (3 GB; ``--quick``
uses (20, 50, 150, 125), 150 MB), chunks (10, 25, 50, 50), blocks (3, 5, 10, 20) (blocks only
for the two Blosc2 libraries), zstd clevel 1 + shuffle everywhere, default threads. The data is
a smooth field plus a little noise at a finite resolution (``field``), so it compresses like a
real measurement grid.

For each storage (``mem``: in memory; ``disk``: a file in ``--dir``) and each library,
alternately (the library order rotates every repetition):

* write: create the container from the NumPy array (disk: including closing the file);
* read: the whole array back into NumPy (disk: including opening the file);
* slices ``a[i]``, ``a[:, i]``, ``a[:, :, i]``, ``a[:, :, :, i]`` for ``--nidx`` indices ``i``
  spread over each axis (the same for every library), timed one by one.

Every library's full read and every slice is checked against NumPy once. Reported: medians
over repetitions (write, read) and over repetitions x indices (slices), and the ratio
``other / oxblosc`` of those medians (> 1: oxblosc faster). The files are in the page cache.

    python bench/nd_bench.py --quick
    python bench/nd_bench.py --write-doc docs/benchmarks.md --plot docs/img/nd_bench.png
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import blosc2
import h5py
import hdf5plugin
import numpy as np
import oxblosc
import zarr
from _benchutil import cpu_busy, log, machine_info, write_block  # noqa: E402  (bench/ is on sys.path)

SHAPE = (50, 100, 300, 250)
QUICK_SHAPE = (20, 50, 150, 125)
CHUNKS = (10, 25, 50, 50)
BLOCKS = (3, 5, 10, 20)
SLICES = ["a[i]", "a[:, i]", "a[:, :, i]", "a[:, :, :, i]"]
NAMES = {"ox": "oxblosc", "b2": "python-blosc2", "zarr": "zarr", "h5": "h5py+hdf5plugin"}


def field(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """A smooth float64 field (sum of slow sines along each axis) plus small noise, quantized to
    1/1024 like a sensor with finite resolution (so the low mantissa bytes compress)."""
    rng = np.random.default_rng(seed)
    out = np.zeros(shape, dtype=np.float64)
    for d, n in enumerate(shape):
        axis = np.sin(np.linspace(0, 3 * np.pi * (d + 1), n)) * (10.0 ** (1 - d))
        out += axis.reshape([n if k == d else 1 for k in range(len(shape))])
    out += rng.normal(0.0, 1e-2, size=shape)
    return np.round(out * 1024) / 1024


def slicer(kind: int, i: int) -> tuple:
    return (slice(None),) * kind + (i,)


# ------------------------------------------------------------------ one adapter per library
class Lib:
    """Write a NumPy array into a container, open it again, read all of it or a slice."""

    key = ""

    def __init__(self, where: Path | None):
        self.where = where  # None: in memory

    def path(self, ext: str) -> str:
        return str(self.where / f"{self.key}{ext}")


class Ox(Lib):
    key = "ox"

    def write(self, a):
        cp = {"codec": oxblosc.Codec.ZSTD, "clevel": 1, "filters": [oxblosc.Filter.SHUFFLE]}
        kw = {"urlpath": self.path(".b2nd"), "mode": "w"} if self.where else {}
        self.obj = oxblosc.asarray(a, chunks=CHUNKS, blocks=BLOCKS, cparams=cp, **kw)
        if self.where:
            del self.obj
            self.obj = None

    def open(self):
        if self.where:
            self.obj = oxblosc.open(self.path(".b2nd"), mode="r")
        return self.obj

    def read(self, h, key):
        return h[key]

    def cbytes(self):
        return self.open().cbytes


class B2(Lib):
    key = "b2"

    def write(self, a):
        cp = blosc2.CParams(codec=blosc2.Codec.ZSTD, clevel=1, filters=[blosc2.Filter.SHUFFLE])
        kw = {"urlpath": self.path(".b2nd"), "mode": "w"} if self.where else {}
        self.obj = blosc2.asarray(a, chunks=CHUNKS, blocks=BLOCKS, cparams=cp, **kw)
        if self.where:
            del self.obj
            self.obj = None

    def open(self):
        if self.where:
            self.obj = blosc2.open(self.path(".b2nd"), mode="r")
        return self.obj

    def read(self, h, key):
        return h[key]

    def cbytes(self):
        return self.open().schunk.cbytes


class Zarr(Lib):
    key = "zarr"

    def write(self, a):
        store = zarr.storage.LocalStore(self.path(".zarr")) if self.where else zarr.storage.MemoryStore()
        codec = zarr.codecs.BloscCodec(cname="zstd", clevel=1, shuffle="shuffle", typesize=8)
        z = zarr.create_array(store, shape=a.shape, chunks=CHUNKS, dtype=a.dtype, compressors=codec, overwrite=True)
        z[...] = a
        self.store = store

    def open(self):
        store = zarr.storage.LocalStore(self.path(".zarr"), read_only=True) if self.where else self.store
        return zarr.open_array(store, mode="r")

    def read(self, h, key):
        return h[key]

    def cbytes(self):
        if self.where:
            return sum(f.stat().st_size for f in Path(self.path(".zarr")).rglob("*") if f.is_file())
        return self.open().nbytes_stored()


class H5(Lib):
    key = "h5"

    def write(self, a):
        filt = hdf5plugin.Blosc2(cname="zstd", clevel=1, filters=hdf5plugin.Blosc2.SHUFFLE)
        if getattr(self, "file", None) is not None:
            self.file.close()  # the previous repetition's handle
            self.file = None
        if self.where:
            with h5py.File(self.path(".h5"), "w") as f:
                f.create_dataset("x", data=a, chunks=CHUNKS, **filt)
        else:
            self.file = h5py.File(f"mem-{id(self)}.h5", "w", driver="core", backing_store=False)
            self.file.create_dataset("x", data=a, chunks=CHUNKS, **filt)

    def open(self):
        if self.where:
            self.file = h5py.File(self.path(".h5"), "r")
        return self.file["x"]

    def read(self, h, key):
        return h[key]

    def cbytes(self):
        return self.open().id.get_storage_size()


ADAPTERS = {"ox": Ox, "b2": B2, "zarr": Zarr, "h5": H5}


# ------------------------------------------------------------------ measuring
def timed(fn) -> tuple[float, object]:
    gc.collect()
    t = time.perf_counter()
    r = fn()
    return time.perf_counter() - t, r


def run_storage(storage: str, a: np.ndarray, libs: list[str], args, tmp: Path) -> dict:
    where = tmp / storage if storage == "disk" else None
    if where:
        where.mkdir(parents=True, exist_ok=True)
    ad = {k: ADAPTERS[k](where) for k in libs}
    rng = np.random.default_rng(7)
    idx = {k: sorted(rng.choice(a.shape[k], size=min(args.nidx, a.shape[k]), replace=False)) for k in range(4)}
    res = {k: {"write": [], "read": [], **{s: [] for s in SLICES}} for k in libs}
    for rep in range(args.reps):
        order = libs[rep % len(libs) :] + libs[: rep % len(libs)]
        for k in order:
            lib = ad[k]
            dt, _ = timed(lambda lib=lib: lib.write(a))
            res[k]["write"].append(dt)
            dt, full = timed(lambda lib=lib: lib.read(lib.open(), ...))
            res[k]["read"].append(dt)
            if rep == 0 and not np.array_equal(np.asarray(full), a):
                raise SystemExit(f"{NAMES[k]} ({storage}): full read differs from the source")
            del full
            h = lib.open()
            for kind, name in enumerate(SLICES):
                for i in idx[kind]:
                    key = slicer(kind, int(i))
                    dt, got = timed(lambda h=h, key=key, lib=lib: lib.read(h, key))
                    res[k][name].append(dt)
                    if rep == 0 and not np.array_equal(np.asarray(got), a[key]):
                        raise SystemExit(f"{NAMES[k]} ({storage}): {name} with i={i} differs from NumPy")
        log(f"  {storage} rep {rep + 1}/{args.reps} done")
    out = {k: {m: statistics.median(v) for m, v in res[k].items()} for k in libs}
    for k in libs:
        out[k]["cbytes"] = ad[k].cbytes()
    return out


# ------------------------------------------------------------------ report
def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.3g}"


def table(storage: str, r: dict, libs: list[str], nbytes: int) -> str:
    metrics = ["write", "read", *SLICES]
    head = "| library | " + " | ".join(f"{m} ms" for m in metrics) + " | ratio |"
    lines = [head, "|" + "---|" * (len(metrics) + 2)]
    for k in libs:
        cells = [fmt_ms(r[k][m]) for m in metrics]
        lines.append(f"| {NAMES[k]} | " + " | ".join(cells) + f" | {nbytes / r[k]['cbytes']:.1f} |")
    if "ox" in libs:
        for k in libs:
            if k == "ox":
                continue
            cells = [f"{r[k][m] / r['ox'][m]:.2f}" for m in metrics]
            lines.append(f"| {NAMES[k]} / oxblosc | " + " | ".join(cells) + " | |")
    return f"**{storage}**\n\n" + "\n".join(lines)


def plot(results: dict, libs: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ["read", *SLICES]
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.2), squeeze=False)
    width = 0.8 / len(libs)
    for ax, (storage, r) in zip(axes[0], results.items(), strict=True):
        for j, k in enumerate(libs):
            xs = [m + (j - (len(libs) - 1) / 2) * width for m in range(len(metrics))]
            ax.bar(xs, [r[k][m] * 1e3 for m in metrics], width, label=NAMES[k])
        ax.set_xticks(range(len(metrics)), ["full read", *SLICES], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("median latency (ms, log scale)")
        ax.set_title(f"{storage}")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"shape {QUICK_SHAPE} instead of {SHAPE}")
    p.add_argument("--reps", type=int, default=None, help="repetitions (quick 3, full 3)")
    p.add_argument("--nidx", type=int, default=None, help="indices per slice kind (quick 5, full 8)")
    p.add_argument("--libs", nargs="+", default=list(ADAPTERS), choices=list(ADAPTERS))
    p.add_argument("--storage", nargs="+", default=["mem", "disk"], choices=["mem", "disk"])
    p.add_argument("--dir", type=Path, default=None, help="where the disk files go (default: a temp dir)")
    p.add_argument("--write-doc", type=Path, default=None, help="write the nd block of this Markdown file")
    p.add_argument("--plot", type=Path, default=None, help="write a PNG of latency per slice kind")
    args = p.parse_args()
    args.reps = args.reps or 3
    args.nidx = args.nidx or (5 if args.quick else 8)
    shape = QUICK_SHAPE if args.quick else SHAPE
    info = machine_info()
    log(f"building the {shape} float64 field ({np.prod(shape) * 8 / 1e9:.2f} GB)")
    a = field(shape)
    tmp = Path(tempfile.mkdtemp(prefix="nd_bench_", dir=args.dir))
    load0 = os.getloadavg()[0]
    t0, busy0 = cpu_busy()
    results = {}
    try:
        for storage in args.storage:
            log(f"{storage}:")
            results[storage] = run_storage(storage, a, args.libs, args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t1, busy1 = cpu_busy()
    wall = t1 - t0
    other = max(0.0, (busy1 - busy0) - wall) / wall if wall else 0.0
    versions = f"zarr {zarr.__version__}, h5py {h5py.__version__}, hdf5plugin {hdf5plugin.version}"
    head = (
        f"Command: `python bench/nd_bench.py{' --quick' if args.quick else ''} --reps {args.reps} "
        f"--nidx {args.nidx}`  \nshape {shape} float64 ({a.nbytes / 1e9:.2f} GB), chunks {CHUNKS}, "
        f"blocks {BLOCKS}, zstd clevel 1 + shuffle, default threads  \n"
        f"Machine: {info['cpu']} ({info['cores']} cores, {info['simd']}); python-blosc2 {info['blosc2']} "
        f"(C-Blosc2 {info['c-blosc2']}), {versions}, numpy {info['numpy']}  \n"
        f"Load average at start {load0:.1f}; other processes used {other:.1f} cores on average; "
        f"wall {wall:.0f} s.  \n"
        "Cells: median milliseconds; ratio rows: other / oxblosc (> 1: oxblosc faster); last column: "
        "compression ratio."
    )
    body = "\n\n".join(table(s, r, args.libs, a.nbytes) for s, r in results.items())
    print(head + "\n\n" + body)
    if args.plot:
        title = f"shape {shape} float64, chunks {CHUNKS}\nblocks {BLOCKS}, zstd 1 + shuffle"
        plot(results, args.libs, args.plot, title)
        log(f"wrote {args.plot}")
    if args.write_doc:
        img = f"\n\n![latency per slice kind]({os.path.relpath(args.plot, args.write_doc.parent)})" if args.plot else ""
        write_block(args.write_doc, "nd", "N-dimensional arrays", head + "\n\n" + body + img)
        log(f"wrote {args.write_doc}")


if __name__ == "__main__":
    main()
