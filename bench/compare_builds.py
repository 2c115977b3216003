#!/usr/bin/env python
"""compress2 (or decompress2) of several builds of ``oxblosc._native`` and python-blosc2,
interleaved in one process.

Each build is a copy of the extension module (e.g. ``target/release/lib_native.so`` of two
branches, or of one source linked two ways); all of them and python-blosc2 compress the same
buffer in alternating order, and the medians are printed with python-blosc2's time divided by
each build's. Used for decision 0014 (libzstd's code placement). Every build must write
python-blosc2's bytes (checked first).

    python bench/compare_builds.py --builds /tmp/a.so /tmp/b.so \\
        --cells arange_i8:zstd:5:NOFILTER random_f8:zstd:5:SHUFFLE de405/moon:zstd:5:NOFILTER

A cell is ``dataset:codec:clevel:filter`` (datasets of ``../shared/bench``, the first 8 MiB;
``filter`` may name several, ``SHUFFLE+BYTEDELTA``).

``--op decompress`` times ``decompress2`` of python-blosc2's chunk into a touched buffer
instead; ``--cold`` writes a 64 MiB buffer before every timed call (caches evicted, as for a
single call after other work: decision 0011's pattern).
"""

from __future__ import annotations

import argparse
import gc
import importlib.machinery
import importlib.util
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
import realdata  # noqa: E402
from oxblosc import core  # noqa: E402

MiB = 1 << 20


def load_build(path: str, i: int):
    """Import the extension at ``path`` as a module of its own (its init function is
    ``PyInit__native`` whatever the file is called)."""
    name = f"build{i}._native"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load(ds: str, nbytes: int) -> np.ndarray:
    arr = _datasets.make(ds, nbytes) if ds in _datasets.DATASETS else realdata.load(ds)
    flat = np.ascontiguousarray(arr).reshape(-1)
    return flat[: max(1, nbytes // flat.itemsize)].copy()


def params(lib, codec: str, clevel: str, filt: str, typesize: int) -> dict:
    return dict(
        codec=getattr(lib.Codec, codec.upper()),
        clevel=int(clevel),
        typesize=typesize,
        nthreads=1,
        filters=[getattr(lib.Filter, f) for f in filt.split("+")],
        filters_meta=[0] * len(filt.split("+")),
    )


def decode_calls(src: np.ndarray, chunk: bytes, builds: list) -> dict:
    """Calls decoding ``chunk`` into a touched buffer, each checked to give ``src`` back."""
    outs = {f"build{i}": np.ones_like(src) for i in range(len(builds))}
    outs["b2"] = np.ones_like(src)
    calls = {
        f"build{i}": (lambda m=m, d=outs[f"build{i}"]: m.decompress2_into(chunk, d, 1)) for i, m in enumerate(builds)
    }
    calls["b2"] = lambda: blosc2.decompress2(chunk, dst=outs["b2"], nthreads=1)
    for name, call in calls.items():
        call()
        if not np.array_equal(outs[name].view(np.uint8), src.view(np.uint8)):
            sys.exit(f"{name} does not decode python-blosc2's chunk exactly")
    return calls


def run_cell(cell: str, builds: list, reps: int, nbytes: int, op: str, cold: bool) -> str:
    """One line: the median time of every build and of python-blosc2, and the ratios."""
    ds, codec, clevel, filt = cell.split(":")
    src = load(ds, nbytes)
    native_args = core._cached_native_args(params(oxblosc, codec, clevel, filt, src.itemsize))
    b2_kwargs = params(blosc2, codec, clevel, filt, src.itemsize)
    calls = {f"build{i}": (lambda m=m: m.compress2(src, native_args)) for i, m in enumerate(builds)}
    calls["b2"] = lambda: blosc2.compress2(src, **b2_kwargs)
    expected = calls["b2"]()
    for name, call in calls.items():
        if call() != expected:
            sys.exit(f"{cell}: {name} does not write python-blosc2's chunk")
    if op == "decompress":
        calls = decode_calls(src, expected, builds)
    evict = np.zeros(64 * MiB, np.uint8) if cold else None
    times = {name: [] for name in calls}
    order = list(calls)
    for rep in range(reps):
        for name in order if rep % 2 == 0 else order[::-1]:
            if evict is not None:
                evict += 1
            t0 = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - t0)
    ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    cols = "  ".join(f"{name} {v:.2f} ms" for name, v in ms.items())
    ratios = " ".join(f"{ms['b2'] / ms[f'build{i}']:.3f}" for i in range(len(builds)))
    return f"{cell} {op}{' cold' if cold else ''}  {cols}  | b2/build: {ratios}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--builds", nargs="+", required=True, help="copies of _native.abi3.so")
    p.add_argument("--cells", nargs="+", required=True, help="dataset:codec:clevel:filter")
    p.add_argument("--reps", type=int, default=11)
    p.add_argument("--chunk-mib", type=float, default=8.0)
    p.add_argument("--op", choices=("compress", "decompress"), default="compress")
    p.add_argument("--cold", action="store_true", help="evict the caches before every timed call")
    args = p.parse_args()
    builds = [load_build(path, i) for i, path in enumerate(args.builds)]
    gc.disable()
    for cell in args.cells:
        print(run_cell(cell, builds, args.reps, int(args.chunk_mib * MiB), args.op, args.cold), flush=True)


if __name__ == "__main__":
    main()
