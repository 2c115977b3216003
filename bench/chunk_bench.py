#!/usr/bin/env python
"""oxblosc vs python-blosc2, chunk by chunk, in the same process.

Every cell of the matrix (dataset x codec x clevel x filter set x nthreads) compresses one
buffer (the first ``--chunk-mib`` MiB of the dataset) with ``compress2`` and decompresses it
with ``decompress2`` into a preallocated, touched NumPy array and, separately, to a new
buffer (``decompress2(chunk)``), with both libraries and the
same parameters (typesize from the dtype, same nthreads, automatic blocksize). Before timing,
each cell is verified: the oxblosc round trip is exact, and each library decodes the other's
chunk. Timings are interleaved (the order of the two libraries alternates every repetition)
and the median is reported. Throughput = uncompressed bytes / time, GB = 1e9 bytes.

Slow cells (one compression call above ``--slow-s`` seconds, e.g. zstd clevel 9) are measured
on a shorter prefix (``--slow-chunk-mib``, or a quarter of it for the slowest) and with fewer
repetitions so that the whole matrix
fits its time budget; the ``MiB`` column says which buffer size a cell used.

    python bench/chunk_bench.py --quick                   # < 1 min
    python bench/chunk_bench.py                           # full matrix, < 10 min
    python bench/chunk_bench.py --write-doc docs/benchmarks.md
    python bench/chunk_bench.py --datasets climate_f4 --codecs zstd --clevels 5 --nthreads 2

Datasets: the synthetic ones of ``../shared/bench/_datasets.py`` (same bytes as the perf
anchors) and real arrays loaded with ``../shared/bench/realdata.py`` (packages from
``bench/demo-requirements.txt``; a missing one is skipped with a note).
"""

from __future__ import annotations

import argparse
import csv
import gc
import math
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("OXBLOSC_SHARED", REPO.parent / "shared"))
if not (SHARED / "bench" / "_datasets.py").exists():
    sys.exit(f"chunk_bench: {SHARED / 'bench'} not found (set OXBLOSC_SHARED to the shared/ directory)")
sys.path.insert(0, str(SHARED / "bench"))

import _datasets  # noqa: E402
import blosc2  # noqa: E402
import oxblosc  # noqa: E402
import realdata  # noqa: E402
from _benchutil import cpu_busy, log, machine_info  # noqa: E402  (bench/ is on sys.path)

MiB = 1 << 20
GB = 1e9
CODECS = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]
FILTER_SETS = {
    "none": ["NOFILTER"],
    "shuffle": ["SHUFFLE"],
    "bitshuffle": ["BITSHUFFLE"],
    "shuffle+bytedelta": ["SHUFFLE", "BYTEDELTA"],
}
SYNTHETIC = list(_datasets.DATASETS)
REAL = ["de405/moon", "dicom/cr_radiograph_rg3", "islp/nci60_expression"]
QUICK_DATASETS = ["climate_f4", "genotype_i1", "dicom/cr_radiograph_rg3"]
LIBS = {"ox": oxblosc, "b2": blosc2}


