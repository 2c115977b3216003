"""NDArray interop with the real python-blosc2 wheel, both directions: odd shapes and edge
chunks, every NumPy dtype family, in memory (cframes) and on disk (contiguous and sparse),
with meta and vlmeta; the b2nd metalayer bytes are compared exactly."""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc
import pytest
from oxblosc.ndarray import dtype_to_str

DTYPES = [
    "i1",
    "<i2",
    ">i4",
    "<i8",
    "u1",
    ">u2",
    "<u4",
    "<u8",
    "<f2",
    "<f4",
    ">f8",
    "<c8",
    ">c16",
    "?",
    "<M8[ns]",
    ">M8[D]",
    "<m8[s]",
    "<m8[us]",
    "S5",
    "<U3",
    ">U2",
    [("a", "<i4"), ("b", [("c", "<f8"), ("d", "S2")])],
    [("x", ">f4"), ("y", "<u2", (3,))],
]

GEOMETRIES = [
    ((7,), (3,), (2,)),
    ((10, 13), (4, 5), (3, 2)),
    ((5, 6, 7), (2, 4, 3), (1, 3, 2)),
    ((3, 1, 4, 2), (2, 1, 3, 2), (1, 1, 2, 1)),
    ((), (), ()),
]


def sample(shape, dtype, seed=0):
    """Deterministic, non-trivial data of any dtype (raw random bytes, bools and NaT fixed up)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8).tobytes()
    a = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if dtype.kind == "b":
        a = (np.frombuffer(raw, dtype=np.uint8)[:n] & 1).astype(bool).reshape(shape)
    if dtype.kind == "U":
        a = np.array([chr(65 + i % 26) * (1 + i % 2) for i in range(n)], dtype=dtype).reshape(shape)
    return a


def same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype, (x.dtype, y.dtype)
    assert x.shape == y.shape
    assert x.tobytes() == y.tobytes()


def b2nd_bytes(frame: bytes) -> bytes:
    """The raw b2nd metalayer bytes of a frame (read through oxblosc's SChunk, raw)."""
    s = oxblosc.schunk_from_cframe(frame)
    return s._n.meta_get("b2nd")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtype_string_and_bytes_match_python_blosc2(dtype):
    a = sample((4, 3), dtype)
    ours = oxblosc.asarray(a, chunks=(3, 2), blocks=(2, 1))
    theirs = blosc2.asarray(a, chunks=(3, 2), blocks=(2, 1))
    assert b2nd_bytes(ours.to_cframe()) == b2nd_bytes(theirs.to_cframe())
    assert dtype_to_str(a.dtype) == b2nd_bytes(theirs.to_cframe())[-len(dtype_to_str(a.dtype)) :].decode()
    # both directions
    same(blosc2.ndarray_from_cframe(ours.to_cframe())[...], a)
    back = oxblosc.ndarray_from_cframe(theirs.to_cframe())
    assert back.dtype == a.dtype
    same(back[...], a)


@pytest.mark.parametrize("shape,chunks,blocks", GEOMETRIES)
@pytest.mark.parametrize("dtype", ["<f8", ">i2", "S3", [("a", "<i4"), ("b", "<f4")]], ids=str)
def test_geometries_both_directions(shape, chunks, blocks, dtype):
    a = sample(shape, dtype, seed=len(shape))
    ours = oxblosc.asarray(a, chunks=chunks, blocks=blocks)
    theirs = blosc2.asarray(a, chunks=chunks, blocks=blocks)
    same(blosc2.ndarray_from_cframe(ours.to_cframe())[()], a)
    x = oxblosc.ndarray_from_cframe(theirs.to_cframe())
    assert (x.shape, x.chunks, x.blocks) == (shape, chunks, blocks)
    same(x[()], a)


@pytest.mark.parametrize("contiguous", [True, False])
def test_files_both_directions_with_meta_and_vlmeta(tmp_path, contiguous):
    a = sample((23, 17, 5), "<f4", seed=3)
    p1, p2 = str(tmp_path / "ours.b2nd"), str(tmp_path / "theirs.b2nd")
    meta = {"units": "K", "scale": [1, 2, 3]}
    ours = oxblosc.asarray(a, chunks=(10, 6, 5), blocks=(3, 4, 2), urlpath=p1, contiguous=contiguous, meta=meta)
    ours.vlmeta["note"] = {"made": "oxblosc", "n": 7}
    del ours
    t = blosc2.open(p1)
    same(t[...], a)
    assert t.schunk.meta["units"] == "K" and t.schunk.meta["scale"] == [1, 2, 3]
    assert t.schunk.vlmeta["note"] == {"made": "oxblosc", "n": 7}

    theirs = blosc2.asarray(a, chunks=(10, 6, 5), blocks=(3, 4, 2), urlpath=p2, contiguous=contiguous, meta=meta)
    theirs.schunk.vlmeta["note"] = {"made": "blosc2"}
    del theirs
    x = oxblosc.open(p2)
    assert isinstance(x, oxblosc.NDArray)
    same(x[...], a)
    assert x.meta["units"] == "K" and x.vlmeta["note"] == {"made": "blosc2"}
    same(x[3:19:4, ::-1, 2], a[3:19:4, ::-1, 2])
    assert x.mode == "r"
    with pytest.raises(ValueError):
        x[0, 0, 0] = 1


def test_edits_in_append_mode_persist_and_stay_readable_by_blosc2(tmp_path):
    p = str(tmp_path / "a.b2nd")
    a = sample((9, 11), "<i8", seed=5)
    blosc2.asarray(a, chunks=(4, 4), blocks=(2, 3), urlpath=p)
    x = oxblosc.open(p, mode="a")
    x[2:7, 3:10:3] = -1
    a[2:7, 3:10:3] = -1
    x.resize((12, 11))
    a = np.concatenate([a, np.zeros((3, 11), a.dtype)])
    x.append(np.full((2, 11), 9, a.dtype))
    a = np.concatenate([a, np.full((2, 11), 9, a.dtype)])
    del x
    same(blosc2.open(p)[...], a)
    same(oxblosc.open(p)[...], a)


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("how", ["asarray", "zeros", "reopened"])
def test_resize_and_append_with_own_blocks_read_by_blosc2(tmp_path, how, contiguous):
    """Zero chunks added by resize/append must carry the array's block size (python-blosc2
    builds them from the frame header's): slices crossing old and new chunks, and their
    partial blocks, read in python-blosc2."""
    p = str(tmp_path / "a.b2nd")
    a = np.arange(512).reshape(8, 64)
    kw = {"chunks": (8, 64), "blocks": (2, 64), "urlpath": p, "contiguous": contiguous}
    if how == "zeros":
        x = oxblosc.zeros((8, 64), dtype=a.dtype, **kw)
        x[:] = a
    else:
        x = oxblosc.asarray(a, **kw)
    if how == "reopened":
        del x
        x = oxblosc.open(p, mode="a")
    x.resize((16, 64))
    x.append(np.full((3, 64), 7))
    x.resize((27, 70))
    expect = np.zeros((27, 70), a.dtype)
    expect[:8, :64] = a
    expect[16:19, :64] = 7
    del x
    theirs = blosc2.open(p)
    assert theirs.blocks == (2, 64)
    same(theirs[4:12], expect[4:12])
    same(theirs[13:20, 60:], expect[13:20, 60:])
    same(theirs[...], expect)
    same(oxblosc.open(p)[...], expect)


def test_special_constructors_are_read_by_blosc2():
    for arr, expect in [
        (oxblosc.zeros((5, 7), dtype="<i4", chunks=(2, 3), blocks=(1, 2)), np.zeros((5, 7), "<i4")),
        (oxblosc.ones((5, 7), dtype="<f4"), np.ones((5, 7), "<f4")),
        (oxblosc.full((4, 4), 2.5, dtype=">f8"), np.full((4, 4), 2.5, ">f8")),
        # repeated-value chunks with blocks smaller than chunks (they carried the chunk as
        # their block size and python-blosc2 failed: "Error while getting the buffer")
        (oxblosc.full((9, 11), 3, dtype="<i4", chunks=(4, 5), blocks=(2, 3)), np.full((9, 11), 3, "<i4")),
        (oxblosc.ones((30, 30), dtype="<i8", chunks=(10, 10), blocks=(5, 5)), np.ones((30, 30), "<i8")),
        (oxblosc.nans((3, 5), dtype="<f8"), np.full((3, 5), np.nan)),
        (oxblosc.arange(0, 30, 2, shape=(3, 5)), np.arange(0, 30, 2).reshape(3, 5)),
        (oxblosc.linspace(0, 1, 12, shape=(3, 4)), np.linspace(0, 1, 12).reshape(3, 4)),
    ]:
        same(blosc2.ndarray_from_cframe(arr.to_cframe())[...], expect)
        same(arr[...], expect)
    z = oxblosc.zeros((1000, 1000), dtype="<f8")
    assert z.cbytes == 0, "zeros writes no data"


def test_python_blosc2_special_arrays_read():
    for theirs, expect in [
        (blosc2.zeros((6, 5), dtype="<u2", chunks=(4, 2), blocks=(2, 2)), np.zeros((6, 5), "<u2")),
        (blosc2.full((6, 5), 7, dtype="<i8"), np.full((6, 5), 7, "<i8")),
        (blosc2.nans((3, 3), dtype="<f4"), np.full((3, 3), np.nan, "<f4")),
        (blosc2.empty((0, 4), dtype="<f4"), np.zeros((0, 4), "<f4")),
    ]:
        same(oxblosc.ndarray_from_cframe(theirs.to_cframe())[...], expect)


def test_vectors_open(vectors):
    base = vectors / "plugins" / "test_data"
    x = oxblosc.open(str(base / "example_item_prices.b2nd"))
    assert x.shape == (12, 25, 250) and x.chunks == (8, 10, 50) and x.blocks == (4, 5, 10)
    # The file says |u1 but stores 4-byte items: read as raw V4, viewable as float32.
    assert x.dtype == np.dtype("V4")
    prices = x[...].view("<f4")
    assert prices.shape == (12, 25, 250) and np.isfinite(prices).all() and (prices > 0).all()
    same(x[3, 7:20:3, ::-50].view("<f4"), prices[3, 7:20:3, ::-50])
    y = oxblosc.open(str(base / "example_day_month_temp.b2nd"))
    assert y.shape == (400, 3) and y[...].shape == (400, 3)


def test_append_on_1d_matches_blosc2(tmp_path):
    """python-blosc2's 1-D ``append``: a scalar adds one item, any array-like is flattened, the
    new length is returned; the same calls on both libraries give the same values and files
    each library reads."""
    ours = oxblosc.asarray(np.arange(5, dtype="i8"), urlpath=str(tmp_path / "o.b2nd"), mode="w", chunks=(4,))
    theirs = blosc2.asarray(np.arange(5, dtype="i8"), urlpath=str(tmp_path / "t.b2nd"), mode="w", chunks=(4,))
    for values in (7, [8, 9], np.array([[1, 2], [3, 4]]), np.int16(-1), []):
        assert ours.append(values) == theirs.append(values)
    np.testing.assert_array_equal(ours[:], theirs[:])
    np.testing.assert_array_equal(blosc2.open(str(tmp_path / "o.b2nd"))[:], theirs[:])


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize(
    ("shape", "chunks", "small", "big"),
    [
        ((6,), (4,), (3,), (6,)),
        ((7, 9), (4, 4), (5, 6), (8, 11)),
        ((7, 9), (4, 4), (7, 2), (7, 9)),
        ((5, 6, 7), (2, 3, 4), (3, 4, 5), (5, 6, 7)),
    ],
)
def test_shrink_then_blosc2_grows_shows_zeros(tmp_path, contiguous, shape, chunks, small, big):
    """python-blosc2 does not clear a chunk's padding when it grows an array (its own files
    show the cut-off values again). Our shrink clears the cells it cuts inside the chunks
    that stay, so a file we shrank grows into zeros there, as NumPy would have it."""
    path = str(tmp_path / ("a.b2nd" if contiguous else "d.b2nd"))
    full = np.arange(1, 1 + np.prod(shape), dtype="i4").reshape(shape)
    a = oxblosc.asarray(full, urlpath=path, contiguous=contiguous, chunks=chunks, mode="w")
    a.resize(small)
    del a
    b = blosc2.open(path, mode="a")
    b.resize(big)
    want = np.zeros(big, dtype="i4")
    keep = tuple(slice(0, min(s, n)) for s, n in zip(small, big, strict=True))
    want[keep] = full[keep]
    np.testing.assert_array_equal(b[...], want)
    del b
    np.testing.assert_array_equal(oxblosc.open(path)[...], want)
