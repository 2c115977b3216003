"""The python-blosc2-style API: Blosc1-style compress/decompress, decompress2 into caller buffers,
getitem against full decodes, get_cbuffer_sizes, compress_blosc1 (version 2 chunks, readable
by C-Blosc2 and numcodecs), special chunks both ways, and the input buffer never being modified.
"""

from __future__ import annotations

import random

import blosc2
import numpy as np
import oxblosc as ox
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .helpers import make_data

F = ox.Filter
CODECS = [ox.Codec.BLOSCLZ, ox.Codec.LZ4, ox.Codec.LZ4HC, ox.Codec.ZLIB, ox.Codec.ZSTD]


# ---------------------------------------------------------------------------------------------
# Blosc1-style compress / decompress


def test_compress_defaults_match_blosc2():
    a = np.arange(100_000, dtype=np.int64)
    blosc2.set_nthreads(1)
    ox.set_nthreads(1)
    try:
        o, c = ox.compress(a), blosc2.compress(a)
        assert ox.chunk_info(o) == ox.chunk_info(c)
        assert o == c  # zstd clevel 1 + shuffle, typesize 8: same C zstd library, one thread
    finally:
        blosc2.set_nthreads(blosc2.ncores)
        ox.set_nthreads(ox.ncores)
    assert blosc2.decompress(o) == a.tobytes()
    assert ox.decompress(c) == a.tobytes()


