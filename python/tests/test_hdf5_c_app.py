"""A real C HDF5 application (``hdf5_app.c``, built with ``cc`` against Debian's libhdf5-dev,
HDF5 1.10.8) writes and reads datasets through our filter plugin on HDF5_PLUGIN_PATH; h5py
checks the data both ways. ``make test-python`` installs libhdf5-dev (guarded)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import oxblosc.hdf5 as oh5  # noqa: E402

SRC = Path(__file__).with_name("hdf5_app.c")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    if shutil.which("cc") is None or shutil.which("pkg-config") is None:
        pytest.skip("no C compiler / pkg-config")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5"], capture_output=True, text=True)
    if flags.returncode != 0:
        pytest.skip("libhdf5-dev is not installed (`make test-python` installs it with apt)")
    exe = tmp_path_factory.mktemp("app") / "hdf5_app"
    subprocess.run(["cc", "-O1", "-o", str(exe), str(SRC), *flags.stdout.split()], check=True, timeout=120)
    return exe


def run(app, *args):
    env = {**os.environ, "HDF5_PLUGIN_PATH": oh5.PLUGIN_PATH}
    r = subprocess.run([str(app), *map(str, args)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout


def test_c_app_writes_with_our_filter_h5py_reads(app, tmp_path):
    path = tmp_path / "c.h5"
    run(app, "write", path)
    b2 = (np.arange(20 * 30 * 7, dtype="<f4") * 0.5).reshape(20, 30, 7)
    b1 = np.arange(1000, dtype="<i8") * 3
    oh5.register()  # h5py's side decodes with our filter too
    with h5py.File(path, "r") as f:
        # set_local ran inside the C application (HDF5 found in the global namespace).
        assert f["b2"].id.get_create_plist().get_filter(0)[:3] == (32026, 1, (1, 0, 4, 2048, 5, 1, 5, 3, 8, 16, 4))
        assert f["b1"].id.get_create_plist().get_filter(0)[0] == 32001
        assert np.array_equal(f["b2"][...], b2) and np.array_equal(f["b1"][...], b1)
        ds = oh5.Dataset(f["b2"])
        assert np.array_equal(ds[3:19, 1:29, 2], b2[3:19, 1:29, 2]) and ds.blocks_decoded > 0
        assert np.array_equal(oh5.Dataset(f["b1"])[5:999], b1[5:999])


def test_c_app_reads_our_filter_and_direct_writes(app, tmp_path):
    path = tmp_path / "h.h5"
    x = (np.arange(50 * 40) % 101 / 4).astype("<f4").reshape(50, 40)
    n = np.arange(1000, dtype="<i8") ** 2
    with h5py.File(path, "w") as f:
        f.create_dataset("filter", data=x, chunks=(16, 16), **oh5.Blosc2("zstd", 5, "bitshuffle"))
        d = f.create_dataset("direct", shape=x.shape, dtype=x.dtype, chunks=(16, 16), **oh5.Blosc2("lz4", 9))
        oh5.Dataset(d)[...] = x
        f.create_dataset("blosc", data=n, chunks=(128,), **oh5.Blosc("zstd", 5, oh5.Blosc.SHUFFLE))
    for name, want in [("filter", x), ("direct", x), ("blosc", n)]:
        out = tmp_path / f"{name}.bin"
        run(app, "read", path, name, out)
        assert np.array_equal(np.fromfile(out, want.dtype).reshape(want.shape), want), name
