"""oxblosc.CTable appends that fail part-way (an exception, a killed process, a full disk)
leave a table stored as a directory readable with the rows it had, by us and by
python-blosc2 (the real wheel), with statistics that describe exactly those rows."""

from __future__ import annotations

import gc
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

import numpy as np
import oxblosc
import pytest
from oxblosc import ctable_layout
from oxblosc.ndarray import NDArray

blosc2 = pytest.importorskip("blosc2")

BATCH = 37  # not a multiple of the block: every append merges into a partial block


def rows(lo: int, hi: int) -> dict:
    """Rows lo..hi of one deterministic table (the child process rebuilds the same ones)."""
    k = np.arange(lo, hi, dtype="i8")
    return {
        "k": k,
        "x": ((k * 7919) % 1000 - 500).astype("i4"),
        "f": np.sin(k).astype("f8"),
        "s": np.array([b"a", b"bb", b"ccc"])[k % 3],
    }


def check_table(path: str, n_min: int = 0, writable: bool = True) -> int:
    """The table at ``path`` holds rows 0..n for some n >= n_min, read the same by ours
    (read-only, then writable) and python-blosc2, with exact statistics; returns n."""
    t = oxblosc.CTable.open(path)
    n = len(t)
    assert n >= n_min
    want = rows(0, n)
    got = t.to_numpy()
    for c, v in want.items():
        np.testing.assert_array_equal(got[c], v)
    b = blosc2.CTable.open(path)
    assert len(b) == n
    for c, v in want.items():
        np.testing.assert_array_equal(b[c][:], v)
    assert len(b.where("x > 400")) == int((want["x"] > 400).sum())
    if not writable:  # another handle writes the table
        return n
    a = oxblosc.CTable.open(path, mode="a")  # trims an unfinished tail, rebuilds statistics
    assert not [f for f in os.listdir(os.path.dirname(path)) if ".tmp-" in f]
    assert len(a) == n
    assert all(arr.shape[0] == a._valid.shape[0] for arr in a._cols.values())
    assert all(a._stats[c] is not None for c in ("k", "x", "f")) or n == 0
    a.verify_stats()
    for cond in ("x > 400", f"(k >= {n // 2}) & (k < {n // 2 + 50})", "f < -0.99"):
        a.skip_blocks = True
        on = a.where(cond).to_numpy()
        a.skip_blocks = False
        np.testing.assert_array_equal(on, a.where(cond).to_numpy())
    b = blosc2.CTable.open(path)  # the rebuilt statistics, as python-blosc2 uses them
    if n:
        assert {ix.col_name for ix in b.indexes if ix.kind == "summary" and not ix.stale} >= {"k", "x", "f"}
    assert len(b.where("x > 400")) == int((want["x"] > 400).sum())
    return n


def make(path: str, n: int = 100) -> oxblosc.CTable:
    return oxblosc.CTable(rows(0, n), urlpath=path, chunks=128, blocks=32)


# ------------------------------------------------------------------ exceptions part-way


@pytest.mark.parametrize("after", [0, 1, 3, 4])
@pytest.mark.parametrize("rollback_fails", [False, True])
def test_exception_after_some_columns(tmp_path, monkeypatch, after, rollback_fails):
    """The (after+1)-th array append raises (the validity column's growth, then the 4
    columns); when ``rollback_fails`` nothing can be resized back either, as after a crash."""
    path = str(tmp_path / "t.b2d")
    make(path)
    t = oxblosc.CTable.open(path, mode="a")
    before = t.to_numpy()
    real_append, real_resize = NDArray.append, NDArray.resize
    calls = []

    def append(self, values):
        calls.append(1)
        if len(calls) == after + 1:
            raise OSError("injected: disk full")
        return real_append(self, values)

    def resize(self, shape):
        if rollback_fails:
            raise OSError("injected: resize failed")
        return real_resize(self, shape)

    monkeypatch.setattr(NDArray, "append", append)
    monkeypatch.setattr(NDArray, "resize", resize)
    with pytest.raises(OSError, match="injected"):
        t.extend(rows(100, 100 + BATCH))
    monkeypatch.undo()
    # the handle: same rows, statistics of exactly those rows
    assert len(t) == 100
    assert t.to_numpy().tobytes() == before.tobytes()
    t.verify_stats()
    # the files: same rows for us and python-blosc2
    assert check_table(path, writable=False) == 100
    # and the handle still appends correctly
    t.extend(rows(100, 100 + BATCH))
    assert check_table(path) == 100 + BATCH


@pytest.mark.parametrize(("step", "nth"), [("uncommitted", 1), ("replace_valid", 1), ("replace_valid", 2)])
def test_exception_at_commit(tmp_path, monkeypatch, step, nth):
    """The metadata write, the growth of ``_valid_rows`` (nth=1) or the commit (nth=2) fails."""
    path = str(tmp_path / "t.b2d")
    make(path)
    t = oxblosc.CTable.open(path, mode="a")
    real, calls = getattr(ctable_layout, step), []

    def boom(*a, **k):
        calls.append(1)
        if len(calls) == nth:
            raise OSError("injected")
        return real(*a, **k)

    monkeypatch.setattr(ctable_layout, step, boom)
    with pytest.raises(OSError, match="injected"):
        t.extend(rows(100, 100 + BATCH))
    monkeypatch.undo()
    assert len(t) == 100
    t.verify_stats()
    assert check_table(path, writable=False) == 100
    t.extend(rows(100, 100 + BATCH))
    assert check_table(path) == 100 + BATCH


