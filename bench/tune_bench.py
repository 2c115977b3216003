#!/usr/bin/env python
"""The tuner's pick against the exhaustive search, and against python-blosc2's defaults.

For each dataset (the first ``--mib`` MiB of it), ``oxblosc.tune(..., exhaustive=True)``
measures every point of the search space once; its table gives the best score per objective.
Then the guided ``oxblosc.tune`` runs per objective, and its pick is scored with the
*exhaustive* run's measurement of the same point (so timing noise between the two runs does
not decide). Reported: pick score / best score, guided time / exhaustive time, and the
pick's ratio and one-thread speeds next to python-blosc2's default (zstd, clevel 5, shuffle)
measured in the same exhaustive table.

    python bench/tune_bench.py                      # 3 datasets, ~10 min on a quiet 2-core box
    python bench/tune_bench.py --datasets climate_f4 --mib 1
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

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


def load(name: str, nbytes: int) -> np.ndarray:
    arr = _datasets.make(name, nbytes) if name in _datasets.DATASETS else realdata.load(name)
    return np.ascontiguousarray(arr).reshape(-1)[: nbytes // arr.dtype.itemsize]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["climate_f4", "de405/moon", "dicom/cr_radiograph_rg3"])
    ap.add_argument("--mib", type=float, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(
        "| dataset | objective | pick | pick/best score | time guided/exhaustive | ratio pick (b2 default) "
        "| cGB/s pick (b2 default) | dGB/s pick (b2 default) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        a = load(name, int(args.mib * (1 << 20)))
        ex = oxblosc.tune(a, exhaustive=True, seed=args.seed, time_budget=1e9)
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
            g = oxblosc.tune(a, objective=obj, seed=args.seed, time_budget=1e9)
            pick = table[key(g.best)]
            bs = "auto" if pick.blocksize == 0 else f"{pick.blocksize >> 10}K"
            print(
                f"| {name} ({a.dtype}) | {obj} | {pick.codec.name.lower()}/{pick.clevel}/{pick.filter_names}/"
                f"{pick.splitmode.name.split('_')[0].lower()}/{bs} | {score(pick, obj) / score(best, obj):.3f} "
                f"| {g.seconds:.1f}/{ex.seconds:.0f} s = {g.seconds / ex.seconds:.1%} "
                f"| {pick.ratio:.2f} ({default.ratio:.2f}) | {pick.cspeed:.2f} ({default.cspeed:.2f}) "
                f"| {pick.dspeed:.2f} ({default.dspeed:.2f}) |",
                flush=True,
            )


if __name__ == "__main__":
    main()
