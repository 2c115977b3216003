"""PyTables as a peer for HDF5 arrays, both directions: PyTables' Blosc2/Blosc CArrays and
EArrays read by our filter and by the optimized Dataset path; our filter's datasets and our
direct chunk writes read by PyTables. PyTables bundles its own HDF5, so it runs in its own
process (``tables_side.py``), never importing tables next to h5py."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
if importlib.util.find_spec("tables") is None:
    pytest.skip("PyTables (tables) is not installed", allow_module_level=True)

import oxblosc.hdf5 as oh5  # noqa: E402

from .hdf5_side import SHAPES, cases, data_for, dtype_of, expected  # noqa: E402
from .test_hdf5 import side  # noqa: E402
from .test_hdf5_dataset import NOT_IN_H5PY, keys_for  # noqa: E402

TABLES_SIDE = str(Path(__file__).with_name("tables_side.py"))


def tables_side(mode: str, path: Path):
    r = subprocess.run(
        [sys.executable, TABLES_SIDE, mode, str(path)], capture_output=True, text=True, timeout=300, cwd=path.parent
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_pytables_arrays_read_by_our_filter_and_dataset(tmp_path):
    path = tmp_path / "pt.h5"
    names = tables_side("write", path)
    assert len(names) == 40
    # Our filter (registered alone in its process) decodes every chunk through h5py.
    assert side("read", "ours", path) == {"n": 40, "bad": []}
    # The optimized path: every key equals the regenerated data (and h5py's reads).
    with h5py.File(path, "r") as f:
        seen, decoded = set(), 0
        for name in names:
            d = f[name]
            want = expected(name, d.attrs["dt"], int(d.attrs["rank"]))
            ds = oh5.Dataset(d, nthreads=2)
            seen.add(ds.filter_id)
            for key in keys_for(d.shape):
                assert np.array_equal(ds[key], want[key]), (name, key)
                if not NOT_IN_H5PY(key):
                    assert np.array_equal(ds[key], d[key]), (name, key)
            decoded += ds.blocks_decoded > 0
    assert seen == {32026, 32001}
    # Blosc leaves chunks it cannot shrink (120-byte u1 chunks) unfiltered: h5py reads those.
    assert decoded >= 36, decoded


def test_a_row_of_a_big_pytables_chunk_reads_few_bytes(tmp_path):
    path = tmp_path / "big.h5"
    script = (
        "import sys, tables, numpy as np\n"
        "a = (np.arange(2048 * 2048) // 3 % 5000).astype('<f4').reshape(2048, 2048)\n"
        "with tables.open_file(sys.argv[1], 'w') as f:\n"
        "    flt = tables.Filters(complevel=5, complib='blosc2:lz4', shuffle=True)\n"
        "    f.create_carray('/', 'x', obj=a, chunkshape=(2048, 2048), filters=flt)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120)
    a = (np.arange(2048 * 2048) // 3 % 5000).astype("<f4").reshape(2048, 2048)
    with oh5.open(path, "x", nthreads=1) as ds:
        with h5py.File(path, "r") as f:
            stored = f["x"].id.get_chunk_info(0).size
        assert np.array_equal(ds[700, 5:9], a[700, 5:9])
        assert ds.blocks_decoded == 1
        assert 0 < ds.bytes_read < stored // 20, (ds.bytes_read, stored)
        assert np.array_equal(ds[100:103], a[100:103])


def test_pytables_reads_our_filter_and_our_direct_writes(tmp_path):
    ours = tmp_path / "ours.h5"
    n = len(side("write", "ours", ours))
    r = tables_side("read", ours)
    # Compound datasets of rank > 1 are Tables to PyTables, which reads them only as 1-D.
    assert r["bad"] == [] and r["n"] + len(r["skipped"]) == n and len(r["skipped"]) <= 4, r
    direct = tmp_path / "direct.h5"
    with h5py.File(direct, "w") as f:
        for name, dt, rank, opts in cases("ours"):
            shape, chunks = SHAPES[rank]
            d = f.create_dataset(name, shape=shape, dtype=dtype_of(dt), chunks=chunks, **opts)
            d.attrs["dt"], d.attrs["rank"] = dt, rank
            ds = oh5.Dataset(d, nthreads=2)
            ds[...] = data_for(name, dtype_of(dt), shape)
            assert ds.chunks_written_direct > 0
    r = tables_side("read", direct)
    assert r["bad"] == [] and r["n"] + len(r["skipped"]) == n, r
