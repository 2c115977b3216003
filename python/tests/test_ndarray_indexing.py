"""NDArray indexing, assignment, resize/append and constructors against NumPy: seeded random
keys over many geometries (0-d, zero-length axes, odd edge chunks), plus the
decoded-blocks counter that proves a read decodes only the blocks it touches."""

from __future__ import annotations

import numpy as np
import oxblosc
import pytest

GEOMETRIES = [
    ((), None, None),
    ((0,), (4,), (2,)),
    ((13,), (5,), (2,)),
    ((1,), (1,), (1,)),
    ((8, 0, 3), (4, 2, 3), (2, 1, 3)),
    ((17, 9), (5, 4), (2, 3)),
    ((6, 7, 8), (3, 3, 5), (2, 2, 2)),
    ((4, 5, 3, 6), (2, 5, 2, 4), (1, 2, 2, 3)),
    ((3, 2, 2, 2, 3), (2, 2, 1, 2, 2), (1, 1, 1, 2, 2)),
    ((40, 30), None, None),
]


def random_key(rng: np.random.Generator, shape: tuple[int, ...]):
    """A NumPy basic-indexing key: ints (negative too), slices with steps (negative too),
    an ellipsis sometimes, newaxis sometimes."""
    key = []
    for n in shape:
        r = rng.integers(0, 6)
        if r == 0 and n > 0:
            key.append(int(rng.integers(-n, n)))
        elif r == 1:
            key.append(slice(None))
        else:
            a, b = (int(x) for x in rng.integers(-n - 2, n + 3, size=2))
            step = int(rng.choice([1, 1, 2, 3, -1, -2, 5]))
            key.append(slice(a if rng.integers(0, 4) else None, b if rng.integers(0, 4) else None, step))
    if key and rng.integers(0, 4) == 0:
        i = int(rng.integers(0, len(key)))
        key = key[:i] + [Ellipsis] + key[i + 1 :]
    if rng.integers(0, 5) == 0:
        key.insert(int(rng.integers(0, len(key) + 1)), None)
    return tuple(key)


def make(shape, chunks, blocks, dtype="<i4", nthreads=1):
    n = int(np.prod(shape)) if shape else 1
    a = (np.arange(n, dtype=np.int64) * 7 + 3).astype(dtype).reshape(shape)
    kw = {"chunks": chunks, "blocks": blocks} if chunks is not None else {}
    x = oxblosc.asarray(a, dparams={"nthreads": nthreads}, **kw)
    return a, x


@pytest.mark.parametrize("shape,chunks,blocks", GEOMETRIES)
@pytest.mark.parametrize("nthreads", [1, 3])
def test_random_basic_keys_match_numpy(shape, chunks, blocks, nthreads):
    rng = np.random.default_rng(sum(shape) * 31 + nthreads)
    a, x = make(shape, chunks, blocks, nthreads=nthreads)
    np.testing.assert_array_equal(x[...], a)
    np.testing.assert_array_equal(np.asarray(x), a)
    for _ in range(40):
        key = random_key(rng, shape)
        expect = a[key]
        got = x[key]
        assert np.shape(got) == np.shape(expect), key
        np.testing.assert_array_equal(got, expect, err_msg=str(key))


@pytest.mark.parametrize("shape,chunks,blocks", GEOMETRIES)
def test_random_assignments_match_numpy(shape, chunks, blocks):
    rng = np.random.default_rng(7 + len(shape))
    a, x = make(shape, chunks, blocks)
    for _ in range(15):
        key = random_key(rng, shape)
        target = a[key]
        value = rng.integers(-1000, 1000, size=np.shape(target)).astype(a.dtype)
        if rng.integers(0, 3) == 0:
            value = int(rng.integers(-5, 5))  # scalar broadcast
        a[key] = value
        x[key] = value
        np.testing.assert_array_equal(x[...], a, err_msg=str(key))


def test_fancy_indexing_matches_numpy():
    a, x = make((11, 7, 5), (4, 3, 2), (2, 2, 1), dtype="<f8")
    rng = np.random.default_rng(3)
    keys = [
        [3, 1, 3],
        (slice(None), [6, 0, -1]),
        (..., np.array([4, 0])),
        (np.array([1, 2]), slice(2, 6), 3),
        (np.array([[1, 2], [3, 4]]),),
        (a[:, 0, 0] > 30,),
        (slice(None), a[0, :, 0] % 2 == 0, 1),
        (a > 100,),
        ([0, 5], [1, 2]),
        (2, [1, 5], slice(None, None, -2)),
        ([], slice(None)),
    ]
    for key in keys:
        np.testing.assert_array_equal(x[key], a[key], err_msg=str(key))
    for _ in range(10):
        idx = rng.integers(-11, 11, size=4)
        np.testing.assert_array_equal(x[idx], a[idx])
        mask = rng.integers(0, 2, size=7).astype(bool)
        np.testing.assert_array_equal(x[:, mask], a[:, mask])
    with pytest.raises(IndexError):
        x[[11]]
    with pytest.raises(IndexError):
        x[np.zeros(6, bool)]


