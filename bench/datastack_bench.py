"""oxblosc in the Python data stack, side by side with the usual tools, in one run:

1. Zarr: write and read a 3-D float32 array (in a MemoryStore, so the codecs and zarr's
   machinery are measured, not the disk) with our codecs vs numcodecs.Blosc (Zarr v2) and
   zarr's BloscCodec (Zarr v3), same chunks, same settings;
2. Streamer vs a plain sequential block-by-block read of the same file (normal random float64
   data, the multitables benchmark's data, at clevel 0/3/9; 1-2 reader threads; ordered and
   unordered);
3. Dask ``x.sum()`` from an oxblosc file vs the same array in Zarr (v3, zarr's BloscCodec),
   same chunks, Dask's threaded scheduler with 2 threads.

Rounds are interleaved; each figure is a median; ratios are peer time / our time (> 1: we
are faster). Writes docs/benchmarks.md's ``datastack`` block. ``--quick`` for a smaller run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import dask
import dask.array as da
import numcodecs
import numpy as np
import oxblosc as ox
import zarr
from _benchutil import cpu_busy, log, machine_info, write_block
from oxblosc.numcodecs import Blosc as OxBlosc
from oxblosc.zarr import Blosc2Codec as OxBlosc2Codec
from oxblosc.zarr import BloscCodec as OxBloscCodec
from zarr.codecs import BloscCodec as ZarrBlosc


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def interleaved(cases: dict, rounds: int, cpu: dict | None = None) -> dict[str, float]:
    """Median seconds of each case, the cases run in turn ``rounds`` times; with ``cpu``, also
    the median CPU seconds of the whole process (every thread) per case into it: on a machine
    shared with other jobs the CPU spent varies far less than the wall time."""
    times = {k: [] for k in cases}
    cpus = {k: [] for k in cases}
    for _ in range(rounds):
        for k, fn in cases.items():
            c = time.process_time()
            times[k].append(timed(fn))
            cpus[k].append(time.process_time() - c)
    if cpu is not None:
        cpu.update({k: statistics.median(v) for k, v in cpus.items()})
    return {k: statistics.median(v) for k, v in times.items()}


def smooth_f32(shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.cumsum(rng.normal(size=shape).astype("f4"), axis=-1) / 10


# ---------------------------------------------------------------------------------------------


def bench_zarr(shape, chunks, rounds) -> list[str]:
    a = smooth_f32(shape)
    mb = a.nbytes / 1e6
    numcodecs.blosc.use_threads = False  # what zarr sets (one c-blosc thread per call)
    # Every codec with shuffle, and BloscLZ without it (barely compressible streams: the
    # encoder's give-up path), in Zarr v2 (numcodecs.Blosc) and v3 (zarr's BloscCodec).
    cases = [(c, 1) for c in ("blosclz", "lz4", "lz4hc", "zlib", "zstd")] + [("blosclz", 0)]
    peers = {}
    for fmt in (2, 3):
        for cname, shuffle in cases:
            name = f"v{fmt} blosc {cname}" + ("" if shuffle else " noshuffle")
            if fmt == 2:
                peers[name] = (2, numcodecs.Blosc(cname, 5, shuffle), OxBlosc(cname, 5, shuffle))
            else:
                sh = "shuffle" if shuffle else "noshuffle"
                peers[name] = (3, ZarrBlosc(cname=cname, shuffle=sh), OxBloscCodec(cname=cname, shuffle=sh))
    rows = [
        f"Zarr, {shape} float32 ({mb:.0f} MB), chunks {chunks}, MemoryStore, clevel 5, shuffle unless noted; "
        "MB/s (median), ratio = peer time / oxblosc time; CPU ratio = the same for the CPU seconds of the "
        "whole process (every thread, median).",
        "",
        "| case | op | peer MB/s | oxblosc MB/s | ratio | CPU ratio | peer cratio | oxblosc cratio "
        "| identical chunks |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (fmt, theirs, ours) in peers.items():
        stores = {"peer": zarr.storage.MemoryStore(), "ox": zarr.storage.MemoryStore()}
        arrays = {
            who: zarr.create_array(
                stores[who], shape=shape, chunks=chunks, dtype="f4", zarr_format=fmt, compressors=codec
            )
            for who, codec in (("peer", theirs), ("ox", ours))
        }
        wc, rc = {}, {}
        w = interleaved({who: (lambda z=z: z.__setitem__(Ellipsis, a)) for who, z in arrays.items()}, rounds, wc)
        r = interleaved({who: (lambda z=z: z[...]) for who, z in arrays.items()}, rounds, rc)
        assert np.array_equal(arrays["ox"][...], a)
        chunks_of = {who: {k: v.to_bytes() for k, v in s._store_dict.items() if "zarr" not in k and "." != k[0]}
                     for who, s in stores.items()}  # fmt: skip
        cr = {who: a.nbytes / sum(map(len, c.values())) for who, c in chunks_of.items()}
        same = sum(v == chunks_of["ox"].get(k) for k, v in chunks_of["peer"].items())
        for op, t, c in (("write", w, wc), ("read", r, rc)):
            rows.append(
                f"| {name} | {op} | {mb / t['peer']:.0f} | {mb / t['ox']:.0f} | {t['peer'] / t['ox']:.2f} "
                f"| {c['peer'] / c['ox']:.2f} | {cr['peer']:.2f} | {cr['ox']:.2f} | {same}/{len(chunks_of['peer'])} |"
            )
            FIGURES[f"{name} {op}"] = (mb / t["peer"], mb / t["ox"])
        log(rows[-2] + "\n" + rows[-1])
    # blosc2 (no peer in zarr-python): our figures only
    store = zarr.storage.MemoryStore()
    z = zarr.create_array(store, shape=shape, chunks=chunks, dtype="f4", compressors=OxBlosc2Codec(cname="zstd"))
    w = interleaved({"ox": lambda: z.__setitem__(Ellipsis, a)}, rounds)["ox"]
    r = interleaved({"ox": lambda: z[...]}, rounds)["ox"]
    rows.append(f"| v3 blosc2 zstd (ours only) | write / read | - | {mb / w:.0f} / {mb / r:.0f} | - | - | - | - | - |")
    return rows


def bench_streamer(tmp: Path, nrows: int, rounds: int) -> list[str]:
    rows = [
        f"Streamer vs a plain sequential read, {nrows} x 16 float64 normal random "
        f"({nrows * 128 / 1e6:.0f} MB, page-cached file), blocks of 4096 rows = the file's chunks, "
        "consumer sums each block; MB/s (median), ratio = plain time / Streamer time.",
        "",
        "| clevel | plain 1 thread | Streamer 1 ordered | Streamer 2 ordered | Streamer 2 unordered | best ratio |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    data = np.random.default_rng(1).normal(size=(nrows, 16))
    mb = data.nbytes / 1e6
    for clevel in (0, 3, 9):
        path = str(tmp / f"stream{clevel}.b2nd")
        ox.asarray(data, urlpath=path, mode="w", chunks=(4096, 16), cparams={"clevel": clevel, "codec": ox.Codec.LZ4})
        arr = ox.open(path)
        arr.schunk.dparams = ox.DParams(nthreads=1)

        def plain(arr=arr):
            for i in range(0, nrows, 4096):
                arr[i : i + 4096].sum()

        def stream(n, ordered, path=path):
            for _, block in ox.Streamer(path, block_rows=4096, nthreads=n, ordered=ordered):
                block.sum()

        t = interleaved(
            {
                "plain": plain,
                "s1": lambda: stream(1, True),
                "s2": lambda: stream(2, True),
                "s2u": lambda: stream(2, False),
            },
            rounds,
        )
        best = t["plain"] / min(t["s1"], t["s2"], t["s2u"])
        rows.append(
            f"| {clevel} | {mb / t['plain']:.0f} | {mb / t['s1']:.0f} | {mb / t['s2']:.0f} | {mb / t['s2u']:.0f} "
            f"| {best:.2f} |"
        )
        log(rows[-1])
    rows += [
        "",
        "multitables (the seed's reader) does not run on this stack (it uses `np.unicode_`, removed in "
        "NumPy 2, and raises `ReleasedResourceError` on its first batch under wrapt 2): it is compared "
        "in a NumPy-1 venv by `make bench-multitables` (bench/streamer_mt_bench.py), see below.",
    ]
    return rows


def bench_dask(tmp: Path, shape, chunks, rounds) -> list[str]:
    a = smooth_f32(shape)
    mb = a.nbytes / 1e6
    op = str(tmp / "dask.b2nd")
    ox.asarray(a, urlpath=op, mode="w", chunks=chunks, cparams={"codec": ox.Codec.ZSTD, "clevel": 5})
    zp = str(tmp / "dask.zarr")
    z = zarr.create_array(zp, shape=shape, chunks=chunks, dtype="f4", compressors=ZarrBlosc(cname="zstd", clevel=5))
    z[...] = a
    arr, mapped = ox.open(op), ox.open(op, mmap_mode="r")
    for x in (arr, mapped):
        x.schunk.dparams = ox.DParams(nthreads=1)  # Dask supplies the parallelism
    xo, xm = da.from_array(arr, chunks=arr.chunks), da.from_array(mapped, chunks=arr.chunks)
    xz = da.from_zarr(zarr.open_array(zp, mode="r"))
    with dask.config.set(scheduler="threads", num_workers=2):
        cases = {"zarr": lambda: xz.sum().compute(), "ox": lambda: xo.sum().compute()}
        t = interleaved(cases | {"mmap": lambda: xm.sum().compute()}, rounds)
    FIGURES["Dask sum (file)"] = (mb / t["zarr"], mb / t["ox"])
    FIGURES["Dask sum (mmap)"] = (mb / t["zarr"], mb / t["mmap"])
    sizes = {
        "zarr": sum(f.stat().st_size for f in Path(zp).rglob("*") if f.is_file()),
        "ox": Path(op).stat().st_size,
    }
    return [
        f"Dask `x.sum()`, {shape} float32 ({mb:.0f} MB, scaled to this 2-core machine), chunks {chunks}, "
        "zstd clevel 5 + shuffle, files on disk (page-cached), threaded scheduler, 2 threads.",
        "",
        "| source | MB/s (median) | file MB | ratio (Zarr time / oxblosc time) |",
        "|---|---:|---:|---:|",
        f"| Zarr v3 (zarr's BloscCodec) | {mb / t['zarr']:.0f} | {sizes['zarr'] / 1e6:.1f} | |",
        f"| oxblosc b2nd (`da.from_array(NDArray)`) | {mb / t['ox']:.0f} | {sizes['ox'] / 1e6:.1f} | "
        f"{t['zarr'] / t['ox']:.2f} |",
        f"| oxblosc b2nd, `mmap_mode=\"r\"` | {mb / t['mmap']:.0f} | {sizes['ox'] / 1e6:.1f} | "
        f"{t['zarr'] / t['mmap']:.2f} |",
    ]


# MB/s (peer, oxblosc) per case, for the plot.
FIGURES: dict[str, tuple[float, float]] = {}


def plot(png: Path) -> None:
    """Peer and oxblosc MB/s per Zarr and Dask case, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(FIGURES)
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(names) + 1.2), dpi=80)
    ax.barh(y - 0.2, [FIGURES[n][0] for n in names], 0.4, color="tab:gray", label="numcodecs / zarr (peer)")
    ax.barh(y + 0.2, [FIGURES[n][1] for n in names], 0.4, color="tab:red", label="oxblosc")
    ax.set_yticks(y, names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("MB/s (median), longer is better")
    ax.set_title("Zarr codecs (MemoryStore) and Dask x.sum(), same chunks and settings", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--plot", default=None, help="write a PNG of the Zarr and Dask figures here (needs matplotlib)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"))
    args = p.parse_args()
    rounds = 3 if args.quick else 7
    zshape = (16, 256, 256) if args.quick else (64, 512, 512)
    nrows = 1 << 16 if args.quick else 1 << 20
    dshape = (64, 512, 512) if args.quick else (256, 1024, 1024)
    tmp = Path(tempfile.mkdtemp(prefix="oxblosc-datastack-"))
    w0, c0 = cpu_busy()
    try:
        rows = bench_zarr(zshape, (8, 256, 256), rounds)
        rows += [""] + bench_streamer(tmp, nrows, rounds)
        rows += [""] + bench_dask(tmp, dshape, (16, 512, 512), rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    w1, c1 = cpu_busy()
    m = machine_info()
    head = [
        f"Machine: {m['cpu']}, {m['cores']} cores ({m['simd']}), Python {m['python']}, zarr {zarr.__version__}, "
        f"numcodecs {numcodecs.__version__}, dask {dask.__version__}; oxblosc release build. "
        f"The machine was shared with other jobs: it was {100 * (c1 - c0) / (w1 - w0) / m['cores']:.0f}% busy "
        "on average during the run (ours included), so figures are noisy; rounds interleaved, medians.",
        "",
    ]
    if args.plot:
        plot(Path(args.plot))
    write_block(Path(args.out), "datastack", "Python data stack: Zarr codecs, Streamer, Dask", "\n".join(head + rows))
    print("\n".join(head + rows))


if __name__ == "__main__":
    sys.exit(main())
