"""``locking=True`` across processes, between oxblosc and python-blosc2, and ``mmap_mode="r"``.

A writer process appends and updates chunks of a locked frame while reader processes of the
other library read it: every chunk a reader gets must be whole (chunk ``k`` of version ``v``
holds ``seed + arange``, so a torn or foreign chunk is detected), readers must follow the
writer's new chunks, and at the end everyone reads the writer's final state.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import blosc2
import numpy as np
import oxblosc
import pytest

N_ITEMS = 1024
# The start of every child script: arguments, and the writer's wait for two readers (each
# creates a "ready<pid>" file next to the frame once it has opened it).
PRELUDE = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    lib = __import__(sys.argv[1])
    role, path, n = sys.argv[2], sys.argv[3], int(sys.argv[4])

    def wait_for_readers(path):
        deadline = time.time() + 120
        while len([f for f in os.listdir(os.path.dirname(path)) if f.startswith("ready")]) < 2:
            assert time.time() < deadline, "readers did not start"
            time.sleep(0.01)
    """
)
CHILD = PRELUDE + textwrap.dedent(
    """

    def data(seed):
        return (np.arange(1024, dtype=np.int64) + seed * 1000).astype(np.int64)

    def check(buf, i):
        a = np.frombuffer(buf, dtype=np.int64)
        seed = int(a[0]) // 1000
        assert len(a) == 1024 and (a == data(seed)).all(), f"chunk {i} is torn"
        return seed

    if role.startswith("appender"):
        base = 100 * int(role[-1])
        s = lib.open(path, mode="a", locking=True)
        for k in range(n):
            s.append_data(data(base + k))
        del s
        print("DONE")
    elif role == "writer":
        wait_for_readers(path)
        s = lib.open(path, mode="a", locking=True)
        seeds = [check(s.decompress_chunk(i), i) for i in range(s.nchunks)]
        for k in range(n):
            seed = 100 + k
            if k % 4 == 3:
                j = (k * 7) % len(seeds)
                s.update_data(j, data(seed), **({"copy": True} if lib.__name__ == "blosc2" else {}))
                seeds[j] = seed
            else:
                s.append_data(data(seed))
                seeds.append(seed)
            time.sleep(0.003)
        del s
        print("FINAL", " ".join(map(str, seeds)))
    else:
        done = path + ".done"
        s = lib.open(path, mode="r", locking=True)
        open(os.path.join(os.path.dirname(path), f"ready{os.getpid()}"), "w").close()
        counts = set()
        deadline = time.time() + 120
        while True:
            finished = os.path.exists(done)
            s.refresh()
            n = s.nchunks
            counts.add(n)
            seeds = [check(s.decompress_chunk(i), i) for i in range(n)]
            if finished:
                break
            assert time.time() < deadline, "reader timed out"
        print("COUNTS", len(counts))
        print("FINAL", " ".join(map(str, seeds)))
    """
)


def _data(seed: int) -> np.ndarray:
    return (np.arange(N_ITEMS, dtype=np.int64) + seed * 1000).astype(np.int64)


def _spawn(script: Path, lib: str, role: str, path: Path, n: int = 0) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, str(script), lib, role, str(path), str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _result(p: subprocess.Popen, what: str) -> dict[str, str]:
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, f"{what} failed:\n{err[-3000:]}"
    return {line.split(" ", 1)[0]: line.partition(" ")[2] for line in out.splitlines() if line}


@pytest.mark.parametrize(
    ("writer", "reader", "contiguous"),
    [("oxblosc", "blosc2", True), ("blosc2", "oxblosc", True), ("oxblosc", "oxblosc", False)],
)
def test_writer_and_readers_across_processes(tmp_path: Path, writer: str, reader: str, contiguous: bool) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    path = tmp_path / "f.b2frame"
    lib = oxblosc if writer == "oxblosc" else blosc2
    s = lib.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), contiguous=contiguous, mode="w", locking=True)
    for k in range(4):
        s.append_data(_data(k))
    del s
    readers = [_spawn(script, reader, "reader", path) for _ in range(2)]
    w = _result(_spawn(script, writer, "writer", path, 120), "writer")
    Path(str(path) + ".done").write_text("")
    final = w["FINAL"]
    assert len(final.split()) == 4 + 90
    for k, r in enumerate(readers):
        res = _result(r, f"reader {k}")
        assert res["FINAL"] == final, f"reader {k} did not end on the writer's final state"
        assert int(res["COUNTS"]) >= 2, f"reader {k} never saw new chunks"
    lock = path / ".b2lock" if not contiguous else Path(str(path) + ".b2lock")
    assert lock.exists() and lock.stat().st_size == 16
    assert int.from_bytes(lock.read_bytes()[8:16], "little") >= 120


