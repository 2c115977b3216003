"""Arrays computed from values or other arrays (``oxblosc.construct``), shape methods
(``reshape``, ``squeeze``, ``.T``), field names and subarray dtypes: checked against NumPy's
definitions and, where the layout is python-blosc2's own ("insertion order"), the wheel."""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc as ox
import pytest


def test_eye_matches_numpy():
    for n, m, k in [(5, None, 0), (7, 4, 2), (4, 9, -3), (6, 6, 10), (0, 3, 0)]:
        a = ox.eye(n, m, k, dtype=np.int16, chunks=(2, 3) if n else None)
        assert a.dtype == np.int16
        np.testing.assert_array_equal(a[:], np.eye(n, m, k, dtype=np.int16))


@pytest.mark.parametrize("c_order", [True, False])
def test_fromiter_consumes_a_generator_once(c_order):
    shape, chunks, blocks = (7, 6), (3, 4), (2, 2)
    got = ox.fromiter((i * 2 for i in range(100)), shape, np.int64, c_order=c_order, chunks=chunks, blocks=blocks)
    want = blosc2.fromiter((i * 2 for i in range(100)), shape, np.int64, c_order=c_order, chunks=chunks, blocks=blocks)
    np.testing.assert_array_equal(got[:], want[:])
    if c_order:
        np.testing.assert_array_equal(got[:], np.arange(0, 84, 2).reshape(shape))
    with pytest.raises(ValueError, match="ran out"):
        ox.fromiter(iter(range(5)), (2, 3), np.int32)
    np.testing.assert_array_equal(ox.fromiter(np.arange(6.0), (2, 3), np.float32)[:], np.arange(6.0).reshape(2, 3))


def test_arange_linspace_c_order():
    a = ox.arange(0, 30, dtype=np.int64, shape=(6, 5), chunks=(4, 3), blocks=(2, 2), c_order=True)
    np.testing.assert_array_equal(a[:], np.arange(30).reshape(6, 5))
    # Insertion order: the first chunk (rows 0-3, columns 0-2) holds 0..11 in C order.
    b = ox.arange(0, 30, dtype=np.int64, shape=(6, 5), chunks=(4, 3), blocks=(2, 2), c_order=False)
    np.testing.assert_array_equal(b[:4, :3], np.arange(12).reshape(4, 3))
    np.testing.assert_array_equal(np.sort(b[:].ravel()), np.arange(30))
    c = ox.linspace(0, 1, 20, shape=(4, 5), c_order=False, chunks=(4, 5))
    np.testing.assert_array_equal(c[:], np.linspace(0, 1, 20).reshape(4, 5))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(indexing):
    x, y, z = np.arange(3), np.linspace(0, 1, 5), np.arange(2, dtype=np.int8)
    got = ox.meshgrid(x, ox.asarray(y), z, indexing=indexing)
    for g, w in zip(got, np.meshgrid(x, y, z, indexing=indexing), strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g[:], w)


