"""Crash safety of n-d arrays on files, from the user's side: a child process writes boxes
spanning several chunks, resizes (grow and shrink, any axis), and computes expressions into
new files and into the array itself (``compute(out=...)``), on a contiguous file and a sparse
directory, and is SIGKILLed at random moments. Every one of those is a batch that replaces
chunks (staged to unreferenced space as it goes). After each kill:

- our ``open`` gives exactly the last state the child committed or the one it was writing;
- python-blosc2 (the real wheel) opens the same file and reads the same values;
- a file replaced by a new array (``mode="w"``: computed, from data, or a filled value) holds
  the array it held before or the complete new one, never an empty or partial one (made
  under a temporary name, renamed when complete); an array computed into in place holds,
  chunk by chunk, the old or the new values.

The child logs ``I <hash>`` before an operation (the state it is about to write) and ``C
<hash>`` after it returns; a hash covers shape and bytes. Campaigns: ``OXBLOSC_ND_CRASH_KILLS``.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import oxblosc
import pytest

blosc2 = pytest.importorskip("blosc2")

CHUNKS, BLOCKS, DTYPE = (4, 5), (2, 3), np.dtype("<i4")


def digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a, dtype=DTYPE)
    return hashlib.sha1(repr(a.shape).encode() + a.tobytes()).hexdigest()[:16]


def child(path: str, log_path: str, seed: int, contiguous: bool) -> None:
    """Write until killed (run in a subprocess)."""
    rng = random.Random(seed)
    out_path = path + ".out" + ("" if contiguous else ".d")
    log = open(log_path, "w", buffering=1)  # noqa: SIM115 (kept open until killed)

    def note(kind: str, h: str) -> None:
        os.write(log.fileno(), f"{kind} {h}\n".encode())

    if os.path.exists(out_path):  # what a file made by an earlier round holds (opened whole)
        note("Q", digest(oxblosc.open(out_path)[:]))
    if os.path.exists(path):
        a = oxblosc.open(path, mode="a")
    else:
        init = np.arange(9 * 11, dtype=DTYPE).reshape(9, 11)
        a = oxblosc.asarray(init, urlpath=path, mode="w", chunks=CHUNKS, blocks=BLOCKS, contiguous=contiguous)
    model = a[:]
    note("C", digest(model))
    while True:
        r = rng.random()
        shape = model.shape
        if r < 0.4 and all(shape):
            lo = [rng.randrange(s) for s in shape]
            hi = [rng.randint(x + 1, s) for x, s in zip(lo, shape, strict=True)]
            box = tuple(slice(x, y) for x, y in zip(lo, hi, strict=True))
            vals = np.array(
                [rng.randrange(-1000, 1000) for _ in range(int(np.prod([y - x for x, y in zip(lo, hi, strict=True)])))],
                DTYPE,
            )
            new = model.copy()
            new[box] = vals.reshape(new[box].shape)
            note("I", digest(new))
            a[box] = new[box]
        elif r < 0.7:
            ns = tuple(max(0, min(30, s + rng.randint(-6, 6))) for s in shape)
            new = np.zeros(ns, DTYPE)
            common = tuple(slice(0, min(x, y)) for x, y in zip(shape, ns, strict=True))
            new[common] = model[common]
            note("I", digest(new))
            a.resize(ns)
        elif r < 0.85:
            # a new array replacing the file at out_path (mode="w"): computed, from data, or
            # filled with a value; made under a temporary name and renamed when complete
            k = rng.randrange(1, 9)
            kw = dict(urlpath=out_path, mode="w", contiguous=contiguous, chunks=CHUNKS, blocks=BLOCKS)
            how = rng.randrange(3)
            want = [model * k + 1, model * k + 2, np.full(model.shape, k, DTYPE)][how]
            note("O", f"{k} {digest(want)}")
            if how == 0:
                (a * k + 1).compute(**kw)
            elif how == 1:
                oxblosc.asarray((model * k + 2).astype(DTYPE), **kw)
            else:
                oxblosc.full(model.shape, k, dtype=DTYPE, **kw)
            note("Q", digest(want))
            new = model
            note("I", digest(new))
        else:
            # into the array itself: each chunk is its own commit (old or new per chunk)
            k = rng.randrange(-3, 4)
            new = (model + k).astype(DTYPE)
            np.save(log_path + ".tmp.npy", model)
            os.replace(log_path + ".tmp.npy", log_path + ".prev.npy")
            note("P", f"{k}")
            note("I", digest(new))
            (a + k).compute(out=a)
        model = new
        note("C", digest(model))


def accepted(log: Path) -> tuple[list[str], str | None, int | None, str | None]:
    """States the file may hold after a kill, the new-file line being written (if any), the
    in-place offset being applied (if any), and what the out file held before (if any)."""
    states: list[str] = []
    last_c, last_i, out, inplace, held = None, None, None, None, None
    for line in log.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # torn
        kind, _, rest = line.strip().partition(" ")
        if kind == "C":
            last_c, last_i, out, inplace = rest, None, None, None
        elif kind == "I":
            last_i = rest
        elif kind == "O":
            out = rest
        elif kind == "P":
            inplace = int(rest)
        elif kind == "Q":
            held = rest
    states = [s for s in (last_c, last_i) if s is not None]
    return states, out, inplace, held


def chunkwise_old_or_new(got: np.ndarray, old_digest: str, k: int, prev: np.ndarray) -> bool:
    """A partly done in-place compute: every chunk holds the old values or old + k."""
    if got.shape != prev.shape or digest(prev) != old_digest:
        return False
    for idx in np.ndindex(*[-(-s // c) for s, c in zip(got.shape, CHUNKS, strict=True)]):
        box = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, CHUNKS, strict=True))
        g, p = got[box], prev[box]
        if not (np.array_equal(g, p) or np.array_equal(g, (p + k).astype(DTYPE))):
            return False
    return True


def check(path: str, log: Path, round_: int, py: bool) -> str:
    states, out, inplace, held = accepted(log)
    assert states, f"round {round_}: the child committed nothing"
    got = oxblosc.open(path)[:]
    h = digest(got)
    if h in states:
        what = "old" if h == states[0] else "new"
    else:
        prev = np.load(str(log) + ".prev.npy") if inplace is not None else None
        assert prev is not None and chunkwise_old_or_new(
            got, states[0], inplace, prev
        ), f"round {round_}: file holds {h} {got.shape}, accepted {states} (in place {inplace})"
        what = "mixed in place"
    if py:
        theirs = np.asarray(blosc2.open(path, mode="r")[:])
        assert theirs.shape == got.shape and np.array_equal(theirs, got), f"round {round_}: python-blosc2 differs"
    # The out file (replaced by mode="w" constructors): absent only if never made, else the
    # array it held before or the complete new one, never an empty or partial one.
    out_path = path + ".out" + ("" if path.endswith(".b2nd") else ".d")
    if not os.path.exists(out_path):
        assert held is None, f"round {round_}: the new array removed the file it was replacing"
        return what
    try:
        obj = oxblosc.open(out_path)
    except Exception as e:
        raise AssertionError(f"round {round_}: out file unreadable: {e}") from e
    assert isinstance(obj, oxblosc.NDArray), f"round {round_}: out file is a super-chunk without array metadata"
    o = obj[:]
    allowed = {held} | ({out.split()[1]} if out is not None else set())
    assert digest(o) in allowed, f"round {round_}: out file holds neither the old array nor the new one"
    if py:
        np.testing.assert_array_equal(np.asarray(blosc2.open(out_path, mode="r")[:]), o)
    return what


CHILD = (
    "import sys; sys.path.insert(0, {tests!r}); import test_nd_crash as t; t.child({path!r}, {log!r}, {seed}, {contig})"
)


def campaign(tmp: Path, contiguous: bool, kills: int, py_every: int, seed: int) -> dict[str, int]:
    path = str(tmp / ("a.b2nd" if contiguous else "a.b2nd.d"))
    log = tmp / "log.txt"
    rng = random.Random(seed)
    seen: dict[str, int] = {}
    for round_ in range(kills):
        if log.exists():
            log.unlink()
        code = CHILD.format(
            tests=os.path.dirname(__file__), path=path, log=str(log), seed=rng.randrange(1 << 30), contig=contiguous
        )
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        while (not log.exists() or "C " not in log.read_text()) and p.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.005)
        time.sleep(rng.random() * 0.25)
        p.kill()
        err = p.communicate()[1].decode(errors="replace")
        assert p.returncode == -9, f"round {round_}: the child ended by itself: {err[-3000:]}"
        what = check(path, log, round_, py=round_ % py_every == 0)
        seen[what] = seen.get(what, 0) + 1
    return seen


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
def test_sigkill_during_nd_batches(tmp_path, contiguous):
    kills = int(os.environ.get("OXBLOSC_ND_CRASH_KILLS", "5"))
    py_every = int(os.environ.get("OXBLOSC_ND_CRASH_PY_EVERY", "2"))
    seen = campaign(tmp_path, contiguous, kills, py_every, seed=int(os.environ.get("OXBLOSC_ND_CRASH_SEED", "1")))
    print(f"n-d crash ({'contiguous' if contiguous else 'sparse'}): {kills} kills, outcomes {seen}")
