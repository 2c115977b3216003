"""Smaller python-blosc2 behaviours a drop-in must share, each checked against the wheel:
parameters (TRUNC_PREC with meta 0, filters_meta, blocksize 0 for automatic), fill values,
``compress(typesize=None)``, codec names, ``info`` at a prompt, ``oindex`` with one list per
axis, ``storage=`` conflicts and refusing to open an array as a super-chunk."""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc as ox
import pytest

LIBS = pytest.mark.parametrize("lib", [ox, blosc2], ids=["oxblosc", "blosc2"])


@LIBS
def test_trunc_prec_meta_0_is_accepted_until_data_is_compressed(lib):
    cp = lib.CParams(filters=[lib.Filter.SHUFFLE, lib.Filter.TRUNC_PREC], typesize=4)
    s = lib.SChunk(chunksize=4000, cparams=cp)
    assert list(s.cparams.filters_meta[:2]) == [0, 0]
    s.fill_special(1000, lib.SpecialValue.ZERO)  # no data compressed: fine
    assert lib.empty((10, 10), np.float32, cparams=cp).shape == (10, 10)
    with pytest.raises(RuntimeError):
        s.append_data(np.linspace(0, 1, 1000, dtype=np.float32))
    assert s.nchunks == 1


@LIBS
def test_filters_meta_kept_as_given(lib):
    cp = lib.CParams(filters=[lib.Filter.BITSHUFFLE, lib.Filter.BYTEDELTA], filters_meta=[0] * 3)
    assert list(cp.filters) == [lib.Filter.BITSHUFFLE, lib.Filter.BYTEDELTA] and list(cp.filters_meta) == [0, 8]
    s = lib.SChunk(cparams=cp)
    assert list(s.cparams.filters_meta[:2]) == [0, 8]
    x = np.arange(1000, dtype=np.int16)
    a = lib.asarray(x, cparams={"filters": [lib.Filter.SHUFFLE, lib.Filter.BYTEDELTA]})
    assert list(a.cparams.filters_meta[:2]) == [0, 2]
    cp = lib.CParams(filters=[lib.Filter.TRUNC_PREC], filters_meta=[-20], typesize=8)
    x = np.linspace(0, 1, 1000)
    got = np.frombuffer(lib.SChunk(chunksize=8000, data=x, cparams=cp).decompress_chunk(0), np.float64)
    assert not np.array_equal(got, x) and np.abs(got - x).max() < 2**-30


@LIBS
def test_blocksize_reports_0_for_automatic(lib, tmp_path):
    s = lib.SChunk(chunksize=8000, data=np.arange(5000), cparams={"typesize": 8})
    assert s.blocksize == 0 and s.cparams.blocksize == 0
    t = lib.SChunk(chunksize=8000, data=np.arange(5000), cparams={"typesize": 8, "blocksize": 4096})
    assert t.blocksize == 4096


@LIBS
@pytest.mark.parametrize(
    ("typesize", "value", "dtype"),
    [
        (4, 34, "i4"),
        (4, True, "i4"),
        (4, np.pi, "f4"),
        (8, np.pi, "f8"),
        (4, b"0123", "S4"),
        (2, -3, "i2"),
        (1, 7, "i1"),
    ],
)
def test_fill_special_with_python_scalars(lib, typesize, value, dtype):
    s = lib.SChunk(chunksize=4000, cparams={"typesize": typesize})
    s.fill_special(3000, lib.SpecialValue.VALUE, value)
    np.testing.assert_array_equal(np.frombuffer(s[:], dtype), np.full(3000, value, dtype=dtype))


def test_fill_special_refuses_values_of_the_wrong_size():
    for typesize, value in [(3, 5), (4, b"01")]:
        s = ox.SChunk(chunksize=400, cparams={"typesize": typesize})
        with pytest.raises(ValueError, match="typesize"):
            s.fill_special(10, ox.SpecialValue.VALUE, value)
        assert s.nchunks == 0


@pytest.mark.parametrize("src", [np.arange(10, dtype=np.int32), b"abcd" * 10, memoryview(np.arange(4.0))])
def test_compress_typesize_none_takes_the_item_size(src):
    c = ox.compress(src, typesize=None)
    assert ox.chunk_info(c)["typesize"] == ox.chunk_info(blosc2.compress(src, typesize=None))["typesize"]
    assert ox.decompress(c) == bytes(src)


def test_codec_names_and_forced_blocksize():
    x = np.arange(1000)
    assert [c.name for c in ox.compressor_list()] == [c.name for c in blosc2.compressor_list()]
    assert ox.Codec.NDLZ in ox.compressor_list(plugins=True)
    for c in ox.compressor_list():
        assert ox.get_clib(ox.compress2(x, codec=c)) == blosc2.get_clib(blosc2.compress2(x, codec=c))
    ox.set_blocksize(1024)
    try:
        assert ox.get_blocksize() == 1024 and ox.get_cbuffer_sizes(ox.compress(x))[2] == 1024
        assert ox.get_cbuffer_sizes(ox.compress2(x))[2] != 1024  # only compress() is affected
    finally:
        ox.set_blocksize(0)
    assert ox.MAX_BLOCKSIZE == blosc2.MAX_BLOCKSIZE and ox.MAX_DIM == blosc2.MAX_DIM
    assert ox.free_resources() is None


