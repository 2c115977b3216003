"""``oxblosc.open`` modes and context managers, checked against python-blosc2's behaviour
(its ``open`` docs: "r" read-only, "a" read/write, "w" create) with the real wheel as oracle."""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc
import pytest


@pytest.mark.parametrize("lib", [oxblosc, blosc2], ids=["oxblosc", "blosc2"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_open_w_keeps_an_array(tmp_path, lib, contiguous):
    p = str(tmp_path / "a.b2nd")
    a = np.arange(200, dtype=np.int32).reshape(20, 10)
    oxblosc.asarray(a, urlpath=p, chunks=(8, 10), contiguous=contiguous).vlmeta["k"] = "v"
    b = lib.open(p, mode="w")
    assert b.shape == (20, 10)
    np.testing.assert_array_equal(b[:], a)
    assert b.vlmeta["k"] == "v"
    b[0] = -1  # writable, and written to the file
    del b
    a[0] = -1
    for reader in (oxblosc, blosc2):
        np.testing.assert_array_equal(reader.open(p)[:], a)


@pytest.mark.parametrize("lib", [oxblosc, blosc2], ids=["oxblosc", "blosc2"])
def test_open_w_empties_a_schunk(tmp_path, lib):
    p = str(tmp_path / "s.b2frame")
    s = oxblosc.SChunk(chunksize=400, data=np.arange(300, dtype=np.int32), urlpath=p, meta={"m": 1})
    s.vlmeta["k"] = 1
    del s
    t = lib.open(p, mode="w")
    assert t.nchunks == 0 and t.typesize == 4 and "m" not in t.meta and "k" not in t.vlmeta
    t.append_data(np.arange(100, dtype=np.int32))
    del t
    for reader in (oxblosc, blosc2):
        assert reader.open(p).nchunks == 1


@pytest.mark.parametrize("lib", [oxblosc, blosc2], ids=["oxblosc", "blosc2"])
def test_open_as_context_manager(tmp_path, lib):
    pa, ps = str(tmp_path / "a.b2nd"), str(tmp_path / "s.b2frame")
    oxblosc.asarray(np.arange(10), urlpath=pa)
    oxblosc.SChunk(chunksize=80, data=np.arange(10), urlpath=ps)
    with lib.open(pa) as a:
        np.testing.assert_array_equal(a[:], np.arange(10))
    with lib.open(ps) as s:
        assert s[:] == np.arange(10).tobytes()
    with lib.asarray(np.arange(3)) as c:
        assert c[1] == 1
