"""oxblosc.Streamer vs multitables (the seed's parallel reader) on the same data, same run.

multitables 2.0.1 needs NumPy 1 (it uses ``np.unicode_``) and wrapt < 2, so this runs in its
own virtual environment: ``make bench-multitables`` creates it (NumPy 1.26, PyTables 3.9,
multitables, our release wheel; see bench/multitables-requirements.txt) and runs this script.

The seed's setup scaled to this machine: normal random float64 rows (16 columns, not
compressible), written by PyTables as a chunked array with its Blosc filter at complevel
0, 3 and 9 (chunks of ``--block`` rows); the same values in an oxblosc b2nd file with the
same codec (BloscLZ), level, shuffle and chunk rows (the Streamer reads b2nd/frame files,
not HDF5). Each run reads the data ``--cycles`` times with ``cyclic=True`` and stops, with
1-4 workers (multitables: processes; Streamer: threads):

- ``queue``: multitables' direct queue (``q.get()`` guards) vs ``Streamer.acquire()``
  slots, ordered and unordered; the consumer sums each block;
- ``generator``: multitables' ``get_generator`` (one row at a time) vs iterating the
  Streamer's blocks row by row (ordered); the consumer only takes each row.

Plus a plain sequential read of blocks (PyTables ``arr[i:i+block]`` and NDArray slices, one
thread). Rounds interleaved, medians; ratio = multitables time / Streamer time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from importlib import metadata
from pathlib import Path

import multitables
import numpy as np

if not hasattr(np, "isdtype"):
    # oxblosc's array-API namespace names np.isdtype (NumPy 2) at import; NumPy 1.26 lacks it
    # and nothing here calls it.
    np.isdtype = None

import oxblosc as ox  # noqa: E402
import tables  # noqa: E402


def pytables_file(path: str, data: np.ndarray, complevel: int, block: int) -> None:
    filters = tables.Filters(complevel=complevel, complib="blosc", shuffle=True) if complevel else None
    with tables.open_file(path, "w") as f:
        a = f.create_carray("/", "x", tables.Float64Atom(), shape=data.shape, filters=filters,
                            chunkshape=(block, data.shape[1]))  # fmt: skip
        a[:] = data


def oxblosc_file(h5: str, path: str, complevel: int, block: int) -> None:
    with tables.open_file(h5, "r") as f:
        data = f.root.x[:]
    cp = {"codec": ox.Codec.BLOSCLZ, "clevel": complevel, "filters": [ox.Filter.SHUFFLE]}
    ox.asarray(data, urlpath=path, mode="w", chunks=(block, data.shape[1]), cparams=cp)


def mt_queue(h5, n, block, nblocks, ordered):
    stream = multitables.Streamer(filename=h5)
    q = stream.get_queue(path="/x", n_procs=n, cyclic=True, block_size=block, ordered=ordered)
    for _ in range(nblocks):
        guard = q.get()
        with guard as batch:
            batch.sum()
    q.close()


def ox_queue(path, n, block, nblocks, ordered):
    s = ox.Streamer(path, block_rows=block, nthreads=n, ordered=ordered, cyclic=True)
    for _ in range(nblocks):
        with s.acquire() as slot:
            slot.block.sum()
    s.close()


def mt_gen(h5, n, block, nrows_total):
    stream = multitables.Streamer(filename=h5)
    gen = stream.get_generator(path="/x", n_procs=n, cyclic=True, block_size=block, ordered=True)
    for k, _row in enumerate(gen, 1):
        if k == nrows_total:
            break
    gen.close()


def ox_gen(path, n, block, nrows_total):
    k = 0
    with ox.Streamer(path, block_rows=block, nthreads=n, ordered=True, cyclic=True) as s:
        for _, b in s:
            for _row in b:
                k += 1
            if k >= nrows_total:
                break


def plain_pt(h5, block, nrows):
    with tables.open_file(h5, "r") as f:
        a = f.root.x
        for i in range(0, nrows, block):
            a[i : i + block].sum()


def plain_ox(path, block, nrows):
    a = ox.open(path, mode="r")
    a.schunk.dparams = ox.DParams(nthreads=1)
    for i in range(0, nrows, block):
        a[i : i + block].sum()


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of its finished children (multitables'
    reader processes, joined when its queue closes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# CPU seconds (median) of the last interleaved() call, per case
CPU: dict[str, float] = {}


def interleaved(cases: dict, rounds: int) -> dict[str, float]:
    times = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for _ in range(rounds):
        for k, fn in cases.items():
            t, c = time.perf_counter(), _cpu()
            fn()
            times[k].append(time.perf_counter() - t)
            for p in multiprocessing.active_children():  # reap multitables' readers (untimed)
                p.join(30)
            cpu[k].append(_cpu() - c)
    CPU.clear()
    CPU.update({k: statistics.median(v) for k, v in cpu.items()})
    return {k: statistics.median(v) for k, v in times.items()}


def cpu_busy() -> tuple[float, float]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return time.time(), (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1 << 21)
    p.add_argument("--block", type=int, default=4096)
    p.add_argument("--cycles", type=int, default=2)
    p.add_argument("--workers", default="1,2,3,4")
    p.add_argument("--levels", default="0,3,9")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"))
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    rows, block = args.rows - args.rows % args.block, args.block
    data = np.random.default_rng(0).normal(size=(rows, 16))
    mb = data.nbytes * args.cycles / 1e6
    nblocks = rows // block * args.cycles
    workers = [int(w) for w in args.workers.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="oxblosc-mt-"))
    out = []
    w0, c0 = cpu_busy()
    try:
        for level in (int(x) for x in args.levels.split(",")):
            h5, b2 = str(tmp / f"x{level}.h5"), str(tmp / f"x{level}.b2nd")
            pytables_file(h5, data, level, block)
            oxblosc_file(h5, b2, level, block)
            assert np.array_equal(ox.open(b2)[:], data)
            t = interleaved({"pt": partial(plain_pt, h5, block, rows), "ox": partial(plain_ox, b2, block, rows)},
                            args.rounds)  # fmt: skip
            mbp = data.nbytes / 1e6
            out.append((level, "plain read, 1 thread", "-", mbp / t["pt"], mbp / t["ox"], CPU["pt"], CPU["ox"], None))
            print(out[-1], file=sys.stderr, flush=True)
            for n in workers:
                for ordered in (True, False):
                    t = interleaved({
                        "mt": partial(mt_queue, h5, n, block, nblocks, ordered),
                        "ox": partial(ox_queue, b2, n, block, nblocks, ordered),
                        # (the plain loop again, in the same rounds: "vs plain" compares runs
                        # made side by side, not minutes apart under another load)
                        "plain": partial(plain_ox, b2, block, rows),
                    }, args.rounds)  # fmt: skip
                    access = "queue, " + ("ordered" if ordered else "unordered")
                    out.append((level, access, n, mb / t["mt"], mb / t["ox"], CPU["mt"], CPU["ox"], mbp / t["plain"]))
                    print(out[-1], file=sys.stderr, flush=True)
                t = interleaved({
                    "mt": partial(mt_gen, h5, n, block, rows * args.cycles),
                    "ox": partial(ox_gen, b2, n, block, rows * args.cycles),
                }, args.rounds)  # fmt: skip
                out.append(
                    (level, "generator (rows), ordered", n, mb / t["mt"], mb / t["ox"], CPU["mt"], CPU["ox"], None)
                )
                print(out[-1], file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    w1, c1 = cpu_busy()
    ncpu = os.cpu_count()
    load = os.getloadavg()
    lines = [
        f"Python {sys.version.split()[0]}, NumPy {np.__version__}, PyTables {tables.__version__}, multitables "
        f"{metadata.version('multitables')}, wrapt {metadata.version('wrapt')}; oxblosc release wheel. {ncpu} cores, "
        "shared with other jobs: "
        f"{100 * (c1 - c0) / (w1 - w0) / ncpu:.0f}% busy on average during the run (ours included; load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end). "
        f"{rows} x 16 float64 normal random ({data.nbytes / 1e6:.0f} MB), chunks of {block} rows, BloscLZ + shuffle "
        f"(PyTables' `complib=\"blosc\"`; no filter at level 0), page-cached files; {args.cycles} cycles per run "
        f"(`cyclic=True`), {args.rounds} interleaved rounds, medians. MB/s; ratio = multitables time / Streamer time; "
        "CPU = seconds of CPU of the run (every thread, and multitables' reader processes), median; vs plain = "
        "Streamer MB/s / our plain one-thread block loop's MB/s, the loop run in the same interleaved rounds as "
        "that row (queue rows: both sum each block).",
        "",
        "| complevel | access | workers | multitables (or PyTables) MB/s | oxblosc MB/s | ratio | CPU s peer / ours "
        "| vs plain |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for level, access, n, a, b, ca, cb, plain in out:
        vs = f"{b / plain:.2f}" if plain else "-"
        lines.append(f"| {level} | {access} | {n} | {a:.0f} | {b:.0f} | {b / a:.2f} | {ca:.2f} / {cb:.2f} | {vs} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _benchutil import write_block

        write_block(Path(args.out), "multitables", "Streamer vs multitables (NumPy 1 venv)", text)


if __name__ == "__main__":
    sys.exit(main())
