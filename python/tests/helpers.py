"""Helpers shared by the test modules: datasets, the pairwise generator, paths."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    env = os.environ.get("OXBLOSC_SHARED")
    return Path(env) if env else (REPO / ".." / "shared").resolve()


def vectors_dir() -> Path:
    return shared_dir() / "vectors" / "c-blosc2-compat"


# ---------------------------------------------------------------------------------------------
# Datasets: each returns exactly `nbytes` bytes (the typesize only shapes the generator).

DATASETS = ("arange_i64", "linspace_f64", "smooth_f32", "random_f64", "genotype_i8", "zeros", "constant")


def make_data(name: str, nbytes: int, seed: int = 0) -> bytes:
    n8 = nbytes // 8 + 1
    rng = np.random.default_rng(seed)
    if name == "arange_i64":
        a = np.arange(n8, dtype=np.int64)
    elif name == "linspace_f64":
        a = np.linspace(-1000.0, 1000.0, n8)
    elif name == "smooth_f32":
        n4 = nbytes // 4 + 1
        x = np.linspace(0, 8 * np.pi, n4, dtype=np.float32)
        a = (np.sin(x) * np.cos(x / 3) * 100).astype(np.float32)
    elif name == "random_f64":
        a = rng.random(n8)
    elif name == "genotype_i8":
        a = rng.choice(np.array([0, 1, 2], dtype=np.int8), size=nbytes + 1, p=[0.9, 0.07, 0.03])
    elif name == "zeros":
        return bytes(nbytes)
    elif name == "constant":
        return bytes([0x5A, 0xA5, 0x3C]) * (nbytes // 3) + bytes([0x5A, 0xA5, 0x3C])[: nbytes % 3]
    else:
        raise KeyError(name)
    return a.tobytes()[:nbytes]


# ---------------------------------------------------------------------------------------------
# A small deterministic all-pairs (pairwise) generator.


def pairwise(factors: dict[str, list], seed: int = 1234, candidates: int = 40, valid=None) -> list[dict]:
    """Rows covering every pair of values of any two factors (greedy, seeded).

    ``valid(row) -> bool`` rejects impossible combinations; pairs that no valid row can hold are
    dropped instead of looping forever.
    """
    rng = random.Random(seed)
    names = list(factors)
    uncovered = set()
    for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
        for va in range(len(factors[a])):
            for vb in range(len(factors[b])):
                uncovered.add((i, va, j, vb))
    rows: list[dict] = []
    stale = 0
    while uncovered and stale < 200:
        best, best_gain = None, 0
        # seed a candidate with one uncovered pair so progress is guaranteed
        target = sorted(uncovered)[rng.randrange(len(uncovered))]
        for _ in range(candidates):
            idx = [rng.randrange(len(factors[n])) for n in names]
            idx[target[0]], idx[target[2]] = target[1], target[3]
            row = {n: factors[n][k] for n, k in zip(names, idx, strict=False)}
            if valid is not None and not valid(row):
                continue
            gain = sum(
                1 for (i, vi), (j, vj) in itertools.combinations(enumerate(idx), 2) if (i, vi, j, vj) in uncovered
            )
            if gain > best_gain:
                best, best_gain = idx, gain
        if best is None:
            uncovered.discard(target)
            stale += 1
            continue
        for (i, vi), (j, vj) in itertools.combinations(enumerate(best), 2):
            uncovered.discard((i, vi, j, vj))
        rows.append({n: factors[n][k] for n, k in zip(names, best, strict=False)})
    return rows


def install_plugin_example(tmp: Path) -> None:
    """pip-install examples/plugin-example (Python and compiled plugins) into this venv."""
    import shutil
    import subprocess
    import sys

    build = tmp / "plugin-example"
    shutil.copytree(REPO / "examples" / "plugin-example", build)  # builds write next to the sources
    env = {**os.environ, "OXBLOSC_INCLUDE": str(REPO / "crates" / "oxblosc-chunk" / "include")}
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(build)]
    r = subprocess.run(pip, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr


@contextlib.contextmanager
def file_size_limit(limit: int):
    """RLIMIT_FSIZE at `limit` bytes for this process (writes past it fail with EFBIG instead
    of SIGXFSZ killing the process); the old limit and handler come back afterwards."""
    import resource
    import signal

    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)
