#!/usr/bin/env python
"""The chunk-engine cases of issue 13, oxblosc vs python-blosc2 in one process.

On an ERA5-like float32 field (``climate_f4`` of ``../shared/bench/_datasets.py``), for a few
codecs with shuffle at clevel 5 and 1 thread: ``compress2``, ``decompress2`` returning new
bytes, and ``decompress2`` into a preallocated array. Each repetition runs both libraries
(order alternating), the median per library is kept and the ratio ox/b2 printed (> 1 = oxblosc
faster). The LZ4 + shuffle decompression into a buffer is also compared with a memcpy of the
same bytes (1 thread), with the LZ4 decoder alone on the same streams (no unshuffle; ours, or
liblz4's with ``OXBLOSC_LZ4_DECODER=liblz4``), and with
itself at 2 threads (wall time, with the process CPU time next to
it), and the LZ4 compression at 2 threads against 1 (python-blosc2's beside it); the load average is printed last.

    python bench/engine_bench.py                 # 8 MiB chunk (make demo's size)
    python bench/engine_bench.py --chunk-mib 1 --reps 21
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("OXBLOSC_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(SHARED / "bench"))

import _datasets  # noqa: E402
import blosc2  # noqa: E402
import oxblosc  # noqa: E402

CASES = [("blosclz", 5), ("lz4", 5), ("lz4hc", 5), ("zstd", 1), ("zstd", 5)]


def timed(fn, clock) -> float:
    t = clock()
    fn()
    return clock() - t


def interleaved(fns: dict, reps: int, clock=time.thread_time) -> dict:
    """Median seconds per named function, the order rotating every repetition. One-thread
    calls are timed with this thread's CPU time (``thread_time``, which counts the page
    faults it takes) so that the other processes loading the machine matter less."""
    names = list(fns)
    times = {n: [] for n in names}
    for r in range(reps):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            times[n].append(timed(fns[n], clock))
    return {n: statistics.median(t) for n, t in times.items()}


def case(src: np.ndarray, codec: str, clevel: int, reps: int) -> None:
    """One codec: compress, decompress to new bytes, decompress into a buffer, ox vs b2."""
    ts, gb = src.dtype.itemsize, src.nbytes / 1e9
    cp = {"codec": getattr(oxblosc.Codec, codec.upper()), "clevel": clevel, "typesize": ts, "nthreads": 1}
    bp = {"codec": getattr(blosc2.Codec, codec.upper()), "clevel": clevel, "typesize": ts, "nthreads": 1}
    cox = oxblosc.compress2(src, cparams=oxblosc.CParams(**cp))
    cb2 = blosc2.compress2(src, cparams=blosc2.CParams(**bp))
    dox, db2 = np.empty_like(src), np.empty_like(src)
    assert oxblosc.decompress2(cb2) == src.tobytes() and blosc2.decompress2(cox) == src.tobytes()
    oxblosc.set_nthreads(1)
    blosc2.set_nthreads(1)
    t = interleaved(
        {
            "c_ox": lambda: oxblosc.compress2(src, cparams=oxblosc.CParams(**cp)),
            "c_b2": lambda: blosc2.compress2(src, cparams=blosc2.CParams(**bp)),
            "n_ox": lambda: oxblosc.decompress2(cox),
            "n_b2": lambda: blosc2.decompress2(cb2),
            "i_ox": lambda: oxblosc.decompress2(cox, dst=dox),
            "i_b2": lambda: blosc2.decompress2(cb2, dst=db2),
        },
        reps,
    )
    print(
        f"{codec + '/' + str(clevel):12} {src.nbytes / len(cox):6.2f} {t['c_b2'] / t['c_ox']:11.2f}"
        f" {t['n_b2'] / t['n_ox']:14.2f} {t['i_b2'] / t['i_ox']:15.2f}"
        f"  {gb / t['c_ox']:.2f}/{gb / t['n_ox']:.2f}/{gb / t['i_ox']:.2f}"
    )


def lz4_streams_alone(src: np.ndarray, chunk: bytes) -> bytes:
    """A chunk holding the same LZ4 streams as ``chunk`` (LZ4 + shuffle, split blocks) but no
    filter: the data shuffled block by block beforehand, compressed unfiltered and split with
    the same block size, so decoding it runs the LZ4 decoder straight into the output and nothing
    else.
    """
    ts = src.dtype.itemsize
    bs = oxblosc.get_cbuffer_sizes(chunk)[2]
    raw = src.reshape(-1).view(np.uint8)
    full = raw.size // bs * bs
    pre = raw[:full].reshape(-1, bs // ts, ts).transpose(0, 2, 1).reshape(-1)
    tail = raw[full:]  # the last, shorter block: shuffled over its own length, one stream
    tail = tail[: tail.size // ts * ts].reshape(-1, ts).T.reshape(-1)
    pre = np.concatenate([pre, tail, raw[full + tail.size :]])
    cp = oxblosc.CParams(
        codec=oxblosc.Codec.LZ4,
        typesize=ts,
        nthreads=1,
        blocksize=bs,
        filters=[oxblosc.Filter.NOFILTER],
        splitmode=oxblosc.SplitMode.ALWAYS_SPLIT,
    )
    alone = oxblosc.compress2(pre, cparams=cp)
    if len(alone) != len(chunk):
        print(f"(note: the unfiltered chunk has {len(alone)} bytes, the shuffled one {len(chunk)})")
    return alone


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunk-mib", type=float, default=8)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--dataset", default="climate_f4")
    ap.add_argument("--threads-only", action="store_true", help="only the memcpy and 2-thread lines")
    args = ap.parse_args()
    nbytes = int(args.chunk_mib * (1 << 20))
    src = np.ascontiguousarray(_datasets.make(args.dataset, nbytes))
    ts = src.dtype.itemsize
    gb = src.nbytes / 1e9
    print(f"{args.dataset} {src.nbytes / 2**20:.1f} MiB typesize {ts}, 1 thread, medians of {args.reps}")
    print("(one-thread cells: CPU time of the calling thread)")
    print(
        f"{'case':12} {'ratio':>6} {'comp ox/b2':>11} {'dec-new ox/b2':>14} {'dec-into ox/b2':>15}  ox GB/s c/new/into"
    )
    for codec, clevel in [] if args.threads_only else CASES:
        case(src, codec, clevel, args.reps)
    # LZ4 + shuffle into a buffer vs memcpy, and 2 threads vs 1 (decompress and compress).
    cp = {"codec": oxblosc.Codec.LZ4, "typesize": ts}
    bcp = {"codec": blosc2.Codec.LZ4, "typesize": ts}
    c = oxblosc.compress2(src, cparams=oxblosc.CParams(**cp, nthreads=1))
    dst, mdst = np.empty_like(src), np.empty_like(src)
    raw = lz4_streams_alone(src, c)
    fns = {
        "memcpy": lambda: np.copyto(mdst, src),
        "lz4": lambda: oxblosc.decompress2(raw, dst=dst, nthreads=1),
        "ox1": lambda: oxblosc.decompress2(c, dst=dst, nthreads=1),
        "ox2": lambda: oxblosc.decompress2(c, dst=dst, nthreads=2),
        "cx1": lambda: oxblosc.compress2(src, cparams=oxblosc.CParams(**cp, nthreads=1)),
        "cx2": lambda: oxblosc.compress2(src, cparams=oxblosc.CParams(**cp, nthreads=2)),
        "cb1": lambda: blosc2.compress2(src, cparams=blosc2.CParams(**bcp, nthreads=1)),
        "cb2": lambda: blosc2.compress2(src, cparams=blosc2.CParams(**bcp, nthreads=2)),
    }
    t = interleaved(fns, args.reps, time.perf_counter)
    cpu = interleaved(fns, args.reps, time.process_time)
    print(
        f"lz4/5+shuffle into buffer: {gb / t['ox1']:.2f} GB/s = {t['memcpy'] / t['ox1']:.2f}x memcpy"
        f" ({gb / t['memcpy']:.2f} GB/s); 2 threads {t['ox1'] / t['ox2']:.2f}x 1 thread"
        f" (wall ms {t['ox1'] * 1e3:.3f}/{t['ox2'] * 1e3:.3f}, CPU ms {cpu['ox1'] * 1e3:.3f}/{cpu['ox2'] * 1e3:.3f})"
    )
    print(
        f"same LZ4 streams without the unshuffle (the LZ4 decoder alone): {gb / t['lz4']:.2f} GB/s ="
        f" {t['memcpy'] / t['lz4']:.2f}x memcpy; the unshuffle adds {(t['ox1'] - t['lz4']) * 1e3:.3f} ms"
    )
    print(
        f"lz4/5+shuffle compress: 2 threads {t['cx1'] / t['cx2']:.2f}x 1 thread"
        f" (wall ms {t['cx1'] * 1e3:.2f}/{t['cx2'] * 1e3:.2f}, CPU ms {cpu['cx1'] * 1e3:.2f}/{cpu['cx2'] * 1e3:.2f});"
        f" python-blosc2 {t['cb1'] / t['cb2']:.2f}x (wall ms {t['cb1'] * 1e3:.2f}/{t['cb2'] * 1e3:.2f});"
        f" ox/b2 at 2 threads {t['cb2'] / t['cx2']:.2f}"
    )
    print("load average (1/5/15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
