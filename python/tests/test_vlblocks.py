"""Chunks with variable-length blocks (format version 6), both ways with python-blosc2."""

import blosc2
import numpy as np
import oxblosc as ox
import pytest

BLOCKS = [b"hello world" * 10, bytes(range(256)) * 3, b"x", np.arange(5000, dtype=np.int64).tobytes()]


@pytest.mark.parametrize("codec", [ox.Codec.BLOSCLZ, ox.Codec.LZ4, ox.Codec.LZ4HC, ox.Codec.ZLIB, ox.Codec.ZSTD])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_vlblocks_both_ways(codec, nthreads):
    ours = ox.compress_vlblocks(BLOCKS, codec=codec, clevel=5, typesize=1, nthreads=nthreads)
    assert ox.chunk_info(ours)["vlblocks"] and ox.chunk_info(ours)["version"] == 6
    assert blosc2.blosc2_ext.vldecompress(ours, nthreads=nthreads) == BLOCKS
    assert blosc2.decompress2(ours) == b"".join(BLOCKS)
    theirs = blosc2.blosc2_ext.vlcompress(BLOCKS, codec=blosc2.Codec(int(codec)), clevel=5, typesize=1, nthreads=1)
    assert ox.decompress_vlblocks(theirs, nthreads=nthreads) == BLOCKS
    assert ox.decompress2(theirs) == b"".join(BLOCKS)


def test_vlblocks_with_shuffle_and_typesize():
    blocks = [np.linspace(0, i + 1, 1000 * (i + 1)).tobytes() for i in range(4)]
    ours = ox.compress_vlblocks(blocks, typesize=8, filters=[ox.Filter.SHUFFLE], nthreads=1)
    assert blosc2.blosc2_ext.vldecompress(ours) == blocks
    assert ox.decompress_vlblocks(ours) == blocks


def test_vlblocks_bad_arguments():
    with pytest.raises(ValueError, match="at least one block"):
        ox.compress_vlblocks([])
    with pytest.raises(ValueError, match="empty"):
        ox.compress_vlblocks([b"ab", b""])
    with pytest.raises(ValueError, match="DELTA"):
        ox.compress_vlblocks([b"ab"], filters=[ox.Filter.DELTA])
    with pytest.raises(ValueError, match="not a VL-block chunk"):
        ox.decompress_vlblocks(ox.compress2(b"abc" * 100))