def test_lock_file_and_generation(tmp_path: Path) -> None:
    path = tmp_path / "g.b2frame"
    s = oxblosc.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), mode="w", locking=True)
    assert s.locking
    gen = Path(str(path) + ".b2lock")
    g0 = int.from_bytes(gen.read_bytes()[8:16], "little")
    s.append_data(_data(1))
    assert int.from_bytes(gen.read_bytes()[8:16], "little") == g0 + 1
    r = oxblosc.open(path, locking=True)
    assert not r.refresh()
    s.append_data(_data(2))
    assert r.nchunks == 1  # counters follow on data access or refresh, as in python-blosc2
    assert (np.frombuffer(r.decompress_chunk(1), dtype=np.int64) == _data(2)).all()
    assert r.nchunks == 2
    with pytest.raises(ValueError, match="mmap_mode"):
        oxblosc.open(path, mmap_mode="r", locking=True)
    del s, r
    oxblosc.remove_urlpath(path)  # removes the lock file too, as python-blosc2 does
    assert not path.exists() and not gen.exists()


def test_stale_writer_catches_up(tmp_path: Path) -> None:
    """A locked writer whose view is out of date waits for the lock, re-reads the frame and
    then writes: nothing another writer committed is lost."""
    path = tmp_path / "w.b2frame"
    a = oxblosc.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), mode="w", locking=True)
    a.append_data(_data(0))
    b = oxblosc.open(path, mode="a", locking=True)
    a.append_data(_data(1))
    assert b.append_data(_data(2)) == 3
    a.append_data(_data(3))
    del a, b
    r = oxblosc.open(path)
    assert [int(np.frombuffer(r.decompress_chunk(i), np.int64)[0]) // 1000 for i in range(r.nchunks)] == [0, 1, 2, 3]


@pytest.mark.parametrize(("first", "second"), [("oxblosc", "oxblosc"), ("oxblosc", "blosc2")])
def test_two_writer_processes_both_finish(tmp_path: Path, first: str, second: str) -> None:
    """Two processes append N chunks each to one locked frame at the same time: both finish
    and the frame holds all 2N chunks, each writer's in its order; python-blosc2 reads it."""
    n = 30
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    path = tmp_path / "two.b2frame"
    s = oxblosc.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), mode="w", locking=True)
    s.append_data(_data(0))
    del s
    kids = [_spawn(script, first, "appender1", path, n), _spawn(script, second, "appender2", path, n)]
    for k, p in enumerate(kids):
        assert "DONE" in _result(p, f"appender {k + 1}")
    for lib in (oxblosc, blosc2):
        r = lib.open(str(path), mode="r")
        seeds = [int(np.frombuffer(r.decompress_chunk(i), np.int64)[0]) // 1000 for i in range(r.nchunks)]
        assert len(seeds) == 1 + 2 * n, f"{lib.__name__}: {seeds}"
        for base in (100, 200):
            assert [x for x in seeds if base <= x < base + n] == list(range(base, base + n))


def test_env_var_turns_locking_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLOSC_LOCKING", "1")
    path = tmp_path / "e.b2frame"
    s = oxblosc.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), mode="w")
    s.append_data(_data(0))
    assert s.locking and Path(str(path) + ".b2lock").exists()
    assert not oxblosc.open(path, mmap_mode="r").locking


def test_mmap_mode_r_reads_from_a_map(tmp_path: Path) -> None:
    path = tmp_path / "m.b2frame"
    s = blosc2.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), contiguous=True, mode="w", cparams={"typesize": 8})
    for k in range(20):
        s.append_data(_data(k))
    del s
    m = oxblosc.open(path, mmap_mode="r")
    assert m.mmap_mode == "r" and m.mode == "r" and m.nchunks == 20
    for k in range(20):
        assert (np.frombuffer(m.decompress_chunk(k), dtype=np.int64) == _data(k)).all()
    assert m.get_chunk(3) == blosc2.open(str(path)).get_chunk(3)
    with pytest.raises(ValueError):
        m.append_data(_data(99))
    m2 = oxblosc.SChunk(urlpath=str(path), mmap_mode="r")
    assert m2.typesize == 8 and m2[1020:1030] == np.concatenate([_data(0)[1020:], _data(1)[:6]]).tobytes()
    # "r+" keeps positioned, writable I/O.
    w = oxblosc.open(path, mmap_mode="r+")
    w.append_data(_data(20))
    del w
    assert blosc2.open(str(path)).nchunks == 21