# ------------------------------------------------------------------ data
def load_dataset(name: str, nbytes: int) -> np.ndarray | None:
    """The first ``nbytes`` of a dataset as a flat array (None if its package is missing)."""
    if name in _datasets.DATASETS:
        arr = _datasets.make(name, nbytes)
    else:
        try:
            arr = realdata.load(name)
        except (realdata.MissingData, ImportError) as e:
            log(f"skipping {name}: {e}")
            return None
    flat = np.ascontiguousarray(arr).reshape(-1)
    return flat[: max(1, nbytes // flat.itemsize)].copy()


# ------------------------------------------------------------ one cell
def params(lib, codec: str, clevel: int, fset: str, typesize: int, nthreads: int) -> dict:
    filters = [getattr(lib.Filter, f) for f in FILTER_SETS[fset]]
    return {
        "codec": getattr(lib.Codec, codec.upper()),
        "clevel": clevel,
        "typesize": typesize,
        "nthreads": nthreads,
        "filters": filters,
        "filters_meta": [0] * len(filters),
    }


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def verify(src: np.ndarray, cp: dict, nthreads: int, label: str) -> tuple[dict, float]:
    """Compress with both, check round trip and cross-decoding; return the chunks and the time
    one compress + decompress of both libraries took (for choosing the repetitions)."""
    chunks, spent = {}, 0.0
    for key, lib in LIBS.items():
        t0 = time.perf_counter()
        chunks[key] = lib.compress2(src, **cp[key])
        spent += time.perf_counter() - t0
    dst = np.empty_like(src)
    for reader in ("ox", "b2"):
        for writer in ("ox", "b2"):
            dst.fill(0)
            t0 = time.perf_counter()
            LIBS[reader].decompress2(chunks[writer], dst=dst, nthreads=nthreads)
            if reader == writer:
                spent += time.perf_counter() - t0
            if not np.array_equal(dst.view(np.uint8), src.view(np.uint8)):
                raise AssertionError(f"{label}: {reader} cannot decode the {writer} chunk exactly")
    return chunks, spent


def measure(src: np.ndarray, cp: dict, nthreads: int, chunks: dict, reps: int, new_bytes_first: bool = False) -> dict:
    """Interleaved timings: {(lib, op): [seconds, ...]}."""
    dst = {k: np.ones_like(src) for k in LIBS}  # touched, so no page faults are timed
    times = defaultdict(list)
    order = list(LIBS)
    gc_on = gc.isenabled()
    gc.disable()
    try:
        for rep in range(reps):
            seq = order if rep % 2 == 0 else order[::-1]
            for k in seq:
                lib, p = LIBS[k], cp[k]
                times[(k, "c")].append(timed(lambda lib=lib, p=p: lib.compress2(src, **p)))

            # Into a caller buffer, and without one: each library returns a new ``bytes`` (its
            # allocation and page faults are part of what the user waits for; issue 13 targets both
            # modes). The first of the two right after the compressions is the colder one
            # (decision 0011); `new_bytes_first` swaps them.
            def into_buffer(seq=seq):
                for k in seq[::-1]:
                    lib, c, d = LIBS[k], chunks[k], dst[k]
                    times[(k, "d")].append(
                        timed(lambda lib=lib, c=c, d=d: lib.decompress2(c, dst=d, nthreads=nthreads))
                    )

            def new_bytes(seq=seq):
                for k in seq:
                    lib, c = LIBS[k], chunks[k]
                    times[(k, "n")].append(timed(lambda lib=lib, c=c: lib.decompress2(c, nthreads=nthreads)))

            for step in (new_bytes, into_buffer) if new_bytes_first else (into_buffer, new_bytes):
                step()
    finally:
        if gc_on:
            gc.enable()
    return times


def run_cell(data: np.ndarray, ds: str, codec: str, clevel: int, fset: str, nt: int, args) -> dict:
    label = f"{ds} {codec}/{clevel}/{fset}/{nt}T"
    ts = data.itemsize
    cp = {k: params(lib, codec, clevel, fset, ts, nt) for k, lib in LIBS.items()}
    # Slow cells use a shorter prefix: the largest size whose compression is predicted (from one
    # oxblosc call on the shortest prefix) to take at most --slow-s; the whole buffer is never
    # compressed in a slow cell.
    src = data
    sizes = [int(m * MiB) // ts for m in (args.slow_chunk_mib, args.slow_chunk_mib / 4)]
    sizes = [n for n in sizes if 0 < n < data.size]
    if sizes:
        probe = np.ascontiguousarray(data[: sizes[-1]])
        t = timed(lambda: oxblosc.compress2(probe, **cp["ox"]))
        for n in [data.size, *sizes]:
            src = data if n == data.size else np.ascontiguousarray(data[:n])
            if t * n / sizes[-1] <= args.slow_s:
                break
    chunks, spent = verify(src, cp, nt, label)
    # Fast cells get more repetitions (up to --max-reps, about --cell-s of timed work): cheap, and
    # the median then resists the preemptions of a shared machine.
    reps = max(args.reps, min(args.max_reps, int(args.cell_s / max(spent, 1e-9))))
    if spent > args.slow_s:
        reps = min(args.reps, args.slow_reps)
    times = measure(src, cp, nt, chunks, reps, args.new_bytes_first)
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    n = src.nbytes
    size = {k: len(c) for k, c in chunks.items()}
    bsize = {k: LIBS[k].get_cbuffer_sizes(c)[2] for k, c in chunks.items()}
    row = {
        "dataset": ds,
        "dtype": str(data.dtype),
        "codec": codec,
        "clevel": clevel,
        "filter": fset,
        "nthreads": nt,
        "MiB": round(n / MiB, 3),
        "reps": reps,
        "ox_c_GBps": n / med[("ox", "c")] / GB,
        "b2_c_GBps": n / med[("b2", "c")] / GB,
        "ox_d_GBps": n / med[("ox", "d")] / GB,
        "b2_d_GBps": n / med[("b2", "d")] / GB,
        "ox_n_GBps": n / med[("ox", "n")] / GB,
        "b2_n_GBps": n / med[("b2", "n")] / GB,
        "ox_cbytes": size["ox"],
        "b2_cbytes": size["b2"],
        "ox_blocksize": bsize["ox"],
        "b2_blocksize": bsize["b2"],
        "identical": chunks["ox"] == chunks["b2"],
        "ratio_b2": n / size["b2"],
    }
    for k in LIBS:
        for op in OPS:
            row[f"{k}_{op}_GBps_best"] = n / best[(k, op)] / GB
    row["c_ratio"] = row["ox_c_GBps"] / row["b2_c_GBps"]
    row["d_ratio"] = row["ox_d_GBps"] / row["b2_d_GBps"]
    row["n_ratio"] = row["ox_n_GBps"] / row["b2_n_GBps"]
    row["size_ratio"] = size["ox"] / size["b2"]
    return row


# ------------------------------------------------------------- summary
def gmean(xs) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def md_table(rows: list[dict], cols: list[str]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" if c[0].isdigit() else "---" for c in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def f2(x: float) -> str:
    return f"{x:.2f}" if x >= 0.995 else f"{x:.3f}"


# The timed operations: compress, decompress into a caller buffer, decompress to new bytes.
OPS = ("c", "d", "n")
OP_NAMES = {"c": "compress", "d": "decompress", "n": "decompress (new bytes)"}
OP_KEYS = {v: k for k, v in OP_NAMES.items()}


def worst_ops(rows: list[dict], n: int) -> list[tuple[float, str, dict]]:
    ops = [(r[f"{o}_ratio"], OP_NAMES[o], r) for o in OPS for r in rows]
    ops.sort(key=lambda t: t[0])
    return ops[:n]


def cell_key(r: dict) -> tuple:
    return (r["dataset"], r["codec"], r["clevel"], r["filter"], r["nthreads"])


def summary(rows: list[dict], recheck: dict) -> str:
    md = []
    md.append("### Geometric means of oxblosc / python-blosc2 speed ratios (> 1: oxblosc faster)\n")
    groups = [("all cells", lambda r: "all")]
    groups += [(f"{g}", (lambda r, g=g: r[g])) for g in ("nthreads", "codec", "filter", "clevel", "dataset")]
    tab = []
    for title, key in groups:
        by = defaultdict(list)
        for r in rows:
            by[key(r)].append(r)
        for k, rs in by.items():
            c = gmean(r["c_ratio"] for r in rs)
            d = gmean(r["d_ratio"] for r in rs)
            nb = gmean(r["n_ratio"] for r in rs)
            tab.append(
                {
                    "group": title if title == "all cells" else f"{title} = {k}",
                    "cells": len(rs),
                    "compress": f2(c),
                    "decompress": f2(d),
                    "decompress, new bytes": f2(nb),
                    "overall": f2(math.sqrt(c * d)),
                }
            )
    cb, db, nbb = (gmean(r[f"ox_{o}_GBps_best"] / r[f"b2_{o}_GBps_best"] for r in rows) for o in OPS)
    tab.insert(
        1,
        {
            "group": "all cells, best of reps instead of median",
            "cells": len(rows),
            "compress": f2(cb),
            "decompress": f2(db),
            "decompress, new bytes": f2(nbb),
            "overall": f2(math.sqrt(cb * db)),
        },
    )
    md.append(md_table(tab, ["group", "cells", "compress", "decompress", "decompress, new bytes", "overall"]))
    md.append(
        "\n`decompress` writes into a preallocated, touched array; `decompress, new bytes` is "
        "`decompress2(chunk)` returning a new buffer; `overall` = sqrt(compress x decompress)."
    )
    for o in OPS:
        below = sum(r[f"{o}_ratio"] < 0.9 for r in rows)
        md.append(f"- {OP_NAMES[o]}: {below} of {len(rows)} cells below 0.9x.")

    md.append("\n### The 10 worst cells (lowest speed ratio, any operation)\n")
    worst = []
    for ratio, op, r in worst_ops(rows, 10):
        o = OP_KEYS[op]
        ox, b2 = f"ox_{o}_GBps", f"b2_{o}_GBps"
        worst.append(
            {
                "cell": f"{r['dataset']} {r['codec']}/{r['clevel']}/{r['filter']}/{r['nthreads']}T",
                "op": op,
                "oxblosc GB/s": f"{r[ox]:.3f}",
                "blosc2 GB/s": f"{r[b2]:.3f}",
                "ratio": f2(ratio),
                "re-measured": recheck.get((cell_key(r), op), ""),
            }
        )
    md.append(md_table(worst, ["cell", "op", "oxblosc GB/s", "blosc2 GB/s", "ratio", "re-measured"]))
    if recheck:
        md.append(
            "\n`re-measured`: the cell measured again after the matrix with the maximum number of repetitions "
            "(oxblosc GB/s / blosc2 GB/s = ratio); a large change means the first measurement was disturbed "
            "by other processes."
        )

    md.append("\n### Compressed sizes\n")
    n_ident = sum(r["identical"] for r in rows)
    within = [r for r in rows if abs(r["size_ratio"] - 1) <= 0.01]
    lz = [r for r in rows if r["codec"] == "blosclz"]
    lz_ident = sum(r["identical"] for r in lz)
    worst_size = max(rows, key=lambda r: abs(r["size_ratio"] - 1))
    bs_diff = sum(r["ox_blocksize"] != r["b2_blocksize"] for r in rows)
    md.append(f"- {len(within)} of {len(rows)} cells within 1% of python-blosc2's compressed size.")
    one = [r for r in rows if r["nthreads"] == 1]
    lz1 = [r for r in one if r["codec"] == "blosclz"]
    md.append(
        f"- {n_ident} of {len(rows)} chunks byte-identical to python-blosc2's; with 1 thread "
        f"{sum(r['identical'] for r in one)} of {len(one)} (with several threads C-Blosc2 stores the blocks "
        "in completion order, so a chunk can differ in its block offsets while having the same size)."
    )
    md.append(
        f"- BloscLZ: {lz_ident} of {len(lz)} chunks byte-identical; with 1 thread "
        f"{sum(r['identical'] for r in lz1)} of {len(lz1)}."
    )
    md.append(
        f"- Largest size difference: {(worst_size['size_ratio'] - 1) * 100:+.3f}% "
        f"({worst_size['dataset']} {worst_size['codec']}/{worst_size['clevel']}/{worst_size['filter']}/"
        f"{worst_size['nthreads']}T)."
    )
    md.append(f"- Cells where the automatic blocksize differs: {bs_diff}.")
    return "\n".join(md)


def full_table(rows: list[dict]) -> str:
    cols = [
        "dataset",
        "codec",
        "cl",
        "filter",
        "T",
        "MiB",
        "ox c",
        "b2 c",
        "c ratio",
        "ox d",
        "b2 d",
        "d ratio",
        "ox n",
        "b2 n",
        "n ratio",
        "ox bytes",
        "b2 bytes",
        "size ratio",
        "cratio",
    ]
    tab = []
    for r in rows:
        tab.append(
            {
                "dataset": r["dataset"],
                "codec": r["codec"],
                "cl": r["clevel"],
                "filter": r["filter"],
                "T": r["nthreads"],
                "MiB": f"{r['MiB']:g}",
                "ox c": f"{r['ox_c_GBps']:.3f}",
                "b2 c": f"{r['b2_c_GBps']:.3f}",
                "c ratio": f2(r["c_ratio"]),
                "ox d": f"{r['ox_d_GBps']:.2f}",
                "b2 d": f"{r['b2_d_GBps']:.2f}",
                "d ratio": f2(r["d_ratio"]),
                "ox n": f"{r['ox_n_GBps']:.2f}",
                "b2 n": f"{r['b2_n_GBps']:.2f}",
                "n ratio": f2(r["n_ratio"]),
                "ox bytes": r["ox_cbytes"],
                "b2 bytes": r["b2_cbytes"],
                "size ratio": "=" if r["identical"] else f"{r['size_ratio']:.4f}",
                "cratio": f"{r['ratio_b2']:.1f}",
            }
        )
    return (
        "Speeds in GB/s of uncompressed data (median); c = compress, d = decompress into a caller "
        "buffer, n = decompress to new bytes; ratio = oxblosc / python-blosc2; "
        "size ratio `=` means byte-identical chunks; cratio = uncompressed / compressed (python-blosc2).\n\n"
        + md_table(tab, cols)
    )


def header(args, info: dict, load0, load1, other_cores: float, wall: float, ncells: int) -> str:
    return "\n".join(
        [
            f"Command: `{' '.join(['python bench/chunk_bench.py', *sys.argv[1:]])}`",
            f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; {ncells} cells in {wall:.0f} s.",
            f"Machine: {info['cpu']} ({info['simd']}), {info['cores']} cores, Linux {info['kernel']}, "
            f"Python {info['python']}.",
            f"Versions: oxblosc {info['oxblosc']}, python-blosc2 {info['blosc2']} (C-Blosc2 {info['c-blosc2']}), "
            f"NumPy {info['numpy']}.",
            f"Load average before: {' '.join(f'{x:.2f}' for x in load0)}; after: "
            f"{' '.join(f'{x:.2f}' for x in load1)}; other processes used {other_cores:.2f} cores on average "
            "during the run.",
            f"Method: compress2 / decompress2 on one buffer of up to {args.chunk_mib:g} MiB per cell "
            f"(slow cells: {args.slow_chunk_mib:g} or {args.slow_chunk_mib / 4:g} MiB, {args.slow_reps} reps), "
            f"medians of {args.reps} to {args.max_reps} interleaved repetitions, decompression into a "
            "preallocated array and to new bytes"
            + (
                " (new bytes first in each repetition)."
                if args.new_bytes_first
                else " (in that order in each repetition)."
            ),
        ]
    )


READING_START = "<!-- reading:start -->"
READING_END = "<!-- reading:end -->"


FRAMES_HEADING = "\n## Frames"


def write_doc(path: Path, head: str, summ: str, table: str) -> None:
    """Rewrite the chunk-engine part of the report; keep the hand-written reading and every
    section from "## Frames" on (written by bench/frame_bench.py)."""
    reading = f"{READING_START}\n(no reading yet)\n{READING_END}"
    tail = ""
    if path.exists():
        old = path.read_text()
        if READING_START in old and READING_END in old:
            a = old.index(READING_START)
            b = old.index(READING_END) + len(READING_END)
            reading = old[a:b]
        if FRAMES_HEADING in old:
            tail = old[old.index(FRAMES_HEADING) :]
    text = (
        "# Chunk engine benchmark: oxblosc vs python-blosc2\n\n"
        "Generated by `bench/chunk_bench.py` (`make bench`); the reading below is written by hand.\n\n"
        + head.replace("\n", "  \n")
        + "\n\n## Reading\n\n"
        + reading
        + "\n\n## Summary\n\n"
        + summ
        + "\n\n## Full table\n\n"
        + table
        + "\n"
        + tail
    )
    path.write_text(text)


def plot(rows: list[dict], path: Path, title: str = "") -> None:
    """Bars of the geometric-mean speed ratios (oxblosc / python-blosc2) per codec and over all
    cells, for compress, decompress into a buffer and to new bytes; one panel per thread count,
    with issue 13's 1-thread targets drawn on the first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [("c_ratio", "compress"), ("d_ratio", "decompress (into a buffer)"), ("n_ratio", "decompress (new bytes)")]
    threads = sorted({int(float(r["nthreads"])) for r in rows})
    groups = ["all", *[c for c in CODECS if any(r["codec"] == c for r in rows)]]
    fig, axes = plt.subplots(1, len(threads), figsize=(6.5 * len(threads), 4.2), sharey=True, squeeze=False)
    width = 0.8 / len(ops)
    for ax, nt in zip(axes[0], threads, strict=True):
        mine = [r for r in rows if int(float(r["nthreads"])) == nt]
        for k, (key, label) in enumerate(ops):
            vals = [gmean(float(r[key]) for r in mine if g == "all" or r["codec"] == g) for g in groups]
            xs = [i + (k - 1) * width for i in range(len(groups))]
            bars = ax.bar(xs, vals, width, label=label)
            ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        ax.axhline(1.0, color="black", linewidth=0.8)
        if nt == 1:
            ax.axhline(1.1, color="tab:blue", linestyle=":", linewidth=1, label="target: compress 1.1")
            ax.axhline(1.25, color="tab:orange", linestyle="--", linewidth=1, label="target: decompress 1.25")
        ax.set_xticks(range(len(groups)), groups)
        ax.set_title(f"{nt} thread{'s' if nt > 1 else ''}, {len(mine)} cells")
        ax.set_ylabel("oxblosc / python-blosc2 speed (geometric mean)")
    axes[0][0].legend(fontsize=7, loc="lower left")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------ main
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small run (< 60 s)")
    p.add_argument("--datasets", nargs="+", default=None, help="synthetic names and/or realdata names")
    p.add_argument("--codecs", nargs="+", default=CODECS, choices=CODECS)
    p.add_argument("--clevels", nargs="+", type=int, default=None, help="quick: 5; full: 1 5 9")
    p.add_argument("--filters", nargs="+", default=list(FILTER_SETS), choices=list(FILTER_SETS))
    p.add_argument("--nthreads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--chunk-mib", type=float, default=8.0)
    p.add_argument("--reps", type=int, default=None, help="quick: 3; full: 5")
    p.add_argument("--max-reps", type=int, default=None, help="quick: 5; full: 15")
    p.add_argument("--cell-s", type=float, default=None, help="target timed seconds per cell (quick 0.1, full 0.2)")
    p.add_argument("--slow-s", type=float, default=None, help="a compression call slower than this is 'slow'")
    p.add_argument("--slow-chunk-mib", type=float, default=1.0)
    p.add_argument("--slow-reps", type=int, default=3)
    p.add_argument("--recheck", type=int, default=None, help="re-measure this many worst cells at the end (5 / 10)")
    p.add_argument("--outdir", type=Path, default=REPO / "bench-results")
    p.add_argument("--write-doc", type=Path, default=None, help="write the Markdown report here")
    p.add_argument("--no-table", action="store_true", help="print only the summary")
    p.add_argument(
        "--new-bytes-first",
        action="store_true",
        help="decode to new bytes before decoding into the buffer in each repetition (default: after)",
    )
    p.add_argument("--plot", type=Path, default=None, help="write a PNG of the per-codec ratios here (matplotlib)")
    p.add_argument("--plot-from", type=Path, default=None, help="only plot this run's CSV (with --plot), no run")
    args = p.parse_args()
    if args.plot:
        import matplotlib  # noqa: F401  (fail now, not after the run)
    if args.plot_from:
        if not args.plot:
            sys.exit("chunk_bench: --plot-from needs --plot")
        with open(args.plot_from, newline="") as f:
            plot(list(csv.DictReader(f)), args.plot, f"python bench/chunk_bench.py ({args.plot_from.name})")
        log(f"wrote {args.plot}")
        return
    datasets = args.datasets or (QUICK_DATASETS if args.quick else SYNTHETIC + REAL)
    clevels = args.clevels or ([5] if args.quick else [1, 5, 9])
    args.reps = args.reps or (3 if args.quick else 5)
    args.slow_s = args.slow_s or (0.08 if args.quick else 0.15)
    args.max_reps = args.max_reps or (5 if args.quick else 15)
    args.recheck = args.recheck if args.recheck is not None else (5 if args.quick else 10)
    args.cell_s = args.cell_s or (0.1 if args.quick else 0.2)

    info = machine_info()
    load0 = os.getloadavg()
    w0, b0 = cpu_busy()
    own0 = sum(os.times()[:4])
    log(f"machine: {info}")
    log(f"load average: {load0}")
    rows = []
    data_by_name = {}
    nbytes = int(args.chunk_mib * MiB)
    for ds in datasets:
        data = load_dataset(ds, nbytes)
        if data is None:
            continue
        data_by_name[ds] = data
        log(f"== {ds}: {data.dtype}, {data.nbytes / MiB:.2f} MiB")
        for codec in args.codecs:
            for clevel in clevels:
                for fset in args.filters:
                    for nt in args.nthreads:
                        r = run_cell(data, ds, codec, clevel, fset, nt, args)
                        rows.append(r)
                        size = "=" if r["identical"] else f"{r['size_ratio']:.4f}"
                        log(
                            f"{ds:24s} {codec:7s} {clevel} {fset:17s} {nt}T {r['MiB']:5g} MiB  "
                            f"c {r['ox_c_GBps']:7.3f}/{r['b2_c_GBps']:7.3f} ({r['c_ratio']:.2f})  "
                            f"d {r['ox_d_GBps']:6.2f}/{r['b2_d_GBps']:6.2f} ({r['d_ratio']:.2f})  "
                            f"n {r['ox_n_GBps']:6.2f}/{r['b2_n_GBps']:6.2f} ({r['n_ratio']:.2f})  "
                            f"size {size}"
                        )
    if not rows:
        sys.exit("chunk_bench: no dataset available")
    recheck = {}
    for _, op, r in worst_ops(rows, args.recheck):
        args_re = argparse.Namespace(**{**vars(args), "reps": args.max_reps})
        r2 = run_cell(
            data_by_name[r["dataset"]], r["dataset"], r["codec"], r["clevel"], r["filter"], r["nthreads"], args_re
        )
        o = OP_KEYS[op]
        recheck[(cell_key(r), op)] = f"{r2[f'ox_{o}_GBps']:.3f} / {r2[f'b2_{o}_GBps']:.3f} = {f2(r2[f'{o}_ratio'])}"
        log(f"re-measured {cell_key(r)} {op}: {recheck[(cell_key(r), op)]}")
    w1, b1 = cpu_busy()
    own1 = sum(os.times()[:4])
    wall = w1 - w0
    other = max(0.0, (b1 - b0) - (own1 - own0)) / max(wall, 1e-9)
    load1 = os.getloadavg()

    head = header(args, info, load0, load1, other, wall, len(rows))
    summ = summary(rows, recheck)
    table = full_table(rows)
    print(head + "\n\n" + summ + ("" if args.no_table else "\n\n" + table))

    args.outdir.mkdir(parents=True, exist_ok=True)
    stem = f"chunk_bench-{'quick' if args.quick else 'full'}-{time.strftime('%Y%m%d-%H%M%S')}"
    with open(args.outdir / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    (args.outdir / f"{stem}.md").write_text(head + "\n\n" + summ + "\n\n" + table + "\n")
    log(f"wrote {args.outdir / stem}.csv and .md")
    if args.write_doc:
        write_doc(args.write_doc, head, summ, table)
        log(f"wrote {args.write_doc}")
    if args.plot:
        plot(rows, args.plot, f"python bench/chunk_bench.py ({stem}.csv)")
        log(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
