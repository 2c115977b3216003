#!/usr/bin/env python
"""oxblosc on real data: ratio and speed per codec/filter choice, next to plain ``.npy``.

What ``make demo`` runs. Loads light real datasets (from the data-only packages of
``bench/demo-requirements.txt``, read with ``../shared/bench/realdata.py``), compresses each
with a few codec/filter choices (8 MiB chunks, all cores), checks that every round trip is
exact, and prints a table: compression ratio, compress and decompress GB/s (median of a few
runs), with python-blosc2's speeds for the same call when it is installed, and the write
(``np.save`` + fsync) and read (``np.load``) speeds of a ``.npy`` file for comparison.

Then every array of the demo packages (~300 MB of real data: ephemerides, radiographs,
topography and sediment grids, a climatology cube) is compressed once with the default choice,
next to python-blosc2, and a short conclusion states what was shown and the headline ratios.

The first dataset also goes through files: the ``oxblosc`` CLI turns its ``.npy`` into a
``.b2nd`` (checksummed), ``oxblosc info``/``verify`` describe and check it, python-blosc2 and
oxblosc open the same file and read a row, a column and a tile (timed, compared with NumPy),
and ``oxblosc decompress`` gives back a byte-identical ``.npy``.

    python scripts/demo.py
    python scripts/demo.py --datasets de405/moon --reps 5
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import oxblosc

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("OXBLOSC_SHARED", REPO.parent / "shared"))
DEFAULT_DATASETS = ["dicom/cr_radiograph_rg3", "de405/moon", "islp/nci60_expression"]
# Every array of the packages in bench/demo-requirements.txt: ~300 MB of real data.
COLLECTION = "de405/*,dicom/*,islp/nci60_expression,pybacktrack/*,pvlib/linke_turbidity,pvlib/altitude"
CHUNK = 8 << 20
GB = 1e9

# (label, codec, filters)
CHOICES = [
    ("zstd + shuffle", "ZSTD", ["SHUFFLE"]),
    ("zstd + shuffle + bytedelta", "ZSTD", ["SHUFFLE", "BYTEDELTA"]),
    ("lz4 + shuffle", "LZ4", ["SHUFFLE"]),
    ("blosclz + bitshuffle", "BLOSCLZ", ["BITSHUFFLE"]),
    ("zlib + shuffle", "ZLIB", ["SHUFFLE"]),
]


def import_realdata():
    if not (SHARED / "bench" / "realdata.py").exists():
        sys.exit(
            f"demo: {SHARED / 'bench' / 'realdata.py'} not found.\n"
            "The demo reads its datasets with the shared realdata.py: check out the project's shared/ "
            "directory next to the repository, or set OXBLOSC_SHARED=/path/to/shared."
        )
    sys.path.insert(0, str(SHARED / "bench"))
    import realdata

    return realdata


def median_time(fn, reps: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def chunks_of(flat: np.ndarray) -> list[np.ndarray]:
    n = max(1, CHUNK // flat.itemsize)
    return [flat[i : i + n] for i in range(0, flat.size, n)] or [flat]


def run_choice(lib, parts: list[np.ndarray], dst_parts: list[np.ndarray], codec: str, filters: list[str], reps: int):
    typesize = parts[0].itemsize
    kw = {
        "codec": getattr(lib.Codec, codec),
        "clevel": 5,
        "typesize": typesize,
        "filters": [getattr(lib.Filter, f) for f in filters],
        "filters_meta": [0] * len(filters),
    }
    box = {}

    def comp():
        box["c"] = [lib.compress2(p, **kw) for p in parts]

    def decomp():
        for c, d in zip(box["c"], dst_parts, strict=True):
            lib.decompress2(c, dst=d)

    tc = median_time(comp, reps)
    td = median_time(decomp, reps)
    return box["c"], tc, td


def npy_times(arr: np.ndarray, tmpdir: str, reps: int) -> tuple[float, float, int]:
    path = os.path.join(tmpdir, "demo.npy")

    def write():
        with open(path, "wb") as f:
            np.save(f, arr)
            f.flush()
            os.fsync(f.fileno())

    out = {}

    def read():
        out["a"] = np.load(path)

    tw = median_time(write, reps)
    tr = median_time(read, reps)
    if not np.array_equal(out["a"].view(np.uint8), arr.view(np.uint8)):
        raise AssertionError(".npy round trip is not exact")
    return tw, tr, os.path.getsize(path)


def fmt_row(cols: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cols, widths, strict=True)))


def demo_dataset(name: str, arr: np.ndarray, blosc2, reps: int, tmpdir: str) -> None:
    arr = np.ascontiguousarray(arr)
    flat = arr.reshape(-1)
    nbytes = arr.nbytes
    print(f"\n{name}: shape {arr.shape}, {arr.dtype}, {nbytes / 1e6:.2f} MB")
    head = ["choice (clevel 5)", "ratio", "comp GB/s", "decomp GB/s"]
    if blosc2 is not None:
        head += ["blosc2 comp", "blosc2 decomp"]
    widths = [28, 7, 10, 12, 12, 13][: len(head)]
    print(fmt_row(head, widths))
    print(fmt_row(["-" * w for w in widths], widths))
    parts = chunks_of(flat)
    dst = np.ones_like(flat)  # touched: no page faults in the timings
    dst_parts = chunks_of(dst)
    rows = []
    for label, codec, filters in CHOICES:
        if "BYTEDELTA" in filters and arr.itemsize == 1:
            continue  # bytedelta needs several bytes per item
        chunks, tc, td = run_choice(oxblosc, parts, dst_parts, codec, filters, reps)
        if not np.array_equal(dst.view(np.uint8), flat.view(np.uint8)):
            raise AssertionError(f"{name} {label}: round trip is not exact")
        cbytes = sum(len(c) for c in chunks)
        rows.append((label, nbytes / cbytes))
        cols = [label, f"{nbytes / cbytes:.2f}", f"{nbytes / tc / GB:.3f}", f"{nbytes / td / GB:.2f}"]
        if blosc2 is not None:
            dst.fill(0)
            _, bc, bd = run_choice(blosc2, parts, dst_parts, codec, filters, reps)
            if not np.array_equal(dst.view(np.uint8), flat.view(np.uint8)):
                raise AssertionError(f"{name} {label}: python-blosc2 round trip is not exact")
            cols += [f"{nbytes / bc / GB:.3f}", f"{nbytes / bd / GB:.2f}"]
        print(fmt_row(cols, widths))
    tw, tr, size = npy_times(arr, tmpdir, reps)
    cols = [".npy (save+fsync / load)", f"{nbytes / size:.2f}", f"{nbytes / tw / GB:.3f}", f"{nbytes / tr / GB:.2f}"]
    print(fmt_row(cols + [""] * (len(head) - 4), widths))
    return rows


def cli(*args: str) -> str:
    """Run the bundled ``oxblosc`` binary; its output, or an exit with its error line."""
    from oxblosc._cli import binary_path

    r = subprocess.run([str(binary_path()), *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"demo: oxblosc {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def demo_collection(realdata, blosc2) -> dict | None:
    """Every available array of the demo packages (a few hundred MB of real data), once each
    with the default choice (zstd + shuffle, clevel 5, 8 MiB chunks): totals and speeds."""
    tot = {"n": 0, "nbytes": 0, "cbytes": 0, "tc": 0.0, "td": 0.0, "b_cbytes": 0, "b_tc": 0.0, "b_td": 0.0}
    kinds: dict[str, list[int]] = {}
    for name, arr in realdata.iter_datasets(only=COLLECTION):
        flat = np.ascontiguousarray(arr).reshape(-1)
        parts, dst = chunks_of(flat), np.ones_like(flat)
        for lib, pre in [(oxblosc, ""), *([(blosc2, "b_")] if blosc2 is not None else [])]:
            dst.fill(0)
            chunks, tc, td = run_choice(lib, parts, chunks_of(dst), "ZSTD", ["SHUFFLE"], 1)
            if not np.array_equal(dst.view(np.uint8), flat.view(np.uint8)):
                raise AssertionError(f"{name}: round trip is not exact")
            tot[pre + "cbytes"] += sum(len(c) for c in chunks)
            tot[pre + "tc"] += tc
            tot[pre + "td"] += td
        tot["n"] += 1
        tot["nbytes"] += flat.nbytes
        k = kinds.setdefault(str(flat.dtype), [0, 0])
        k[0] += 1
        k[1] += flat.nbytes
    if not tot["n"]:
        return None
    mb = tot["nbytes"] / 1e6
    print(
        f"\nThe collection: {tot['n']} real arrays, {mb:.0f} MB ("
        + ", ".join(f"{n} {dt} {b / 1e6:.0f} MB" for dt, (n, b) in sorted(kinds.items(), key=lambda kv: -kv[1][1]))
        + "), zstd + shuffle, clevel 5, each compressed and decompressed once:"
    )
    print(
        f"  oxblosc       ratio {tot['nbytes'] / tot['cbytes']:.2f} ({mb:.0f} MB -> {tot['cbytes'] / 1e6:.0f} MB), "
        f"compress {tot['nbytes'] / tot['tc'] / GB:.2f} GB/s, decompress {tot['nbytes'] / tot['td'] / GB:.2f} GB/s"
    )
    if blosc2 is not None:
        print(
            f"  python-blosc2 ratio {tot['nbytes'] / tot['b_cbytes']:.2f}, "
            f"compress {tot['nbytes'] / tot['b_tc'] / GB:.2f} GB/s, "
            f"decompress {tot['nbytes'] / tot['b_td'] / GB:.2f} GB/s"
        )
    return tot


def demo_files(name: str, arr: np.ndarray, blosc2, reps: int, tmpdir: str) -> None:
    """The same array as files: CLI compress/info/verify/decompress, slices from both libraries."""
    if arr.ndim < 2:
        return
    arr = np.ascontiguousarray(arr)
    npy, b2nd, back = (os.path.join(tmpdir, f) for f in ("a.npy", "a.b2nd", "back.npy"))
    np.save(npy, arr)
    t = time.perf_counter()
    cli("compress", "-q", "-f", "--codec", "zstd", "--clevel", "5", "--filter", "shuffle", npy, b2nd)
    t_comp = time.perf_counter() - t
    print(
        f"\n{name} as files: `oxblosc compress a.npy a.b2nd` {t_comp * 1e3:.0f} ms, "
        f"{os.path.getsize(npy) / 1e6:.2f} MB -> {os.path.getsize(b2nd) / 1e6:.2f} MB"
    )
    info, seen = cli("info", b2nd).splitlines(), set()
    info = [x for x in info if x.split()[:1] and not (x.split()[0] in seen or seen.add(x.split()[0]))]
    print(
        "  oxblosc info:",
        "; ".join(
            " ".join(x.split())
            for x in info
            if x.split()[:1] in (["shape"], ["chunks"], ["blocks"], ["dtype"], ["ratio"], ["checksums"])
        ),
    )
    print("  oxblosc verify:", cli("verify", b2nd).strip())
    mid = [n // 2 for n in arr.shape]
    keys = {
        "row": (mid[0],),
        "column": (slice(None), mid[1]),
        "64x64 tile": (slice(mid[0], mid[0] + 64), slice(mid[1], mid[1] + 64)),
    }
    readers = {"oxblosc": oxblosc.open(b2nd), "oxblosc mmap_mode='r'": oxblosc.open(b2nd, mmap_mode="r")}
    if blosc2 is not None:
        readers["python-blosc2"] = blosc2.open(b2nd)
    readers["np.load(mmap_mode='r')"] = np.load(npy, mmap_mode="r")
    widths = [24, *[12] * len(keys)]
    print("  " + fmt_row(["read from the file (us)", *keys], widths))
    for label, h in readers.items():
        cols = [label]
        for key in keys.values():
            got = np.asarray(h[key])
            if not np.array_equal(got, arr[key]):
                raise AssertionError(f"{label}: {key} differs from NumPy")
            cols.append(f"{median_time(lambda h=h, key=key: np.asarray(h[key]), max(reps, 20)) * 1e6:.0f}")
        print("  " + fmt_row(cols, widths))
    cli("decompress", "-q", "-f", b2nd, back)
    same = filecmp.cmp(npy, back, shallow=False)
    if not same:
        raise AssertionError("oxblosc decompress did not give back the identical .npy")
    print("  `oxblosc decompress a.b2nd back.npy`: byte-identical to a.npy")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS, help="realdata.py names")
    p.add_argument("--reps", type=int, default=5, help="timed runs per measurement (median)")
    p.add_argument("--no-blosc2", action="store_true", help="do not show python-blosc2's speeds")
    p.add_argument("--no-collection", action="store_true", help="skip the ~300 MB collection of every array")
    args = p.parse_args()

    realdata = import_realdata()
    blosc2 = None
    if not args.no_blosc2:
        try:
            import blosc2
        except ImportError:
            blosc2 = None
    print(
        f"oxblosc {getattr(oxblosc, '__version__', '?')}, {oxblosc.nthreads} thread(s)"
        + (f"; python-blosc2 {blosc2.__version__} for comparison" if blosc2 else "")
        + ". GB/s = uncompressed bytes (1e9) per second, median of "
        + f"{args.reps} runs; every round trip is checked to be exact."
    )
    shown = 0
    t0 = time.time()
    best = []
    with tempfile.TemporaryDirectory(prefix="oxblosc-demo-") as tmpdir:
        for name in args.datasets:
            try:
                arr = realdata.load(name)
            except KeyError:
                print(f"\n{name}: unknown dataset (see python {SHARED}/bench/realdata.py --list)", file=sys.stderr)
                continue
            except (realdata.MissingData, ImportError) as e:
                print(f"\n{name}: skipped, not installed ({e})", file=sys.stderr)
                continue
            rows = demo_dataset(name, arr, blosc2, args.reps, tmpdir)
            best.append((name, max(rows, key=lambda r: r[1]), dict(rows).get("zstd + shuffle")))
            if shown == 0:
                demo_files(name, arr, blosc2, args.reps, tmpdir)
            shown += 1
        collection = None if args.no_collection else demo_collection(realdata, blosc2)
    if not shown:
        print(
            "\nNo dataset available: install the demo data with\n"
            "  .venv/bin/pip install --no-deps -r bench/demo-requirements.txt",
            file=sys.stderr,
        )
        return 1
    conclude(best, collection, blosc2 is not None, time.time() - t0)
    return 0


def conclude(best, collection, with_blosc2: bool, seconds: float) -> None:
    """What the run showed, in a few lines."""
    print("\nConclusion")
    if collection:
        n, c = collection["nbytes"], collection["cbytes"]
        line = (
            f"  - {collection['n']} real arrays, {n / 1e6:.0f} MB: oxblosc (zstd + shuffle) stores them in "
            f"{c / 1e6:.0f} MB (ratio {n / c:.2f}, {100 * (1 - c / n):.0f}% smaller than .npy) at "
            f"{n / collection['tc'] / GB:.2f} GB/s in, {n / collection['td'] / GB:.2f} GB/s out"
        )
        if with_blosc2:
            line += f"; python-blosc2 with the same settings: ratio {n / collection['b_cbytes']:.2f}"
        print(line + ".")
    for name, (label, ratio), zs in best:
        extra = f" (zstd + shuffle: {zs:.2f})" if zs and label != "zstd + shuffle" else ""
        print(f"  - {name}: best ratio {ratio:.2f} with {label}{extra}.")
    readers = "oxblosc and python-blosc2 read" if with_blosc2 else "oxblosc reads"
    print(
        f"  - Every round trip was exact; the CLI turned a .npy into a checksummed .b2nd that {readers}, "
        "`verify` passed, and `decompress` gave back the identical .npy."
    )
    print(f"  ({seconds:.0f} s in all.)")


if __name__ == "__main__":
    sys.exit(main())
