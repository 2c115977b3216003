"""oxblosc.Streamer over PyTables tables (1-D compound HDF5 datasets) stored with the Blosc2
and Blosc filters: PyTables ``tables.Table`` nodes (in PyTables' own process,
streamer_tables_side.py), ``oxblosc.hdf5.Table`` objects and h5py datasets, checked against
PyTables' and h5py's plain reads: ordered, unordered, cyclic, early break, a corrupt chunk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("tables")  # only its presence: PyTables runs in the side scripts' processes

import oxblosc as ox  # noqa: E402
import oxblosc.hdf5 as oh5  # noqa: E402

from .pytables_side import PT_CASES, rows_for  # noqa: E402
from .test_streamer import _stream_threads  # noqa: E402

HERE = Path(__file__).parent
# Tables PyTables stored with a Blosc or Blosc2 filter (the others are refused).
BLOSC_TABLES = [c[0] for c in PT_CASES if c[3] and c[3][0].startswith("blosc")]


def side(script: str, *args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_PLUGIN_PATH", "BLOSC2_FILTER")}
    r = subprocess.run(
        [sys.executable, str(HERE / script), *map(str, args)], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def pt_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("stt") / "pytables.h5"
    side("streamer_tables_side.py", "write", path)
    return path


def test_pytables_nodes_stream_like_pytables_reads(pt_file):
    got = side("streamer_tables_side.py", "stream", pt_file)
    for name in BLOSC_TABLES + ["nested_b2", "big_endian_b1", "carray_b2", "earray_b1"]:
        assert got.pop(name) == "ok", name
    assert "carray_fill" in got.pop("carray_fill")  # -1 fill and unwritten chunks: refused
    # Tables without a Blosc filter: refused, naming the node.
    for name in ("zlib", "none", "nested", "big_endian"):
        status = got.pop(name)
        assert status.startswith("refused:") and f"node /{name} is not" in status, status
    # PyTables' chunk-rule tables (empty): the Blosc2 ones stream nothing, the zlib ones are refused.
    assert got and all(v == "ok" or v.startswith("refused:") for v in got.values()), got


@pytest.mark.parametrize("name", BLOSC_TABLES + ["nested_b2", "big_endian_b1"])
def test_table_objects_and_h5py_datasets(pt_file, name):
    with h5py.File(pt_file, "r") as f:
        d = f[name]
        t = oh5.Table(d)
        want, plain = t[:], d[...]
        for source, expect in ((t, want), (d, plain)):
            s = ox.Streamer(source, nthreads=2)
            assert s.dtype == expect.dtype and s.block_rows == d.chunks[0]
            got = [(start, b.copy()) for start, b in s]
            assert [g[0] for g in got] == list(range(0, len(d), d.chunks[0]))
            assert np.array_equal(np.concatenate([g[1] for g in got]) if got else expect[:0], expect)
        if "b" in d.dtype.names:
            assert t.dtype["b"] == np.dtype("?")  # PyTables' bools, as oxblosc.hdf5.Table reads them
        # Unordered: every block exactly once.
        seen = {}
        for start, block in ox.Streamer(t, block_rows=61, ordered=False, nthreads=3, copy=True):
            assert start not in seen
            seen[start] = block
        assert sorted(seen) == list(range(0, len(d), 61))
        assert np.array_equal(np.concatenate([seen[k] for k in sorted(seen)]) if seen else want[:0], want)
        if len(d):
            # Cyclic, then an early break: the readers stop.
            starts = []
            for start, block in ox.Streamer(t, block_rows=200, cyclic=True, nthreads=2):
                np.testing.assert_array_equal(block, want[start : start + 200])
                starts.append(start)
                if len(starts) == 12:
                    break
            nblocks = -(-len(d) // 200)
            assert starts == [200 * (k % nblocks) for k in range(12)]
    assert _stream_threads() == 0


def test_tables_without_a_blosc_filter_are_refused(pt_file):
    with h5py.File(pt_file, "r") as f:
        for name in ("zlib", "none"):
            with pytest.raises(ValueError, match=name):
                ox.Streamer(oh5.Table(f[name]))


def test_table_oxblosc_wrote_streams_in_pytables(tmp_path):
    # A table written here (oxblosc.hdf5.create_table, Blosc filter), streamed in PyTables'
    # process from its tables.Table node as well as here.
    path = tmp_path / "ours.h5"
    rows = rows_for("b1_lz4", 2345)
    t = oh5.create_table(str(path), "/g/t", rows, filters=oh5.Blosc("zstd", 5), chunkshape=300)
    t.close()
    got = side("streamer_tables_side.py", "stream", path)
    assert got == {"g/t": "ok"}
    with h5py.File(path, "r") as f:
        blocks = [b.copy() for _, b in ox.Streamer(oh5.Table(f["g/t"]), block_rows=1000)]
    assert np.array_equal(np.concatenate(blocks), rows)


def test_corrupt_table_chunk_raises_at_its_place(pt_file, tmp_path):
    path = tmp_path / "bad.h5"
    shutil.copy(pt_file, path)
    name, crows = "b1_lz4", 128
    with h5py.File(path, "r+") as f:
        d = f[name]
        raw = d.id.read_direct_chunk((3 * crows,))[1]
        d.id.write_direct_chunk((3 * crows,), bytes(b ^ 0x5A for b in raw))
    want = rows_for(name, 1037)
    with h5py.File(path, "r") as f:
        got = []
        with pytest.raises(ox.ChunkError, match=rf"rows {3 * crows}\.\.{4 * crows} of .*bad\.h5.*HDF5 chunk \[3\]"):
            for _, block in ox.Streamer(oh5.Table(f[name]), nthreads=2):
                got.append(block.copy())
        assert len(got) == 3 and np.array_equal(np.concatenate(got), want[: 3 * crows])
    assert _stream_threads() == 0
    # The same from PyTables' node, in its process.
    r = side("streamer_tables_side.py", "corrupt", path, name)
    assert r["starts"] == [0, crows, 2 * crows] and r["threads"] == 0, r
    assert r["error"].startswith("ChunkError") and f"rows {3 * crows}..{4 * crows}" in r["error"], r


def test_table_appended_while_streaming_raises(tmp_path):
    # The chunk addresses are listed when the stream starts; rows appended then rewrite the
    # last chunk elsewhere and HDF5 reuses freed space: the blocks after the append fail
    # with OSError naming the file instead of reading whatever the old addresses now hold.
    got = side("streamer_tables_side.py", "append", tmp_path / "a.h5")
    assert got["first"] is True, got
    assert "a.h5" in got["error"] and "was written since" in got["error"], got


def test_a_new_loop_lists_a_written_table_again(tmp_path):
    # A second loop over the same Streamer after rows were appended used the first loop's
    # chunk addresses and failed with "was written since"; it now lists the chunks again
    # and reads the table as it is (950 rows, equal to PyTables' read).
    got = side("streamer_tables_side.py", "epochs", tmp_path / "e.h5")
    assert got == {"first": True, "second_rows": 950, "second": True}, got
