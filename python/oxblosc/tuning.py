"""``oxblosc.tune``: pick compression parameters by trying them on samples of the data.

The search runs in Rust (``crates/oxblosc/src/tune.rs`` documents the search space, the
search order and the scores); this module turns its result into a ``CParams`` and a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _native
from .core import Codec, CParams, Filter, SplitMode, Tuner

OBJECTIVES = ("balanced", "ratio", "cspeed", "dspeed")

#: Settings of the per-chunk tuner (``CParams(tuner=Tuner.BTUNE)``): see set_chunk_tuner.
_CHUNK_TUNER = {
    "objective": "balanced",
    "every": 64,
    "drift": 0.5,
    "time_budget": 0.25,
    "allow_lossy": False,
    "seed": 0,
}


def set_chunk_tuner(
    objective: str = "balanced",
    every: int = 64,
    drift: float = 0.5,
    time_budget: float = 0.25,
    allow_lossy: bool = False,
    seed: int = 0,
) -> None:
    """Settings of the per-chunk tuner used by SChunks and NDArrays created afterwards with
    ``cparams=CParams(tuner=Tuner.BTUNE)``. It runs a quick search (every codec and filter
    pipeline at clevel 5, then the leader's clevels; at most ``time_budget`` seconds) on the
    first chunk written, and again every ``every`` chunks (0: never) or when a chunk's
    compression ratio differs by more than ``drift`` (a fraction) from the ratio of the first
    chunk written with the current pick; the chunks in between reuse the pick. Lossy filters
    only with ``allow_lossy``. With ``objective="ratio"`` the picks depend only on the data
    and ``seed``; the speed objectives also depend on timings."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if int(every) < 0 or not float(drift) >= 0 or not float(time_budget) >= 0:
        raise ValueError("every, drift and time_budget must be non-negative")
    _CHUNK_TUNER.update(
        objective=objective,
        every=int(every),
        drift=float(drift),
        time_budget=float(time_budget),
        allow_lossy=bool(allow_lossy),
        seed=int(seed),
    )


def tuner_arg(cparams: CParams) -> tuple | None:
    """The native per-chunk tuner settings for ``cparams`` (None: no tuner)."""
    if Tuner(cparams.tuner) != Tuner.BTUNE:
        return None
    t = _CHUNK_TUNER
    return (t["objective"], t["every"], t["drift"], t["time_budget"], t["allow_lossy"], t["seed"])


@dataclass(frozen=True)
class TunePoint:
    """One measured point: parameters, ratio and one-thread speeds (GB/s, 1e9 bytes)."""

    codec: Codec
    clevel: int
    filters: tuple
    filters_meta: tuple
    splitmode: SplitMode
    blocksize: int
    ratio: float
    cspeed: float
    dspeed: float

    @property
    def filter_names(self) -> str:
        names = [
            Filter(f).name.lower() + (f":{m - 256 if m > 127 else m}" if f == Filter.TRUNC_PREC else "")
            for f, m in zip(self.filters, self.filters_meta, strict=True)
            if f != Filter.NOFILTER
        ]
        return "+".join(names) or "none"


def _point(row: tuple) -> TunePoint:
    codec, clevel, filters, meta, split, bs, ratio, cs, ds = row
    return TunePoint(Codec(codec), clevel, tuple(filters), tuple(meta), SplitMode(split), bs, ratio, cs / 1e9, ds / 1e9)


class TuneResult:
    """What :func:`tune` found: ``cparams`` (the pick), ``best``, ``front`` (the Pareto
    front of ratio, compression and decompression speed, highest ratio first) and ``points``
    (everything measured)."""

    def __init__(self, raw: tuple, typesize: int, objective: str):
        best, front, points, self.sample_bytes, self.seconds, self.truncated = raw
        self.objective = objective
        self.typesize = typesize
        self.best = _point(best)
        self.front = [_point(r) for r in front]
        #: Every measured point, in measuring order.
        self.points = [_point(r) for r in points]
        self.npoints = len(self.points)

    @property
    def cparams(self) -> CParams:
        """The recommended parameters, usable as is by ``compress2``, ``SChunk``, ``asarray``."""
        b = self.best
        return CParams(
            codec=b.codec,
            clevel=b.clevel,
            typesize=self.typesize,
            blocksize=b.blocksize,
            splitmode=b.splitmode,
            filters=[Filter(f) if f in Filter._value2member_map_ else f for f in b.filters],
            filters_meta=list(b.filters_meta),
        )

    def table(self) -> str:
        """The Pareto front as a text table, the pick marked with ``*`` (and added when it is
        off the front: a combined score, or a tie in ratio with a faster twin, allows that)."""
        head = f"{'':1} {'codec':7} {'clevel':>6} {'filters':22} {'split':6} {'blocksize':>9} "
        head += f"{'ratio':>7} {'cGB/s':>7} {'dGB/s':>7}"
        lines = [head]
        rows = self.front if self.best in self.front else [*self.front, self.best]
        for p in rows:
            mark = "*" if p == self.best else ""
            split = p.splitmode.name.split("_")[0].lower()
            bs = "auto" if p.blocksize == 0 else f"{p.blocksize >> 10}K"
            lines.append(
                f"{mark:1} {p.codec.name.lower():7} {p.clevel:>6} {p.filter_names:22} {split:6} {bs:>9} "
                f"{p.ratio:7.2f} {p.cspeed:7.2f} {p.dspeed:7.2f}"
            )
        tail = f"objective {self.objective}: {self.npoints} points on {self.sample_bytes / 2**20:.1f} MiB"
        tail += f" in {self.seconds:.2f} s" + (" (time budget reached)" if self.truncated else "")
        return "\n".join([*lines, tail])

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__

    def plot(self, ax: Any = None) -> Any:
        """Ratio against decompression speed of the front, each point labelled with its
        parameters and compression speed (the front has three axes; the plot shows two), the
        pick starred (needs matplotlib). Draws on ``ax``, or on a new figure."""
        import matplotlib.pyplot as plt

        ax = ax if ax is not None else plt.figure().gca()
        ax.scatter([p.dspeed for p in self.front], [p.ratio for p in self.front], label="Pareto front")
        for p in self.front:
            text = f"{p.codec.name.lower()}/{p.clevel} {p.filter_names}, c {p.cspeed:.2f}"
            ax.annotate(text, (p.dspeed, p.ratio), xytext=(3, 3), textcoords="offset points", fontsize=7)
        ax.scatter([self.best.dspeed], [self.best.ratio], marker="*", s=200, label="pick")
        ax.set_xlabel("decompression GB/s (1 thread)")
        ax.set_ylabel("compression ratio")
        ax.set_title(f"oxblosc.tune, objective {self.objective} (c: compression GB/s)")
        ax.legend()
        return ax


def tune(
    data: Any,
    objective: str = "balanced",
    time_budget: float = 5.0,
    typesize: int | None = None,
    allow_lossy: bool = False,
    seed: int = 0,
    exhaustive: bool = False,
) -> TuneResult:
    """Try codecs, clevels, filter pipelines, split modes and block sizes on samples of
    ``data`` (any buffer; a NumPy array gives its itemsize as ``typesize``) and return the
    best for ``objective``: "balanced", "ratio", "cspeed" or "dspeed". Lossy filters are
    tried only with ``allow_lossy``. ``exhaustive`` measures every point (slow)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if typesize is None:
        typesize = getattr(data, "itemsize", None) or 1
    if isinstance(data, np.ndarray) and not data.flags.c_contiguous:
        data = np.ascontiguousarray(data)
    raw = _native.tune(data, objective, float(time_budget), int(typesize), bool(allow_lossy), int(seed), exhaustive)
    return TuneResult(raw, int(typesize), objective)