def test_fancy_assignment_and_oindex():
    a, x = make((9, 8), (4, 3), (2, 2))
    a[[1, 7], 2:5] = -1
    x[[1, 7], 2:5] = -1
    a[a % 3 == 0] = 0
    x[a % 3 == 0] = 0
    np.testing.assert_array_equal(x[...], a)
    rows, cols = [0, 4, 8], [7, 1]
    np.testing.assert_array_equal(x.oindex[rows, cols], a[np.ix_(rows, cols)])
    np.testing.assert_array_equal(x.oindex[rows, :], a[rows, :])
    np.testing.assert_array_equal(x.oindex[2, cols], a[2, cols])
    mask = np.array([True, False, True, False, False, True, False, False, True])
    np.testing.assert_array_equal(x.oindex[mask, cols], a[np.ix_(mask, cols)])
    x.oindex[rows, cols] = 99
    a[np.ix_(rows, cols)] = 99
    np.testing.assert_array_equal(x[...], a)


def test_scalar_and_0d():
    x = oxblosc.asarray(np.array(3.25))
    assert x.shape == () and x.ndim == 0 and x.size == 1
    assert x[()] == 3.25 and x[...] == 3.25
    x[()] = 1.5
    assert float(x[()]) == 1.5
    with pytest.raises(IndexError):
        x[0]
    a, y = make((5, 4), (2, 3), (1, 2))
    assert y[2, 3] == a[2, 3] and y[-1, -1] == a[-1, -1]
    assert isinstance(y[2, 3], np.integer)
    with pytest.raises(IndexError):
        y[5, 0]
    with pytest.raises(IndexError):
        y[0, 0, 0]


def test_blocks_decoded_counter_proves_partial_reads():
    # 2 x 2 chunks of 20 x 20, each 4 x 4 blocks of 5 x 5.
    a = np.arange(1600, dtype="<u4").reshape(40, 40)
    x = oxblosc.asarray(a, chunks=(20, 20), blocks=(5, 5), dparams={"nthreads": 1})
    assert x.blocks_decoded == 0
    assert x[7, 33] == a[7, 33]
    assert x.blocks_decoded == 1
    np.testing.assert_array_equal(x[7, :], a[7, :])  # one block row of two chunks
    assert x.blocks_decoded == 1 + 8
    np.testing.assert_array_equal(x[:10, 2], a[:10, 2])  # two blocks of chunk 0
    assert x.blocks_decoded == 1 + 8 + 2
    np.testing.assert_array_equal(x[...], a)  # everything: 4 chunks x 16 blocks
    assert x.blocks_decoded == 1 + 8 + 2 + 64
    z = oxblosc.zeros((40, 40), chunks=(20, 20), blocks=(5, 5))
    z[...]
    assert z.blocks_decoded == 0, "zero chunks are never decoded"


def test_dask_slab_tasks_decode_only_their_blocks(tmp_path):
    """Dask reads a slab as one task per chunk, most of them for part of a chunk: with blocks
    in C order (one plane thick) only the planes read are decoded, straight into the output."""
    a = np.arange(64 * 12 * 10, dtype="<f4").reshape(64, 12, 10)
    path = str(tmp_path / "slab.b2nd")
    oxblosc.asarray(a, urlpath=path, mode="w", chunks=(16, 6, 10), blocks=(1, 3, 10))
    x = oxblosc.open(path)
    np.testing.assert_array_equal(x[4:16, 0:6], a[4:16, 0:6])  # 12 of a chunk's 16 planes
    assert x.blocks_decoded == 12 * 2  # was the whole chunk: 32
    np.testing.assert_array_equal(x[16:18, 6:12, :], a[16:18, 6:12, :])
    assert x.blocks_decoded == 12 * 2 + 2 * 2
    da = pytest.importorskip("dask.array")
    d = da.from_array(x, chunks=x.chunks)
    # from_array reads through its own copy of the array (it calls ``x.copy()``).
    (used,) = [v for v in dict(d.__dask_graph__()).values() if isinstance(v, oxblosc.NDArray)]
    before = used.blocks_decoded
    np.testing.assert_array_equal(d[22:46].compute(scheduler="threads"), a[22:46])
    assert used.blocks_decoded - before == 24 * 4  # 24 planes, 2 chunks across, 2 blocks each


