"""``oxblosc.hdf5.Table.where`` on a PyTables table equals PyTables' own ``read_where``
(PyTables runs in its own process: it bundles its own HDF5)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
if importlib.util.find_spec("tables") is None:
    pytest.skip("PyTables (tables) is not installed", allow_module_level=True)

import oxblosc.hdf5 as oh5  # noqa: E402

CONDITIONS = [
    "(lat > 10) & (air < 280.5)",
    "air != air",  # NaN rows
    "(wind > 5) | ~(lat <= -30)",
    "name == b'st42'",
    "(name > b'st9') & (time % 7 == 3)",
    "lat > 1000",  # nothing
]

# PyTables writes the table (NaNs, a string column, an edge chunk), then answers each
# condition with read_where, whole and on rows 1234:3456, into one .npy per answer.
SCRIPT = r"""
import sys, numpy as np, tables
path, conds = sys.argv[1], sys.argv[2:]
n = 5003
rng = np.random.default_rng(3)
a = np.zeros(n, [("lat", "<i4"), ("time", "<i4"), ("air", "<f4"), ("wind", "<f8"), ("name", "S6")])
a["lat"] = rng.integers(-90, 91, n)
a["time"] = np.arange(n)
a["air"] = rng.uniform(250, 310, n).astype("f4")
a["air"][::97] = np.nan
a["wind"] = rng.uniform(0, 12, n)
a["name"] = [b"st%d" % (i % 150) for i in range(n)]
with tables.open_file(path, "w") as f:
    flt = tables.Filters(complevel=5, complib="blosc2:zstd", shuffle=True)
    t = f.create_table("/g", "t", obj=a, filters=flt, chunkshape=(700,), createparents=True)
    for i, c in enumerate(conds):
        np.save(f"{path}.{i}.npy", t.read_where(c))
        np.save(f"{path}.{i}.part.npy", t.read_where(c, start=1234, stop=3456))
        np.save(f"{path}.{i}.cols.npy", t.read_where(c, field="wind"))
"""


@pytest.mark.parametrize("nthreads", [1, 2])
def test_where_equals_pytables_read_where(tmp_path, nthreads):
    path = tmp_path / "t.h5"
    subprocess.run([sys.executable, "-c", SCRIPT, str(path), *CONDITIONS], check=True, timeout=120)
    with oh5.open(path, "/g/t", nthreads=nthreads) as t:
        for i, c in enumerate(CONDITIONS):
            want = np.load(f"{path}.{i}.npy")
            got = t.where(c)
            assert got.dtype == want.dtype, c
            assert got.tobytes() == want.tobytes(), c  # bytes: NaN rows compare equal
            part = np.load(f"{path}.{i}.part.npy")
            assert t.where(c, start=1234, stop=3456).tobytes() == part.tobytes(), c
            cols = t.where(c, columns=["wind", "name"])
            assert cols.dtype.names == ("wind", "name")
            np.testing.assert_array_equal(cols["wind"], np.load(f"{path}.{i}.cols.npy"), err_msg=c)
            np.testing.assert_array_equal(cols["name"], want["name"], err_msg=c)
        assert len(t.where("air != air")) == len(range(0, 5003, 97))
        with pytest.raises(KeyError, match="nope"):
            t.where("nope > 1")
        with pytest.raises(TypeError, match="not a mask"):
            t.where("lat + 1")