def test_holding_lock_blocks_other_processes(tmp_path: Path) -> None:
    path = tmp_path / "h.b2frame"
    s = oxblosc.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), mode="w", locking=True)
    s.append_data(_data(0))
    probe = textwrap.dedent(
        """
        import sys, blosc2
        r = blosc2.open(sys.argv[1], mode="r", locking=True)
        r.refresh()
        print(r.nchunks)
        """
    )
    with s.holding_lock():
        s.append_data(_data(1))
        p = subprocess.Popen([sys.executable, "-c", probe, str(path)], stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=3)  # python-blosc2 waits for our exclusive lock
        s.append_data(_data(2))
    out, _ = p.communicate(timeout=60)
    assert out.split() == ["3"]
    with pytest.raises(ValueError):
        with oxblosc.open(path, locking=True).holding_lock():
            pass
    with oxblosc.open(path).holding_lock():  # no locking: a no-op
        pass


def test_locked_handle_keeps_settings_across_refresh(tmp_path: Path) -> None:
    path = tmp_path / "c.b2frame"
    w = oxblosc.SChunk(chunksize=N_ITEMS * 8, urlpath=str(path), mode="w", locking=True)
    w.enable_checksums()
    w.append_data(_data(0))
    r = oxblosc.open(path, locking=True, verify_checksums=True)
    assert r.verify_checksums
    w.append_data(_data(1))
    assert r.refresh() and r.verify_checksums and r.nchunks == 2


ND_CHILD = PRELUDE + textwrap.dedent(
    """

    def check(x):
        # Row r holds r // 10 in every state the writer commits (10 rows per append).
        rows = x.shape[0]
        assert rows % 10 == 0, f"{rows} rows: an append was seen half done"
        assert (x == (np.arange(rows) // 10)[:, None]).all(), f"torn read at {rows} rows"
        return rows

    if role == "writer":
        wait_for_readers(path)
        a = lib.open(path, mode="a", locking=True)
        for k in range(1, n + 1):
            a.append(np.full((10, 50), k, dtype=np.int64))
            time.sleep(0.002)
        print("FINAL", check(a[:]))
    else:
        a = lib.open(path, mode="r", locking=True)
        seen = {check(a[:])}
        open(os.path.join(os.path.dirname(path), f"ready{os.getpid()}"), "w").close()
        deadline = time.time() + 120
        while True:
            finished = os.path.exists(path + ".done")
            seen.add(check(a[:]))
            if finished:
                break
            assert time.time() < deadline, "reader timed out"
        print("SEEN", len(seen))
        print("FINAL", max(seen))
    """
)


@pytest.mark.parametrize("contiguous", [True, False])
def test_ndarray_writer_and_readers_across_processes(tmp_path: Path, contiguous: bool) -> None:
    """NDArray with locking=True: each append (zero-fill, metalayer and chunk writes) is
    seen by locked readers in other processes whole or not at all, and they follow it."""
    script = tmp_path / "child.py"
    script.write_text(ND_CHILD)
    path = tmp_path / "a.b2nd"
    a = oxblosc.zeros((10, 50), dtype="i8", chunks=(4, 50), blocks=(2, 50), urlpath=str(path),
                      contiguous=contiguous, locking=True)  # fmt: skip
    assert a.schunk.locking
    del a
    readers = [_spawn(script, "oxblosc", "reader", path) for _ in range(2)]
    w = _result(_spawn(script, "oxblosc", "writer", path, 40), "writer")
    Path(str(path) + ".done").write_text("")
    assert w["FINAL"] == "410"
    for k, r in enumerate(readers):
        res = _result(r, f"reader {k}")
        assert res["FINAL"] == "410", f"reader {k} did not end on the writer's final state"
        assert int(res["SEEN"]) >= 2, f"reader {k} never saw an append"
    assert blosc2.open(str(path)).shape == (410, 50)


ND_APPENDER = textwrap.dedent(
    """
    import sys
    import numpy as np, oxblosc
    path, base, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    a = oxblosc.open(path, mode="a", locking=True)
    for k in range(n):
        a.append(np.full((10, 50), base + k, dtype=np.int64))
    print("DONE")
    """
)


