"""oxblosc.hdf5 writes: direct chunk writes of whole chunks give the bytes the filter writes
and every reader (h5py with hdf5plugin, in its own process) reads them; partial chunks go
through the filter; create_dataset and suggest_chunks shape datasets for the second partition."""

from __future__ import annotations

import math

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("hdf5plugin")

import oxblosc.hdf5 as oh5  # noqa: E402

from .hdf5_side import SHAPES, cases, data_for, dtype_of  # noqa: E402
from .test_hdf5 import side  # noqa: E402


def all_chunks(d):
    """{chunk offset: (filter mask, stored bytes)} of every written chunk."""
    out = {}
    for i in range(d.id.get_num_chunks()):
        info = d.id.get_chunk_info(i)
        out[info.chunk_offset] = d.id.read_direct_chunk(info.chunk_offset)
    return out


@pytest.mark.parametrize("nthreads", [1, 2])
def test_direct_writes_are_the_filters_bytes(tmp_path, nthreads):
    # Every case of the interop matrix (ranks 1-4 and 9, six dtypes, five codecs, Blosc and
    # Blosc2, pipelines), edge chunks included: written by h5py through the filter, and by
    # Dataset with direct chunk writes: the same chunks, byte for byte.
    with h5py.File(tmp_path / "f.h5", "w") as f, h5py.File(tmp_path / "d.h5", "w") as g:
        n = 0
        for name, dt, rank, opts in cases("ours"):
            shape, chunks = SHAPES[rank]
            data = data_for(name, dtype_of(dt), shape)
            a = f.create_dataset(name, shape=shape, dtype=data.dtype, chunks=chunks, **opts)
            a[...] = data
            b = g.create_dataset(name, shape=shape, dtype=data.dtype, chunks=chunks, **opts)
            ds = oh5.Dataset(b, nthreads=nthreads)
            ds[...] = data
            assert ds.chunks_written_direct == math.prod(-(-s // c) for s, c in zip(shape, chunks, strict=False)), name
            assert all_chunks(a) == all_chunks(b), name
            assert np.array_equal(b[...], data), name
            n += 1
    assert n > 60


def test_hdf5plugin_reads_direct_writes(tmp_path):
    # The same matrix written only by direct chunk writes; hdf5plugin's filters (C-Blosc2,
    # c-blosc) decode every dataset in their own process.
    path = tmp_path / "direct.h5"
    with h5py.File(path, "w") as f:
        for name, dt, rank, opts in cases("ours"):
            shape, chunks = SHAPES[rank]
            d = f.create_dataset(name, shape=shape, dtype=dtype_of(dt), chunks=chunks, **opts)
            d.attrs["dt"], d.attrs["rank"] = dt, rank
            oh5.Dataset(d)[...] = data_for(name, dtype_of(dt), shape)
    n = len(cases("ours"))
    assert side("read", "ref", path) == {"n": n, "bad": []}


def test_partial_and_whole_chunks_mixed(tmp_path):
    want = np.zeros((50, 70), "<f8")
    with h5py.File(tmp_path / "m.h5", "w") as f:
        d = f.create_dataset("x", shape=want.shape, dtype=want.dtype, chunks=(16, 32), **oh5.Blosc2("lz4", 5))
        ds = oh5.Dataset(d, nthreads=2)
        rng = np.random.default_rng(5)
        for key in [np.s_[:], np.s_[3:40, 5:66], np.s_[16:32], 7, np.s_[:, 69], np.s_[::3, 1], np.s_[48:, 64:]]:
            v = rng.normal(size=want[key].shape)
            ds[key] = v
            want[key] = v
            assert np.array_equal(ds[...], want), key
            assert np.array_equal(d[...], want), key
        # Broadcast values; a scalar over whole chunks and a partial box.
        ds[:32, :64] = 1.5
        want[:32, :64] = 1.5
        ds.write(np.s_[40:45], np.arange(70.0))
        want[40:45] = np.arange(70.0)
        assert np.array_equal(d[...], want)
        assert ds.chunks_written_direct > 0
    with h5py.File(tmp_path / "m.h5", "r") as f:
        with pytest.raises(OSError, match="read-only"):
            oh5.Dataset(f["x"])[0] = 1.0


def test_blosc1_chunks_that_do_not_compress_are_stored_as_hdf5_stores_them(tmp_path):
    # The Blosc filter is optional: HDF5 stores a chunk it refuses unfiltered (mask 1); so do we.
    noise = np.random.default_rng(0).integers(0, 256, (64, 64)).astype("u1")
    with h5py.File(tmp_path / "n.h5", "w") as f:
        a = f.create_dataset("a", shape=noise.shape, dtype="u1", chunks=(32, 64), **oh5.Blosc("lz4", 5))
        a[...] = noise
        b = f.create_dataset("b", shape=noise.shape, dtype="u1", chunks=(32, 64), **oh5.Blosc("lz4", 5))
        oh5.Dataset(b)[...] = noise
        assert all_chunks(a) == all_chunks(b)
        assert {m for m, _ in all_chunks(b).values()} == {1}
        assert np.array_equal(oh5.Dataset(b)[...], noise)


def test_create_dataset_big_chunks_and_given_blocks(tmp_path):
    data = (np.arange(300 * 200 * 3) // 7).astype("<i4").reshape(300, 200, 3)
    with h5py.File(tmp_path / "c.h5", "w") as f:
        ds = oh5.create_dataset(f, "auto", data=data, nthreads=2)
        s = oh5.suggest_chunks(data.shape, data.dtype)
        assert ds.chunks == s.chunks and ds.shape == data.shape and ds.dtype == data.dtype
        assert np.array_equal(f["auto"][...], data)
        # Given chunks and blocks: the blocks inside the stored chunks are those.
        ds = oh5.create_dataset(f, "given", data=data, chunks=(100, 200, 3), blocks=(16, 16, 3), codec="lz4")
        frame = f["given"].id.read_direct_chunk((0, 0, 0))[1]
        import oxblosc

        assert oxblosc.ndarray_from_cframe(frame).blocks == (16, 16, 3)
        assert np.array_equal(ds[...], data)
        # Blocks the filter would not make are refused, saying which it makes.
        with pytest.raises(ValueError, match="makes blocks"):
            oh5.create_dataset(f, "bad", data=data, chunks=(100, 200, 3), blocks=(10, 200, 3))
        # Options as Blosc2's; h5py's own keywords pass through.
        e = oh5.create_dataset(
            f, "e", shape=(0, 5), dtype="f4", chunks=(8, 5), maxshape=(None, 5), filters=["shuffle", "bytedelta"]
        )
        assert e.shape == (0, 5) and f["e"].maxshape == (None, 5)
        assert f["e"].id.get_create_plist().get_filter(0)[0] == 32026


@pytest.mark.parametrize("rank", range(1, 9))
def test_suggest_chunks_rules(rank):
    for itemsize in (1, 2, 4, 8, 16):
        dt = np.dtype(f"V{itemsize}")
        for shape in [(1,) * rank, (3,) * rank, (10**5,) * rank, (0,) + (7,) * (rank - 1)]:
            s = oh5.suggest_chunks(shape, dt, chunk_bytes=8 << 20, block_bytes=64 << 10)
            assert len(s.chunks) == len(s.blocks) == rank
            assert s.chunk_bytes == math.prod(s.chunks) * itemsize <= 8 << 20
            assert s.block_bytes == math.prod(s.blocks) * itemsize <= max(64 << 10, itemsize)
            assert all(1 <= b <= c for b, c in zip(s.blocks, s.chunks, strict=False)), s
            assert all(n == 0 or c <= n for c, n in zip(s.chunks, shape, strict=False)), s
            assert s.reason
    # Defaults from the caches; a huge target stays under the 4 GiB HDF5 chunk limit (and
    # Blosc's 2 GiB), chunk dims under 2**32.
    s = oh5.suggest_chunks((10**12,), "c16", chunk_bytes=1 << 40)
    assert s.chunk_bytes < 2**31 and s.chunks[0] < 2**32
    assert "L3" in oh5.suggest_chunks((10**6, 100), "f8").reason
    # Tiny: the whole dataset in one chunk.
    assert oh5.suggest_chunks((3, 2), "f4").chunks == (3, 2)
    for bad in [((), "f4"), ((-1,), "f4")]:
        with pytest.raises(ValueError):
            oh5.suggest_chunks(*bad)


def test_edge_chunks_are_padded_with_the_fill_value_as_hdf5_pads_them(tmp_path):
    data = np.arange(37 * 50, dtype="<i4").reshape(37, 50)
    with h5py.File(tmp_path / "p.h5", "w") as f:
        kw = dict(shape=data.shape, dtype="<i4", chunks=(16, 24), fillvalue=-7, **oh5.Blosc2("lz4", 5))
        a, b = f.create_dataset("a", **kw), f.create_dataset("b", **kw)
        a[...] = data
        oh5.Dataset(b)[...] = data
        assert all_chunks(a) == all_chunks(b)


def test_full_disk_during_direct_writes(small_tmpfs):
    """Direct chunk writes into a full 1 MiB tmpfs raise OSError; the chunks written before
    stay readable with their values (through h5py and through our reader)."""
    rng = np.random.default_rng(9)
    path = small_tmpfs / "full.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(64, 4096), dtype="<f8", chunks=(4, 4096), **oh5.Blosc2("lz4", 1))
        ds = oh5.Dataset(d)
        want = {}
        with pytest.raises(OSError):
            for i in range(0, 64, 4):  # incompressible: 128 KiB per chunk, 2 MiB in all
                v = rng.normal(size=(4, 4096))
                ds[i : i + 4] = v
                want[i] = v
        assert want, "the disk filled before the first chunk"
        for i, v in want.items():
            assert np.array_equal(ds[i : i + 4], v), i
            assert np.array_equal(d[i : i + 4], v), i
    # Closed with the disk full (HDF5 flushes its metadata then): reopened, the same values.
    with h5py.File(path, "r") as f:
        ds = oh5.Dataset(f["x"])
        for i, v in want.items():
            assert np.array_equal(ds[i : i + 4], v), i
