#!/usr/bin/env python
"""The tuner's pick against the exhaustive search, and against python-blosc2's defaults.

For each dataset (the first ``--mib`` MiB of it), ``oxblosc.tune(..., exhaustive=True)``
measures every point of the search space once; its table gives the best score per objective.
Then the guided ``oxblosc.tune`` runs per objective, and its pick is scored with the
*exhaustive* run's measurement of the same point (so timing noise between the two runs does
not decide). Reported: pick score / best score, guided time / exhaustive time (wall and process
CPU), and the pick's ratio and one-thread speeds next to python-blosc2's default (zstd,
clevel 5, shuffle) measured in the same exhaustive table.

For the speed objectives the exhaustive "best" is the maximum of ~2900 single measurements,
so it is biased upwards by timing noise (the winner's curse). The column "re-timed" therefore
also times the pick and the exhaustive table's five best points again, side by side
(interleaved rounds, best of ``--retime`` runs of ``compress2``/``decompress2`` with one
thread on the same 1 MiB windows), and gives pick score / best re-timed score.

    python bench/tune_bench.py                      # 3 datasets, ~10 min on a quiet 2-core box
    python bench/tune_bench.py --datasets climate_f4 --mib 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("OXBLOSC_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(SHARED / "bench"))

import _datasets  # noqa: E402
import oxblosc  # noqa: E402
import realdata  # noqa: E402

LINK = 1e9
OBJECTIVES = ["balanced", "ratio", "cspeed", "dspeed"]


def score(p, objective: str) -> float:
    """The tuner's score (crates/oxblosc/src/tune.rs), speeds here in GB/s."""
    c = 1 / (1 / (p.cspeed * 1e9) + 1 / (p.ratio * LINK))
    d = 1 / (1 / (p.dspeed * 1e9) + 1 / (p.ratio * LINK))
    return {"ratio": p.ratio, "cspeed": c, "dspeed": d, "balanced": 2 / (1 / c + 1 / d)}[objective]


def key(p) -> tuple:
    return (p.codec, p.clevel, p.filters, p.filters_meta, p.splitmode, p.blocksize)


def cparams(p, typesize: int):
    return oxblosc.CParams(
        codec=p.codec, clevel=p.clevel, typesize=typesize, nthreads=1, blocksize=p.blocksize,
        splitmode=p.splitmode, filters=list(p.filters), filters_meta=list(p.filters_meta),
    )  # fmt: skip


def retime(points: list, a: np.ndarray, rounds: int) -> dict:
    """Best-of-``rounds`` ratio and speeds (GB/s) of each point on 1 MiB windows of ``a``,
    the points taken in turn within each round."""
    raw = a.view(np.uint8)
    windows = [raw[i : i + (1 << 20)] for i in range(0, min(raw.size, 4 << 20), 1 << 20)]
    n = sum(w.size for w in windows)
    best = {key(p): [0.0, 0.0, 0.0] for p in points}
    for _ in range(rounds):
        for p in points:
            cp = cparams(p, a.dtype.itemsize)
            t = time.perf_counter()
            chunks = [oxblosc.compress2(w, cparams=cp) for w in windows]
            tc = time.perf_counter() - t
            t = time.perf_counter()
            for c in chunks:
                oxblosc.decompress2(c, nthreads=1)
            td = time.perf_counter() - t
            b = best[key(p)]
            b[0] = n / sum(len(c) for c in chunks)
            b[1], b[2] = max(b[1], n / tc / 1e9), max(b[2], n / td / 1e9)
    return best


def retimed_score(m: list, objective: str) -> float:
    return score(SimpleNamespace(ratio=m[0], cspeed=m[1], dspeed=m[2]), objective)


def load(name: str, nbytes: int) -> np.ndarray:
    arr = _datasets.make(name, nbytes) if name in _datasets.DATASETS else realdata.load(name)
    return np.ascontiguousarray(arr).reshape(-1)[: nbytes // arr.dtype.itemsize]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["climate_f4", "de405/moon", "dicom/cr_radiograph_rg3"])
    ap.add_argument("--mib", type=float, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--retime", type=int, default=15, help="rounds of the re-timing (0: none)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print(
        "| dataset | objective | pick | pick/best score | re-timed | time guided/exhaustive "
        "| CPU guided/exhaustive | ratio pick (b2 default) | cGB/s pick (b2 default) | dGB/s pick (b2 default) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        a = load(name, int(args.mib * (1 << 20)))
        c0 = time.process_time()
        ex = oxblosc.tune(a, exhaustive=True, seed=args.seed, time_budget=1e9)
        ex_cpu = time.process_time() - c0
        # Every point of the exhaustive table, keyed by its parameters.
        table = {key(p): p for p in ex.points}
        default = next(
            p
            for p in ex.points
            if p.codec == oxblosc.Codec.ZSTD
            and p.clevel == 5
            and p.filters == (0, 0, 0, 0, 0, 1)
            and p.blocksize == 0
            and p.splitmode == oxblosc.SplitMode.AUTO_SPLIT
        )
        for obj in OBJECTIVES:
            best = max(ex.points, key=lambda p: score(p, obj))
            c0 = time.process_time()
            g = oxblosc.tune(a, objective=obj, seed=args.seed, time_budget=1e9)
            g_cpu = time.process_time() - c0
            pick = table[key(g.best)]
            bs = "auto" if pick.blocksize == 0 else f"{pick.blocksize >> 10}K"
            again = "-"
            if obj != "ratio" and args.retime > 0:
                finalists = sorted(ex.points, key=lambda p: score(p, obj), reverse=True)[:5]
                t = retime([pick, *(p for p in finalists if key(p) != key(pick))], a, args.retime)
                top = max(retimed_score(m, obj) for m in t.values())
                again = f"{retimed_score(t[key(pick)], obj) / top:.3f}"
            print(
                f"| {name} ({a.dtype}) | {obj} | {pick.codec.name.lower()}/{pick.clevel}/{pick.filter_names}/"
                f"{pick.splitmode.name.split('_')[0].lower()}/{bs} | {score(pick, obj) / score(best, obj):.3f} "
                f"| {again} | {g.seconds:.1f}/{ex.seconds:.0f} s = {g.seconds / ex.seconds:.1%} "
                f"| {g_cpu:.1f}/{ex_cpu:.0f} s = {g_cpu / ex_cpu:.1%} "
                f"| {pick.ratio:.2f} ({default.ratio:.2f}) | {pick.cspeed:.2f} ({default.cspeed:.2f}) "
                f"| {pick.dspeed:.2f} ({default.dspeed:.2f}) |",
                flush=True,
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end ({os.getloadavg()[2]:.1f} over 15 min)")


if __name__ == "__main__":
    main()
