"""oxblosc.SChunk: python-blosc2's super-chunk API, and frames exchanged with the blosc2 wheel
in both directions (contiguous files, sparse directories, in-memory cframes)."""

from __future__ import annotations

import os

import blosc2
import numpy as np
import oxblosc
import pytest

# ---------------------------------------------------------------------------------------------
# values stored in meta/vlmeta that both libraries must read back as the same Python objects

VLMETA = {
    "int": 42,
    "big": 2**63 + 5,
    "float": 3.25,
    "str": "hello, wörld",
    "bytes": b"\x00\x01\xff",
    "none": None,
    "bool": True,
    "list": [1, "two", 3.0, [4], -7, -200, 70000, -(2**40), "x" * 300, b"y" * 300],
    "dict": {"a": 1, "b": [1, 2], "c": {"d": "e"}},
    "tuple": (1, "x", (2, 3)),
    "complex": 1.5 - 2j,
    "set": {1, 2, 3},
    "np_int": np.int32(-5),
    "np_float": np.float32(0.5),
    "np_bool": np.bool_(True),
    "array": np.arange(6, dtype=np.int16).reshape(2, 3),
}


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(b, np.generic):
        b = b.item()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def assert_vlmeta(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for k, v in want.items():
        assert same(got[k], v), (k, got[k], v)


def data_i4(n: int) -> np.ndarray:
    return (np.arange(n, dtype=np.int32) * 7) % 1000


def assert_same_schunk(ours: oxblosc.SChunk, theirs) -> None:
    """Data, sizes and metadata of an oxblosc and a blosc2 super-chunk agree."""
    assert ours.nchunks == theirs.nchunks
    assert ours.nbytes == theirs.nbytes
    assert ours.typesize == theirs.typesize
    assert len(ours) == len(theirs)
    assert ours.chunksize == theirs.chunksize
    chunks = [theirs.decompress_chunk(i) for i in range(theirs.nchunks)]
    assert [ours.decompress_chunk(i) for i in range(ours.nchunks)] == chunks
    assert ours[:] == b"".join(chunks)
    if theirs.chunksize > 0:  # python-blosc2 4.14 dies (SIGFPE) slicing variable-size chunks
        assert theirs[:] == ours[:]
    assert list(ours.meta.keys()) == list(theirs.meta.keys())
    for k in ours.meta.keys():
        assert same(ours.meta[k], theirs.meta[k])
    assert sorted(ours.vlmeta) == sorted(theirs.vlmeta)


# ---------------------------------------------------------------------------------------------
# API behaviour


def test_create_append_read():
    s = oxblosc.SChunk(chunksize=4000, cparams={"typesize": 4})
    assert (s.nchunks, s.nbytes, s.chunksize, s.typesize, len(s)) == (0, 0, 4000, 4, 0)
    assert s.urlpath is None and s.contiguous is False and s.mode == "a" and s.cratio == 0.0
    a = data_i4(3000)
    for i in range(3):
        assert s.append_data(a[i * 1000 : (i + 1) * 1000]) == i + 1
    assert s.nchunks == 3 and s.nbytes == 12000 and len(s) == 3000 and s.chunksize == 4000
    assert 0 < s.cbytes < s.nbytes and s.cratio == pytest.approx(s.nbytes / s.cbytes)
    assert s.decompress_chunk(1) == a[1000:2000].tobytes()
    dst = np.empty(1000, np.int32)
    assert s.decompress_chunk(2, dst) is None
    np.testing.assert_array_equal(dst, a[2000:])
    assert s[:] == a.tobytes()
    assert s[10:20] == a[10:20].tobytes()
    assert s[5] == a[5:6].tobytes()
    assert s[-1] == a[-1:].tobytes()
    assert s[-3:] == a[-3:].tobytes()
    assert s[2990:5000] == a[2990:].tobytes()
    assert s[5000] == b"" and s[20:10] == b""
    with pytest.raises(IndexError):
        s[::2]
    assert s.get_slice() == a.tobytes()
    assert s.get_slice(100, 2500) == a[100:2500].tobytes()
    out = np.zeros(2400, np.int32)
    assert s.get_slice(100, 2500, out) is None
    np.testing.assert_array_equal(out, a[100:2500])
    with pytest.raises(ValueError):
        s.get_slice(0, 100, bytearray(10))
    cp = s.cparams
    assert isinstance(cp, oxblosc.CParams) and cp.typesize == 4 and cp.codec == oxblosc.Codec.ZSTD
    assert isinstance(s.dparams, oxblosc.DParams)


def test_constructor_data_and_defaults():
    a = data_i4(2500)
    s = oxblosc.SChunk(chunksize=4000, data=a)
    assert s.typesize == 4  # from data.itemsize
    assert s.nchunks == 3 and s[:] == a.tobytes()
    b = oxblosc.SChunk(data=b"abc" * 100)
    assert b.typesize == 1 and b.nchunks == 1 and b.chunksize == 300 and b[:] == b"abc" * 100
    e = oxblosc.SChunk()
    assert e.chunksize == 2**24 and e.typesize == 1
    c = oxblosc.SChunk(chunksize=100, data=a, cparams=oxblosc.CParams(codec=oxblosc.Codec.LZ4, typesize=4))
    assert c.cparams.codec == oxblosc.Codec.LZ4 and c.nchunks == 100
    with pytest.raises(ValueError, match="not supported"):
        oxblosc.SChunk(bogus=1)
    with pytest.raises(ValueError):
        oxblosc.SChunk(mode="r")


def test_chunk_ops():
    a = data_i4(4000)
    parts = [a[i * 1000 : (i + 1) * 1000] for i in range(4)]
    s = oxblosc.SChunk(chunksize=4000, cparams={"typesize": 4})
    for p in parts[:3]:
        s.append_data(p)
    assert s.insert_data(1, parts[3], False) == 4
    assert s.decompress_chunk(1) == parts[3].tobytes()
    assert s.update_data(1, parts[0], True) == 4
    assert s.decompress_chunk(1) == parts[0].tobytes()
    assert s.delete_chunk(1) == 3
    assert s[:] == a[:3000].tobytes()
    c = s.get_chunk(2)
    assert oxblosc.decompress2(c) == parts[2].tobytes()
    assert s.append_chunk(c) == 4
    assert s.insert_chunk(0, c) == 5
    assert s.update_chunk(1, c) == 5
    assert [s.decompress_chunk(i) for i in range(5)] == [parts[2].tobytes()] * 3 + [
        parts[1].tobytes(),
        parts[2].tobytes(),
    ]
    for bad in (5, -1, 100):
        with pytest.raises(IndexError):
            s.decompress_chunk(bad)
        with pytest.raises(IndexError):
            s.get_chunk(bad)
    with pytest.raises(IndexError):
        s.delete_chunk(5)
    with pytest.raises(oxblosc.ChunkError):
        s.append_chunk(b"\x00" * 40)
    chunks = list(s.iterchunks(np.int32))
    assert len(chunks) == 5 and all(isinstance(x, np.ndarray) and x.dtype == np.int32 for x in chunks)
    np.testing.assert_array_equal(chunks[3], parts[1])


def test_setitem_and_growth():
    a = data_i4(2500)
    s = oxblosc.SChunk(chunksize=4000, data=a)
    b = a.copy()
    b[900:1100] = -1
    s[900:1100] = b[900:1100]
    assert s[:] == b.tobytes()
    s[3] = np.int32(77)
    b[3] = 77
    assert s[:] == b.tobytes()
    # Growing: fills the short last chunk, then appends chunks of chunksize.
    extra = np.arange(3000, dtype=np.int32)
    s[2400:5500] = np.concatenate([b[2400:], extra])
    want = np.concatenate([b, extra])
    assert s[:] == want.tobytes() and len(s) == 5500
    assert s.nchunks == 6 and s.chunksize == 4000
    with pytest.raises(ValueError):
        s[10:20] = np.zeros(5, np.int32)
    with pytest.raises(ValueError):
        s[6000:6010] = np.zeros(10, np.int32)
    with pytest.raises(IndexError):
        s[0:10:2] = np.zeros(10, np.int32)


def test_meta_and_vlmeta_api():
    meta = {"m1": [1, 2, 3], "m2": "abc", "m3": {"x": 1}}
    s = oxblosc.SChunk(chunksize=400, data=data_i4(100), meta=meta)
    assert s.meta.keys() == ["m1", "m2", "m3"] and len(s.meta) == 3
    assert "m1" in s.meta and "zz" not in s.meta
    assert s.meta["m1"] == [1, 2, 3] and s.meta.get("zz") is None and s.meta[:] == meta
    s.meta["m2"] = "xyz"
    assert s.meta["m2"] == "xyz"
    with pytest.raises(ValueError):
        s.meta["m2"] = "longer"
    with pytest.raises(KeyError):
        s.meta["zz"]
    v = s.vlmeta
    assert len(v) == 0
    for k, x in VLMETA.items():
        v[k] = x
    assert len(v) == len(VLMETA) and "int" in v and "nope" not in v
    assert_vlmeta(v.getall(), VLMETA)
    assert_vlmeta(v[:], VLMETA)
    v["int"] = "replaced"
    assert v["int"] == "replaced"
    del v["int"]
    assert "int" not in v
    with pytest.raises(KeyError):
        v["int"]
    with pytest.raises(KeyError):
        del v["int"]
    for k in list(v):
        del v[k]
    assert len(v) == 0
    v[:] = {"p": 1, "q": 2}
    assert v["p"] == 1 and v["q"] == 2
    with pytest.raises(TypeError):
        v["bad"] = object()
    with pytest.raises(TypeError):
        v["enum"] = oxblosc.Codec.ZSTD
    assert s.attrs["p"] == 1


def test_fill_special():
    s = oxblosc.SChunk(chunksize=400, cparams={"typesize": 4})
    assert s.fill_special(250, oxblosc.SpecialValue.ZERO) == 3
    assert s[:] == bytes(1000) and s.chunksize == 400
    infos = list(s.iterchunks_info())
    assert [i.special for i in infos] == [oxblosc.SpecialValue.ZERO] * 3
    assert infos[0].nchunk == 0 and infos[0].cratio == pytest.approx(400 / 32) and infos[0].repeated_value is None
    v = oxblosc.SChunk(chunksize=400, cparams={"typesize": 4})
    assert v.fill_special(250, oxblosc.SpecialValue.VALUE, 7) == 3
    assert np.all(np.frombuffer(v[:], np.int32) == 7)
    info = list(v.iterchunks_info())[2]
    assert info.special == oxblosc.SpecialValue.VALUE and info.repeated_value == np.int32(7).tobytes()
    f = oxblosc.SChunk(chunksize=800, cparams={"typesize": 8})
    f.fill_special(150, blosc2.SpecialValue.NAN)  # python-blosc2's enum is accepted too
    assert np.isnan(np.frombuffer(f[:], np.float64)).all()
    with pytest.raises(TypeError):
        s.fill_special(10, oxblosc.SpecialValue.NOT_SPECIAL)
    with pytest.raises(TypeError):
        s.fill_special(10, 1)
    with pytest.raises(ValueError):
        s.fill_special(10, oxblosc.SpecialValue.VALUE)
    with pytest.raises(RuntimeError):
        v.fill_special(10, oxblosc.SpecialValue.VALUE, 1)
    normal = list(oxblosc.SChunk(chunksize=400, data=data_i4(100)).iterchunks_info())[0]
    assert normal.special == oxblosc.SpecialValue.NOT_SPECIAL and len(normal.lazychunk) == 32


def test_cparams_dparams_settable():
    s = oxblosc.SChunk(chunksize=4000, cparams={"typesize": 4, "codec": oxblosc.Codec.LZ4, "clevel": 3})
    s.append_data(data_i4(1000))
    s.cparams = {"typesize": 4, "codec": oxblosc.Codec.BLOSCLZ, "clevel": 9, "filters": [oxblosc.Filter.BITSHUFFLE]}
    s.append_data(data_i4(1000))
    assert oxblosc.chunk_info(s.get_chunk(0))["codec"] == 1
    assert oxblosc.chunk_info(s.get_chunk(1))["codec"] == 0
    assert s.cparams.clevel == 9 and s.cparams.filters[0] == oxblosc.Filter.BITSHUFFLE
    s.cparams = blosc2.CParams(typesize=4, codec=blosc2.Codec.ZLIB)  # python-blosc2's own
    assert s.cparams.codec == oxblosc.Codec.ZLIB
    with pytest.raises(ValueError):
        s.cparams = {"typesize": 8}  # cannot change once chunks exist
    s.dparams = {"nthreads": 1}
    assert s.dparams.nthreads == 1
    s.dparams = oxblosc.DParams(nthreads=2)
    assert s.dparams.nthreads == 2 and s[:] == np.concatenate([data_i4(1000)] * 2).tobytes()


@pytest.mark.parametrize("contiguous", [True, False])
def test_persistence_and_modes(tmp_path, contiguous):
    path = str(tmp_path / ("s.b2frame" if contiguous else "s.b2dir"))
    a = data_i4(2500)
    s = oxblosc.SChunk(chunksize=4000, data=a, urlpath=path, contiguous=contiguous, mode="w", meta={"m": 1})
    s.vlmeta["v"] = [1, 2]
    assert s.urlpath == path and s.contiguous == contiguous and os.path.exists(path)
    del s
    with pytest.raises(FileExistsError):
        oxblosc.SChunk(urlpath=path, mode="a")
    r = oxblosc.open(path)
    assert r.mode == "r" and r.urlpath == path and r.contiguous == contiguous
    assert r[:] == a.tobytes() and r.meta["m"] == 1 and r.vlmeta["v"] == [1, 2]
    for write in (
        lambda: r.append_data(a[:10]),
        lambda: r.__setitem__(slice(0, 1), a[:1]),
        lambda: r.vlmeta.__setitem__("x", 1),
        lambda: r.delete_chunk(0),
    ):
        with pytest.raises(ValueError):
            write()
    ro = oxblosc.SChunk(urlpath=path, mode="r")
    assert ro.nchunks == 3 and ro.mode == "r"
    mm = oxblosc.open(path, mmap_mode="r")
    assert mm.mode == "r" and mm.mmap_mode == "r" and mm[:] == a.tobytes()
    w = oxblosc.open(path, mode="a")
    w.append_data(a[:1000])
    w.vlmeta["v2"] = "new"
    w[0:2] = np.array([9, 9], np.int32)
    del w
    cow = oxblosc.open(path, mmap_mode="c")
    cow.append_data(a[:1000])
    assert cow.nchunks == 5
    r = oxblosc.open(path)
    assert r.nchunks == 4 and r.vlmeta["v2"] == "new" and r[0:2] == np.array([9, 9], np.int32).tobytes()
    e = oxblosc.open(path, mode="w")
    assert e.nchunks == 0 and e.typesize == 4
    oxblosc.remove_urlpath(path)
    assert not os.path.exists(path)
    oxblosc.remove_urlpath(path)  # missing: no error
    oxblosc.remove_urlpath(None)


def test_cframe_roundtrip():
    a = data_i4(2500)
    s = oxblosc.SChunk(chunksize=4000, data=a, meta={"m": "x"})
    s.vlmeta["k"] = {"a": 1}
    cf = s.to_cframe()
    for buf in (cf, bytearray(cf), memoryview(cf), np.frombuffer(cf, np.uint8)):
        t = oxblosc.schunk_from_cframe(buf)
        assert t[:] == a.tobytes() and t.meta["m"] == "x" and t.vlmeta["k"] == {"a": 1}
        assert t.contiguous and t.mode == "a" and t.urlpath is None
    t.append_data(a[:1000])
    assert t.nchunks == 4 and s.nchunks == 3


def test_open_embedded_offset(tmp_path):
    a = data_i4(2500)
    cf = oxblosc.SChunk(chunksize=4000, data=a).to_cframe()
    p = tmp_path / "embedded.bin"
    p.write_bytes(b"HEADER" * 10 + cf + b"trailing")
    s = oxblosc.open(p, offset=60)
    assert s[:] == a.tobytes()
    with pytest.raises(ValueError):
        oxblosc.open(p, mode="a", offset=60)


def test_gil_released_threads():
    from concurrent.futures import ThreadPoolExecutor

    a = np.random.default_rng(0).integers(0, 50, 2_000_000, dtype=np.int32)
    s = oxblosc.SChunk(chunksize=1_000_000, data=a)
    b = oxblosc.SChunk(chunksize=1_000_000, data=a)
    with ThreadPoolExecutor(2) as ex:
        r = list(ex.map(lambda x: x[:], [s, b]))
    assert r[0] == r[1] == a.tobytes()


# ---------------------------------------------------------------------------------------------
# bad input


def test_bad_frames(tmp_path):
    with pytest.raises(FileNotFoundError):
        oxblosc.open(tmp_path / "missing.b2frame")
    g = tmp_path / "garbage.b2frame"
    g.write_bytes(b"garbage" * 30)
    with pytest.raises(oxblosc.ChunkError, match="garbage.b2frame"):
        oxblosc.open(g)
    cf = oxblosc.SChunk(chunksize=4000, data=data_i4(2500)).to_cframe()
    t = tmp_path / "trunc.b2frame"
    for cut in (10, 90, len(cf) // 2, len(cf) - 5):
        t.write_bytes(cf[:cut])
        with pytest.raises(oxblosc.ChunkError, match="trunc.b2frame"):
            s = oxblosc.open(t)
            s[:]
        with pytest.raises(oxblosc.ChunkError):
            oxblosc.schunk_from_cframe(cf[:cut])[:]
    with pytest.raises((ValueError, RuntimeError)):
        oxblosc.schunk_from_cframe(b"garbage" * 30)
    # A sparse directory without its index file.
    d = tmp_path / "empty.b2dir"
    d.mkdir()
    with pytest.raises(FileNotFoundError, match="chunks.b2frame"):
        oxblosc.open(d)
    # A chunk file of a sparse frame replaced by garbage: named in the error.
    sp = tmp_path / "sparse.b2dir"
    oxblosc.SChunk(chunksize=4000, data=data_i4(2500), urlpath=str(sp), contiguous=False, mode="w")
    (sp / "00000001.chunk").write_bytes(b"\x05\x01" + b"\xff" * 40)
    s = oxblosc.open(sp)
    assert s.decompress_chunk(0) == data_i4(1000).tobytes()
    with pytest.raises(oxblosc.ChunkError, match="sparse.b2dir"):
        s.decompress_chunk(1)


# ---------------------------------------------------------------------------------------------
# interop: written by python-blosc2, read by oxblosc

CODECS = [
    {"codec": blosc2.Codec.ZSTD, "clevel": 5},
    {"codec": blosc2.Codec.LZ4, "clevel": 9, "filters": [blosc2.Filter.BITSHUFFLE]},
    {"codec": blosc2.Codec.BLOSCLZ, "clevel": 7, "filters": [blosc2.Filter.DELTA, blosc2.Filter.SHUFFLE]},
    {"codec": blosc2.Codec.ZLIB, "clevel": 3, "filters": [blosc2.Filter.SHUFFLE, blosc2.Filter.BYTEDELTA]},
    {"codec": blosc2.Codec.LZ4HC, "clevel": 4, "filters": [blosc2.Filter.TRUNC_PREC], "filters_meta": [20]},
]


def blosc2_schunk(kind: str, tmp_path, cp: dict, n: int = 2500, **kw):
    """A super-chunk written by python-blosc2: 3 chunks (the last one short), meta, vlmeta."""
    kwargs = {"chunksize": 4000, "data": data_i4(n), "cparams": {"typesize": 4, **cp}, "meta": {"m": [1, "a"]}}
    if kind == "file":
        kwargs.update(urlpath=str(tmp_path / "b.b2frame"), contiguous=True, mode="w")
    elif kind == "dir":
        kwargs.update(urlpath=str(tmp_path / "b.b2dir"), contiguous=False, mode="w")
    kwargs.update(kw)
    b = blosc2.SChunk(**kwargs)
    for k, v in VLMETA.items():
        b.vlmeta[k] = v
    return b


def ours_from(kind: str, b) -> oxblosc.SChunk:
    if kind == "cframe":
        return oxblosc.schunk_from_cframe(b.to_cframe())
    return oxblosc.open(b.urlpath)


@pytest.mark.parametrize("kind", ["file", "dir", "cframe"])
@pytest.mark.parametrize("ci", range(len(CODECS)))
def test_read_blosc2(tmp_path, kind, ci):
    cp = CODECS[ci]
    b = blosc2_schunk(kind, tmp_path, cp)
    s = ours_from(kind, b)
    assert_same_schunk(s, b)
    assert s.meta["m"] == [1, "a"]
    assert_vlmeta(s.vlmeta.getall(), VLMETA)
    assert s.cparams.codec == oxblosc.Codec(cp["codec"].value)
    for i, (ours, theirs) in enumerate(zip(s.iterchunks_info(), b.iterchunks_info(), strict=True)):
        assert ours.nchunk == theirs.nchunk == i
        assert int(ours.special) == theirs.special.value and ours.cratio == pytest.approx(float(theirs.cratio))
    # Against the whole decoded data: python-blosc2 4.14's own get_slice returns wrong items
    # here for DELTA chunks (its partial decode).
    assert s.get_slice(1234, 2345) == b"".join(b.decompress_chunk(i) for i in range(3))[1234 * 4 : 2345 * 4]


@pytest.mark.parametrize("kind", ["file", "dir", "cframe"])
def test_read_blosc2_special_and_variable(tmp_path, kind):
    kw = {}
    if kind == "file":
        kw = {"urlpath": str(tmp_path / "sp.b2frame"), "contiguous": True, "mode": "w"}
    elif kind == "dir":
        kw = {"urlpath": str(tmp_path / "sp.b2dir"), "contiguous": False, "mode": "w"}
    for special, value in (
        (blosc2.SpecialValue.ZERO, None),
        (blosc2.SpecialValue.VALUE, 3.5),
        (blosc2.SpecialValue.NAN, None),
        (blosc2.SpecialValue.UNINIT, None),
    ):
        b = blosc2.SChunk(chunksize=800, cparams={"typesize": 8}, **kw)
        b.fill_special(250, special, value)
        s = ours_from(kind, b)
        assert s.nchunks == b.nchunks == 3 and s.chunksize == b.chunksize == 800
        if special != blosc2.SpecialValue.UNINIT:
            np.testing.assert_array_equal(np.frombuffer(s[:], np.float64), np.frombuffer(b[:], np.float64))
        assert [int(i.special) for i in s.iterchunks_info()] == [i.special.value for i in b.iterchunks_info()]
    # Variable-size chunks (a short chunk in the middle).
    b = blosc2.SChunk(chunksize=4000, cparams={"typesize": 4}, **kw)
    for n in (1000, 300, 1000, 700):
        b.append_data(data_i4(n))
    s = ours_from(kind, b)
    assert b.chunksize == 0
    assert_same_schunk(s, b)


def test_read_blosc2_mixed_special_chunks(tmp_path):
    """Special chunks between data chunks in a contiguous file."""
    path = str(tmp_path / "mixed.b2frame")
    b = blosc2.SChunk(chunksize=4000, cparams={"typesize": 4}, urlpath=path, mode="w")
    b.append_data(data_i4(1000))
    b.append_chunk(oxblosc.special_chunk(oxblosc.SpecialValue.ZERO, 4000, 4))
    b.append_data(data_i4(1000))
    s = oxblosc.open(path)
    assert_same_schunk(s, b)


# ---------------------------------------------------------------------------------------------
# interop: written by oxblosc, read by python-blosc2


def ours_schunk(kind: str, tmp_path, cp: dict, n: int = 2500) -> oxblosc.SChunk:
    kwargs = {"chunksize": 4000, "data": data_i4(n), "cparams": {"typesize": 4, **cp}, "meta": {"m": [1, "a"]}}
    if kind == "file":
        kwargs.update(urlpath=str(tmp_path / "o.b2frame"), contiguous=True, mode="w")
    elif kind == "dir":
        kwargs.update(urlpath=str(tmp_path / "o.b2dir"), contiguous=False, mode="w")
    s = oxblosc.SChunk(**kwargs)
    for k, v in VLMETA.items():
        s.vlmeta[k] = v
    return s


def theirs_from(kind: str, s: oxblosc.SChunk):
    if kind == "cframe":
        return blosc2.schunk_from_cframe(s.to_cframe())
    return blosc2.open(s.urlpath)


@pytest.mark.parametrize("kind", ["file", "dir", "cframe"])
@pytest.mark.parametrize("ci", range(len(CODECS)))
def test_blosc2_reads_ours(tmp_path, kind, ci):
    cp = CODECS[ci]
    cp = {k: (v.value if hasattr(v, "value") else [x.value for x in v] if k == "filters" else v) for k, v in cp.items()}
    s = ours_schunk(kind, tmp_path, cp)
    b = theirs_from(kind, s)
    assert_same_schunk(s, b)
    assert b.meta["m"] == [1, "a"]
    assert_vlmeta(b.vlmeta.getall(), VLMETA)
    assert b.cparams.codec.value == cp["codec"]


@pytest.mark.parametrize("kind", ["file", "dir", "cframe"])
def test_blosc2_reads_ours_special_and_variable(tmp_path, kind):
    kw = {}
    if kind == "file":
        kw = {"urlpath": str(tmp_path / "sp.b2frame"), "contiguous": True, "mode": "w"}
    elif kind == "dir":
        kw = {"urlpath": str(tmp_path / "sp.b2dir"), "contiguous": False, "mode": "w"}
    for special, value in (
        (oxblosc.SpecialValue.ZERO, None),
        (oxblosc.SpecialValue.VALUE, 3.5),
        (oxblosc.SpecialValue.NAN, None),
    ):
        s = oxblosc.SChunk(chunksize=800, cparams={"typesize": 8}, **kw)
        s.fill_special(250, special, value)
        b = theirs_from(kind, s)
        assert b.nchunks == 3 and b.chunksize == 800
        np.testing.assert_array_equal(np.frombuffer(b[:], np.float64), np.frombuffer(s[:], np.float64))
    s = oxblosc.SChunk(chunksize=4000, cparams={"typesize": 4}, **kw)
    for n in (1000, 300, 1000, 700):
        s.append_data(data_i4(n))
    b = theirs_from(kind, s)
    assert s.chunksize == 0
    assert_same_schunk(s, b)


def test_blosc2_reads_ours_after_edits(tmp_path):
    """A file we appended to, updated, deleted from and re-tagged stays readable by blosc2."""
    path = str(tmp_path / "edit.b2frame")
    a = data_i4(4000)
    s = oxblosc.SChunk(chunksize=4000, data=a, urlpath=path, mode="w", meta={"shape": [4000]})
    s.vlmeta["note"] = "v1"
    w = oxblosc.open(path, mode="a")
    w.update_data(1, a[:1000])
    w.delete_chunk(2)
    w.insert_data(0, a[3000:])
    w.vlmeta["note"] = ("v", 2)
    w.meta["shape"] = [3999]
    del w
    b = blosc2.open(path)
    want = np.concatenate([a[3000:], a[:1000], a[:1000], a[3000:]])
    assert b[:] == want.tobytes()
    assert b.vlmeta["note"] == ("v", 2) and b.meta["shape"] == [3999]


def test_blosc2_appends_to_ours(tmp_path):
    path = str(tmp_path / "shared.b2frame")
    a = data_i4(2000)
    oxblosc.SChunk(chunksize=4000, data=a, urlpath=path, mode="w")
    b = blosc2.open(path, mode="a")
    b.append_data(a[:1000])
    b.vlmeta["by"] = "blosc2"
    del b
    s = oxblosc.open(path, mode="a")
    assert s[:] == np.concatenate([a, a[:1000]]).tobytes() and s.vlmeta["by"] == "blosc2"
    s.append_data(a[1000:])
    del s
    assert blosc2.open(path)[:] == np.concatenate([a, a[:1000], a[1000:]]).tobytes()


def test_msgpack_bytes_match_blosc2():
    from blosc2.msgpack_utils import msgpack_packb
    from oxblosc.schunk import packb, unpackb

    for k, v in VLMETA.items():
        if k in ("array", "set"):
            continue  # dict/set ordering and dtype descr are Python-side; compared by value above
        assert packb(v) == msgpack_packb(v), k
        assert same(unpackb(msgpack_packb(v)), v), k


def test_vlmeta_embedded_schunk_and_unknown_ext():
    """Extension 42 (an embedded super-chunk) both ways; unknown extensions round-trip."""
    from oxblosc.schunk import ExtType

    inner = data_i4(300)
    b = blosc2.SChunk(chunksize=1200, data=inner)
    b.vlmeta["sub"] = blosc2.SChunk(chunksize=400, data=inner)
    got = oxblosc.schunk_from_cframe(b.to_cframe()).vlmeta["sub"]
    assert isinstance(got, oxblosc.SChunk) and got[:] == inner.tobytes() and got.nchunks == 3
    s = oxblosc.SChunk(chunksize=1200, data=inner)
    s.vlmeta["sub"] = oxblosc.SChunk(chunksize=400, data=inner)
    s.vlmeta["ext"] = ExtType(99, b"opaque")
    t = blosc2.schunk_from_cframe(s.to_cframe(), deserialize="full")
    assert isinstance(t.vlmeta["sub"], blosc2.SChunk) and t.vlmeta["sub"][:] == inner.tobytes()
    assert s.vlmeta["ext"] == ExtType(99, b"opaque")
    assert t.vlmeta["ext"].code == 99 and t.vlmeta["ext"].data == b"opaque"
