"""NDCELL (filter 32) and NDMEAN (filter 33), the Blosc-registered b2nd filters, against the
real python-blosc2 wheel: same chunk bytes for the same parameters, and each side reads the
other's files, over dtypes, shapes, cell edges and thread counts."""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc as ox
import pytest

CASES = [
    # (shape, chunks, blocks, dtype, cell edge)
    ((60, 70), (30, 35), (10, 14), "f4", 4),
    ((60, 70), (30, 35), (10, 14), "i2", 3),
    ((50,), (20,), (8,), "u1", 2),
    ((12, 20, 18), (6, 10, 9), (3, 5, 4), "f8", 2),
    ((12, 20, 18), (12, 10, 9), (4, 10, 9), "i8", 4),
    ((9, 9), (9, 9), (9, 9), "u4", 9),
    # Cells cut at the block's upper edges in every dimension.
    ((12, 20, 18), (8, 10, 9), (4, 5, 4), "f4", 4),
    ((40, 30), (40, 30), (7, 30), "f8", 5),
]


def _data(shape, dtype):
    rng = np.random.default_rng(7)
    base = np.cumsum(rng.integers(-3, 4, size=int(np.prod(shape))), dtype=np.int64).reshape(shape)
    return (base + 50).astype(dtype)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[3]}-{len(c[0])}d-cell{c[4]}" for c in CASES])
@pytest.mark.parametrize("filt", ["NDCELL", "NDMEAN"])
def test_same_bytes_and_both_directions(case, filt, tmp_path):
    shape, chunks, blocks, dtype, cell = case
    if filt == "NDMEAN" and dtype not in ("f4", "f8"):
        pytest.skip("NDMEAN is for floats")
    a = _data(shape, dtype)
    cp = {
        "filters": [getattr(blosc2.Filter, filt), blosc2.Filter.SHUFFLE],
        "filters_meta": [cell, 0],
        "codec": blosc2.Codec.ZSTD,
        "clevel": 5,
    }
    theirs = blosc2.asarray(
        a, chunks=chunks, blocks=blocks, cparams={**cp, "nthreads": 1}, urlpath=str(tmp_path / "theirs.b2nd"), mode="w"
    )
    ours = ox.asarray(
        a,
        chunks=chunks,
        blocks=blocks,
        urlpath=str(tmp_path / "ours.b2nd"),
        mode="w",
        cparams={**cp, "filters": [getattr(ox.Filter, filt), ox.Filter.SHUFFLE], "nthreads": 2},
    )
    assert ours.schunk.nchunks == theirs.schunk.nchunks
    for i in range(theirs.schunk.nchunks):
        assert ours.schunk.get_chunk(i) == theirs.schunk.get_chunk(i), f"chunk {i} differs"
    expected = theirs[...]
    if filt == "NDCELL":
        np.testing.assert_array_equal(expected, a)
    for nthreads in (1, 3):
        np.testing.assert_array_equal(
            ox.open(str(tmp_path / "theirs.b2nd"), dparams={"nthreads": nthreads})[...], expected
        )
    np.testing.assert_array_equal(ours[...], expected)
    np.testing.assert_array_equal(ours[1:4, ...], expected[1:4, ...])
    np.testing.assert_array_equal(blosc2.open(str(tmp_path / "ours.b2nd"))[...], expected)


def test_nd_filters_outside_arrays_are_clear_errors():
    with pytest.raises(ox.ChunkError, match="ndcell works on blocks of b2nd arrays"):
        ox.compress2(np.arange(1000, dtype="f4"), typesize=4, filters=[ox.Filter.NDCELL], filters_meta=[4])
    with pytest.raises(ox.ChunkError, match="ndmean works on float32 or float64"):
        ox.asarray(
            np.arange(100, dtype="i2").reshape(10, 10),
            chunks=(10, 10),
            blocks=(5, 5),
            cparams={"filters": [ox.Filter.NDMEAN], "filters_meta": [2]},
        )


def test_cli_writes_ndcell_arrays_python_blosc2_reads(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    exe = shutil.which("oxblosc", path=os.path.dirname(sys.executable))
    a = _data((200, 300), "f4")
    np.save(tmp_path / "a.npy", a)
    out = tmp_path / "a.b2nd"
    r = subprocess.run(
        [exe, "compress", "--filter", "ndcell:4", "--filter", "shuffle", str(tmp_path / "a.npy"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    b = blosc2.open(str(out))
    assert list(b.schunk.cparams.filters[:2]) == [blosc2.Filter.NDCELL, blosc2.Filter.SHUFFLE]
    assert list(b.schunk.cparams.filters_meta[:2]) == [4, 0]
    np.testing.assert_array_equal(b[...], a)
    r = subprocess.run(
        [exe, "compress", "--filter", "ndcell", str(tmp_path / "a.npy"), str(tmp_path / "b.b2nd")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0 and "needs a cell edge" in r.stderr


def test_ndmean_blocks_thinner_than_a_cell(tmp_path):
    """Blocks thinner than the cell in dimension 0 (3 rows, cells of 4): C-Blosc2's NDMEAN
    writes such chunks but refuses to read them back (its cells overlap and it checks that
    they tile the block). We write the same bytes, and read both files: each cell's mean
    scattered in cell order (a later cell wins an item), 0 where no cell reaches."""
    a = np.arange(12 * 12, dtype="f4").reshape(12, 12) * 0.5
    cp = {"filters": [blosc2.Filter.NDMEAN], "filters_meta": [4], "codec": blosc2.Codec.ZSTD, "nthreads": 1}
    theirs = blosc2.asarray(a, chunks=(12, 12), blocks=(3, 12), cparams=cp, urlpath=str(tmp_path / "t.b2nd"), mode="w")
    ours = ox.asarray(
        a,
        chunks=(12, 12),
        blocks=(3, 12),
        cparams={**cp, "filters": [ox.Filter.NDMEAN]},
        urlpath=str(tmp_path / "o.b2nd"),
        mode="w",
    )
    assert ours.schunk.get_chunk(0) == theirs.schunk.get_chunk(0)
    with pytest.raises(RuntimeError):
        theirs[...]
    # Cells of each 3-row block: origins at columns 0, 3, 6 (stepping by the block's 3
    # rows), 4 columns wide; columns 10-11 belong to no cell.
    expected = np.zeros_like(a)
    for r in range(0, 12, 3):
        for c in (0, 3, 6):
            expected[r : r + 3, c : c + 4] = a[r : r + 3, c : c + 4].mean(dtype="f4")
    for path in ("t.b2nd", "o.b2nd"):
        for nthreads in (1, 3):
            np.testing.assert_array_equal(ox.open(str(tmp_path / path), dparams={"nthreads": nthreads})[...], expected)
