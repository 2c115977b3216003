"""Zarr arrays with oxblosc codecs, read and written by zarr-python with its own codecs and
ours, both ways: Zarr v2 (numcodecs ``blosc`` compressor) and Zarr v3 (``blosc``, ``blosc2``).
All dtypes, shapes with edge chunks."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import oxblosc as ox
import pytest
import zarr
from oxblosc.numcodecs import Blosc, Blosc2
from oxblosc.zarr import Blosc2Codec, BloscCodec
from zarr.codecs import BloscCodec as ZarrBloscCodec

DTYPES = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16", "bool"]
DTYPES += ["M8[s]", "m8[ms]", "S3", "U2"]
SHAPES = [((1001,), (100,)), ((37, 23), (10, 8)), ((13, 7, 5), (4, 4, 4))]


def _data(dtype: str, shape: tuple) -> np.ndarray:
    rng = np.random.default_rng(sum(shape))
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    a = np.cumsum(rng.integers(-3, 4, n)).reshape(shape)
    if dtype[0] == "c":
        return (a + 1j * a[::-1]).astype(dtype)
    if dtype[0] in "SU":
        return (a % 1000).astype(dtype)
    return a.astype(dtype)


@pytest.fixture(autouse=True)
def every_chunk_stored():
    """Chunks equal to the fill value are stored too (so every chunk goes through a codec)."""
    with zarr.config.set({"array.write_empty_chunks": True}):
        yield


@pytest.fixture
def our_v2_blosc():
    """numcodecs' registry (what Zarr v2 metadata is decoded with) hands out our Blosc."""
    numcodecs.register_codec(Blosc)
    yield
    numcodecs.register_codec(numcodecs.Blosc)


@pytest.mark.parametrize("shape,chunks", SHAPES)
def test_zarr_v2_both_ways(tmp_path, shape, chunks, our_v2_blosc):
    for dtype in DTYPES:
        a = _data(dtype, shape)
        # ours writes (the metadata says plain numcodecs "blosc") ...
        p1 = tmp_path / f"ours_{dtype}.zarr"
        z = zarr.create_array(p1, shape=shape, chunks=chunks, dtype=dtype, zarr_format=2, compressors=Blosc("zstd"))
        z[...] = a
        meta = json.loads((p1 / ".zarray").read_text())
        assert meta["compressor"] == {"id": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1, "blocksize": 0}
        # ... and numcodecs' own Blosc reads every stored chunk
        stored = [f for f in p1.iterdir() if not f.name.startswith(".")]
        assert len(stored) == int(np.prod([-(-s // c) for s, c in zip(shape, chunks, strict=True)]))
        for f in stored:
            raw = f.read_bytes()
            assert raw[0] == 2  # Blosc1 chunks
            assert bytes(numcodecs.blosc.Blosc().decode(raw)) == bytes(Blosc().decode(raw))
        # numcodecs writes, ours reads (through the registry, as zarr does)
        p2 = tmp_path / f"theirs_{dtype}.zarr"
        z2 = zarr.create_array(
            p2, shape=shape, chunks=chunks, dtype=dtype, zarr_format=2, compressors=numcodecs.blosc.Blosc("lz4")
        )
        z2[...] = a
        r = zarr.open_array(p2, mode="r")
        assert isinstance(r.compressors[0], Blosc)
        np.testing.assert_array_equal(r[...], a)
        np.testing.assert_array_equal(zarr.open_array(p1, mode="r")[...], a)


def test_zarr_v2_read_by_stock_numcodecs(tmp_path):
    a = _data("f8", (37, 23))
    z = zarr.create_array(tmp_path / "a.zarr", shape=a.shape, chunks=(10, 8), dtype="f8", zarr_format=2)
    z2 = zarr.create_array(
        tmp_path / "b.zarr", shape=a.shape, chunks=(10, 8), dtype="f8", zarr_format=2, compressors=Blosc("lz4", 9, 2)
    )
    z[...] = a
    z2[...] = a
    r = zarr.open_array(tmp_path / "b.zarr", mode="r")
    assert type(r.compressors[0]) is numcodecs.blosc.Blosc  # nothing of ours on the read side
    np.testing.assert_array_equal(r[...], a)


@pytest.mark.parametrize("shape,chunks", SHAPES)
def test_zarr_v3_blosc_both_ways(tmp_path, shape, chunks):
    for dtype in DTYPES:
        a = _data(dtype, shape)
        # ours writes with typesize and shuffle left to the dtype
        p1 = tmp_path / f"ours_{dtype}.zarr"
        z = zarr.create_array(p1, shape=shape, chunks=chunks, dtype=dtype, compressors=BloscCodec(cname="lz4"))
        z[...] = a
        (codec,) = [c for c in json.loads((p1 / "zarr.json").read_text())["codecs"] if c["name"] == "blosc"]
        itemsize = np.dtype(dtype).itemsize
        assert codec["configuration"] == {
            "typesize": itemsize,
            "cname": "lz4",
            "clevel": 5,
            "shuffle": "bitshuffle" if itemsize == 1 else "shuffle",
            "blocksize": 0,
        }
        chunk_file = next(f for f in (p1 / "c").rglob("*") if f.is_file())
        assert ox.chunk_info(chunk_file.read_bytes())["typesize"] == itemsize  # typesize kept
        # zarr's own codec reads it (its default "blosc" implementation)
        r = zarr.open_array(p1, mode="r")
        assert type(r.compressors[0]) is ZarrBloscCodec
        np.testing.assert_array_equal(r[...], a)
        # zarr's codec writes, ours reads
        p2 = tmp_path / f"theirs_{dtype}.zarr"
        z2 = zarr.create_array(p2, shape=shape, chunks=chunks, dtype=dtype, compressors=ZarrBloscCodec(cname="zstd"))
        z2[...] = a
        with zarr.config.set({"codecs.blosc": "oxblosc.zarr.BloscCodec"}):
            r2 = zarr.open_array(p2, mode="r")
            assert type(r2.compressors[0]) is BloscCodec
            np.testing.assert_array_equal(r2[...], a)


def test_zarr_v3_blosc_explicit_options_match_zarr(tmp_path):
    for kw in (dict(shuffle="noshuffle"), dict(shuffle="bitshuffle", typesize=4, clevel=9, cname="blosclz")):
        assert BloscCodec(**kw).to_dict() == ZarrBloscCodec(**kw).to_dict()
        back = BloscCodec.from_dict(ZarrBloscCodec(**kw).to_dict())
        assert type(back) is BloscCodec and back.to_dict() == ZarrBloscCodec(**kw).to_dict()


@pytest.mark.parametrize("shape,chunks", SHAPES)
def test_zarr_v3_blosc2(tmp_path, shape, chunks):
    codecs = [
        Blosc2Codec(),
        Blosc2Codec(cname="lz4", filters=("bytedelta",), clevel=9),
        Blosc2Codec(cname="zlib", filters=("delta", "bitshuffle"), splitmode="never"),
    ]
    for i, codec in enumerate(codecs):
        for dtype in DTYPES:
            a = _data(dtype, shape)
            p = tmp_path / f"b2_{i}_{dtype}.zarr"
            z = zarr.create_array(p, shape=shape, chunks=chunks, dtype=dtype, compressors=codec)
            z[...] = a
            meta = json.loads((p / "zarr.json").read_text())
            (c,) = [c for c in meta["codecs"] if c["name"] == "blosc2"]
            assert c["configuration"]["typesize"] == np.dtype(dtype).itemsize
            assert c["configuration"]["filters"] == list(codec.filters)
            np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], a)
            # the stored chunks are plain Blosc2 chunks
            chunk_file = next(f for f in (p / "c").rglob("*") if f.is_file())
            assert ox.chunk_info(chunk_file.read_bytes())["version"] >= 3


def test_blosc2_codec_round_trips_its_metadata():
    c = Blosc2Codec(cname="lz4", filters=("delta", "shuffle"), filters_meta=(0, 0), typesize=4)
    assert Blosc2Codec.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    with pytest.raises(ValueError, match="unknown filter"):
        Blosc2Codec(filters=("nope",))


def test_zarr_v3_sharded_array_with_our_codecs(tmp_path):
    """Inside zarr's sharding codec the inner chunks still get the dtype's typesize."""
    a = _data("i4", (64, 48))
    for codec in (BloscCodec(cname="zstd"), Blosc2Codec(filters=("bytedelta",))):
        p = tmp_path / f"sharded_{type(codec).__name__}.zarr"
        z = zarr.create_array(p, shape=a.shape, chunks=(8, 12), shards=(32, 24), dtype="i4", compressors=codec)
        z[...] = a
        np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], a)
        inner = json.loads((p / "zarr.json").read_text())["codecs"][0]["configuration"]["codecs"]
        (c,) = [c for c in inner if c["name"] in ("blosc", "blosc2")]
        assert c["configuration"]["typesize"] == 4


