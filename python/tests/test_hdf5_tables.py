"""PyTables tables both ways, on real files: PyTables (in its own process, pytables_side.py)
writes tables that oxblosc.hdf5.Table reads block by block; oxblosc writes tables that
PyTables opens, queries in-kernel and appends to, and we read PyTables' appended rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("tables")  # only its presence: PyTables runs in pytables_side.py's process

import oxblosc.hdf5 as oh5  # noqa: E402
from oxblosc.hdf5.table import pytables_chunkrows  # noqa: E402

from .pytables_side import APPENDED, DTYPE, ERA5, PT_CASES, compare, nested_rows, rows_for  # noqa: E402

SIDE = Path(__file__).with_name("pytables_side.py")


def pytables(mode: str, path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_PLUGIN_PATH", "BLOSC2_FILTER")}
    r = subprocess.run(
        [sys.executable, str(SIDE), mode, str(path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def pt_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pt") / "pytables.h5"
    return path, pytables("write", path)


def check_table(t, name: str, n: int) -> None:
    """Every way of reading equals the regenerated rows."""
    want = rows_for(name, n)
    assert len(t) == t.nrows == n and t.colnames == list(DTYPE.names) and t.columns == t.colnames
    assert t.dtype == DTYPE, (name, t.dtype)
    assert compare(t[:], want) and compare(t.read(), want), name
    if n == 0:
        assert t[:].shape == (0,) and t.col("f8").shape == (0,) and list(t.iterchunks()) == []
        return
    c = t.chunkshape[0]
    for key in (slice(3, n - 2), slice(c - 1, c + 1), slice(None, None, 7), slice(n - 1, 0, -3), slice(-5, None)):
        assert compare(t[key], want[key]), (name, key)
    for i in [i for i in (0, c - 1, c, n - 1, -1, -n) if -n <= i < n]:
        assert t[i] == want[i], (name, i)
    assert np.array_equal(t["f8"], want["f8"]) and np.array_equal(t.col("s"), want["s"])
    assert np.array_equal(t.col("v"), want["v"]) and np.array_equal(t["b"], want["b"]) and t["b"].dtype == bool
    two = t[["i4", "c"]]
    assert two.dtype.names == ("i4", "c") and np.array_equal(two["c"], want["c"])
    assert np.array_equal(t.read(2, n, 5, field="u8"), want["u8"][2:n:5])
    assert compare(t.read(1, n - 1, 3, field=["b", "s"]), want[1 : n - 1 : 3][["b", "s"]])
    coords = [n - 1, 0, min(c, n - 1), min(c, n - 1), min(n - 1, 2 * c + 3)]
    assert compare(t.read_coordinates(coords), want[coords]) and compare(t[np.array(coords)], want[coords])
    mask = want["t"] == 5
    assert compare(t[mask], want[mask])
    starts = [s for s, _ in t.iterchunks()]
    assert starts == list(range(0, n, c)) and compare(np.concatenate([r for _, r in t.iterchunks()]), want)
    assert sum(1 for _ in t) == n
    with pytest.raises(IndexError):
        t[n]
    with pytest.raises(KeyError, match="no column 'nope'"):
        t.col("nope")


def test_reads_tables_pytables_wrote(pt_file):
    path, info = pt_file
    seen = set()
    for name, n, crows, filt, _plain in PT_CASES:
        with oh5.open(path, "/" + name) as t:
            assert isinstance(t, oh5.Table) and t.chunkshape == (crows,) == (info["chunkshapes"][name],)
            assert t.title == f"title of {name}"
            check_table(t, name, n)
            kind = filt[0].split(":")[0] if filt else None
            # Blosc chunks are decoded by oxblosc (blocks counted); zlib and none by h5py.
            assert (t.filter_id is not None) == (kind in ("blosc2", "blosc")), name
            assert (t.blocks_decoded > 0) == (kind in ("blosc2", "blosc") and n > 0), name
            seen.add(t.filter_id)
    assert seen == {32026, 32001, None}
    with oh5.open(path, "/nested") as t:
        want = nested_rows(100)
        assert t.colnames == ["a", "n"] and t[:].dtype == want.dtype and (t[:] == want).all()
        assert (t.col("n") == want["n"]).all() and t[37] == want[37]
    with oh5.open(path, "/big_endian") as t:
        want = rows_for("big_endian", 150, 0, ERA5)
        assert t.dtype["lat"].byteorder == ">" and compare(t[:], want) and compare(t[60:70], want[60:70])
    # A plain dataset still opens as a Dataset.
    with h5py.File(path, "a") as f:
        f.create_dataset("plain", data=np.arange(10))
    with oh5.open(path, "/plain") as d:
        assert isinstance(d, oh5.Dataset)


def test_small_read_of_a_big_chunk_decodes_few_blocks(tmp_path):
    # One 1.3 MB chunk of ~17000 rows cut in Blosc2 blocks: a few rows decode one block.
    path = tmp_path / "big.h5"
    n = 40_000
    data = rows_for("big", n)
    with oh5.create_table(
        path, "/t", data, chunkshape=17_000, filters=oh5.Blosc2("lz4", 5, blocksize=32 * DTYPE.itemsize * 8)
    ) as t:
        pass
    with oh5.open(path, "/t") as t:
        assert compare(t[20_000:20_010], data[20_000:20_010])
        assert t.blocks_decoded == 1
        assert t[25_000] == data[25_000] and t.blocks_decoded == 2
        assert np.array_equal(t.col("f4"), data["f4"])
        assert t.blocks_decoded > 50


def our_cases():
    """(name, rows, create_table kwargs, sizes of the appends after creation)."""
    return [
        ("b2_default", 1037, {"chunkshape": 100}, []),
        ("b2_lz4_bit", 1037, {"chunkshape": 128, "filters": oh5.Blosc2("lz4", 5, filters="bitshuffle")}, [3, 200]),
        (
            "b2_pipeline",
            950,
            {"chunkshape": 100, "filters": oh5.Blosc2("zstd", 1, filters=["shuffle"])},
            [0, 1, 99, 100],
        ),
        ("b1_lz4", 700, {"chunkshape": 64, "filters": oh5.Blosc("lz4", 5)}, [64]),
        ("zlib", 500, {"chunkshape": 64, "filters": "zlib"}, [10]),
        ("none", 300, {"chunkshape": 64, "filters": None}, []),
        ("empty", 0, {"chunkshape": 100}, []),
        ("auto", 2500, {}, []),
        ("grp/sub/deep", 333, {"chunkshape": 70}, [70, 1]),
    ]


def test_pytables_opens_queries_and_appends_what_we_write(tmp_path):
    path = tmp_path / "ours.h5"
    sizes = {}
    for name, n, kw, appends in our_cases():
        first = n - sum(appends)
        t = oh5.create_table(path, "/" + name, rows_for(name, first), title=f"title of {name}", **kw)
        done = first
        for size in appends:
            t.append(rows_for(name, size, done))  # partial and whole chunks, direct and pipeline
            done += size
        assert len(t) == n and compare(t[:], rows_for(name, n))
        t.close()
        sizes[name] = n
    with h5py.File(path, "r") as f:
        assert f["auto"].chunks == (pytables_chunkrows(DTYPE.itemsize, 10_000, True),)
        assert f["auto"].chunks[0] >= 13981  # at least PyTables' base for Blosc2 (1 MiB)
        assert f["/"].attrs["CLASS"] == b"GROUP" and f["grp/sub"].attrs["CLASS"] == b"GROUP"
        assert f["b2_default"].id.get_create_plist().get_filter(0)[0] == 32026
    out = pytables("check", path)
    assert out["bad"] == [] and out["queried"] == 4 * len(sizes)
    # PyTables appended APPENDED rows to each (its optimized Blosc2 path for whole chunks).
    for name, n in sizes.items():
        with oh5.open(path, "/" + name) as t:
            assert len(t) == n + APPENDED
            check_table(t, name, n + APPENDED)


def test_direct_chunks_are_the_bytes_the_filter_writes(tmp_path):
    # The same rows through HDF5's pipeline (h5py writes, our filter encodes) and through
    # Table.append's direct chunk writes (3 threads): every stored chunk is byte-identical.
    path = tmp_path / "same.h5"
    data = rows_for("same", 1000)
    oh5.register(force=True)  # our filter encodes the pipeline's chunks (not hdf5plugin's)
    for filters in (oh5.Blosc2("zstd", 5), oh5.Blosc2("lz4", 9, filters="bitshuffle"), oh5.Blosc("zstd", 5)):
        with h5py.File(path, "w") as f:
            t = oh5.create_table(f, "direct", chunkshape=100, filters=filters, dtype=DTYPE, nthreads=3)
            t.append(data)
            p = f.create_dataset(
                "pipe", shape=(0,), maxshape=(None,), dtype=f["direct"].dtype, chunks=(100,), **filters
            )
            p.resize((1000,))
            p[:] = data.view(f["direct"].dtype)
            assert f["direct"].id.get_num_chunks() == p.id.get_num_chunks() == 10
            for k in range(10):
                a, b = f["direct"].id.read_direct_chunk((k * 100,)), p.id.read_direct_chunk((k * 100,))
                assert a == b, (filters, k)


def test_chunk_rule_is_pytables(pt_file):
    caches = tuple(pt_file[1]["caches"])  # py-cpuinfo's, as PyTables saw them
    for rowsize, expected, blosc2, rows in pt_file[1]["rules"]:
        assert pytables_chunkrows(rowsize, expected, blosc2, caches) == rows, (rowsize, expected, blosc2)
    # The L3 step: an L3 above the L2 is the chunk size (for Blosc2 only).
    assert pytables_chunkrows(32, 10**8, True, (1 << 20, 32 << 20)) == (32 << 20) // 32
    assert pytables_chunkrows(32, 10**8, False, (1 << 20, 32 << 20)) == 16384
    assert pytables_chunkrows(32, 10**12, True, (1 << 20, 4 << 30)) == (2**31 - 32) // 32


def test_write_errors_leave_the_table_as_it_was(tmp_path):
    path = tmp_path / "e.h5"
    oh5.create_table(path, "/t", rows_for("e", 150), chunkshape=100).close()
    with oh5.open(path, "/t") as t:  # read-only
        with pytest.raises(OSError, match="read-only"):
            t.append(rows_for("e", 10, 150))
    with h5py.File(path, "a") as f:
        t = oh5.Table(f["t"])
        with pytest.raises(ValueError, match="no column 'zz'"):
            t.append({"zz": [1, 2]})
        with pytest.raises(ValueError):
            t.append([("not", "a", "row")])
        assert len(t) == 150 and f["t"].attrs["NROWS"] == 150
        with pytest.raises(ValueError, match="already exists"):
            oh5.create_table(f, "t", dtype=DTYPE)
        with pytest.raises(ValueError, match="structured dtype"):
            oh5.create_table(f, "u", dtype="f8")
        with pytest.raises(ValueError, match="nested columns"):
            oh5.create_table(f, "u", dtype=[("a", "i4"), ("n", [("x", "f4")])])
    with oh5.open(path, "/t") as t:
        assert compare(t[:], rows_for("e", 150))


def test_whole_chunks_bypass_the_filter_pipeline(tmp_path, monkeypatch):
    # Appends of whole, aligned chunks never write through HDF5's pipeline (direct chunk
    # writes); a partial chunk does. Rows that fail to be written are not added.
    path = tmp_path / "direct.h5"
    data = rows_for("direct", 300)
    pipeline = []

    def no_pipeline(self, start, rows):
        pipeline.append((start, len(rows)))
        raise OSError("pipeline write refused by the test")

    with h5py.File(path, "w") as f:
        t = oh5.create_table(f, "t", dtype=DTYPE, chunkshape=100, nthreads=2)
        with monkeypatch.context() as m:
            m.setattr(oh5.Table, "_write_rows", no_pipeline)
            t.append(data[:200])
            with pytest.raises(OSError, match="refused"):
                t.append(data[200:250])
        assert pipeline == [(200, 50)]
        assert len(t) == 200 and f["t"].attrs["NROWS"] == 200 and f["t"].shape == (200,)
        t.append(data[200:])
    with oh5.open(path, "/t") as t:
        assert compare(t[:], data)


def test_incompressible_blosc_chunks_are_stored_raw(tmp_path):
    # Blosc (32001) refuses to store a chunk it cannot shrink; as HDF5 does with an optional
    # filter, the direct write then stores the rows raw with the filter's mask bit set.
    path = tmp_path / "raw.h5"
    rows = np.zeros(300, [("a", "<u8"), ("b", "<u8")])
    rng = np.random.default_rng(5)
    rows["a"], rows["b"] = rng.integers(0, 2**63, 300), rng.integers(0, 2**63, 300)
    oh5.create_table(path, "/t", rows, chunkshape=100, filters=oh5.Blosc("lz4", 5)).close()
    with h5py.File(path, "r") as f:
        assert [f["t"].id.get_chunk_info(i).filter_mask for i in range(3)] == [1, 1, 1]
        assert (f["t"][:] == rows).all()
    with oh5.open(path, "/t") as t:
        assert (t[:] == rows).all() and (t[150:160] == rows[150:160]).all()