def test_exception_after_commit(tmp_path, monkeypatch):
    """The rows are committed, then writing the statistics fails: the append happened (the
    handle and the files say so), the error is raised, statistics come back on reopen."""
    path = str(tmp_path / "t.b2d")
    make(path)
    t = oxblosc.CTable.open(path, mode="a")

    def boom(*a, **k):
        raise OSError("injected: disk full")

    monkeypatch.setattr(ctable_layout, "write_meta", boom)
    with pytest.raises(OSError, match="injected"):
        t.extend(rows(100, 100 + BATCH))
    monkeypatch.undo()
    assert len(t) == 100 + BATCH
    t.verify_stats()
    assert check_table(path, writable=False) == 100 + BATCH
    assert oxblosc.CTable.open(path)._stats["k"] is None  # none listed: nobody skips on stale ones
    assert check_table(path) == 100 + BATCH


def test_crash_after_columns_read_only_open(tmp_path):
    """Columns extended, nothing committed: a read-only open ignores the tail, ``save``
    writes only the committed rows."""
    path = str(tmp_path / "t.b2d")
    make(path)
    for c, v in rows(100, 100 + BATCH).items():  # what a crash after the columns leaves
        oxblosc.open(os.path.join(path, f"_cols/{c}.b2nd"), mode="a").append(v)
    r = oxblosc.CTable.open(path)
    assert len(r) == 100 and len(r.where("k >= 100")) == 0
    out = str(tmp_path / "saved.b2d")
    r.save(out)
    assert check_table(out) == 100
    # python-blosc2 appends over the tail (its unused capacity)
    b = blosc2.CTable.open(path, mode="a")
    new = rows(100, 110)
    b.extend([tuple(new[c][j] for c in new) for j in range(10)])
    b.close()
    assert check_table(path) == 110


# ------------------------------------------------------------------ a killed process

CHILD = """
import sys
sys.path.insert(0, {tests!r})
import oxblosc
from test_ctable_crash import BATCH, rows
t = oxblosc.CTable.open({path!r}, mode="a")
n = len(t)
print("ready", flush=True)
while True:
    t.extend(rows(n, n + BATCH))
    n += BATCH
"""


def test_killed_while_appending(tmp_path):
    """`make stress` runs it with many seeds (OXBLOSC_CRASH_SEED) and OXBLOSC_CRASH_KILLS kills."""
    path = str(tmp_path / "t.b2d")
    make(path)
    rnd = random.Random(int(os.environ.get("OXBLOSC_CRASH_SEED", "1234")))
    n = 100
    code = CHILD.format(tests=os.path.dirname(__file__), path=path)
    for _ in range(int(os.environ.get("OXBLOSC_CRASH_KILLS", "6"))):
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        assert p.stdout.readline().strip() == b"ready"
        time.sleep(rnd.uniform(0.02, 0.4))
        p.send_signal(signal.SIGKILL)
        p.wait()
        m = check_table(path, n)
        assert (m - 100) % BATCH == 0
        n = m
    assert n > 100  # some appends did commit


APPEND_AND_DIE = """
import os, signal, sys
sys.path.insert(0, {tests!r})
import oxblosc
from test_ctable_crash import BATCH, rows
t = oxblosc.CTable.open({path!r}, mode="a")
n = len(t)
for _ in range({batches}):
    t.extend(rows(n, n + BATCH))
    n += BATCH
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("write_again", [False, True])
def test_handle_left_open_while_another_process_appends(tmp_path, write_again):
    """The defect behind a rare failure of test_killed_while_appending (python-blosc2 saw 7167
    valid rows, a column held 4540): a writable table handle of the test process (a cycle,
    dropped whenever the garbage collector ran) stayed open while the child appended; closing
    it moved each column's old index over the child's chunks and cut the file, so the columns
    went back to its old length while `_valid_rows` kept the child's rows. Now the stale
    handle's close leaves the files alone, and appending through it is refused."""
    path = str(tmp_path / "t.b2d")
    t = make(path)
    t.extend(rows(100, 100 + BATCH))  # every column writer of `t` has committed
    code = APPEND_AND_DIE.format(tests=os.path.dirname(__file__), path=path, batches=20)
    assert subprocess.run([sys.executable, "-c", code]).returncode == -signal.SIGKILL
    n = 100 + 21 * BATCH
    if write_again:
        with pytest.raises(oxblosc.FrameChangedError, match="changed by another handle"):
            t.extend(rows(n, n + BATCH))
    gc.disable()  # a table is not a reference cycle: it closes when dropped, not later
    try:
        ref = weakref.ref(t)
        del t
        assert ref() is None
    finally:
        gc.enable()
    gc.collect()
    assert check_table(path, n) == n


# ------------------------------------------------------------------ a full disk


def test_disk_full(small_tmpfs: Path, tmp_path: Path):
    path = str(small_tmpfs / "t.b2d")
    t = make(path)
    n = 100
    rng = np.random.default_rng(0)
    with pytest.raises(OSError):
        for _ in range(10_000):
            d = rows(n, n + 500)
            d["f"] = rng.standard_normal(500)  # incompressible: fills the disk
            t.extend(d)
            n += 500
    assert len(t) == n
    copy = str(tmp_path / "copy.b2d")  # a disk with room, to check and rebuild
    shutil.copytree(path, copy)
    r = oxblosc.CTable.open(copy)
    assert len(r) == n and len(blosc2.CTable.open(copy)) == n
    np.testing.assert_array_equal(r["k"][:], np.arange(n))
    a = oxblosc.CTable.open(copy, mode="a")
    a.verify_stats()
