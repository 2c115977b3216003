"""Slices of b2nd files that need a few blocks of each chunk read only those blocks from the
file (oxblosc's header, block table and block streams of each chunk): files written by
python-blosc2 (its block layouts, codecs and split modes) and by oxblosc read back equal to
NumPy, and python-blosc2 reads oxblosc's."""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc
import pytest

SLICES = [
    np.s_[:, 10, :],
    np.s_[3, 5:9, 100:140],
    np.s_[:, :, 7],
    np.s_[7],
    np.s_[1:9:3, 33:60:5, ::17],
    np.s_[-1, -1, -1],
]


def field() -> np.ndarray:
    t, y, x = np.meshgrid(np.arange(12), np.arange(64), np.arange(160), indexing="ij")
    return (np.sin(t * 0.3 + y * 0.05) * 100 + x * 0.25 + (t * y * x) % 7).astype(np.float32)


@pytest.mark.parametrize("codec", ["LZ4", "ZSTD", "BLOSCLZ"])
@pytest.mark.parametrize("splitmode", ["ALWAYS_SPLIT", "NEVER_SPLIT"])
def test_blosc2_files_sliced_by_blocks(tmp_path, codec, splitmode):
    a = field()
    path = str(tmp_path / "b2.b2nd")
    cp = {"codec": getattr(blosc2.Codec, codec), "clevel": 5, "splitmode": getattr(blosc2.SplitMode, splitmode)}
    blosc2.asarray(a, urlpath=path, mode="w", chunks=(4, 64, 160), blocks=(1, 4, 160), cparams=cp)
    x = oxblosc.open(path)
    for s in SLICES:
        np.testing.assert_array_equal(x[s], a[s], err_msg=str(s))
    # x[:, 10, :] needs 4 of each chunk's 64 blocks: 3 chunks read in part (and more after).
    assert x._n._chunks_read_in_part >= 3


def test_oxblosc_files_sliced_by_blocks_read_by_both(tmp_path):
    a = field()
    path = str(tmp_path / "ox.b2nd")
    oxblosc.asarray(a, urlpath=path, mode="w", chunks=(4, 64, 160), blocks=(1, 4, 160))
    x, y = oxblosc.open(path), blosc2.open(path)
    for s in SLICES:
        np.testing.assert_array_equal(x[s], a[s], err_msg=str(s))
        np.testing.assert_array_equal(y[s], a[s], err_msg=str(s))
    assert x._n._chunks_read_in_part >= 3
