"""A failed NDArray append / resize / slice write (disk full, file size limit) leaves the
handle (shape, data, metadata) and the file exactly as before, readable by python-blosc2."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import blosc2
import numpy as np
import oxblosc

SHAPE, CHUNKS, BLOCKS = (64, 256), (16, 256), (4, 256)

# Runs in the process whose writes fail: every operation must raise OSError and change
# nothing; prints the shape it ends with.
OPS = textwrap.dedent(
    """
    import numpy as np, oxblosc

    def try_ops(p):
        a = oxblosc.open(p, mode="a")
        shape, before = a.shape, a[:]
        vl = a.vlmeta.getall()
        rng = np.random.default_rng(1)
        noise = lambda *s: rng.integers(0, 2**63, size=s, dtype=np.int64)
        ops = [
            ("append", lambda: a.append(noise(40, 256))),
            ("setitem", lambda: a.__setitem__(slice(None), noise(*shape))),
            ("setitem partial", lambda: a.__setitem__((slice(3, 37), slice(5, 200)), noise(34, 195))),
            ("resize", lambda: a.resize((shape[0] * 50, 300))),
            ("vlmeta", lambda: a.vlmeta.__setitem__("big", noise(4096).tobytes())),
        ]
        for name, op in ops:
            try:
                op()
            except OSError as e:
                assert p in str(e) or e.filename, f"{name}: the error names no file: {e}"
            else:
                raise AssertionError(f"{name} did not fail")
            assert a.shape == shape, f"{name} changed the shape to {a.shape}"
            assert (a[:] == before).all(), f"{name} changed the data"
            assert a.vlmeta.getall() == vl, f"{name} changed vlmeta"
        return shape
    """
)


def make_array(p: str) -> np.ndarray:
    data = np.random.default_rng(0).integers(0, 2**63, size=SHAPE, dtype=np.int64)
    a = oxblosc.asarray(data, chunks=CHUNKS, blocks=BLOCKS, urlpath=p)
    a.vlmeta["note"] = "kept"
    return data


def check_unchanged(p: str, data: np.ndarray, head: bytes) -> None:
    with open(p, "rb") as f:
        assert f.read(len(head)) == head, "the committed bytes of the file changed"
    assert (oxblosc.open(p)[:] == data).all()
    theirs = blosc2.open(p)
    assert theirs.shape == SHAPE and (theirs[:] == data).all()
    assert theirs.vlmeta["note"] == "kept"


def test_file_size_limit(tmp_path: Path) -> None:
    """RLIMIT_FSIZE at the file's current size: every write past it fails with EFBIG."""
    p = str(tmp_path / "a.b2nd")
    data = make_array(p)
    head = Path(p).read_bytes()
    code = OPS + textwrap.dedent(
        f"""
        import resource, signal, os
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        size = os.path.getsize({p!r})
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        print("SHAPE", try_ops({p!r}))
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"SHAPE {SHAPE}" in r.stdout
    check_unchanged(p, data, head)


def test_disk_full(small_tmpfs: Path) -> None:
    """ENOSPC: the array is written, then the rest of the file system is filled up."""
    p = str(small_tmpfs / "a.b2nd")
    data = make_array(p)
    head = Path(p).read_bytes()
    fd = os.open(small_tmpfs / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\1" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    ns: dict = {}
    exec(OPS, ns)  # noqa: S102 - the shared scenario, run in this process
    assert ns["try_ops"](p) == SHAPE
    check_unchanged(p, data, head)
