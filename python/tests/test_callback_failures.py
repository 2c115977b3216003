"""User code that raises in the middle of a write (a prefilter, a postfilter, an operand whose
``__array__`` raises) leaves file-backed super-chunks and arrays
exactly as before, with an error that says what failed, and the handle keeps working."""

from __future__ import annotations

import numpy as np
import oxblosc
import pytest

blosc2 = pytest.importorskip("blosc2")


class Raising:
    """An array-like whose conversion fails (a lazy source, a broken memmap...)."""

    shape, dtype, ndim = (12, 10), np.dtype("i8"), 2

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("operand failed to convert")


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
def test_raising_prefilter_and_postfilter_change_nothing(tmp_path, contiguous):
    p = str(tmp_path / ("s.b2frame" if contiguous else "s.b2frame.d"))
    s = oxblosc.SChunk(chunksize=800, urlpath=p, contiguous=contiguous, mode="w", cparams={"typesize": 8})
    s.append_data(np.arange(100, dtype="i8"))
    s.append_data(np.arange(100, 200, dtype="i8"))
    before = [s.decompress_chunk(i) for i in range(s.nchunks)]

    @s.prefilter("i8")
    def pre(i, o, off):
        raise ValueError("prefilter failed")

    for what in ("append", "update"):
        with pytest.raises(RuntimeError, match=r"prefilter 'pre' raised at item offset \d+: prefilter failed"):
            if what == "append":
                s.append_data(np.zeros(100, "i8"))
            else:
                s.update_data(1, np.zeros(100, "i8"))
        assert [s.decompress_chunk(i) for i in range(s.nchunks)] == before
        r = oxblosc.open(p)
        assert [r.decompress_chunk(i) for i in range(r.nchunks)] == before
    s.remove_prefilter("pre")

    @s.postfilter("i8")
    def post(i, o, off):
        raise ValueError("postfilter failed")

    with pytest.raises(RuntimeError, match="postfilter 'post' raised at item offset 0"):
        s.decompress_chunk(0)
    s.remove_postfilter("post")
    s.append_data(np.full(100, 7, "i8"))  # the handle writes on
    want = [*before, np.full(100, 7, "i8").tobytes()]
    del s
    b = blosc2.open(p, mode="r")
    assert [b.decompress_chunk(i) for i in range(b.nchunks)] == want


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
def test_raising_operand_in_writes_changes_nothing(tmp_path, contiguous):
    p = str(tmp_path / ("a.b2nd" if contiguous else "a.b2nd.d"))
    data = np.arange(120, dtype="i8").reshape(12, 10)
    a = oxblosc.asarray(data, urlpath=p, mode="w", chunks=(4, 5), blocks=(2, 5), contiguous=contiguous)
    for key in (slice(None), (slice(2, 11), slice(1, 9)), 0):
        with pytest.raises(RuntimeError, match="operand failed to convert"):
            a[key] = Raising()
        assert a.shape == (12, 10)
        np.testing.assert_array_equal(a[:], data)
        np.testing.assert_array_equal(oxblosc.open(p)[:], data)
    a[0, 0] = 99  # the handle writes on
    data[0, 0] = 99
    del a
    np.testing.assert_array_equal(np.asarray(blosc2.open(p, mode="r")[:]), data)
