"""pack/unpack, pack_array*/pack_tensor, save_*/load_*, from_cframe, get_slice_nchunks and
compute_chunks_blocks, with the real python-blosc2 wheel reading what oxblosc writes and
the other way round."""

from __future__ import annotations

import pickle

import blosc2
import numpy as np
import oxblosc as ox
import pytest

PADDED = np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f8"], "offsets": [0, 8], "itemsize": 24})


def _arrays():
    s = np.zeros(7, PADDED)
    s["a"], s["b"] = np.arange(7), np.linspace(0, 1, 7)
    return [
        np.arange(1e5).reshape(100, 1000),
        np.arange(30, dtype=">i2")[::3],  # non-contiguous, big-endian
        np.array(["å", "ç", "ø"]),
        np.zeros((0, 3), np.float32),
        np.array(2.5, np.float32),
        np.arange(10).astype("M8[s]"),
        s,
    ]


def _same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape
    if x.dtype.names:  # padding bytes are not data
        assert x.tolist() == y.tolist()
    else:
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("i", range(7))
def test_pack_unpack_both_ways(i):
    a = _arrays()[i]
    pickled = pickle.loads(pickle.dumps(a))  # what pack keeps (the byte order of a copy may change)
    _same(blosc2.unpack(ox.pack(a)), pickled)
    _same(ox.unpack(blosc2.pack(a, clevel=3, codec=blosc2.Codec.LZ4)), pickled)
    _same(blosc2.unpack_array(ox.pack_array(a, 5, ox.Filter.BITSHUFFLE, ox.Codec.ZSTD)), pickled)
    _same(ox.unpack_array(blosc2.pack_array(a)), pickled)
    c = a.copy()  # python-blosc2's pack_tensor needs C-contiguous input; ours does not
    _same(blosc2.unpack_tensor(ox.pack_tensor(a)), a)
    _same(ox.unpack_tensor(blosc2.pack_tensor(c)), a)
    _same(blosc2.unpack_array2(ox.pack_array2(a, chunksize=1000)), a)
    _same(ox.unpack_array2(blosc2.pack_array2(c, chunksize=1000)), a)


def test_pack_needs_itemsize_and_size():
    with pytest.raises(AttributeError):
        ox.pack([1, 2, 3])
    assert ox.unpack(ox.pack(np.arange(3)), fix_imports=False).tolist() == [0, 1, 2]


@pytest.mark.parametrize("contiguous", [True, False])
def test_save_load_files_both_ways(tmp_path, contiguous):
    a = np.linspace(0, 1, 50_000, dtype=np.float32).reshape(50, 1000)
    ours, theirs = str(tmp_path / "ours.bl2"), str(tmp_path / "theirs.bl2")
    n = ox.save_array(a, ours, mode="w", contiguous=contiguous, cparams={"codec": ox.Codec.LZ4})
    assert n > 0 and n < a.nbytes
    _same(blosc2.load_array(ours), a)
    _same(blosc2.load_tensor(ours), a)
    blosc2.save_tensor(a, theirs, mode="w", contiguous=contiguous)
    _same(ox.load_tensor(theirs), a)
    _same(ox.load_array(theirs), a)
    ox.save_tensor(a[:2], ours, mode="w")  # mode="w" replaces
    _same(ox.load_tensor(ours), a[:2])


def test_unpack_tensor_of_a_plain_frame_is_refused():
    with pytest.raises(TypeError, match="__pack_tensor__"):
        ox.unpack_tensor(ox.SChunk(data=np.arange(4)).to_cframe())


def test_from_cframe_gives_the_right_kind():
    a = np.arange(60, dtype=np.int16).reshape(6, 10)
    for frame in (blosc2.asarray(a, chunks=(4, 5)).to_cframe(), ox.asarray(a).to_cframe()):
        x = ox.from_cframe(frame)
        assert isinstance(x, ox.NDArray)
        _same(x[:], a)
    s = ox.from_cframe(blosc2.SChunk(chunksize=40, data=a).to_cframe())
    assert isinstance(s, ox.SChunk) and s[:] == a.tobytes()
    assert isinstance(blosc2.from_cframe(ox.asarray(a).to_cframe()), blosc2.NDArray)


def test_get_slice_nchunks_matches_blosc2():
    data = np.arange(1000, dtype=np.int32)
    ours, theirs = ox.SChunk(chunksize=400, data=data), blosc2.SChunk(chunksize=400, data=data)
    for key in [
        (0, 100),
        (99, 101),
        (150, 350),
        5,
        slice(None),
        slice(10, None),
        slice(-10, None),
        (0, 0),
        (2000, 3000),
    ]:
        np.testing.assert_array_equal(ox.get_slice_nchunks(ours, key), blosc2.get_slice_nchunks(theirs, key))
    a, b = (m.zeros((10, 12), chunks=(3, 5), blocks=(2, 2), dtype=np.int8) for m in (ox, blosc2))
    for key in [
        (slice(0, 4), slice(4, 6)),
        (),
        5,
        (5, 7),
        slice(2, 3),
        (slice(0, 0), slice(None)),
        (slice(-3, None), 11),
    ]:
        got = ox.get_slice_nchunks(a, key)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, blosc2.get_slice_nchunks(b, key))
    with pytest.raises(IndexError):
        ox.get_slice_nchunks(a, slice(0, 10, 2))


def test_compute_chunks_blocks_is_what_constructors_choose():
    for shape, dtype in [((1000, 1000), np.float64), ((7,), np.int8), ((3, 5000, 20), np.float32)]:
        a = ox.empty(shape, dtype)
        assert ox.compute_chunks_blocks(shape, dtype=dtype) == (a.chunks, a.blocks)
    assert ox.compute_chunks_blocks((100, 100), chunks=(10, 20), blocks=(5, 5)) == ((10, 20), (5, 5))
    c, b = ox.compute_chunks_blocks((100, 100), chunks=(10, 20))
    assert c == (10, 20) and all(x <= y for x, y in zip(b, c, strict=True))
    for bad in [{"chunks": (10,)}, {"blocks": (0, 5)}, {"chunks": (5, 5), "blocks": (6, 5)}]:
        with pytest.raises(ValueError):
            ox.compute_chunks_blocks((100, 100), **bad)
