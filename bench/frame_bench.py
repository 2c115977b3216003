#!/usr/bin/env python
"""oxblosc vs python-blosc2 on contiguous frame files, in the same process.

For each chunk size (4 KiB and 1 MiB of float64 data) and each nthreads setting (1 and the
default, ``blosc2.nthreads``), both libraries, with the same cparams (zstd clevel 1 + shuffle,
typesize 8) and the same chunks, alternately (the order of the two libraries alternates every
repetition and between cases):

(a) create ``SChunk(urlpath=..., contiguous=True, mode="w")`` and ``append_data`` N chunks,
    timing every append: total time, GB/s, and the per-append cost at 10^2, 10^3, 10^4 (10^5)
    chunks as the mean of the last 10% of appends before that count (python-blosc2 slows
    down as chunks accumulate), plus the slowest single append; a run that exceeds
    ``--cap-s`` (120 s) stops early and reports the count it reached;
(b) reopen the file (``oxblosc.open`` / ``blosc2.open``, mode "r"; median of the opening
    times) and run 2,000 random ``decompress_chunk(i, dst)`` calls (same indices for both):
    median and p99 latency in microseconds;
(c) read every chunk in order with ``decompress_chunk(i, dst)``: GB/s.

Before timing the reads, each library opens the other's file once and every chunk is checked
against the source data. GB = 1e9 bytes of uncompressed data. The files live in ``--dir``
(default: a temporary directory under /tmp) and are in the page cache when read.

    python bench/frame_bench.py --quick                     # < 60 s
    python bench/frame_bench.py                             # 10^5 appends of 4 KiB, < 10 min
    python bench/frame_bench.py --write-doc docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import blosc2
import numpy as np
import oxblosc
from _benchutil import cpu_busy, log, machine_info, write_block  # noqa: E402  (bench/ is on sys.path)

KiB = 1 << 10
MiB = 1 << 20
GB = 1e9
LIBS = {"ox": oxblosc, "b2": blosc2}
NAMES = {"ox": "oxblosc", "b2": "python-blosc2"}


# ------------------------------------------------------------------ data
def make_pool(chunk_bytes: int, nchunks: int, seed: int = 1) -> list[np.ndarray]:
    """``nchunks`` distinct, moderately compressible float64 chunks (a noisy random walk with
    2 decimals, like a sensor series); chunk ``i`` of a frame is ``pool[i % len(pool)]``."""
    rng = np.random.default_rng(seed)
    n = chunk_bytes // 8
    walk = np.cumsum(rng.normal(0, 0.05, n * nchunks)) + 20.0
    walk = np.round(walk, 2)
    return [np.ascontiguousarray(walk[i * n : (i + 1) * n]) for i in range(nchunks)]


def cparams(lib, nthreads: int) -> dict:
    return {
        "codec": lib.Codec.ZSTD,
        "clevel": 1,
        "filters": [lib.Filter.SHUFFLE],
        "filters_meta": [0],
        "typesize": 8,
        "nthreads": nthreads,
    }


# ------------------------------------------------------------- (a) appends
def append_run(key: str, path: str, pool: list[np.ndarray], n: int, nthreads: int, cap_s: float) -> dict:
    """Append ``n`` chunks to a new frame file; per-append times in ns (stops early at cap_s)."""
    lib = LIBS[key]
    chunk_bytes = pool[0].nbytes
    ns = np.zeros(n, dtype=np.int64)
    clock = time.perf_counter_ns
    np_pool = len(pool)
    gc_on = gc.isenabled()
    gc.disable()
    try:
        t0 = clock()
        s = lib.SChunk(
            chunksize=chunk_bytes,
            urlpath=path,
            contiguous=True,
            mode="w",
            cparams=cparams(lib, nthreads),
            dparams={"nthreads": nthreads},
        )
        t_create = clock() - t0
        deadline = t0 + int(cap_s * 1e9)
        done = n
        for i in range(n):
            a = clock()
            s.append_data(pool[i % np_pool])
            b = clock()
            ns[i] = b - a
            if b > deadline and i + 1 < n:
                done = i + 1
                break
        cbytes = s.cbytes
        t1 = clock()
        del s  # closes the file
        t_close = clock() - t1
    finally:
        if gc_on:
            gc.enable()
    ns = ns[:done]
    total = (t_create + int(ns.sum()) + t_close) / 1e9
    size = os.path.getsize(path)
    return {"n": done, "ns": ns, "total_s": total, "size": size, "cbytes": cbytes, "chunk_bytes": chunk_bytes}


def window_us(ns: np.ndarray, mark: int) -> float | None:
    """Mean per-append time (us) of the last 10% of appends up to ``mark``."""
    if len(ns) < mark:
        return None
    lo = mark - max(1, mark // 10)
    return float(ns[lo:mark].mean()) / 1e3


# ----------------------------------------------------------------- (b) (c)
def verify(key: str, path: str, pool: list[np.ndarray], n: int) -> None:
    """Library ``key`` opens ``path`` and every chunk must equal the source."""
    s = LIBS[key].open(path, mode="r")
    if s.nchunks != n:
        raise AssertionError(f"{NAMES[key]} reads {s.nchunks} chunks in {path}, expected {n}")
    dst = np.empty_like(pool[0])
    for i in range(n):
        dst.fill(0)
        s.decompress_chunk(i, dst)
        if not np.array_equal(dst, pool[i % len(pool)]):
            raise AssertionError(f"{NAMES[key]}: chunk {i} of {path} differs from the source")
    del s


def read_run(key: str, path: str, idx: np.ndarray, chunk_bytes: int, nthreads: int) -> dict:
    lib = LIBS[key]
    clock = time.perf_counter_ns
    gc.disable()
    try:
        t0 = clock()
        s = lib.open(path, mode="r", dparams={"nthreads": nthreads})
        t_open = (clock() - t0) / 1e9
        n = s.nchunks
        dst = np.ones(chunk_bytes // 8)
        lat = np.empty(len(idx), dtype=np.int64)
        for j, i in enumerate(idx.tolist()):
            a = clock()
            s.decompress_chunk(i, dst)
            lat[j] = clock() - a
        t0 = clock()
        for i in range(n):
            s.decompress_chunk(i, dst)
        t_seq = (clock() - t0) / 1e9
        del s
    finally:
        gc.enable()
    return {"open_s": t_open, "lat_ns": lat, "seq_GBps": n * chunk_bytes / t_seq / GB}


# --------------------------------------------------------------- one case
def run_case(chunk_bytes: int, n: int, nthreads: int, reps: int, read_reps: int, args, tmp: Path, case: int) -> dict:
    label = f"{chunk_bytes // KiB} KiB x {n} nthreads={nthreads}"
    log(f"== {label}")
    pool = make_pool(chunk_bytes, args.pool if chunk_bytes <= 64 * KiB else args.pool_large)
    paths = {k: str(tmp / f"{k}-{chunk_bytes}-{nthreads}.b2frame") for k in LIBS}
    runs = {k: [] for k in LIBS}
    order = list(LIBS)
    for rep in range(reps):
        for k in order if (rep + case) % 2 == 0 else order[::-1]:
            r = append_run(k, paths[k], pool, n, nthreads, args.cap_s)
            runs[k].append(r)
            log(
                f"  append {k} rep {rep}: {r['n']} chunks in {r['total_s']:.2f} s, "
                f"{r['n'] * chunk_bytes / r['total_s'] / GB:.3f} GB/s, file {r['size'] / MiB:.1f} MiB"
            )
    nfin = {k: runs[k][-1]["n"] for k in LIBS}
    # Cross-check: each library reads the other's file (the one of the last repetition).
    verify("ox", paths["b2"], pool, nfin["b2"])
    verify("b2", paths["ox"], pool, nfin["ox"])
    log("  verified: oxblosc reads python-blosc2's file and vice versa, all chunks equal")
    rng = np.random.default_rng(7)
    nread = min(nfin.values())
    idx = rng.integers(0, nread, args.random_reads)
    reads = {k: [] for k in LIBS}
    for rep in range(read_reps):
        for k in order if (rep + case) % 2 == 0 else order[::-1]:
            reads[k].append(read_run(k, paths[k], idx, chunk_bytes, nthreads))
    res = {"chunk_bytes": chunk_bytes, "n": n, "nthreads": nthreads, "reps": reps, "read_reps": read_reps}
    for k in LIBS:
        # Appends: the repetition with the median total time (all repetitions for the windows).
        rs = [r for r in runs[k] if r["n"] == n] or runs[k]
        tot = statistics.median(r["total_s"] for r in rs)
        res[f"{k}_n"] = max(r["n"] for r in runs[k])
        res[f"{k}_total_s"] = tot
        res[f"{k}_GBps"] = rs[0]["n"] * chunk_bytes / tot / GB
        res[f"{k}_size"] = runs[k][-1]["size"]
        res[f"{k}_cbytes"] = runs[k][-1]["cbytes"]
        res[f"{k}_max_ms"] = statistics.median(float(r["ns"].max()) / 1e6 for r in rs)
        res[f"{k}_median_us"] = statistics.median(float(np.median(r["ns"])) / 1e3 for r in rs)
        res[f"{k}_at_end"] = statistics.median(window_us(r["ns"], r["n"]) for r in runs[k])
        for m in args.marks:
            w = [window_us(r["ns"], m) for r in runs[k]]
            w = [x for x in w if x is not None]
            res[f"{k}_at_{m}"] = statistics.median(w) if w else None
        lat = np.concatenate([r["lat_ns"] for r in reads[k]]) / 1e3
        res[f"{k}_open_ms"] = statistics.median(r["open_s"] for r in reads[k]) * 1e3
        res[f"{k}_rand_med_us"] = float(np.median(lat))
        res[f"{k}_rand_p99_us"] = float(np.percentile(lat, 99))
        res[f"{k}_seq_GBps"] = statistics.median(r["seq_GBps"] for r in reads[k])
    for k in LIBS:
        os.remove(paths[k])
    log(
        f"  total {res['ox_total_s']:.2f} / {res['b2_total_s']:.2f} s; open {res['ox_open_ms']:.2f} / "
        f"{res['b2_open_ms']:.2f} ms; random {res['ox_rand_med_us']:.1f} / {res['b2_rand_med_us']:.1f} us; "
        f"seq {res['ox_seq_GBps']:.2f} / {res['b2_seq_GBps']:.2f} GB/s"
    )
    return res


# ------------------------------------------------------------- report
def md_table(rows: list[dict], cols: list[str]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(cols))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def fx(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def ratio(b2: float | None, ox: float | None) -> str:
    """python-blosc2 / oxblosc for times (> 1: oxblosc faster)."""
    if not b2 or not ox:
        return "-"
    r = b2 / ox
    return f"{r:.1f}x" if r >= 10 else f"{r:.2f}x"


def case_name(r: dict) -> str:
    size = f"{r['chunk_bytes'] // KiB} KiB" if r["chunk_bytes"] < MiB else f"{r['chunk_bytes'] // MiB} MiB"
    return f"{size}, {r['nthreads']}T"


def tables(results: list[dict], marks: list[int]) -> str:
    rows = []
    for r in results:
        n = r["n"]
        nb = r["b2_n"]
        row = {
            "chunks": case_name(r),
            "measure": "append: total s",
            "N": n if nb == n else f"{n} (b2 {nb})",
            "oxblosc": fx(r["ox_total_s"], 3),
            "python-blosc2": fx(r["b2_total_s"], 3),
            "ratio": ratio(r["b2_total_s"], r["ox_total_s"]) if nb == n else "-",
        }
        rows.append(row)
        rows.append(
            {
                "chunks": "",
                "measure": "append: GB/s",
                "oxblosc": fx(r["ox_GBps"], 3),
                "python-blosc2": fx(r["b2_GBps"], 3),
                "ratio": ratio(r["ox_GBps"], r["b2_GBps"]),
            }
        )
        for m in marks:
            if m > n:
                continue
            rows.append(
                {
                    "chunks": "",
                    "measure": f"append: us/append at {m:,}",
                    "oxblosc": fx(r[f"ox_at_{m}"]),
                    "python-blosc2": fx(r[f"b2_at_{m}"]),
                    "ratio": ratio(r[f"b2_at_{m}"], r[f"ox_at_{m}"]),
                }
            )
        if nb != n:
            rows.append(
                {
                    "chunks": "",
                    "measure": "append: us/append, last 10% of the run",
                    "N": f"{n} (b2 {nb})",
                    "oxblosc": fx(r["ox_at_end"]),
                    "python-blosc2": fx(r["b2_at_end"]),
                    "ratio": ratio(r["b2_at_end"], r["ox_at_end"]),
                }
            )
        for lab, key, nd in (
            ("append: median us/append", "median_us", 1),
            ("append: slowest append, ms", "max_ms", 2),
            ("reopen: open ms", "open_ms", 3),
            ("random decompress_chunk: median us", "rand_med_us", 1),
            ("random decompress_chunk: p99 us", "rand_p99_us", 1),
        ):
            rows.append(
                {
                    "chunks": "",
                    "measure": lab,
                    "oxblosc": fx(r[f"ox_{key}"], nd),
                    "python-blosc2": fx(r[f"b2_{key}"], nd),
                    "ratio": ratio(r[f"b2_{key}"], r[f"ox_{key}"]),
                }
            )
        rows.append(
            {
                "chunks": "",
                "measure": "sequential read: GB/s",
                "oxblosc": fx(r["ox_seq_GBps"], 2),
                "python-blosc2": fx(r["b2_seq_GBps"], 2),
                "ratio": ratio(r["ox_seq_GBps"], r["b2_seq_GBps"]),
            }
        )
        rows.append(
            {
                "chunks": "",
                "measure": "cbytes / file size after close, bytes",
                "oxblosc": f"{r['ox_cbytes']} / {r['ox_size']}",
                "python-blosc2": f"{r['b2_cbytes']} / {r['b2_size']}",
                "ratio": "",
            }
        )
    note = (
        "ratio = python-blosc2 time / oxblosc time, or oxblosc GB/s / python-blosc2 GB/s "
        "(> 1: oxblosc faster). `us/append at N` = mean of appends 0.9N..N (median over repetitions); "
        "totals include creating and closing the frame.\n\n"
    )
    return note + md_table(rows, ["chunks", "measure", "N", "oxblosc", "python-blosc2", "ratio"])


def fs_of(path: Path) -> str:
    best, fs = "", "?"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mnt = parts[1]
                if str(path.resolve()).startswith(mnt) and len(mnt) > len(best):
                    best, fs = mnt, parts[2]
    except OSError:
        pass
    return fs


def header(args, info, load0, load1, other, wall, tmp: Path) -> str:
    return "\n".join(
        [
            f"Command: `{' '.join(['python bench/frame_bench.py', *sys.argv[1:]])}`",
            f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; run took {wall:.0f} s.",
            f"Machine: {info['cpu']} ({info['simd']}), {info['cores']} cores, Linux {info['kernel']}, "
            f"Python {info['python']}; frames in {tmp} ({fs_of(tmp)}).",
            f"Versions: oxblosc {info['oxblosc']}, python-blosc2 {info['blosc2']} (C-Blosc2 {info['c-blosc2']}), "
            f"NumPy {info['numpy']}.",
            f"Load average before: {' '.join(f'{x:.2f}' for x in load0)}; after: "
            f"{' '.join(f'{x:.2f}' for x in load1)}; other processes used {other:.2f} cores on average "
            "during the run.",
            f"Method: zstd clevel 1 + shuffle, typesize 8, float64 random-walk data; 4 KiB chunks x "
            f"{args.n_small} ({args.reps_small} interleaved repetitions), 1 MiB chunks x {args.n_large} "
            f"({args.reps_large}); reads: {args.read_reps} interleaved repetitions of open + "
            f"{args.random_reads} random decompress_chunk + one sequential pass; python-blosc2 appends "
            f"stop after {args.cap_s:g} s.",
        ]
    )


# ------------------------------------------------------------------ main
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small run (< 60 s)")
    p.add_argument("--n-small", type=int, default=None, help="4 KiB appends (quick 10^4, full 10^5)")
    p.add_argument("--n-large", type=int, default=None, help="1 MiB appends (quick 100, full 1000)")
    p.add_argument("--reps-small", type=int, default=None, help="1: the order alternates between cases")
    p.add_argument("--reps-large", type=int, default=None, help="quick 2, full 3")
    p.add_argument("--read-reps", type=int, default=None, help="quick 2, full 5")
    p.add_argument("--random-reads", type=int, default=2000)
    p.add_argument("--nthreads", nargs="+", type=int, default=None, help="default: 1 and blosc2.nthreads")
    p.add_argument("--pool", type=int, default=256, help="distinct 4 KiB chunks cycled through")
    p.add_argument("--pool-large", type=int, default=16, help="distinct 1 MiB chunks cycled through")
    p.add_argument("--cap-s", type=float, default=120.0, help="stop one append run after this many seconds")
    p.add_argument("--dir", type=Path, default=None, help="where the frame files go (default: new dir in /tmp)")
    p.add_argument("--write-doc", type=Path, default=None, help="write the '## Frames' block of this file")
    args = p.parse_args()
    args.n_small = args.n_small or (10**4 if args.quick else 10**5)
    args.n_large = args.n_large or (100 if args.quick else 1000)
    args.reps_small = args.reps_small or 1
    args.reps_large = args.reps_large or (2 if args.quick else 3)
    args.read_reps = args.read_reps or (2 if args.quick else 5)
    args.marks = [m for m in (10**2, 10**3, 10**4, 10**5, 10**6) if m <= max(args.n_small, args.n_large)]
    nthreads = args.nthreads or sorted({1, int(blosc2.nthreads)})

    info = machine_info()
    load0 = os.getloadavg()
    w0, b0 = cpu_busy()
    own0 = sum(os.times()[:4])
    log(f"machine: {info}")
    log(f"load average: {load0}")
    tmp = Path(tempfile.mkdtemp(prefix="frame_bench-", dir=args.dir))
    results = []
    try:
        for chunk_bytes, n, reps in ((4 * KiB, args.n_small, args.reps_small), (MiB, args.n_large, args.reps_large)):
            for nt in nthreads:
                results.append(run_case(chunk_bytes, n, nt, reps, args.read_reps, args, tmp, len(results)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    w1, b1 = cpu_busy()
    own1 = sum(os.times()[:4])
    wall = w1 - w0
    other = max(0.0, (b1 - b0) - (own1 - own0)) / max(wall, 1e-9)
    load1 = os.getloadavg()

    head = header(args, info, load0, load1, other, wall, tmp)
    body = tables(results, args.marks)
    print(head + "\n\n" + body)
    if args.write_doc:
        intro = "Generated by `bench/frame_bench.py`.\n\n"
        write_block(args.write_doc, "frames", "Frames", intro + head.replace("\n", "  \n") + "\n\n" + body)
        log(f"wrote {args.write_doc}")


if __name__ == "__main__":
    main()
