#!/usr/bin/env python
"""The per-chunk tuner (``CParams(tuner=Tuner.BTUNE)``) on real datasets, against oxblosc's
fixed default cparams (ZSTD 1 + shuffle, python-blosc2's defaults) and python-blosc2 itself.

For each dataset of ``../shared/bench/realdata.py`` from ``--min-mb`` up: ``asarray`` to
memory with automatic shapes, then a full read; ratio, write and read speed (medians of
``--reps`` interleaved repetitions, process CPU time: the machine may be shared). Tuner
settings: the defaults of ``oxblosc.set_chunk_tuner`` (balanced) and objective "ratio".

    python bench/chunk_tuner_bench.py [--min-mb 3] [--reps 3]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import blosc2
import numpy as np
import oxblosc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(os.environ.get("OXBLOSC_SHARED", REPO.parent / "shared")) / "bench"))
import realdata  # noqa: E402


def cpu(fn):
    t = time.process_time()
    r = fn()
    return time.process_time() - t, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--min-mb", type=float, default=3.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    for lib in (oxblosc, blosc2):
        lib.set_nthreads(2)
    setups = {
        "ox fixed": (oxblosc, {}, None),
        "ox BTUNE balanced": (oxblosc, {"tuner": oxblosc.Tuner.BTUNE}, "balanced"),
        "ox BTUNE ratio": (oxblosc, {"tuner": oxblosc.Tuner.BTUNE}, "ratio"),
        "b2 default": (blosc2, {}, None),
    }
    print("| dataset | MB | setup | ratio | write GB/s | read GB/s |")
    print("|---|---:|---|---:|---:|---:|")
    for name, a in realdata.iter_datasets(only=args.only):
        if a.nbytes < args.min_mb * 1e6 or a.dtype.kind not in "uif":
            continue
        rows = {}
        for rep in range(args.reps):
            order = list(setups.items()) if rep % 2 == 0 else list(reversed(setups.items()))
            for label, (lib, cp, objective) in order:
                if objective:
                    oxblosc.set_chunk_tuner(objective=objective)
                tw, x = cpu(lambda lib=lib, cp=cp, a=a: lib.asarray(a, cparams=cp))
                tr, back = cpu(lambda x=x: x[:])
                assert np.array_equal(back, a, equal_nan=a.dtype.kind == "f")
                rows.setdefault(label, []).append((tw, tr, x.schunk.nbytes / x.schunk.cbytes))
        oxblosc.set_chunk_tuner()
        for label, r in rows.items():
            tw, tr = (statistics.median(v[i] for v in r) for i in (0, 1))
            mb = a.nbytes / 1e6
            print(
                f"| {name} | {mb:.1f} | {label} | {r[0][2]:.2f} | {a.nbytes / tw / 1e9:.2f} | "
                f"{a.nbytes / tr / 1e9:.2f} |"
            )


if __name__ == "__main__":
    main()