def test_resize_append_and_streaming():
    a, x = make((5, 3), (2, 2), (1, 2))
    x.resize((7, 4))
    b = np.zeros((7, 4), a.dtype)
    b[:5, :3] = a
    np.testing.assert_array_equal(x[...], b)
    x.resize((3, 2))
    np.testing.assert_array_equal(x[...], b[:3, :2])
    x.resize((6, 3))
    c = np.zeros((6, 3), a.dtype)
    c[:3, :2] = b[:3, :2]
    np.testing.assert_array_equal(x[...], c, err_msg="grown area reads zeros, not stale values")
    s = oxblosc.zeros((0, 4), dtype="<f4", chunks=(3, 4), blocks=(2, 2))
    rows = []
    for k in range(6):
        r = np.full((k % 3 + 1, 4), k, "<f4")
        s.append(r)
        rows.append(r)
    np.testing.assert_array_equal(s[...], np.concatenate(rows))
    s.append(np.arange(4, dtype="<f4"))  # one row
    assert s.shape == (sum(len(r) for r in rows) + 1, 4)
    with pytest.raises(ValueError):
        s.append(np.zeros((2, 5), "<f4"))


def test_constructors_like_copy_slice_fields():
    a, x = make((6, 5), (4, 2), (2, 2), dtype="<i8")
    for f, expect in [
        (oxblosc.zeros_like(x), np.zeros_like(a)),
        (oxblosc.ones_like(x), np.ones_like(a)),
        (oxblosc.full_like(x, 4), np.full_like(a, 4)),
        (oxblosc.empty_like(x), np.zeros_like(a)),
        (oxblosc.uninit((6, 5), dtype="<i8"), np.zeros_like(a)),
        (oxblosc.frombuffer(a.tobytes(), (6, 5), "<i8"), a),
    ]:
        assert f.dtype == expect.dtype
        np.testing.assert_array_equal(f[...], expect)
    assert oxblosc.zeros_like(x).chunks == x.chunks
    c = x.copy(chunks=(3, 3), blocks=(1, 3), cparams={"codec": oxblosc.Codec.LZ4, "clevel": 3})
    assert c.chunks == (3, 3) and c.cparams.codec == oxblosc.Codec.LZ4
    np.testing.assert_array_equal(c[...], a)
    d = oxblosc.copy(x, dtype="<f4")
    assert d.dtype == np.dtype("<f4")
    np.testing.assert_array_equal(d[...], a.astype("<f4"))
    s = x.slice((slice(1, 5), slice(None, None, 2)))
    assert isinstance(s, oxblosc.NDArray)
    np.testing.assert_array_equal(s[...], a[1:5, ::2])
    rec = np.zeros(5, dtype=[("t", "<f8"), ("n", "<i2")])
    rec["t"] = np.arange(5) / 2
    rec["n"] = np.arange(5) * 3
    r = oxblosc.asarray(rec)
    np.testing.assert_array_equal(r.fields["n"][1:4], rec["n"][1:4])
    r.fields["t"][::2] = -1
    rec["t"][::2] = -1
    np.testing.assert_array_equal(r[...], rec)
    assert "shape" in r.info and "ZSTD" in r.info
    assert x.tobytes() == a.tobytes()
    assert [c.shape for c in x.iterchunks()] == [(4, 2), (4, 2), (4, 1), (2, 2), (2, 2), (2, 1)]


def test_persistence_modes(tmp_path):
    p = str(tmp_path / "x.b2nd")
    x = oxblosc.zeros((10, 10), dtype="<i2", urlpath=p, mode="w")
    x[2:4] = 5
    del x
    with pytest.raises(FileExistsError):
        oxblosc.zeros((3,), urlpath=p)
    y = oxblosc.open(p, mmap_mode="r")
    assert y[3, 9] == 5 and y[4, 0] == 0
    c = oxblosc.open(p, mmap_mode="c")
    c[0, 0] = 1
    assert oxblosc.open(p)[0, 0] == 0, "copy-on-write does not touch the file"
    d = str(tmp_path / "dir.b2nd")
    y.save(d, contiguous=False)
    np.testing.assert_array_equal(oxblosc.open(d)[...], y[...])
    z = oxblosc.asarray(np.arange(12).reshape(3, 4), urlpath=str(tmp_path / "s.b2nd"), contiguous=False)
    z[1] = -1
    np.testing.assert_array_equal(oxblosc.open(str(tmp_path / "s.b2nd"))[1], [-1] * 4)


def test_locked_open_of_an_array(tmp_path):
    p = str(tmp_path / "l.b2nd")
    oxblosc.zeros((4, 4), urlpath=p)
    r = oxblosc.open(p, locking=True)
    w = oxblosc.open(p, mode="a", locking=True)
    assert isinstance(r, oxblosc.NDArray) and r.schunk.locking and w.schunk.locking
    w.append(np.ones((2, 4)))
    w[0] = 5
    np.testing.assert_array_equal(r[:], np.vstack([np.full((1, 4), 5.0), np.zeros((3, 4)), np.ones((2, 4))]))
    assert r.shape == (6, 4)
