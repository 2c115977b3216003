"""Copies written to a path: ``CTable.copy(urlpath, overwrite=True)`` replaces the table
there only once the copy is complete (a failure part way leaves the old table byte for
byte), and ``NDArray.copy(storage=...)`` takes its storage as python-blosc2's does.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import oxblosc
import pytest

from .helpers import file_size_limit
from .test_replace_on_failure import snapshot

blosc2 = pytest.importorskip("blosc2")


@pytest.mark.parametrize("name", ["t.b2d", "t.b2z"])
@pytest.mark.parametrize("view", [False, True], ids=["table", "view"])
def test_ctable_copy_over_a_table_fails_and_keeps_it(tmp_path: Path, name: str, view: bool) -> None:
    rng = np.random.default_rng(0)
    big = oxblosc.CTable({"x": rng.integers(0, 2**63, 100_000), "y": rng.random(100_000)}, chunks=8192, blocks=1024)
    src = big.where("y > 0.5") if view else big
    p = str(tmp_path / name)
    oxblosc.CTable({"x": np.arange(10), "y": np.ones(10)}).save(p)
    before = snapshot(p)
    with file_size_limit(64 << 10), pytest.raises(OSError):
        src.copy(urlpath=p, overwrite=True)
    assert snapshot(p) == before, "the old table changed"
    assert os.listdir(tmp_path) == [name], "a temporary stayed"
    np.testing.assert_array_equal(oxblosc.CTable.open(p)["x"][:], np.arange(10))
    # succeeding, the copy replaces it and is open where it was asked for
    out = src.copy(urlpath=p, overwrite=True)
    assert len(out) == len(src) and os.fspath(out.urlpath) == p
    out.close()
    assert os.listdir(tmp_path) == [name]
    np.testing.assert_array_equal(oxblosc.CTable.open(p)["x"][:], src["x"][:])
    with pytest.raises(FileExistsError):
        src.copy(urlpath=p)


def _source() -> tuple[oxblosc.NDArray, blosc2.NDArray]:
    data = np.arange(400, dtype=np.int32).reshape(20, 20)
    a = oxblosc.asarray(data, chunks=(10, 10), blocks=(5, 5), meta={"m": 7})
    b = blosc2.asarray(data, chunks=(10, 10), blocks=(5, 5), meta={"m": 7})
    a.vlmeta["v"] = b.vlmeta["v"] = "hi"
    return a, b


@pytest.mark.parametrize("as_dict", [False, True], ids=["Storage", "dict"])
def test_ndarray_copy_with_storage_like_python_blosc2(tmp_path: Path, as_dict: bool) -> None:
    a, b = _source()
    ours, theirs = str(tmp_path / "ours.b2nd"), str(tmp_path / "theirs.b2nd")
    kw = {"urlpath": ours, "contiguous": False}
    a.copy(storage=kw if as_dict else oxblosc.Storage(**kw))
    b.copy(storage={**kw, "urlpath": theirs} if as_dict else blosc2.Storage(**{**kw, "urlpath": theirs}))
    # python-blosc2 reads our copy as its own (sparse, same chunks, meta and vlmeta kept) ...
    got, want = blosc2.open(ours), blosc2.open(theirs)
    np.testing.assert_array_equal(got[:], want[:])
    assert (got.chunks, got.blocks, got.schunk.contiguous) == (want.chunks, want.blocks, want.schunk.contiguous)
    assert got.schunk.meta["m"] == want.schunk.meta["m"] == 7
    assert got.vlmeta.getall() == want.vlmeta.getall() == {"v": "hi"}
    # ... and we read its copy alike
    o = oxblosc.open(theirs)
    np.testing.assert_array_equal(o[:], a[:])
    assert o.meta["m"] == 7 and o.vlmeta["v"] == "hi"
    # a storage together with one of its own fields is refused, as by python-blosc2
    with pytest.raises(AttributeError, match="storage"):
        a.copy(storage=oxblosc.Storage(urlpath=str(tmp_path / "x.b2nd")), urlpath=str(tmp_path / "y.b2nd"))