def test_concat_and_stack():
    a = np.arange(40, dtype=np.int32).reshape(4, 10)
    b = -np.arange(24, dtype=np.int32).reshape(4, 6)
    x, y = ox.asarray(a, chunks=(3, 4), blocks=(2, 2)), ox.asarray(b, chunks=(2, 5))
    c = ox.concat([x, y], axis=1)
    assert c.chunks == (3, 4) and c.blocks == (2, 2)  # the first array's, as python-blosc2
    np.testing.assert_array_equal(c[:], np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(ox.concat([x, x, x], axis=-2)[:], np.concatenate([a, a, a]))
    with pytest.raises(ValueError):
        ox.concat([x, y], axis=0)
    with pytest.raises(TypeError):
        ox.concat([x, a])
    for axis in (0, 1, 2, -1):
        np.testing.assert_array_equal(ox.stack([x, x], axis=axis)[:], np.stack([a, a], axis=axis))


def test_expand_dims_squeeze_reshape_transpose(tmp_path):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = ox.asarray(a, chunks=(2, 3, 4), blocks=(1, 2, 2), cparams={"codec": ox.Codec.LZ4})
    e = ox.expand_dims(x, axis=(0, 3))
    assert e.shape == (1, 3, 4, 1, 5) and e.chunks == (1, 2, 3, 1, 4) and e.cparams.codec == ox.Codec.LZ4
    np.testing.assert_array_equal(e[:], np.expand_dims(a, (0, 3)))
    s = ox.squeeze(e)
    assert s.shape == (3, 4, 5) and s.chunks == x.chunks
    np.testing.assert_array_equal(e.squeeze(axis=-2)[:], np.squeeze(np.expand_dims(a, (0, 3)), axis=-2))
    with pytest.raises(ValueError):
        e.squeeze(axis=1)
    r = x.reshape((6, -1), urlpath=str(tmp_path / "r.b2nd"))
    np.testing.assert_array_equal(r[:], a.reshape(6, 10))
    np.testing.assert_array_equal(blosc2.open(str(tmp_path / "r.b2nd"))[:], a.reshape(6, 10))
    np.testing.assert_array_equal(ox.reshape(a, (5, 12))[:], a.reshape(5, 12))
    with pytest.raises(ValueError):
        x.reshape((7, 9))
    m = ox.asarray(a[0], chunks=(3, 2))
    assert m.T.shape == (5, 4) and m.T.chunks == (2, 3)
    np.testing.assert_array_equal(m.T[:], a[0].T)
    np.testing.assert_array_equal(x.mT[:], np.swapaxes(a, 1, 2))
    with pytest.raises(ValueError):
        _ = x.T


def test_field_names_index_structured_arrays():
    dt = np.dtype([("a", "<f4"), ("b", "<i8", (3,))])
    n = np.zeros((5, 4), dtype=dt)
    n["a"] = np.arange(20).reshape(5, 4)
    x = ox.asarray(n, chunks=(2, 3))
    np.testing.assert_array_equal(x["a"][:], n["a"])
    np.testing.assert_array_equal(x["b"][1:3], n["b"][1:3])
    x["b"][0] = 7
    n["b"][0] = 7
    x["a"] = 1.5
    n["a"] = 1.5
    np.testing.assert_array_equal(x[:], n)
    ox.NDField(x, "a")[:, 0] = x["b"][:, 0][:, 0]
    n["a"][:, 0] = n["b"][:, 0, 0]
    np.testing.assert_array_equal(x[:], n)
    with pytest.raises(ValueError):
        x["missing"]


@pytest.mark.parametrize("dtype", [("<f8", (10,)), ("<i2", (2, 3)), ("<i4,>f4", (4,))])
def test_subarray_dtypes_roundtrip_with_blosc2(tmp_path, dtype):
    dtype = np.dtype(dtype)
    p = str(tmp_path / "s.b2nd")
    n = np.zeros((6,), dtype=dtype)
    n.view(np.uint8).reshape(-1)[:] = np.arange(n.nbytes) % 251
    x = ox.zeros((6,), dtype=dtype, urlpath=p, chunks=(4,))
    assert x.dtype == dtype
    x[:] = n
    x[2] = n[5]
    n[2] = n[5]
    assert x[:].tobytes() == n.tobytes() and x[:].shape == n.shape
    b = blosc2.open(p)
    assert b.dtype == dtype and b[:].tobytes() == n.tobytes()
    q = str(tmp_path / "t.b2nd")
    blosc2.zeros((3,), dtype=dtype, urlpath=q)
    got = ox.open(q)
    assert got.dtype == dtype and got[:].shape == np.zeros((3,), dtype).shape


def test_iterchunks_info_coords_match_blosc2():
    n = np.arange(60).reshape(6, 10)
    ours = ox.asarray(n, chunks=(4, 3), blocks=(2, 3))
    theirs = blosc2.asarray(n, chunks=(4, 3), blocks=(2, 3))
    got = [(i.nchunk, i.coords) for i in ours.iterchunks_info()]
    assert got == [(i.nchunk, tuple(int(c) for c in i.coords)) for i in theirs.iterchunks_info()]
    # The insertion order of fromiter(c_order=False): chunk after chunk, each in C order.
    f = ox.fromiter(iter(range(60)), (6, 10), np.int64, c_order=False, chunks=(4, 3), blocks=(2, 3))
    start = 0
    for info in f.iterchunks_info():
        edges = zip(info.coords, f.chunks, f.shape, strict=True)
        region = tuple(slice(c * s, min((c + 1) * s, n)) for c, s, n in edges)
        size = f[region].size
        np.testing.assert_array_equal(f[region].ravel(), np.arange(start, start + size))
        start += size


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ((3,), (4, 3)),
        ((1, 5), (6, 5)),
        ((6, 1), (6, 4)),
        ((2, 1, 3), (5, 2, 4, 3)),
        ((), (3, 2)),
        ((4,), (4,)),
        ((3,), (4, 2)),
    ],
)
def test_broadcast_to_follows_numpy(src, dst):
    n = np.arange(int(np.prod(src)), dtype=np.int32).reshape(src)
    a = ox.asarray(n)
    try:
        want = np.broadcast_to(n, dst)
    except ValueError:
        with pytest.raises(ValueError):
            ox.broadcast_to(a, dst)
        return
    got = ox.broadcast_to(a, dst)
    assert got.shape == dst and got.dtype == n.dtype
    np.testing.assert_array_equal(got[:], want)


@pytest.mark.parametrize("lib", [ox, blosc2], ids=["oxblosc", "blosc2"])
def test_array_and_asarray_copy_rules(lib, tmp_path):
    a = lib.asarray(np.arange(10, dtype=np.int64), chunks=(5,), blocks=(2,))
    assert lib.asarray(a) is a and lib.asarray(a, copy=None) is a and lib.array(a, copy=False) is a
    b = lib.array(a)
    assert b is not a and b.dtype == a.dtype
    np.testing.assert_array_equal(b[:], a[:])
    c = lib.asarray(a, dtype=np.float32)
    assert c is not a and c.dtype == np.float32
    np.testing.assert_array_equal(c[:], np.arange(10, dtype=np.float32))
    for kwargs in ({"dtype": np.float64}, {"urlpath": str(tmp_path / "x.b2nd"), "mode": "w"}):
        with pytest.raises(ValueError, match="copy=False"):
            lib.asarray(a, copy=False, **kwargs)
    d = lib.array([1, 2, 3, 4], dtype=np.float32, chunks=(4,), blocks=(2,))
    assert d.dtype == np.float32 and d.chunks == (4,) and d.blocks == (2,)


def test_take_follows_numpy():
    n = np.arange(120, dtype=np.int16).reshape(4, 5, 6)
    a = ox.asarray(n, chunks=(2, 3, 4))
    idx = np.array([[0, -1], [3, 2]])
    for axis in (None, 0, 1, -1):
        i = idx if axis is None else idx % n.shape[axis]
        got = ox.take(a, i, axis=axis)
        assert isinstance(got, ox.NDArray)
        np.testing.assert_array_equal(got[:], np.take(n, i, axis=axis))
    np.testing.assert_array_equal(a.take([5, 119, -120])[:], np.take(n, [5, 119, -120]))
    np.testing.assert_array_equal(ox.take([[1, 2], [3, 4]], [1, 0], axis=1)[:], [[2, 1], [4, 3]])
    with pytest.raises(IndexError):
        a.take([120])
    with pytest.raises(IndexError):
        a.take([0.5])