def test_two_ndarray_writer_processes_both_finish(tmp_path: Path) -> None:
    """Two processes append to one locked array at once: each append catches up with the
    other writer's (shape included), so all rows land, in each writer's order."""
    path = tmp_path / "two.b2nd"
    oxblosc.zeros((10, 50), dtype="i8", chunks=(4, 50), blocks=(2, 50), urlpath=str(path), locking=True)
    n = 15
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    kids = [
        subprocess.Popen([sys.executable, "-c", ND_APPENDER, str(path), str(base), str(n)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
        for base in (100, 200)
    ]  # fmt: skip
    for k, p in enumerate(kids):
        assert "DONE" in _result(p, f"appender {k + 1}")
    for lib in (oxblosc, blosc2):
        x = lib.open(str(path))[:]
        assert x.shape == (10 + 20 * n, 50), lib.__name__
        blocks = x.reshape(-1, 10, 50)
        assert (blocks == blocks[:, :1, :1]).all(), "a 10-row append was split or torn"
        vals = list(blocks[:, 0, 0])
        assert vals[0] == 0
        for base in (100, 200):
            assert [v for v in vals if base <= v < base + n] == list(range(base, base + n))


def test_lock_wait_that_runs_out_raises_timeout_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two handles exclude each other even in one process (flock is per open description). A
    # writer that cannot get its turn within OXBLOSC_LOCK_TIMEOUT gets TimeoutError (an
    # OSError), and the frame keeps what the holder wrote.
    path = str(tmp_path / "t.b2frame")
    s = oxblosc.SChunk(chunksize=400, urlpath=path, mode="w", locking=True, cparams={"typesize": 4})
    s.append_data(np.arange(100, dtype="i4"))
    other = oxblosc.open(path, mode="a", locking=True)
    monkeypatch.setenv("OXBLOSC_LOCK_TIMEOUT", "0.3")
    with s.holding_lock():
        with pytest.raises(TimeoutError, match="timed out"):
            other.append_data(np.arange(100, dtype="i4"))
        s.append_data(np.arange(100, 200, dtype="i4"))
    assert np.array_equal(np.frombuffer(oxblosc.open(path)[:], "i4"), np.arange(200))
    # The timed-out handle is intact: once the lock is free it catches up and appends.
    other.append_data(np.arange(200, 300, dtype="i4"))
    assert np.array_equal(np.frombuffer(oxblosc.open(path)[:], "i4"), np.arange(300))


def test_lock_and_unlock_calls_on_arrays(tmp_path: Path) -> None:
    """python-blosc2's ``lock()``/``unlock()`` pair (on an NDArray here): between them another
    process's locked reader waits, and sees every change made while the lock was held."""
    path = tmp_path / "l.b2nd"
    a = oxblosc.zeros((4, 10), dtype="i8", chunks=(1, 10), urlpath=str(path), mode="w", locking=True)
    assert a.locking
    probe = textwrap.dedent(
        """
        import sys, blosc2
        r = blosc2.open(sys.argv[1], mode="r", locking=True)
        print(int(r[...].sum()))
        """
    )
    a.lock()
    try:
        a[0] = 1
        p = subprocess.Popen([sys.executable, "-c", probe, str(path)], stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=1.5)
        a[3] = 2
    finally:
        a.unlock()
    out, _ = p.communicate(timeout=60)
    assert out.split() == ["30"]  # rows 0 and 3: 10 * 1 + 10 * 2
    with a.holding_lock():
        a[1] = 5
    assert blosc2.open(str(path))[1].tolist() == [5] * 10


def test_get_and_update_params() -> None:
    s = oxblosc.SChunk(chunksize=800, cparams={"typesize": 8})
    assert s.get_cparams() == s.cparams and s.get_dparams() == s.dparams
    s.update_cparams(oxblosc.CParams(codec=oxblosc.Codec.LZ4, clevel=9, typesize=8))
    assert (s.cparams.codec, s.cparams.clevel) == (oxblosc.Codec.LZ4, 9)
    s.update_dparams({"nthreads": 1})
    assert s.dparams.nthreads == 1
    s.append_data(np.arange(100, dtype="i8"))
    assert oxblosc.chunk_info(s.get_chunk(0))["codec"] == oxblosc.Codec.LZ4


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("limit", [0, 12, 14, 40])
def test_locked_write_failing_on_file_size_limit_reports_it_and_keeps_the_handle(
    tmp_path: Path, contiguous: bool, limit: int
) -> None:
    """A write that fails under RLIMIT_FSIZE also fails to record the lock's generation
    completely (16 bytes at the start of the lock file). The caller must hear the real error
    ("File too large", not "changed by another handle"), and the handle stays usable."""
    from .helpers import file_size_limit

    path = str(tmp_path / ("a.b2nd" if contiguous else "d.b2nd"))
    a = oxblosc.asarray(np.arange(17, dtype="i2"), urlpath=path, contiguous=contiguous, chunks=(2,), blocks=(1,))
    del a
    a = oxblosc.open(path, mode="a", locking=True)
    a.append(np.array([100], dtype="i2"))
    with pytest.raises(OSError, match="File too large"), file_size_limit(limit):
        a.append(np.array([200], dtype="i2"))
    want = np.append(np.arange(17), 100).astype("i2")
    np.testing.assert_array_equal(a[:], want)
    assert a.append(np.array([300], dtype="i2")) == 19
    want = np.append(want, 300).astype("i2")
    np.testing.assert_array_equal(a[:], want)
    del a
    np.testing.assert_array_equal(blosc2.open(path)[:], want)
    np.testing.assert_array_equal(oxblosc.open(path)[:], want)


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
def test_locked_writer_reads_follow_another_writer_process(tmp_path: Path, contiguous: bool) -> None:
    """A locked *writer* handle reads (chunks, slices) while another process appends as fast
    as it can: like a locked reader, it follows the other writer's commits by itself, never
    raising FrameChangedError (it did whenever a commit landed between its catch-up and its
    read), and every read is one whole committed state; its own writes are kept."""
    path = tmp_path / "w.b2nd"
    oxblosc.zeros((10, 50), dtype="i8", chunks=(10, 50), blocks=(5, 50), urlpath=str(path), contiguous=contiguous)
    a = oxblosc.open(str(path), mode="a", locking=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    kid = subprocess.Popen(
        [sys.executable, "-c", ND_APPENDER, str(path), "100", "400"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    reads = 0
    while kid.poll() is None or reads == 0:
        x = a[:]
        blocks = x.reshape(-1, 10, 50)
        assert (blocks == blocks[:, :1, :1]).all(), "a read mixed two states"
        n = a.schunk.nchunks
        c = np.frombuffer(a.schunk.decompress_chunk(n - 1), np.int64)
        assert (c == c[0]).all()
        reads += 1
        if reads % 10 == 0:
            a[0, 0] = 0  # (the writer's own writes go on too)
    assert "DONE" in _result(kid, "appender")
    assert a.shape == (4010, 50) and reads > 1
    vals = list(oxblosc.open(str(path))[:].reshape(-1, 10, 50)[:, 0, 0])
    assert vals == [0, *range(100, 500)]


FORK_WHILE_WRITING = textwrap.dedent(
    """
    import os, sys, threading, time
    import numpy as np
    import oxblosc
    path, locking = sys.argv[1], sys.argv[2] == "1"
    s = oxblosc.SChunk(chunksize=4000, urlpath=path, mode="w", locking=locking, cparams={"typesize": 4})
    stop, errors = False, []
    def writer():
        try:
            while not stop:
                s.append_data(np.arange(1000, dtype="i4"))
        except Exception as e:
            errors.append(repr(e))
    t = threading.Thread(target=writer)
    t.start()
    kids = []
    for _ in range(40):
        time.sleep(0.01)
        pid = os.fork()
        if pid == 0:  # a child that does other work for a while (its copies of the parent's files open)
            time.sleep(3)
            os._exit(0)
        kids.append(pid)
    time.sleep(1.5)
    stop = True
    t.join()
    for k in kids:
        os.waitpid(k, 0)
    print(repr(errors), s.nchunks)
    """
)


@pytest.mark.parametrize("locking", [False, True], ids=["unlocked", "locked"])
def test_fork_while_a_thread_commits_leaves_the_lock_to_the_parent(tmp_path: Path, locking: bool) -> None:
    # A process forked while another thread held a commit's flock shared that lock's open
    # description: closing it in the parent did not release the lock while the child lived,
    # so the parent's next append waited and failed (TimeoutError after OXBLOSC_LOCK_TIMEOUT,
    # 120 s by default) in 1 of 1 runs of 40 forks. Now the lock is released explicitly.
    path = tmp_path / "f.b2frame"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OXBLOSC_LOCK_TIMEOUT": "1"}
    r = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", FORK_WHILE_WRITING, str(path), "1" if locking else "0"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    errors, nchunks = r.stdout.split()[0], int(r.stdout.split()[-1])
    assert errors == "[]", r.stdout
    s = oxblosc.open(str(path))
    assert s.nchunks == nchunks > 10
    rows = np.frombuffer(s[:], "i4").reshape(-1, 1000)
    assert len(rows) == nchunks and (rows == np.arange(1000)).all()
