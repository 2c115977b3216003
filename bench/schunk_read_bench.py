"""Whole-file reads through the Python API, oxblosc vs python-blosc2, same run.

A contiguous frame file (``SChunk``) and a b2nd file (``NDArray``) of each library (LZ4 5 +
shuffle, float32 smooth field, 4 MiB chunks for the SChunk, automatic shapes for the
NDArray), sizes from 80 MB up. Cases: ``SChunk[:]``, a chunk loop (``decompress_chunk(i)``
for every chunk), ``NDArray[:]`` and a loop over rows of chunks (``x[k:k + chunks[0]]``).
Each read opens the file first. Interleaved repetitions, medians of wall time, process CPU
time and run-queue wait (summed over the process's threads, from /proc schedstat), ratio =
python-blosc2 time / oxblosc time (> 1: oxblosc faster).

Cache state, the same for both libraries: ``--cache warm`` (default) reads each file once
before every timed read, so it is in the page cache; ``--cache cold`` drops the file's pages
before every timed read (``posix_fadvise(DONTNEED)`` on that file only: other processes'
cache is left alone), so the read goes to the disk.

    python bench/schunk_read_bench.py [--sizes 80,400,1600] [--reps 7] [--cache warm|cold]
"""

import argparse
import os
import statistics
import tempfile
import time

import blosc2
import numpy as np
import oxblosc


def field(mb: int) -> np.ndarray:
    n = mb * (1 << 20) // 4
    x = np.linspace(0, 60, n, dtype=np.float32)
    return (np.sin(x) * 20 + 280 + np.cos(x * 7.3) * 3).astype(np.float32)


def sched() -> tuple[float, float]:
    """(CPU, run-queue wait) seconds of this process's threads so far."""
    run = wait = 0
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/schedstat") as f:
                r, w, _ = f.read().split()
        except OSError:  # a thread that just ended
            continue
        run, wait = run + int(r), wait + int(w)
    return run / 1e9, wait / 1e9


def set_cache(path: str, state: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if state == "cold":
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        else:
            while os.read(fd, 8 << 20):
                pass
    finally:
        os.close(fd)


def timed(fn) -> tuple[float, float, float]:
    """(wall, CPU, run-queue wait) of fn()."""
    s0, w = sched(), time.perf_counter()
    c = time.process_time()
    fn()
    c, w, s1 = time.process_time() - c, time.perf_counter() - w, sched()
    return w, c, s1[1] - s0[1]


def chunk_loop(mod, path):
    sc = mod.open(path)
    for i in range(sc.nchunks):
        sc.decompress_chunk(i)


def row_loop(mod, path):
    x = mod.open(path)
    c0 = x.chunks[0]
    for k in range(0, x.shape[0], c0):
        x[k : k + c0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="80,160")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cache", choices=("warm", "cold"), default="warm")
    args = ap.parse_args()
    nthreads = 2
    oxblosc.set_nthreads(nthreads)
    blosc2.set_nthreads(nthreads)
    print(f"oxblosc {oxblosc.__version__}, python-blosc2 {blosc2.__version__}, {nthreads} threads, {args.reps} reps,")
    print(f"cache {args.cache}, load average {os.getloadavg()[0]:.1f} at the start")
    cols = "ox wall ms | b2 wall ms | ox CPU ms | b2 CPU ms | ox rq ms | b2 rq ms | ratio wall | ratio CPU"
    print(f"| case | size MB | {cols} |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
        for mb in (int(s) for s in args.sizes.split(",")):
            data = field(mb)
            chunk_items = (4 << 20) // 4
            ox_path, b2_path = os.path.join(d, f"ox{mb}.b2frame"), os.path.join(d, f"b2{mb}.b2frame")
            cp_ox = {"codec": oxblosc.Codec.LZ4, "clevel": 5, "typesize": 4}
            cp_b2 = {"codec": blosc2.Codec.LZ4, "clevel": 5, "typesize": 4}
            for path, mod, cp in ((ox_path, oxblosc, cp_ox), (b2_path, blosc2, cp_b2)):
                sc = mod.SChunk(chunksize=chunk_items * 4, urlpath=path, mode="w", cparams=cp)
                for k in range(0, data.size, chunk_items):
                    sc.append_data(data[k : k + chunk_items])
                del sc
            ox_nd, b2_nd = os.path.join(d, f"ox{mb}.b2nd"), os.path.join(d, f"b2{mb}.b2nd")
            shape = (data.size // 4096, 4096)
            oxblosc.asarray(data.reshape(shape), urlpath=ox_nd, mode="w", cparams=cp_ox)
            blosc2.asarray(data.reshape(shape), urlpath=b2_nd, mode="w", cparams=cp_b2)
            del data
            cases = {
                "SChunk[:]": (ox_path, b2_path, lambda mod, p: mod.open(p)[:]),
                "SChunk chunk loop": (ox_path, b2_path, chunk_loop),
                "NDArray[:]": (ox_nd, b2_nd, lambda mod, p: mod.open(p)[:]),
                "NDArray chunk-row loop": (ox_nd, b2_nd, row_loop),
            }
            for name, (po, pb, f) in cases.items():
                res = {"ox": [], "b2": []}
                for rep in range(args.reps):
                    order = [("ox", oxblosc, po), ("b2", blosc2, pb)]
                    for lib, mod, p in order if rep % 2 == 0 else order[::-1]:
                        set_cache(p, args.cache)
                        res[lib].append(timed(lambda mod=mod, p=p, f=f: f(mod, p)))
                (ow, oc, oq), (bw, bc, bq) = (
                    [statistics.median(t[i] for t in res[lib]) for i in (0, 1, 2)] for lib in ("ox", "b2")
                )
                print(
                    f"| {name} | {mb} | {ow * 1e3:.1f} | {bw * 1e3:.1f} | {oc * 1e3:.1f} | {bc * 1e3:.1f} "
                    f"| {oq * 1e3:.1f} | {bq * 1e3:.1f} | {bw / ow:.2f} | {bc / oc:.2f} |",
                    flush=True,
                )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