def test_info_prints_as_a_table():
    a = ox.asarray(np.arange(1000).reshape(100, 10), chunks=(50, 5))
    s = ox.SChunk(chunksize=4000, data=np.arange(1000))
    for obj, kind in [(a, "NDArray"), (s, "SChunk")]:
        text = repr(obj.info)  # what a REPL shows
        assert "\\n" not in text and text.splitlines()[0].split() == ["type", ":", kind]
        items = dict(obj.info_items)
        assert items["nbytes"] == "8000 (7.81 KiB)" and "(" in items["cbytes"]
        assert "<table>" in obj.info._repr_html_()
    assert dict(a.info_items)["chunks"] == (50, 5) and "shape" in a.info


@LIBS
def test_oindex_with_a_list_per_axis(lib):
    n = np.arange(1000, dtype=np.int32).reshape(10, 10, 10)
    a = lib.asarray(n, chunks=(4, 4, 4))
    sel = [[3, 1, 2], [2, 5], [3, 3, 3, 9, 3, 1, 0]]
    np.testing.assert_array_equal(a.oindex[sel], n[np.ix_(*sel)])
    if lib is ox:  # a tuple works too (python-blosc2 4.14 refuses it)
        np.testing.assert_array_equal(a.oindex[tuple(sel)], n[np.ix_(*sel)])
    a.oindex[sel] = np.zeros([len(s) for s in sel], np.int32)
    n[np.ix_(*sel)] = 0
    np.testing.assert_array_equal(a[:], n)


@LIBS
def test_storage_and_its_fields_together_are_refused(lib, tmp_path):
    storage = lib.Storage(urlpath=str(tmp_path / "x.b2nd"))
    for field in ("urlpath", "contiguous", "mode", "meta", "locking"):
        with pytest.raises(AttributeError):
            lib.SChunk(storage=storage, **{field: {}})
        with pytest.raises(AttributeError):
            lib.empty((3, 3), storage=storage, **{field: {}})


@LIBS
def test_schunk_constructor_refuses_an_array_file(lib, tmp_path):
    p = str(tmp_path / "a.b2nd")
    blosc2.asarray(np.arange(20), urlpath=p)
    with pytest.raises(ValueError, match="NDArray"):
        lib.SChunk(urlpath=p, mode="r")
    assert lib.open(p).schunk.vlmeta.mode == "r"
    s = lib.SChunk()
    s.vlmeta["a"], s.vlmeta["b"] = [1, 2], {"x": "y"}
    assert s.vlmeta.to_dict() == {b"a": [1, 2], b"b": {"x": "y"}}


def test_index_arrays_far_apart_read_only_what_they_pick(monkeypatch):
    n = np.arange(2000 * 2000, dtype=np.float64).reshape(2000, 2000)
    a = ox.asarray(n, chunks=(200, 200), blocks=(50, 50))
    # The bounding box of these picks is the whole array; small here, so lower the limit
    # under which the box is read whole to see the large-array path.
    monkeypatch.setattr("oxblosc.ndarray._BOX_BYTES", 0)
    before = a.blocks_decoded
    np.testing.assert_array_equal(a.oindex[[0, 1999], [0, 1999]], n[np.ix_([0, 1999], [0, 1999])])
    assert a.blocks_decoded - before == 4  # of 1600
    before = a.blocks_decoded
    np.testing.assert_array_equal(a[[0, 1999, 5], [0, 1999, 7]], n[[0, 1999, 5], [0, 1999, 7]])
    assert a.blocks_decoded - before == 4
    rng = np.random.default_rng(1)
    m = n[:60, :70]
    b = ox.asarray(m.reshape(60, 70, 1) * np.ones(8), chunks=(16, 16, 4), blocks=(4, 4, 2))
    want = b[:]
    for _ in range(100):
        i, j, k = rng.integers(-60, 60, rng.integers(1, 6)), rng.integers(0, 70, 4), rng.integers(0, 8, 3)
        np.testing.assert_array_equal(b.oindex[i, j, k], want[np.ix_(i % 60, j, k)])
        np.testing.assert_array_equal(b.oindex[i, 3:50:7, k], want[np.ix_(i % 60, np.arange(3, 50, 7), k)])
        np.testing.assert_array_equal(b[i[:, None], None, j[:1]], want[i[:, None], None, j[:1]])
        np.testing.assert_array_equal(b[..., k], want[..., k])


def test_boolean_scalar_indices_follow_numpy():
    # NumPy: the boolean scalars of a key add one axis at the first one's place, of length
    # 1 if all are True and 0 otherwise (never row 1 or row 0).
    n = np.arange(60).reshape(3, 4, 5)
    a = ox.asarray(n, chunks=(2, 2, 2))
    keys = [True, False, (True, slice(None)), (slice(None), False), (1, True), (True, 1), (True, False),
            (None, True), (slice(None), True, 1), (np.True_, slice(None)), (np.array(False),),
            (Ellipsis, True), (True, Ellipsis, False), (slice(1), True, 2), (slice(1, 3), np.False_, 2)]  # fmt: skip
    for key in keys:
        got, want = a[key], n[key]
        assert got.shape == want.shape and got.dtype == want.dtype, key
        np.testing.assert_array_equal(got, want)
    for key, value in [(True, -1), ((1, True), -2), (False, 99), ((2, False), 98)]:
        a[key] = value
        n[key] = value
        np.testing.assert_array_equal(a[:], n)
    with pytest.raises(IndexError):
        a[True, [0, 1]]
