"""zlib chunks written by python-blosc2 read back through both of our inflates (decision 0016:
libdeflate, and zlib-ng for streams that expand more than 64 times; `OXBLOSC_ZLIB_DECODER=
zlib-ng` sends every stream to zlib-ng). The data spans both routes: arange shuffled is mostly
runs (expansions in the hundreds), smooth floats and noise are not."""

import os
import subprocess
import sys

import blosc2
import numpy as np
import oxblosc
import pytest

from .helpers import shared_dir


def datasets():
    sys.path.insert(0, str(shared_dir() / "bench"))
    import _datasets

    rng = np.random.default_rng(7)
    return {
        "arange": np.arange(300_000, dtype=np.int64),
        "climate": np.ascontiguousarray(_datasets.make("climate_f4", 1 << 20)).reshape(-1),
        "noise": rng.normal(size=100_000),
        "small_ints": rng.integers(0, 4, 500_000).astype(np.uint8),
        "tiny": np.arange(5, dtype=np.float32),
    }


FILTERS = {
    "none": [blosc2.Filter.NOFILTER],
    "shuffle": [blosc2.Filter.SHUFFLE],
    "bitshuffle": [blosc2.Filter.BITSHUFFLE],
}


def blosc2_chunks():
    """(name, chunk, expected bytes) for every dataset x clevel x filter, Blosc2 and Blosc1."""
    out = []
    for name, a in datasets().items():
        for clevel in (1, 5, 9):
            for fname, filters in FILTERS.items():
                c = blosc2.compress2(a, codec=blosc2.Codec.ZLIB, clevel=clevel, filters=filters, typesize=a.itemsize)
                out.append((f"{name}/{clevel}/{fname}", c, a.tobytes()))
        shuffle = blosc2.Filter.SHUFFLE
        c1 = blosc2.compress(a, typesize=a.itemsize, clevel=5, filter=shuffle, codec=blosc2.Codec.ZLIB)
        out.append((f"{name}/blosc1-api", c1, a.tobytes()))
    return out


DECODE_ALL = """
import sys, pickle, oxblosc
cases = pickle.load(sys.stdin.buffer)
bad = [n for n, c, want in cases if oxblosc.decompress2(c) != want]
print(len(cases), bad)
"""


@pytest.mark.parametrize("decoder", ["default", "zlib-ng"])
def test_blosc2_zlib_chunks_decode_with_each_inflate(decoder):
    import pickle

    cases = blosc2_chunks()
    env = dict(os.environ)
    env.pop("OXBLOSC_ZLIB_DECODER", None)
    if decoder != "default":
        env["OXBLOSC_ZLIB_DECODER"] = decoder
    r = subprocess.run(
        [sys.executable, "-c", DECODE_ALL], input=pickle.dumps(cases), capture_output=True, env=env, check=True
    )
    assert r.stdout.decode().split() == [str(len(cases)), "[]"], r.stdout + r.stderr


def test_our_zlib_chunks_decode_in_blosc2_and_back():
    for name, a in datasets().items():
        for clevel in (1, 9):
            cp = oxblosc.CParams(codec=oxblosc.Codec.ZLIB, clevel=clevel, typesize=a.itemsize)
            c = oxblosc.compress2(a, cparams=cp)
            assert blosc2.decompress2(c) == a.tobytes(), name
            assert oxblosc.decompress2(c) == a.tobytes(), name


def test_damaged_zlib_stream_is_a_clear_error_naming_the_block():
    a = np.linspace(0, 1, 200_000)
    c = bytearray(blosc2.compress2(a, codec=blosc2.Codec.ZLIB, clevel=5, filters=[blosc2.Filter.SHUFFLE]))
    c[len(c) // 2] ^= 0x55
    with pytest.raises(oxblosc.ChunkError, match=r"zlib could not decode block \d+ at offset \d+"):
        oxblosc.decompress2(bytes(c))
    # A run-like stream (arange: the zlib-ng route) cut short is refused as well.
    r = bytearray(blosc2.compress2(np.arange(300_000), codec=blosc2.Codec.ZLIB, clevel=5))
    r[-3] ^= 0xFF
    with pytest.raises(oxblosc.ChunkError, match="zlib"):
        oxblosc.decompress2(bytes(r))