# blosc2.compress drops SHUFFLE for typesize 1 and DELTA always (C build_filters): so must we (was BUG-T2).
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("filt", [F.NOFILTER, F.SHUFFLE, F.BITSHUFFLE, F.DELTA])
@pytest.mark.parametrize("typesize,clevel", [(1, 0), (4, 1), (8, 9), (2, 5)])
def test_compress_decompress_blosc1_style(codec, filt, typesize, clevel):
    data = make_data("smooth_f32", 40_000 // typesize * typesize)
    o = ox.compress(data, typesize=typesize, clevel=clevel, filter=filt, codec=codec)
    c = blosc2.compress(
        data, typesize=typesize, clevel=clevel, filter=blosc2.Filter(int(filt)), codec=blosc2.Codec(int(codec))
    )
    assert blosc2.decompress(o) == data
    assert ox.decompress(c) == data
    assert ox.decompress(o) == data
    assert ox.chunk_info(o) == ox.chunk_info(c)


def test_compress_len_not_multiple_of_typesize():
    with pytest.raises(ValueError, match="multiple of typesize"):
        ox.compress(b"abcde", typesize=2)
    with pytest.raises(ValueError, match="multiple of typesize"):
        blosc2.compress(b"abcde", typesize=2)
    c = ox.compress(b"abcde", typesize=2, _ignore_multiple_size=True)
    assert ox.decompress(c) == b"abcde" == blosc2.decompress(c)


def test_decompress_return_types_and_dst():
    a = np.linspace(0, 1, 5000)
    c = ox.compress(a, typesize=8)
    for m in (ox, blosc2):
        assert type(m.decompress(c)) is bytes
        out = m.decompress(c, as_bytearray=True)
        assert type(out) is bytearray and out == a.tobytes()
        d = np.empty_like(a)
        assert m.decompress(c, dst=d) is None
        np.testing.assert_array_equal(d, a)


@pytest.mark.parametrize("kind", ["bytearray", "numpy", "numpy2d", "memoryview", "bigger"])
def test_decompress2_into_dst(kind):
    a = np.arange(30_000, dtype=np.float32)
    c = ox.compress2(a, typesize=4, codec=ox.Codec.LZ4)
    if kind == "bytearray":
        dst = bytearray(a.nbytes)
    elif kind == "numpy":
        dst = np.empty_like(a)
    elif kind == "numpy2d":
        dst = np.empty((300, 100), dtype=np.float32)
    elif kind == "memoryview":
        dst = memoryview(bytearray(a.nbytes))
    else:
        dst = bytearray(a.nbytes + 100)
    assert ox.decompress2(c, dst=dst) is None
    got = bytes(memoryview(dst).cast("B"))
    assert got[: a.nbytes] == a.tobytes()
    if kind == "bigger":
        assert got[a.nbytes :] == bytes(100), "bytes past nbytes must be left alone"


def test_decompress2_dst_too_small_or_readonly():
    a = np.arange(1000, dtype=np.int64)
    c = ox.compress2(a)
    with pytest.raises(ValueError, match="too small"):
        ox.decompress2(c, dst=bytearray(a.nbytes - 1))
    with pytest.raises((ValueError, TypeError, BufferError)):
        ox.decompress2(c, dst=bytes(a.nbytes))
    with pytest.raises(ValueError):
        ox.decompress2(c, dst=bytearray())


def test_buffer_protocol_inputs():
    a = np.arange(10_000, dtype=np.int16)
    want = a.tobytes()
    for src in (a, want, bytearray(want), memoryview(want), memoryview(bytearray(want))):
        assert ox.decompress2(ox.compress2(src, typesize=2)) == want
    c = ox.compress2(a, typesize=2)
    for src in (c, bytearray(c), memoryview(c), np.frombuffer(c, dtype=np.uint8)):
        assert ox.decompress2(src) == want
        assert ox.get_cbuffer_sizes(src) == blosc2.get_cbuffer_sizes(c)


# ---------------------------------------------------------------------------------------------
# get_cbuffer_sizes


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", [0, 5, 33, 10_000, 1_000_003])
def test_get_cbuffer_sizes_equal(codec, size):
    data = make_data("linspace_f64", size)
    for chunk in (
        ox.compress2(data, codec=codec, typesize=1),
        blosc2.compress2(data, codec=blosc2.Codec(int(codec)), typesize=1),
    ):
        assert ox.get_cbuffer_sizes(chunk) == blosc2.get_cbuffer_sizes(chunk)


# ---------------------------------------------------------------------------------------------
# getitem vs slices of the full decode


def _getitem_check(chunk: bytes, full: bytes, ts: int, rng: random.Random, n: int = 30):
    nitems = len(full) // ts
    ranges = [(0, nitems), (0, 0), (nitems, 0), (0, 1), (max(nitems - 1, 0), min(1, nitems))]
    for _ in range(n):
        s = rng.randrange(nitems + 1)
        ranges.append((s, rng.randrange(nitems - s + 1)))
    for s, k in ranges:
        assert ox.getitem(chunk, s, k) == full[s * ts : (s + k) * ts], (s, k)


GETITEM_PIPES = [
    [],
    [F.SHUFFLE],
    [F.BITSHUFFLE],
    [F.DELTA],
    [F.SHUFFLE, F.DELTA],
    [F.BITSHUFFLE, F.DELTA],
    [F.DELTA, F.SHUFFLE, F.BYTEDELTA],
]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("filters", GETITEM_PIPES, ids=lambda f: "+".join(x.name for x in f) or "none")
def test_getitem_matches_full_decode(codec, filters):
    rng = random.Random(int(codec) * 31 + len(filters))
    ts = 4
    data = make_data("smooth_f32", 200_000)
    for bs in (0, 4096, 1000 * ts):
        kw = dict(codec=codec, typesize=ts, filters=filters, blocksize=bs, nthreads=1, clevel=5)
        chunk = ox.compress2(data, **kw)
        _getitem_check(chunk, data, ts, rng)
        # C-written chunk; DELTA pipelines: compress with one C thread (pitfall 1)
        b2kw = dict(kw, codec=blosc2.Codec(int(codec)), filters=[blosc2.Filter(int(f)) for f in filters])
        cchunk = blosc2.compress2(bytearray(data), **b2kw)
        _getitem_check(cchunk, blosc2.decompress2(cchunk, nthreads=1), ts, rng)


def test_getitem_delta_block0_needed():
    """A DELTA chunk with many blocks: items far from block 0 still come out right (pitfall 3)."""
    a = (np.arange(100_000, dtype=np.int64) * 7919) % 1000
    for filters in ([F.DELTA], [F.SHUFFLE, F.DELTA], [F.BITSHUFFLE, F.DELTA]):
        chunk = ox.compress2(a, typesize=8, filters=filters, blocksize=8192)
        assert ox.chunk_info(chunk)["nblocks"] > 10
        for start in (99_990, 50_000, 1024, 1023):
            np.testing.assert_array_equal(
                np.frombuffer(ox.getitem(chunk, start, 10), dtype=np.int64), a[start : start + 10]
            )


def test_getitem_out_of_range():
    chunk = ox.compress2(np.arange(100, dtype=np.int32), typesize=4)
    for s, k in ((100, 1), (0, 101), (99, 2), (2**31 - 1, 1)):
        with pytest.raises(ValueError):
            ox.getitem(chunk, s, k)
    for s, k in ((-1, 1), (0, -1)):
        with pytest.raises(ValueError):
            ox.getitem(chunk, s, k)


@given(
    st.binary(min_size=0, max_size=20_000),
    st.sampled_from([1, 2, 4, 8, 3, 16]),
    st.sampled_from(CODECS),
    st.sampled_from(GETITEM_PIPES),
    st.data(),
)
def test_getitem_property(data, ts, codec, filters, draw):
    data = data[: len(data) // ts * ts]
    chunk = ox.compress2(
        data, typesize=ts, codec=codec, filters=filters, blocksize=draw.draw(st.sampled_from([0, ts * 16, ts * 100]))
    )
    nitems = len(data) // ts
    s = draw.draw(st.integers(0, nitems))
    k = draw.draw(st.integers(0, nitems - s))
    assert ox.getitem(chunk, s, k) == data[s * ts : (s + k) * ts]


# ---------------------------------------------------------------------------------------------
# compress_blosc1: version 2 chunks for Blosc1-only readers


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("shuffle", [F.NOFILTER, F.SHUFFLE, F.BITSHUFFLE])
@pytest.mark.parametrize(
    "typesize,size",
    [(1, 0), (4, 100), (8, 127 * 8), (4, 1_000_000), (2, 300_001 * 2), (3, 99_999), (16, 64_000), (300, 30_000)],
)
def test_compress_blosc1_decodes_in_blosc2(codec, shuffle, typesize, size):
    data = make_data("smooth_f32", size)
    c = ox.compress_blosc1(data, typesize=typesize, codec=codec, shuffle=shuffle, clevel=5)
    assert c[0] == 2, "version byte"
    assert c[2] & 0x05 != 0x05, "no extended header marker"
    assert c[2] & 0x08 == 0, "no DELTA bit"
    nbytes, cbytes, blocksize = ox.get_cbuffer_sizes(c)
    assert (nbytes, cbytes) == (size, len(c))
    assert len(c) <= size + 16
    if size < 128:
        assert c[2] & 0x02, "Blosc1 stores buffers below 128 bytes memcpyed"
        assert len(c) == size + 16
    assert blosc2.decompress(c) == data
    assert ox.decompress(c) == data
    # No csize <= 0 (run) streams: walk every stream of every block.
    if not c[2] & 0x02:
        _assert_no_run_streams(c)


def _assert_no_run_streams(c: bytes):
    info = ox.chunk_info(c)
    nb, bs, ts, nblocks = info["nbytes"], info["blocksize"], info["typesize"], info["nblocks"]
    starts = np.frombuffer(c, dtype="<i4", count=nblocks, offset=16)
    for i, st0 in enumerate(starts):
        bsize = min(bs, nb - i * bs)
        leftover = bsize < bs
        split = info["split"] and not leftover and ts <= 16 and bs // ts >= 128
        nstreams = ts if split else 1
        pos = int(st0)
        for _ in range(nstreams):
            csize = int(np.frombuffer(c, dtype="<i4", count=1, offset=pos)[0])
            assert csize > 0, f"block {i}: stream with csize {csize} (Blosc1 readers reject runs)"
            pos += 4 + csize


def _numcodecs():
    try:
        import numcodecs  # noqa: PLC0415
        from numcodecs import blosc as nb  # noqa: PLC0415
    except ImportError:
        pytest.skip("numcodecs is not installed (pip install numcodecs to run Blosc1-reader checks)")
    return numcodecs, nb


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("shuffle", [F.NOFILTER, F.SHUFFLE, F.BITSHUFFLE])
def test_numcodecs_reads_compress_blosc1(codec, shuffle):
    numcodecs, _ = _numcodecs()
    cname = {0: "blosclz", 1: "lz4", 2: "lz4hc", 4: "zlib", 5: "zstd"}[int(codec)]
    for ts, ds, size in (
        (4, "smooth_f32", 1_000_000),
        (8, "arange_i64", 80_008),
        (1, "genotype_i8", 300_001),
        (8, "random_f64", 64),
        (2, "zeros", 200_000),
    ):
        data = make_data(ds, size)
        c = ox.compress_blosc1(data, typesize=ts, codec=codec, shuffle=shuffle, clevel=9)
        assert bytes(numcodecs.Blosc(cname=cname).decode(c)) == data
        # and we read what numcodecs (c-blosc 1.x) writes
        nc = numcodecs.Blosc(cname=cname, clevel=5, shuffle=int(shuffle), blocksize=0)
        enc = nc.encode(np.frombuffer(data, dtype=f"u{ts}" if ts in (1, 2, 4, 8) else "u1"))
        assert bytes(enc)[0] == 2
        assert ox.decompress(enc) == data


# ---------------------------------------------------------------------------------------------
# Special chunks, both directions


def test_special_value_empty_decodes_in_blosc2():
    """Was BUG-T4: an empty VALUE chunk must decode in blosc2 too."""
    r = ox.special_chunk(ox.SpecialValue.VALUE, 0, 8, np.float64(1.0))
    assert ox.decompress2(r) == b""
    assert blosc2.decompress2(r) == b""


@pytest.mark.parametrize("ts", [4, 8])
@pytest.mark.parametrize("nitems", [0, 1, 1000, 250_000])
def test_special_chunks_oxblosc_to_blosc2(ts, nitems):
    nbytes = nitems * ts
    z = ox.special_chunk(ox.SpecialValue.ZERO, nbytes, ts)
    assert len(z) == 32
    assert blosc2.decompress2(z) == bytes(nbytes) == ox.decompress2(z)
    n = ox.special_chunk(ox.SpecialValue.NAN, nbytes, ts)
    dt = np.float32 if ts == 4 else np.float64
    for out in (blosc2.decompress2(n), ox.decompress2(n)):
        arr = np.frombuffer(out, dtype=dt)
        assert arr.size == nitems and np.isnan(arr).all()
    assert blosc2.decompress2(n) == ox.decompress2(n)
    v = np.array([3.25], dtype=dt)
    r = ox.special_chunk(ox.SpecialValue.VALUE, nbytes, ts, v)
    assert len(r) == (32 + ts if nitems else 32)  # nbytes 0: a plain empty chunk (was BUG-T4)
    assert ox.decompress2(r) == np.full(nitems, 3.25, dtype=dt).tobytes()
    assert blosc2.decompress2(r) == ox.decompress2(r)
    u = ox.special_chunk(ox.SpecialValue.UNINIT, nbytes, ts)
    assert len(blosc2.decompress2(u)) == nbytes
    assert ox.decompress2(u) == bytes(nbytes), "uninit chunks decode as zeros (never expose memory)"
    for c in (z, n, r, u):
        assert ox.get_cbuffer_sizes(c) == blosc2.get_cbuffer_sizes(c)
        if nitems:
            assert ox.getitem(c, nitems // 2, 1) == ox.decompress2(c)[nitems // 2 * ts : nitems // 2 * ts + ts]


@pytest.mark.parametrize("ts", [1, 3, 300])
def test_special_value_odd_typesizes(ts):
    val = bytes(range(1, ts + 1)) if ts < 256 else bytes(i % 251 + 1 for i in range(ts))
    r = ox.special_chunk(ox.SpecialValue.VALUE, ts * 1000, ts, val)
    assert len(r) == 32 + ts
    assert blosc2.decompress2(r) == val * 1000 == ox.decompress2(r)


def _blosc2_special(kind, nitems, ts, value=None):
    s = blosc2.SChunk(chunksize=nitems * ts, cparams={"typesize": ts})
    s.fill_special(nitems, kind, value)
    return s.get_chunk(0)


@pytest.mark.parametrize("ts", [4, 8])
def test_special_chunks_blosc2_to_oxblosc(ts):
    dt = np.float32 if ts == 4 else np.float64
    z = _blosc2_special(blosc2.SpecialValue.ZERO, 5000, ts)
    assert len(z) == 32 and ox.chunk_info(z)["special"] == 1
    assert ox.decompress2(z) == bytes(5000 * ts)
    n = _blosc2_special(blosc2.SpecialValue.NAN, 5000, ts)
    assert ox.chunk_info(n)["special"] == 2
    assert ox.decompress2(n) == blosc2.decompress2(n)
    assert np.isnan(np.frombuffer(ox.decompress2(n), dtype=dt)).all()
    u = _blosc2_special(blosc2.SpecialValue.UNINIT, 5000, ts)
    assert ox.chunk_info(u)["special"] == 4
    assert ox.decompress2(u) == bytes(5000 * ts)
    v = _blosc2_special(blosc2.SpecialValue.VALUE, 5000, ts, dt(-1.5))
    assert ox.chunk_info(v)["special"] == 3 and len(v) == 32 + ts
    assert ox.decompress2(v) == np.full(5000, -1.5, dtype=dt).tobytes() == blosc2.decompress2(v)
    for c in (z, n, u, v):
        assert ox.get_cbuffer_sizes(c) == blosc2.get_cbuffer_sizes(c)


def test_special_chunk_into_dst():
    c = ox.special_chunk(ox.SpecialValue.UNINIT, 800, 8)
    dst = bytearray(b"\xff" * 800)
    ox.decompress2(c, dst=dst)
    assert dst == bytes(800)
    c = ox.special_chunk(ox.SpecialValue.ZERO, 800, 8)
    dst = np.full(100, 7.0)
    ox.decompress2(c, dst=dst)
    assert not dst.any()


def test_special_chunk_bad_params():
    with pytest.raises(ValueError):
        ox.special_chunk(ox.SpecialValue.NAN, 300, 3)
    with pytest.raises(ValueError):
        ox.special_chunk(ox.SpecialValue.VALUE, 80, 8)  # no value
    with pytest.raises(ValueError):
        ox.special_chunk(ox.SpecialValue.VALUE, 80, 8, b"abc")  # wrong width
    with pytest.raises(ValueError):
        ox.special_chunk(ox.SpecialValue.ZERO, 81, 8)  # not a multiple of typesize
    with pytest.raises(ValueError):
        ox.special_chunk(ox.SpecialValue.NOT_SPECIAL, 80, 8)
    with pytest.raises(ValueError):
        ox.special_chunk(ox.SpecialValue.ZERO, 80, 0)


# ---------------------------------------------------------------------------------------------
# compress2 never writes into its input (pitfall 4)


@pytest.mark.parametrize(
    "filters",
    [
        [F.SHUFFLE, F.DELTA, F.BITSHUFFLE],
        [F.DELTA, F.SHUFFLE, F.BYTEDELTA],
        [F.SHUFFLE, F.BITSHUFFLE, F.DELTA, F.SHUFFLE, F.BYTEDELTA, F.SHUFFLE],
        [F.TRUNC_PREC, F.SHUFFLE, F.DELTA, F.BITSHUFFLE],
    ],
)
@pytest.mark.parametrize("nthreads", [1, 2])
def test_input_never_modified(filters, nthreads):
    meta = [20 if f == F.TRUNC_PREC else 0 for f in filters]
    for codec in (ox.Codec.BLOSCLZ, ox.Codec.ZSTD):
        a = np.random.default_rng(3).random(100_000)  # incompressible: exercises the memcpy fallback
        ref = a.copy()
        b = a.tobytes()
        bref = bytes(bytearray(b))
        ba = bytearray(b)
        for src in (a, b, ba, memoryview(ba)):
            c = ox.compress2(
                src, typesize=8, filters=filters, filters_meta=meta, codec=codec, nthreads=nthreads, blocksize=16384
            )
            if F.TRUNC_PREC not in filters:
                assert ox.decompress2(c) == bref
        np.testing.assert_array_equal(a, ref)
        assert b == bref and ba == bref


def test_compress_deterministic_with_many_filters():
    a = np.random.default_rng(4).random(50_000)
    kw = dict(typesize=8, filters=[F.SHUFFLE, F.DELTA, F.BITSHUFFLE], codec=ox.Codec.LZ4, nthreads=2)
    first = ox.compress2(a, **kw)
    for _ in range(3):
        assert ox.compress2(a, **kw) == first


# ---------------------------------------------------------------------------------------------
# CParams / DParams plumbing


# python-blosc2's enums are plain Enum, not IntEnum (was BUG-T3).
@pytest.mark.parametrize(
    "kw",
    [
        dict(codec=blosc2.Codec.LZ4),
        dict(filters=[blosc2.Filter.SHUFFLE]),
        dict(splitmode=blosc2.SplitMode.ALWAYS_SPLIT),
    ],
    ids=["codec", "filters", "splitmode"],
)
def test_blosc2_enums_accepted(kw):
    a = np.arange(1000, dtype=np.int32)
    c = ox.compress2(a, typesize=4, **kw)
    assert ox.decompress2(c) == a.tobytes()


@pytest.mark.parametrize(
    "cp",
    [
        ox.CParams(typesize=4, codec=ox.Codec.LZ4),
        {"typesize": 4, "codec": ox.Codec.LZ4},
        blosc2.CParams(typesize=4, codec=blosc2.Codec.LZ4),
    ],
    ids=["oxblosc.CParams", "dict", "blosc2.CParams"],
)
def test_cparams_objects_accepted(cp):
    a = np.arange(10_000, dtype=np.int32)
    c = ox.compress2(a, cparams=cp)
    assert ox.chunk_info(c)["codec"] == 1 and ox.chunk_info(c)["typesize"] == 4
    assert ox.decompress2(c, dparams=ox.DParams(nthreads=2)) == a.tobytes()
    assert ox.decompress2(c, dparams=blosc2.DParams(nthreads=1)) == a.tobytes()
    assert ox.decompress2(c, dparams={"nthreads": 1}) == a.tobytes()


def test_params_conflicts_rejected():
    a = np.arange(100, dtype=np.int32)
    with pytest.raises(ValueError):
        ox.compress2(a, cparams=ox.CParams(), clevel=3)
    with pytest.raises(ValueError):
        ox.compress2(a, bogus=3)


def test_set_nthreads():
    old = ox.set_nthreads(3)
    try:
        assert ox.nthreads == 3
        assert ox.CParams().nthreads == 3
        with pytest.raises(ValueError):
            ox.set_nthreads(0)
    finally:
        ox.set_nthreads(old)
