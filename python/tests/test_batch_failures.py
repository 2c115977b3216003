"""Writes that replace many chunks at once (a whole-array or multi-chunk box assignment, a
resize that moves chunks) failing part-way on a full disk, from the user's side.

The file system is filled and then a little room is made again (0 to a few pages), so the
write fails after some of its chunks were staged already, at a different point each time. The
failed write must raise ``OSError`` (ENOSPC) naming the file, leave the handle and the file
exactly as before, and the handle must keep working once there is room again; python-blosc2
reads the result. Contiguous files and sparse directories.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import oxblosc
import pytest

blosc2 = pytest.importorskip("blosc2")

SHAPE, CHUNKS, BLOCKS = (40, 60), (8, 12), (4, 6)


def noise(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).integers(-(2**62), 2**62, size=shape, dtype=np.int64)


def fill_leaving(d: Path, room: int) -> None:
    """Fill the file system, then free ``room`` bytes again."""
    filler = d / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\xa5" * 65536)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\xa5" * 512)
        except OSError:
            pass
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - room))


OPS = {
    "whole": lambda a, m: (a.__setitem__(slice(None), noise(7, m.shape)), noise(7, m.shape))[1],
    "box": lambda a, m: _box(a, m),
    "grow": lambda a, m: _resize(a, m, (m.shape[0] + 3, m.shape[1] + 30)),
    "shrink+grow": lambda a, m: _resize(a, m, (m.shape[0] + 9, m.shape[1] - 20)),
}


def _box(a, m):
    new = m.copy()
    new[3:33, 5:50] = noise(8, (30, 45))
    a[3:33, 5:50] = new[3:33, 5:50]
    return new


def _resize(a, m, shape):
    new = np.zeros(shape, m.dtype)
    common = tuple(slice(0, min(x, y)) for x, y in zip(m.shape, shape, strict=True))
    new[common] = m[common]
    a.resize(shape)
    return new


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
@pytest.mark.parametrize("op", list(OPS))
def test_batch_failing_part_way_changes_nothing(small_tmpfs: Path, op: str, contiguous: bool) -> None:
    failed = 0
    for room in (0, 2048, 4096, 8192, 12288, 20480, 40960):
        p = str(small_tmpfs / ("a.b2nd" if contiguous else "a.b2nd.d"))
        oxblosc.remove_urlpath(p)
        model = noise(1, SHAPE)
        a = oxblosc.asarray(model, urlpath=p, mode="w", chunks=CHUNKS, blocks=BLOCKS, contiguous=contiguous)
        a.vlmeta["tag"] = "kept"
        fill_leaving(small_tmpfs, room)
        try:
            model = OPS[op](a, model)
        except OSError as e:
            failed += 1
            assert e.errno in (errno.ENOSPC, errno.EFBIG), e
            assert "a.b2nd" in str(e), f"the error does not name the file: {e}"
            assert a.shape == SHAPE, f"room {room}: the failed {op} changed the shape"
            np.testing.assert_array_equal(a[:], noise(1, SHAPE), err_msg=f"room {room}: handle changed")
            np.testing.assert_array_equal(oxblosc.open(p)[:], noise(1, SHAPE), err_msg=f"room {room}: file changed")
        (small_tmpfs / "filler").unlink()
        # Room again: the same handle writes on.
        a[1:10, 2:30] = 5
        model[1:10, 2:30] = 5
        assert a.vlmeta["tag"] == "kept"
        np.testing.assert_array_equal(a[:], model)
        del a
        np.testing.assert_array_equal(oxblosc.open(p)[:], model, err_msg=f"room {room}")
        theirs = blosc2.open(p, mode="r")
        np.testing.assert_array_equal(np.asarray(theirs[:]), model, err_msg=f"room {room}: python-blosc2")
        assert theirs.vlmeta["tag"] == "kept"
    assert failed >= 2, f"only {failed} of the writes failed: the test no longer reaches the failure"
