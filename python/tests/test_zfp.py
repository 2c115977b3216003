"""ZFP (codecs 33-35: ZFP_ACC, ZFP_PREC, ZFP_RATE) against the real python-blosc2 wheel: each
side reads the other's b2nd files (1-4 d, float32/float64, edge blocks, several metas) and
decodes the same values; the chunks are byte-identical too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import blosc2
import numpy as np
import oxblosc as ox
import pytest

CASES = [
    # (shape, chunks, blocks): partial zfp blocks at every block edge, partial chunks
    ((1000,), (600,), (300,)),
    ((37, 53), (37, 53), (13, 22)),
    ((64, 64), (64, 32), (32, 32)),
    ((9, 10, 11), (9, 10, 11), (5, 6, 7)),
    ((6, 7, 5, 9), (6, 7, 5, 9), (5, 6, 4, 7)),
]
# Metas whose streams fit the block (C-Blosc2 fails, and may corrupt its heap, otherwise).
MODES = [
    ("ZFP_ACC", [253, 0, 2]),  # tolerance 1e-3, 1, 100
    ("ZFP_PREC", [0, 5, 12]),
    ("ZFP_RATE", [0, 30, 75]),
]


def _field(shape, dtype, seed=2):
    rng = np.random.default_rng(seed)
    idx = np.indices(shape).astype(np.float64)
    return (np.sin(idx.sum(0) * 0.3) * 50 + rng.standard_normal(shape)).astype(dtype)


def _cp(codec, meta, nthreads=1):
    return {"codec": codec, "codec_meta": meta, "filters": [], "filters_meta": [], "nthreads": nthreads}


@pytest.mark.parametrize("case", CASES, ids=["x".join(map(str, c[0])) for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES, ids=[m[0] for m in MODES])
def test_both_directions(case, dtype, mode, tmp_path):
    shape, chunks, blocks = case
    name, metas = mode
    a = _field(shape, dtype)
    for meta in metas:
        tp, op = str(tmp_path / f"t{meta}.b2nd"), str(tmp_path / f"o{meta}.b2nd")
        theirs = blosc2.asarray(
            a, chunks=chunks, blocks=blocks, cparams=_cp(getattr(blosc2.Codec, name), meta), urlpath=tp, mode="w"
        )
        ours = ox.asarray(
            a, chunks=chunks, blocks=blocks, cparams=_cp(getattr(ox.Codec, name), meta, 2), urlpath=op, mode="w"
        )
        assert ours.schunk.cparams.codec == getattr(ox.Codec, name)
        want = theirs[...]
        # python-blosc2's file in oxblosc, 1 and 3 threads: the same values, bit for bit.
        for nthreads in (1, 3):
            got = ox.open(tp, dparams={"nthreads": nthreads})[...]
            assert got.tobytes() == want.tobytes(), (meta, nthreads)
        # Ours in python-blosc2: the same values as we decode, and as it decodes its own.
        back = blosc2.open(op)
        assert back.schunk.cparams.codec == getattr(blosc2.Codec, name) and back.schunk.cparams.codec_meta == meta
        assert back[...].tobytes() == ours[...].tobytes() == want.tobytes(), meta
        # And the same chunk bytes.
        for i in range(theirs.schunk.nchunks):
            assert ours.schunk.get_chunk(i) == theirs.schunk.get_chunk(i), (meta, i)
        if name == "ZFP_ACC":
            assert np.abs(want.astype(np.float64) - a).max() <= 10.0 ** np.int8(np.uint8(meta))


def test_odd_values_and_items_match(tmp_path):
    """NaN, infinities, subnormals, values near the float32 exponent floor and int32 items
    (coded as float bit patterns, as C-Blosc2 does) give the same chunks and values."""
    s = np.sin(np.arange(64 * 64) * 0.01).reshape(64, 64)
    arrays = []
    for dt in (np.float32, np.float64):
        x = s.astype(dt)
        x[3, 5], x[10, 10], x[20, 20], x[30, 1] = np.nan, np.inf, -np.inf, -0.0
        arrays += [x, (s * np.finfo(dt).tiny * 4).astype(dt), (s * 2.0**-110).astype(dt)]
    arrays.append((s * 1000).astype(np.int32))
    for a in arrays:
        for codec, meta in [("ZFP_ACC", 253), ("ZFP_PREC", 8), ("ZFP_RATE", 40)]:
            cp = _cp(getattr(blosc2.Codec, codec), meta)
            t = blosc2.asarray(a, chunks=a.shape, blocks=(32, 32), cparams=cp)
            o = ox.asarray(a, chunks=a.shape, blocks=(32, 32), cparams={**cp, "codec": getattr(ox.Codec, codec)})
            assert o.schunk.get_chunk(0) == t.schunk.get_chunk(0), (a.dtype, codec)
            assert o[...].tobytes() == t[...].tobytes()


def test_a_block_the_stream_does_not_fit_is_stored_raw(tmp_path):
    """Where C-Blosc2's plugin overflows its output (stream larger than the block: rate over
    100%), oxblosc stores the block as it is; python-blosc2 reads it back exactly."""
    a = np.random.default_rng(0).standard_normal((16, 16))
    o = ox.asarray(
        a, chunks=a.shape, blocks=(4, 16), cparams=_cp(ox.Codec.ZFP_RATE, 150), urlpath=str(tmp_path / "o.b2nd")
    )
    np.testing.assert_array_equal(blosc2.open(str(tmp_path / "o.b2nd"))[...], a)
    np.testing.assert_array_equal(o[...], a)


def test_unsupported_cases_are_clear_errors():
    with pytest.raises(ox.ChunkError, match="4- or 8-byte items"):
        ox.asarray(np.ones((32, 32), np.float16), chunks=(32, 32), blocks=(16, 16), cparams=_cp(ox.Codec.ZFP_RATE, 50))
    with pytest.raises(ox.ChunkError, match="1- to 4-dimensional"):
        ox.asarray(np.ones((4,) * 5), chunks=(4,) * 5, blocks=(4,) * 5, cparams=_cp(ox.Codec.ZFP_ACC, 253))
    with pytest.raises(ox.ChunkError, match="at least 4"):
        ox.asarray(np.ones((64, 64)), chunks=(64, 64), blocks=(3, 64), cparams=_cp(ox.Codec.ZFP_PREC, 10))
    with pytest.raises(ox.ChunkError, match="needs a b2nd array"):
        ox.compress2(np.arange(4096, dtype=np.float32), typesize=4, codec=ox.Codec.ZFP_RATE, codec_meta=50)


def test_cli_codec_zfp(tmp_path):
    exe = shutil.which("oxblosc", path=os.path.dirname(sys.executable))
    a = _field((60, 70), np.float32)
    np.save(tmp_path / "a.npy", a)
    for spec, codec, meta in (
        ("zfp_acc:-2", "ZFP_ACC", 254),
        ("zfp_prec:10", "ZFP_PREC", 10),
        ("zfp_rate:40", "ZFP_RATE", 40),
    ):
        out = tmp_path / f"{codec}.b2nd"
        r = subprocess.run(
            [exe, "compress", "--codec", spec, "--filter", "none", str(tmp_path / "a.npy"), str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        b = blosc2.open(str(out))
        assert b.schunk.cparams.codec == getattr(blosc2.Codec, codec) and b.schunk.cparams.codec_meta == meta
        assert b[...].tobytes() == ox.open(str(out))[...].tobytes()
        if codec == "ZFP_ACC":
            assert np.abs(b[...] - a).max() <= 0.01


def test_codecs_are_listed_like_python_blosc2():
    for name in ("ZFP_ACC", "ZFP_PREC", "ZFP_RATE"):
        assert getattr(ox.Codec, name).value == getattr(blosc2.Codec, name).value
        assert getattr(ox.Codec, name) in ox.compressor_list(plugins=True)
        assert getattr(ox.Codec, name) not in ox.compressor_list()
    listed = {r["id"]: (r["name"], r["origin"]) for r in ox.registered_codecs()}
    assert [listed[i] for i in (33, 34, 35)] == [(n, "built-in") for n in ("zfp_acc", "zfp_prec", "zfp_rate")]
