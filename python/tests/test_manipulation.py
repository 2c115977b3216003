"""permute_dims/transpose/matrix_transpose/astype and the small NDArray attributes python-blosc2
documents (item, blocksize, chunksize, device, attrs): NumPy's values, python-blosc2's names,
and copies made chunk by chunk."""

import math

import blosc2
import numpy as np
import oxblosc
import pytest

X = np.arange(2 * 5 * 7, dtype=np.float64).reshape(2, 5, 7)


def _arr(x=X, **kw):
    kw.setdefault("chunks", (1, 3, 4))
    kw.setdefault("blocks", (1, 2, 2))
    return oxblosc.asarray(x, **kw)


@pytest.mark.parametrize("axes", [None, (0, 1, 2), (2, 0, 1), (1, 0, 2), (-1, -3, -2)])
def test_permute_dims_equals_numpy_and_python_blosc2(axes):
    got = oxblosc.permute_dims(_arr(), axes)
    want = np.transpose(X, axes)
    np.testing.assert_array_equal(got[()], want)
    theirs = blosc2.permute_dims(blosc2.asarray(X, chunks=(1, 3, 4), blocks=(1, 2, 2)), axes)
    np.testing.assert_array_equal(got[()], theirs[()])
    order = axes if axes is not None else (2, 1, 0)
    assert got.chunks == tuple((1, 3, 4)[a] for a in order)


def test_transposes_and_their_errors():
    np.testing.assert_array_equal(oxblosc.transpose(_arr())[()], X.T)
    np.testing.assert_array_equal(oxblosc.matrix_transpose(_arr())[()], np.swapaxes(X, -1, -2))
    np.testing.assert_array_equal(oxblosc.permute_dims(X[0])[()], X[0].T)  # NumPy input
    with pytest.raises(ValueError, match="not a permutation"):
        oxblosc.permute_dims(_arr(), (0, 0, 1))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        oxblosc.matrix_transpose(oxblosc.asarray(np.arange(3)))


def test_permute_dims_into_a_file_with_other_chunks(tmp_path):
    path = str(tmp_path / "t.b2nd")
    got = oxblosc.permute_dims(_arr(), (2, 1, 0), urlpath=path, chunks=(7, 5, 1))
    assert got.chunks == (7, 5, 1)
    np.testing.assert_array_equal(blosc2.open(path)[()], X.T)


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8", "bool"])
def test_astype_equals_numpy(dtype):
    got = oxblosc.astype(_arr(), dtype)
    assert got.dtype == np.dtype(dtype) and got.chunks == (1, 3, 4)
    np.testing.assert_array_equal(got[()], X.astype(dtype))
    np.testing.assert_array_equal(got[()], blosc2.astype(blosc2.asarray(X), dtype)[()])


def test_astype_casting_and_copy():
    a = _arr()
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        oxblosc.astype(a, "int32", casting="safe")
    assert oxblosc.astype(a, a.dtype, copy=False) is a
    b = oxblosc.astype(a, a.dtype)
    assert b is not a
    np.testing.assert_array_equal(b[()], X)


def test_converting_copies_read_one_chunk_at_a_time(monkeypatch):
    """A converting copy of an array larger than memory must not read it whole."""
    a = _arr()
    a.vlmeta["note"] = "kept"
    largest = []
    real = oxblosc.NDArray.__getitem__

    def recording(self, key):
        out = real(self, key)
        largest.append(np.size(out))
        return out

    monkeypatch.setattr(oxblosc.NDArray, "__getitem__", recording)
    b = a.copy(np.float32)
    c = oxblosc.permute_dims(a)
    assert max(largest) <= math.prod(a.chunks)
    monkeypatch.undo()
    np.testing.assert_array_equal(b[()], X.astype(np.float32))
    np.testing.assert_array_equal(c[()], X.T)
    assert b.vlmeta["note"] == "kept"


def test_small_attributes_as_in_python_blosc2():
    a = _arr()
    theirs = blosc2.asarray(X, chunks=(1, 3, 4), blocks=(1, 2, 2))
    assert (a.blocksize, a.chunksize) == (theirs.blocksize, theirs.chunksize) == (4 * 8, 12 * 8)
    assert a.device == theirs.device == "cpu"
    assert a.to_device("cpu") is a
    with pytest.raises(ValueError, match="Only 'cpu'"):
        a.to_device("gpu")
    a.attrs["unit"] = "K"
    assert a.vlmeta["unit"] == "K"
    one = oxblosc.asarray(np.array([[3.5]]))
    assert one.item() == 3.5 and type(one.item()) is float
    with pytest.raises(ValueError, match="size 1"):
        a.item()
