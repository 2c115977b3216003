"""A new array made at an existing ``urlpath`` with ``mode="w"`` (computed, copied, saved,
built by a constructor) is written under a temporary name beside it and renamed over the
old file or sparse directory only once complete. So when making it fails part way (an
integer to a negative power in a late chunk, a raising function or iterator, a file size
limit, a kill) the old array is left exactly as it was, byte for byte, with the error; a
success replaces it and the result's ``urlpath`` is the path asked for.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import oxblosc
import pytest

blosc2 = pytest.importorskip("blosc2")

SHAPE, KW = (60, 50), dict(chunks=(10, 50), blocks=(5, 50))


def snapshot(p: str) -> dict[str, bytes]:
    """Every byte of a frame file, or of every file of a sparse directory."""
    if not os.path.isdir(p):
        return {"": Path(p).read_bytes()}
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(Path(p).rglob("*")) if f.is_file()}


def old_array(p: str, contiguous: bool) -> dict[str, bytes]:
    oxblosc.asarray(np.arange(np.prod(SHAPE), dtype=np.int64).reshape(SHAPE), urlpath=p, contiguous=contiguous, **KW)
    return snapshot(p)


def failing_udf(inputs, output, offset):
    if offset[0] >= 40:
        raise RuntimeError("the function fails on a late chunk")
    output[:] = inputs[0] * 2


def failing_iter():
    yield from range(2000)
    raise RuntimeError("the iterator fails part way")


def makers(a: oxblosc.NDArray, b: oxblosc.NDArray) -> dict:
    """Each fails after part of the new array was written (b holds -1 in its last chunk)."""
    return {
        "compute": lambda **kw: (a**b).compute(**kw),
        "compute other chunks": lambda **kw: (a**b).compute(**{**kw, "chunks": (7, 50), "blocks": (7, 10)}),
        "lazyudf": lambda **kw: oxblosc.lazyudf(failing_udf, (a,), np.int64, SHAPE, chunks=(10, 50)).compute(**kw),
        "fromiter": lambda **kw: oxblosc.fromiter(failing_iter(), SHAPE, np.int64, **kw),
    }


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
def test_failing_computation_keeps_the_old_array(tmp_path: Path, contiguous: bool) -> None:
    a = oxblosc.asarray(np.full(SHAPE, 3, np.int64), **KW)
    y = np.ones(SHAPE, np.int64)
    y[-2, -3] = -1
    b = oxblosc.asarray(y, **KW)
    for name, make in makers(a, b).items():
        p = str(tmp_path / ("old.b2nd" if contiguous else "old.b2nd.d"))
        oxblosc.remove_urlpath(p)
        before = old_array(p, contiguous)
        with pytest.raises((ValueError, RuntimeError)):
            make(urlpath=p, mode="w", contiguous=contiguous)
        assert snapshot(p) == before, f"{name}: the old array changed"
        assert sorted(os.listdir(tmp_path)) == [os.path.basename(p)], f"{name}: a temporary file stayed"
        np.testing.assert_array_equal(blosc2.open(p)[:], np.arange(np.prod(SHAPE)).reshape(SHAPE))
    # Succeeding, the new array replaces the old one, at the path asked for.
    b[-2, -3] = 2
    out = (a**b).compute(urlpath=p, mode="w", contiguous=contiguous)
    assert out.urlpath == p and os.path.isdir(p) != contiguous
    out[0, 0] = 5  # still writable where it now lives
    want = np.full(SHAPE, 3**1, np.int64)
    want[-2, -3], want[0, 0] = 9, 5
    np.testing.assert_array_equal(oxblosc.open(p)[:], want)
    np.testing.assert_array_equal(blosc2.open(p)[:], want)
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(p)]


def test_replacing_a_sparse_array_by_a_file_and_back(tmp_path: Path) -> None:
    """The kind may change (file <-> directory); a plain directory is never replaced."""
    p = str(tmp_path / "x.b2nd")
    data = np.arange(3000, dtype=np.float32).reshape(60, 50)
    for contiguous in (False, True, False):
        oxblosc.asarray(data * contiguous, urlpath=p, mode="w", contiguous=contiguous, **KW)
        assert os.path.isdir(p) != contiguous
        np.testing.assert_array_equal(blosc2.open(p)[:], data * contiguous)
    d = str(tmp_path / "plain")
    os.mkdir(d)
    Path(d, "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a sparse frame"):
        oxblosc.asarray(data, urlpath=d, mode="w")
    assert os.listdir(d) == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["plain", "x.b2nd"]


# Under a file size limit of 64 KiB each maker fails with an OSError naming the file: the
# old array (small, under the limit) at the path must stay byte for byte, nothing else left.
LIMITED = textwrap.dedent(
    """
    import os, resource, signal, sys
    from pathlib import Path
    import numpy as np, oxblosc
    sys.path.insert(0, sys.argv[2])
    from test_replace_on_failure import snapshot

    d = sys.argv[1]
    data = np.random.default_rng(0).integers(0, 2**63, size=(256, 512), dtype=np.int64)
    src = oxblosc.asarray(data)  # in memory
    kw = dict(chunks=(32, 512), blocks=(8, 512), mode="w")
    n, dt = data.size, data.dtype
    cases = {
        "asarray": lambda p, c: oxblosc.asarray(data, urlpath=p, contiguous=c, **kw),
        "asarray fortran": lambda p, c: oxblosc.asarray(np.asfortranarray(data), urlpath=p, contiguous=c, **kw),
        "copy": lambda p, c: src.copy(urlpath=p, contiguous=c, **kw),
        "asarray of an NDArray": lambda p, c: oxblosc.asarray(src, urlpath=p, contiguous=c, **kw),
        "compute": lambda p, c: (src + 1).compute(urlpath=p, contiguous=c, **kw),
        "slice": lambda p, c: src.slice((slice(0, 200),), urlpath=p, contiguous=c, **kw),
        "fromiter": lambda p, c: oxblosc.fromiter(iter(data.ravel()), data.shape, dt, urlpath=p, contiguous=c, **kw),
        "arange": lambda p, c: oxblosc.arange(0, n, dtype=np.float64, shape=data.shape, urlpath=p, contiguous=c, **kw),
        "reshape": lambda p, c: src.reshape((512, 256), urlpath=p, contiguous=c, mode="w"),
        "concat": lambda p, c: oxblosc.concat([src, src], urlpath=p, contiguous=c, **kw),
        "stack": lambda p, c: oxblosc.stack([src, src], urlpath=p, contiguous=c, mode="w"),
        "save": lambda p, c: src.save(p, contiguous=c),
        "SChunk data": lambda p, c: oxblosc.SChunk(chunksize=1 << 17, data=data, urlpath=p, contiguous=c, mode="w"),
        "open().copy": lambda p, c: oxblosc.open(os.path.join(d, "src.b2nd")).copy(urlpath=p, contiguous=c, **kw),
    }
    # A source on disk, made before the limit
    oxblosc.asarray(data, urlpath=os.path.join(d, "src.b2nd"), chunks=(32, 512), blocks=(8, 512))
    old = np.arange(100, dtype=np.int16)
    layouts = {name: (True,) if name == "arange" else (True, False) for name in cases}  # (arange: small chunks)
    for name in cases:
        for c in layouts[name]:
            p = os.path.join(d, name.replace(" ", "_").replace("()", "") + ("" if c else "_sparse") + ".b2nd")
            oxblosc.asarray(old, urlpath=p, contiguous=c)
    before = {f: snapshot(os.path.join(d, f)) for f in os.listdir(d)}
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
    for name, make in cases.items():
        for c in layouts[name]:
            p = os.path.join(d, name.replace(" ", "_").replace("()", "") + ("" if c else "_sparse") + ".b2nd")
            try:
                make(p, c)
            except OSError as e:
                assert "b2nd" in str(e) or "b2nd" in str(e.filename), f"{name}: the error names no file: {e!r}"
            else:
                raise AssertionError(f"{name} did not fail")
            print("OK", name, c)
    assert sorted(os.listdir(d)) == sorted(before), f"files left or gone: {sorted(set(os.listdir(d)) ^ set(before))}"
    for f, snap in before.items():
        assert snapshot(os.path.join(d, f)) == snap, f"{f} changed"
    """
)


def test_file_size_limit_keeps_the_old_array(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    r = subprocess.run(
        [sys.executable, "-c", LIMITED, str(d), os.path.dirname(__file__)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert r.stdout.count("OK ") == 27


KILLED = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np, oxblosc
    p, contiguous = sys.argv[1], sys.argv[2] == "1"
    a = oxblosc.asarray(np.ones((60, 50), np.int64), chunks=(10, 50), blocks=(5, 50))

    def slow(inputs, output, offset):
        output[:] = inputs[0] * 7
        if offset[0] >= 30:
            open(p + ".halfway", "w").close()
            time.sleep(60)

    oxblosc.lazyudf(slow, (a,), np.int64, (60, 50), chunks=(10, 50)).compute(urlpath=p, mode="w", contiguous=contiguous)
    """
)


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
def test_killed_while_computing_keeps_the_old_array(tmp_path: Path, contiguous: bool) -> None:
    """SIGKILL half way through: the old array stays; only a temporary file is left beside
    it (named ``<path>.oxtmp-<pid>-<n>``, see docs/architecture.md)."""
    p = str(tmp_path / "old.b2nd")
    before = old_array(p, contiguous)
    child = subprocess.Popen([sys.executable, "-c", KILLED, p, "1" if contiguous else "0"], stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while not os.path.exists(p + ".halfway") and child.poll() is None and time.monotonic() - t0 < 120:
        time.sleep(0.01)
    assert child.poll() is None, child.stderr.read().decode()[-2000:]
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert snapshot(p) == before
    np.testing.assert_array_equal(oxblosc.open(p)[:], np.arange(np.prod(SHAPE)).reshape(SHAPE))
    others = set(os.listdir(tmp_path)) - {"old.b2nd", "old.b2nd.halfway"}
    assert len(others) == 1 and others.pop().startswith(f"old.b2nd.oxtmp-{child.pid}-")


TABLE = textwrap.dedent(
    """
    import os, resource, signal, sys
    import numpy as np, oxblosc
    sys.path.insert(0, sys.argv[2])
    from test_replace_on_failure import snapshot

    d = sys.argv[1]
    rng = np.random.default_rng(0)
    big = oxblosc.CTable({"x": rng.integers(0, 2**63, 100_000), "y": rng.random(100_000)}, chunks=8192, blocks=1024)
    some = big.where("y > 0.5")  # a view: saved column by column through a copy
    small = oxblosc.CTable({"x": np.arange(10), "y": np.ones(10)})
    paths = [os.path.join(d, n) for n in ("t.b2d", "t.b2z", "v.b2d", "v.b2z")]
    for p in paths:
        small.save(p)
    before = {p: snapshot(p) if os.path.isdir(p) else open(p, "rb").read() for p in paths}
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, hard))
    for p, t in zip(paths, (big, big, some, some)):
        try:
            t.save(p, overwrite=True)
        except OSError:
            print("OK", os.path.basename(p))
        else:
            raise AssertionError(f"saving {p} did not fail")
        assert (snapshot(p) if os.path.isdir(p) else open(p, "rb").read()) == before[p], f"{p} changed"
    assert sorted(os.listdir(d)) == ["t.b2d", "t.b2z", "v.b2d", "v.b2z"], sorted(os.listdir(d))
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    for p, t in zip(paths, (big, big, some, some)):
        t.save(p, overwrite=True)
        assert len(oxblosc.CTable.open(p)) == len(t)
    assert sorted(os.listdir(d)) == ["t.b2d", "t.b2z", "v.b2d", "v.b2z"], sorted(os.listdir(d))
    """
)


def test_table_save_failing_keeps_the_old_table(tmp_path: Path) -> None:
    """CTable.save(overwrite=True) to a directory or a .b2z file, of a table and of a view,
    fails under a file size limit: the table saved there before stays as it was."""
    r = subprocess.run(
        [sys.executable, "-c", TABLE, str(tmp_path), os.path.dirname(__file__)], capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert r.stdout.count("OK ") == 4


def test_failing_publish_leaves_no_temporary(tmp_path: Path) -> None:
    """The last step of a staged creation, renaming the finished frame over ``urlpath``, can
    fail too (here ``urlpath`` is a directory of the user's that is no frame: it is refused,
    never emptied). Then the directory is left as it was, and so is the folder around it:
    the temporary holding the new data is removed with the error, not left behind."""
    plain = tmp_path / "mine"
    plain.mkdir()
    (plain / "notes.txt").write_text("keep me")
    x = np.arange(3000, dtype=np.int64).reshape(60, 50)
    builders = {
        "SChunk(data=...)": lambda: oxblosc.SChunk(chunksize=4000, data=x, urlpath=str(plain), mode="w"),
        "asarray": lambda: oxblosc.asarray(x, urlpath=str(plain), mode="w", **KW),
        "fromiter": lambda: oxblosc.fromiter(iter(range(3000)), SHAPE, np.int64, urlpath=str(plain), mode="w", **KW),
        "compute": lambda: (oxblosc.asarray(x, **KW) * 2).compute(urlpath=str(plain), mode="w"),
        "copy": lambda: oxblosc.asarray(x, **KW).copy(urlpath=str(plain), mode="w"),
    }
    for name, build in builders.items():
        with pytest.raises((ValueError, OSError)) as err:
            build()
        assert "not a sparse frame" in str(err.value) or "mine" in str(err.value), f"{name}: {err.value}"
        assert sorted(os.listdir(tmp_path)) == ["mine"], f"{name}: a temporary stayed: {os.listdir(tmp_path)}"
        assert os.listdir(plain) == ["notes.txt"] and (plain / "notes.txt").read_text() == "keep me", name
