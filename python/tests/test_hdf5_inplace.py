"""Reads of the HDF5 second partition decode straight into the output array when a chunk's
part is C-contiguous in it, and through a reused scratch buffer otherwise; both equal h5py."""

from __future__ import annotations

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import oxblosc.hdf5 as oh5  # noqa: E402

ROW = np.dtype([("t", "<i8"), ("lat", "<f4"), ("name", "S5"), ("v", "<f8")])


def _files(tmp_path):
    rng = np.random.default_rng(7)
    table = np.zeros(1000, ROW)
    table["t"] = np.arange(1000)
    table["lat"] = rng.normal(size=1000).astype("f4")
    table["lat"][::17] = np.nan
    table["name"] = [b"n%d" % (i % 300) for i in range(1000)]
    table["v"] = np.linspace(0, 1, 1000)
    a2 = rng.integers(0, 50, (70, 45)).astype("f4")
    a3 = np.arange(30 * 20 * 14, dtype="i2").reshape(30, 20, 14)
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        # Edge chunks in every dim; a flat (rank-1) filter layout and b2nd ones.
        f.create_dataset("t", data=table, chunks=(128,), **oh5.Blosc2("lz4", 5, blocksize=512))
        f.create_dataset("a2", data=a2, chunks=(16, 20), **oh5.Blosc2("zstd", 5))
        f.create_dataset("a3", data=a3, chunks=(8, 20, 14), **oh5.Blosc("lz4", 5))
        f.create_dataset("a3b", data=a3, chunks=(8, 6, 5), **oh5.Blosc2("lz4", 5))
    return path


# (key, whether every chunk part is C-contiguous in the output)
CASES = {
    "t": [(np.s_[:], True), (np.s_[128:512], True), (np.s_[100:900], True), (np.s_[5:6], True)],
    "a2": [
        (np.s_[:], False),
        (np.s_[16:48], False),
        (np.s_[16:48, 20:40], True),
        (np.s_[3:60, 5:30], False),
        (np.s_[:, 20:40], False),
    ],
    "a3": [(np.s_[:], True), (np.s_[8:16], True), (np.s_[2:29, 1:19, 3:4], False), (np.s_[:, 5], False)],
    "a3b": [(np.s_[:], False), (np.s_[0:8, :, 10:], False), (np.s_[7:8, 3:4, 0:5], True)],
}


@pytest.mark.parametrize("mode", ["r", "r+"])  # read from the file by us / via read_direct_chunk
@pytest.mark.parametrize("nthreads", [1, 2])
def test_reads_equal_h5py_in_place_or_not(tmp_path, mode, nthreads):
    path = _files(tmp_path)
    with h5py.File(path, mode) as f:
        for name, cases in CASES.items():
            d = oh5.Dataset(f[name], nthreads=nthreads)
            for key, contiguous in cases:
                before, decoded = d.parts_in_place, d.blocks_decoded
                got = d[key]
                want = f[name][key]
                assert got.dtype == want.dtype and got.shape == want.shape, (name, key)
                assert got.tobytes() == want.tobytes(), (name, key)  # bytes: NaN rows compare equal
                assert d.blocks_decoded > decoded, (name, key)
                in_place = d.parts_in_place - before
                if contiguous:
                    assert in_place > 0, (name, key)
                # Chunks spanning every trailing dim: each chunk of a full read is in place.
                if name == "a3" and key == np.s_[:]:
                    assert in_place == len(range(0, 30, 8)), in_place


def test_a_non_contiguous_part_never_writes_in_place(tmp_path):
    path = _files(tmp_path)
    with h5py.File(path, "r") as f:
        d = oh5.Dataset(f["a2"], nthreads=1)
        got = d[3:60, 5:30]
        assert d.parts_in_place == 0
        np.testing.assert_array_equal(got, f["a2"][3:60, 5:30])


def test_table_rows_decode_in_place(tmp_path):
    path = _files(tmp_path)
    with h5py.File(path, "r") as f:
        d = oh5.Dataset(f["t"], nthreads=1)
        got = d[:]
        assert d.parts_in_place == len(range(0, 1000, 128))
        assert got.tobytes() == f["t"][:].tobytes()  # NaN rows compare as bytes
