"""oxblosc.hdf5.Dataset on real HDF5 files: every read equals h5py's and the regenerated data,
whichever filter wrote the chunks (hdf5plugin's, in its own process, or ours), and a small
slice of a big chunk decodes only the blocks it touches."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("hdf5plugin")

import oxblosc  # noqa: E402
import oxblosc.hdf5 as oh5  # noqa: E402

from .hdf5_side import expected  # noqa: E402
from .test_hdf5 import side  # noqa: E402


def keys_for(shape):
    """Basic and not-so-basic keys: whole, interior boxes across chunks, edge chunks, ints
    (negative too), steps (negative too), index lists, Ellipsis."""
    n0 = shape[0]
    keys = [
        (),
        Ellipsis,
        tuple(slice(1, n - 1) for n in shape),
        tuple(slice(n // 3, n) for n in shape),
        n0 - 1,
        -n0,
        (slice(None, None, 3),),
        (slice(None, None, -2),),
        (Ellipsis, 0),
        (slice(2, 2),),
    ]
    if n0 > 3:
        keys.append(([0, 2, n0 - 1],))
    if len(shape) > 1:
        keys.append((1, slice(None), *(shape[2:] and [-1])))
    return keys


def NOT_IN_H5PY(key) -> bool:  # noqa: N802 - a predicate constant
    """h5py refuses negative steps (NumPy's answer, `want[key]`, is still checked)."""
    return any(isinstance(k, slice) and (k.step or 1) < 0 for k in (key if isinstance(key, tuple) else (key,)))


def check_file(path, who):
    """Every dataset of `path`, every key: Dataset == h5py == the data regenerated."""
    seen = {32026: 0, 32001: 0}
    with h5py.File(path, "r") as f:
        for name, d in f.items():
            want = expected(name, d.attrs["dt"], int(d.attrs["rank"]))
            # Two threads while f.items() holds h5py's lock: decoding must not need it.
            ds = oh5.Dataset(d, nthreads=2)
            assert ds.shape == d.shape and ds.dtype == d.dtype and ds.chunks == d.chunks
            assert ds.filter_id in seen, (who, name)
            seen[ds.filter_id] += 1
            for key in keys_for(d.shape):
                got = ds[key]
                assert got.dtype == want.dtype, (who, name, key)
                assert np.array_equal(got, want[key]), (who, name, key)
                if not NOT_IN_H5PY(key):
                    assert np.array_equal(got, d[key]), (who, name, key)
            # Whole reads decoded blocks here, not through h5py.
            assert ds.blocks_decoded > 0, (who, name)
            ds.close()
    assert seen[32026] > 30 and seen[32001] > 10, seen


def test_reads_equal_h5py_for_hdf5plugin_files(tmp_path):
    # hdf5plugin (C-Blosc2 / c-blosc) writes every case in its own process: ranks 1-4 and 9,
    # six dtypes (compound, strings), five codecs, shuffle/bitshuffle/delta, Blosc and Blosc2.
    side("write", "ref", tmp_path / "ref.h5")
    check_file(tmp_path / "ref.h5", "hdf5plugin")


def test_reads_equal_h5py_for_our_files(tmp_path):
    # Ours add filter pipelines (shuffle + bytedelta, delta + shuffle) and a forced block size.
    side("write", "ours", tmp_path / "ours.h5")
    check_file(tmp_path / "ours.h5", "ours")


def b2nd_blocks(d, start):
    """The block shape inside one stored Blosc2 chunk (its b2nd metalayer)."""
    return oxblosc.ndarray_from_cframe(d.id.read_direct_chunk(start)[1]).blocks


@pytest.mark.parametrize("who", ["ours", "hdf5plugin"])
def test_a_row_of_a_big_chunk_decodes_only_its_blocks(tmp_path, who):
    # C-Blosc2 (hdf5plugin) makes 256 x 256 blocks of float32 at lz4 level 5: take a 4 MB
    # chunk to have 16 of them; ours with 16 KiB blocks make 64 x 64 blocks of a 256 KB chunk.
    n = 256 if who == "ours" else 1024
    path = tmp_path / "big.h5"
    # Written in its own process, as hdf5plugin's side must be (both own filter 32026).
    module, extra = ("oxblosc.hdf5", "blocksize=16384") if who == "ours" else ("hdf5plugin", "")
    script = (
        f"import sys, h5py, numpy as np\nfrom {module} import Blosc2\n"
        f"a = np.random.default_rng(1).integers(0, 1000, ({n}, {n})).astype('<f4')\n"
        "with h5py.File(sys.argv[1], 'w') as f:\n"
        f"    f.create_dataset('x', data=a, chunks=({n}, {n}), **Blosc2('lz4', 5, {extra}))\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120)
    a = np.random.default_rng(1).integers(0, 1000, (n, n)).astype("<f4")
    with h5py.File(path, "r") as f:
        d = f["x"]
        blocks = b2nd_blocks(d, (0, 0))
        nblocks = (n // blocks[0]) * (n // blocks[1])
        assert nblocks >= 16, blocks
        stored = d.id.get_chunk_info(0).size
        ds = oh5.Dataset(d, nthreads=1)
        assert np.array_equal(ds[100], a[100])
        # One row crosses one row of blocks, not the chunk's all; only those are read.
        assert ds.blocks_decoded == n // blocks[1] < nblocks
        assert ds.bytes_read < stored // 2, (ds.bytes_read, stored)
        before, read = ds.blocks_decoded, ds.bytes_read
        assert np.array_equal(ds[7, 3:5], a[7, 3:5])
        assert ds.blocks_decoded - before == 1
        assert ds.bytes_read - read < stored // 8, (ds.bytes_read - read, stored)
        before = ds.blocks_decoded
        assert np.array_equal(ds[...], a)
        assert ds.blocks_decoded - before == nblocks


@pytest.mark.parametrize("opts", [oh5.Blosc2("lz4", 5, blocksize=4096), oh5.Blosc("lz4", 5)], ids=repr)
def test_flat_chunks_decode_only_their_blocks(tmp_path, opts):
    # Rank-1 Blosc2 chunks and Blosc1 chunks have flat blocks: a few items touch one block.
    a = (np.arange(100_000) // 3).astype("<i8")
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=a, chunks=(50_000,), **opts)
    with h5py.File(tmp_path / "f.h5", "r") as f:
        ds = oh5.Dataset(f["x"])
        assert np.array_equal(ds[60_010:60_020], a[60_010:60_020])
        assert ds.blocks_decoded == 1
        assert np.array_equal(ds[49_990:50_010], a[49_990:50_010])
        assert ds.blocks_decoded == 3  # the last block of chunk 0, the first of chunk 1


def test_other_ways_to_the_chunks(tmp_path):
    # Writable files (HDF5 may hold newer chunks in memory: flushed first), in-memory files,
    # unfiltered chunks, chunks never written and other filters all read right.
    a = (np.arange(60 * 70) % 97).astype("<i2").reshape(60, 70)
    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=a, chunks=(16, 32), **oh5.Blosc2("zstd", 5))
        f.create_dataset("g", data=a, chunks=(16, 32), compression="gzip")
        e = f.create_dataset("e", shape=(60, 70), dtype="<i2", chunks=(16, 32), fillvalue=-3, **oh5.Blosc("lz4", 5))
        e[20:40, 10:50] = a[20:40, 10:50]
        for name in ("x", "e"):
            ds = oh5.Dataset(f[name])
            assert ds._path is not None  # a writable sec2 file: read from the file too
            assert np.array_equal(ds[5:50, 7:69], f[name][5:50, 7:69])
        want_e = np.full((60, 70), -3, "<i2")
        want_e[20:40, 10:50] = a[20:40, 10:50]
        assert np.array_equal(oh5.Dataset(f["e"])[...], want_e)
        assert oh5.Dataset(f["g"]).filter_id is None
        assert np.array_equal(oh5.Dataset(f["g"])[3:9], a[3:9])
    with oh5.open(path, "x") as ds:
        assert ds._path is not None
        assert np.array_equal(ds[...], a)
    with h5py.File("mem.h5", "w", driver="core", backing_store=False) as f:
        f.create_dataset("x", data=a, chunks=(16, 32), **oh5.Blosc2("lz4", 5))
        ds = oh5.Dataset(f["x"], nthreads=2)
        assert ds._path is None  # through read_direct_chunk
        assert np.array_equal(ds[1:59, 2:68], a[1:59, 2:68]) and ds.blocks_decoded > 0


@pytest.mark.parametrize("opts", [oh5.Blosc2("zstd", 5), oh5.Blosc("lz4", 5)], ids=repr)
@pytest.mark.parametrize("rank", [1, 2])
def test_corrupt_chunks_raise_never_crash(tmp_path, opts, rank):
    shape, chunks = ((4000,), (1000,)) if rank == 1 else ((40, 100), (10, 100))
    data = (np.arange(4000) // 7).astype("<i8").reshape(shape)
    origin = (0,) * rank
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        good = f.create_dataset("x", data=data, chunks=chunks, **opts).id.read_direct_chunk(origin)[1]
    bad = [
        good[: len(good) // 2],
        good[:10],
        good[:-1],
        good[:40] + bytes(len(good) - 40),
        bytes(b ^ 0x5A for b in good),
        b"\x00" * len(good),
    ]
    for raw in bad:
        shutil.copy(path, tmp_path / "bad.h5")
        with h5py.File(tmp_path / "bad.h5", "r+") as f:
            f["x"].id.write_direct_chunk(origin, raw)
        with h5py.File(tmp_path / "bad.h5", "r") as f:
            ds = oh5.Dataset(f["x"])
            with pytest.raises(ValueError, match="chunk"):
                ds[...]
            # Small reads fail or give the right shape; the other chunks still read.
            try:
                assert ds[(0,) * rank].shape == ()
            except ValueError:
                pass
            assert np.array_equal(ds[chunks[0] :], data[chunks[0] :])


def test_a_few_items_of_a_32_mib_chunk_read_a_few_kilobytes(tmp_path):
    # The seed's case: a 32 MiB HDF5 chunk (C-Blosc2 via hdf5plugin makes 2048 blocks of it);
    # a few items read the frame and chunk headers, the block-offset table and one block.
    path = tmp_path / "big.h5"
    script = (
        "import sys, h5py, numpy as np\nfrom hdf5plugin import Blosc2\n"
        "a = (np.arange(2048 * 4096) // 3 % 5000).astype('<f4').reshape(2048, 4096)\n"
        "with h5py.File(sys.argv[1], 'w') as f:\n"
        "    f.create_dataset('x', data=a, chunks=(2048, 4096), **Blosc2('lz4', 5))\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120)
    a = (np.arange(2048 * 4096) // 3 % 5000).astype("<f4").reshape(2048, 4096)
    with oh5.open(path, "x", nthreads=1) as ds:
        with h5py.File(path, "r") as f:
            stored = f["x"].id.get_chunk_info(0).size
        assert np.array_equal(ds[1000, 17:20], a[1000, 17:20])
        assert ds.blocks_decoded == 1
        # The block-offset table alone is 4 bytes a block: well under 1% of the chunk.
        assert 0 < ds.bytes_read < stored // 100, (ds.bytes_read, stored)
        assert np.array_equal(ds[5:7, 4000:], a[5:7, 4000:])
        assert np.array_equal(ds[:, 4095], a[:, 4095])


def test_io_failures_raise_oserror_naming_file_dataset_chunk_offset(tmp_path):
    a = np.random.default_rng(3).integers(0, 1 << 20, (512, 512)).astype("<i4")
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=a, chunks=(512, 512), **oh5.Blosc2("lz4", 5, blocksize=16384))
    with oh5.open(path, "x") as ds:
        assert np.array_equal(ds[3, :7], a[3, :7])
        assert ds.bytes_read < path.stat().st_size // 8  # the lazy path
        size = path.stat().st_size
        with h5py.File(path, "r") as f:
            info = f["x"].id.get_chunk_info(0)
        # Corrupted block bytes (the end of the chunk: the last rows' blocks): a ChunkError,
        # a ValueError, naming the chunk.
        good = path.read_bytes()
        end = info.byte_offset + info.size
        path.write_bytes(good[: end - 3000] + bytes(b ^ 0x5A for b in good[end - 3000 : end]) + good[end:])
        with pytest.raises(ValueError, match=r"chunk at \(0, 0\)") as e:
            ds[511, :]
        assert isinstance(e.value, oxblosc.ChunkError)
        path.write_bytes(good)
        assert np.array_equal(ds[511, :], a[511, :])
        # Truncated under us (the chunk is the last thing HDF5 wrote before its metadata).
        with h5py.File(path, "r") as f:
            addr = f["x"].id.get_chunk_info(0).byte_offset
        os.truncate(path, addr + 1000)
        with pytest.raises(OSError) as e:
            ds[500, :]
        msg = str(e.value)
        assert "t.h5" in msg and "/x" in msg and "chunk at (0, 0)" in msg and f"byte {addr}" in msg, msg
        assert not isinstance(e.value, ValueError)
        # Replaced under us by another file: not decoded as if it were ours.
        os.truncate(path, 0)
        os.remove(path)
        path.write_bytes(b"\0" * size)
        with pytest.raises(OSError, match="replaced"):
            ds[500, :]


def test_the_chunk_cache_follows_resizes_and_writes(tmp_path):
    path = tmp_path / "g.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(10, 8), maxshape=(None, 8), dtype="<i4", chunks=(4, 8), **oh5.Blosc2())
        d[...] = np.arange(80).reshape(10, 8)
        ds = oh5.Dataset(d)
        assert np.array_equal(ds[8:], np.arange(64, 80).reshape(2, 8))
        d.resize((14, 8))
        d[10:] = 7
        # h5py resized and wrote behind our back: shape and chunk addresses are read again.
        assert ds.shape == (14, 8)
        assert np.array_equal(ds[9:], np.r_[np.arange(72, 80).reshape(1, 8), np.full((4, 8), 7)])


def test_writable_files_read_blocks_lazily_and_see_every_write(tmp_path):
    """On a file open "r+" chunks are read block by block from the file too: what h5py still
    holds in HDF5's chunk cache is flushed first, and chunks rewritten in place (same address
    and size) have their headers read again."""
    path = tmp_path / "w.h5"
    a = np.random.default_rng(5).integers(0, 1 << 20, (512, 512)).astype("<i4")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", data=a, chunks=(256, 512), **oh5.Blosc2("lz4", 5, blocksize=16384))
        ds = oh5.Dataset(d)
        assert np.array_equal(ds[3, :7], a[3, :7])
        assert 0 < ds.bytes_read < d.id.get_chunk_info(0).size // 8  # the lazy path
        for k in range(3):
            # Written through h5py (a 512 KiB chunk: HDF5's cache keeps it until flushed), then
            # through our direct chunk write, then by h5py again with the same bytes' size.
            a[100 + k, :] = -k - 1
            d[100 + k, :] = -k - 1
            assert np.array_equal(ds[95:110, 250:260], a[95:110, 250:260]), k
            a[200:210] = k
            ds[:, :] = a
            assert np.array_equal(ds[195:215, :3], a[195:215, :3]), k
        before = ds.bytes_read
        assert np.array_equal(ds[511, 500:], a[511, 500:])
        assert ds.bytes_read - before < d.id.get_chunk_info(0).size // 8