def test_zarr_v2_blosc2_through_the_entry_point(tmp_path):
    """A v2 array compressed with "blosc2" opens in a fresh process: numcodecs finds our
    codec through its entry point group."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    a = _data("f8", (37, 23))
    p = tmp_path / "b2.zarr"
    z = zarr.create_array(p, shape=a.shape, chunks=(10, 8), dtype="f8", zarr_format=2, compressors=Blosc2(cname="lz4"))
    z[...] = a
    assert json.loads((p / ".zarray").read_text())["compressor"]["id"] == "blosc2"
    code = f"import zarr, numpy as np; print(float(zarr.open_array({str(p)!r}, mode='r')[...].sum()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert float(out) == pytest.approx(float(a.sum()))


def test_zarr_v3_blosc_codes_with_oxblosc(tmp_path, monkeypatch):
    """Our BloscCodec hands every chunk to oxblosc (guards against zarr renaming the hook
    it overrides, which would silently fall back to numcodecs)."""
    calls = []
    for name in ("encode", "decode"):
        orig = getattr(Blosc, name)
        monkeypatch.setattr(Blosc, name, lambda self, *a, _o=orig, _n=name, **k: calls.append(_n) or _o(self, *a, **k))
    a = _data("f4", (37, 23))
    z = zarr.create_array(tmp_path / "a.zarr", shape=a.shape, chunks=(10, 8), dtype="f4", compressors=BloscCodec())
    z[...] = a
    with zarr.config.set({"codecs.blosc": "oxblosc.zarr.BloscCodec"}):
        np.testing.assert_array_equal(zarr.open_array(tmp_path / "a.zarr", mode="r")[...], a)
    assert calls.count("encode") == 12 and calls.count("decode") == 12
