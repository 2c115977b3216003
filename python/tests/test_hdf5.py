"""oxblosc.hdf5 against real HDF5 (h5py's) and the reference filters (hdf5plugin), no mocks.

Both plugins own ids 32026/32001, so each side runs in its own process (``hdf5_side.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("hdf5plugin")

import oxblosc.hdf5 as oh5  # noqa: E402

SIDE = str(Path(__file__).with_name("hdf5_side.py"))


def side(mode: str, who: str, path: Path, **env) -> dict:
    r = subprocess.run(
        [sys.executable, SIDE, mode, who, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_ours_write_hdf5plugin_reads_and_back(tmp_path):
    ours, ref = tmp_path / "ours.h5", tmp_path / "ref.h5"
    cd_ours = side("write", "ours", ours)
    cd_ref = side("write", "ref", ref)
    # Same options give the same cd_values as hdf5plugin's filter records, up to chunk rank 8.
    # Above it hdf5plugin 7.1 (C-Blosc2 3.x, 16 dims) records the dims and writes b2nd frames
    # that PyTables (8 dims) refuses to decode; we keep PyTables' limit (plain frames, which both
    # read), so rank-9 cd_values are the first 7 slots only.
    common = set(cd_ours) & set(cd_ref)
    assert len(common) > 50
    for name in common:
        want = cd_ref[name][:7] if name.endswith("_r9") else cd_ref[name]
        assert cd_ours[name] == want, name
    # Every dataset decodes to the original through the other side's filter.
    r = side("read", "ref", ours)
    assert r == {"n": len(cd_ours), "bad": []}
    r = side("read", "ours", ref)
    assert r == {"n": len(cd_ref), "bad": []}
    # Blosc2 chunks are byte for byte hdf5plugin's (b2nd frames included), except with zlib
    # (zlib-rs is not zlib) and Blosc1's blosclz (c-blosc 1.x has an older BloscLZ).
    same = []
    with h5py.File(ours, "r") as o, h5py.File(ref, "r") as r:
        for name in sorted(common):
            if name.startswith("b2_") and "zlib" not in name and not name.endswith("_r9"):
                origin = (0,) * o[name].ndim
                same.append(o[name].id.read_direct_chunk(origin) == r[name].id.read_direct_chunk(origin))
    assert len(same) > 30 and all(same)


def test_plugin_path_alone_reads_in_an_h5py_process(tmp_path):
    # No register(): HDF5 loads the plugin from HDF5_PLUGIN_PATH; decoding calls no HDF5 API,
    # so it works even though h5py's HDF5 is not visible to the plugin. Both filters are
    # found (one library file each).
    path = tmp_path / "ours.h5"
    side("write", "ours", path)
    code = (
        "import h5py, sys\n"
        "f = h5py.File(sys.argv[1], 'r')\n"
        "ids = {d.id.get_create_plist().get_filter(0)[0] for d in f.values()}\n"
        "assert ids == {32001, 32026}, ids\n"
        "print(sum(int(d[...].size) for d in f.values()))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "HDF5_PLUGIN_PATH": oh5.PLUGIN_PATH},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 1000


def test_cd_values_match_the_published_layout(tmp_path):
    with h5py.File(tmp_path / "a.h5", "w") as f:
        d = f.create_dataset("x", shape=(40, 50, 60), dtype="f4", chunks=(20, 25, 30), **oh5.Blosc2("zstd", 3, 2))
        assert d.id.get_create_plist().get_filter(0)[:3] == (32026, 1, (1, 0, 4, 60000, 3, 2, 5, 3, 20, 25, 30))
        d = f.create_dataset("y", shape=(10**6,), dtype="i8", chunks=(500000,), **oh5.Blosc2("blosclz"))
        assert d.id.get_create_plist().get_filter(0)[2] == (1, 0, 8, 4000000, 5, 1, 0)
        d = f.create_dataset("z", shape=(7, 9), dtype="(3,)f8", chunks=(4, 4), **oh5.Blosc("zstd", 9, 2))
        # Array types record their base type size; chunk bytes count the whole element.
        assert d.id.get_create_plist().get_filter(0)[2] == (2, 2, 8, 384, 9, 2, 5)
        d[...] = np.arange(7 * 9 * 3, dtype="f8").reshape(7, 9, 3)
        assert np.array_equal(d[...], np.arange(7 * 9 * 3, dtype="f8").reshape(7, 9, 3))


def test_options_mirror_hdf5plugin():
    assert dict(oh5.Blosc2("lz4", 7, oh5.Blosc2.BITSHUFFLE)) == {
        "compression": 32026,
        "compression_opts": (0, 0, 0, 0, 7, 2, 1),
    }
    assert dict(oh5.Blosc()) == {"compression": 32001, "compression_opts": (0, 0, 0, 0, 5, 1, 1)}
    assert oh5.Blosc2().filter_options == (0, 0, 0, 0, 5, 1, 5)  # zstd by default
    # A pipeline goes into the extension, right-aligned so that it runs in the given order.
    opts = oh5.Blosc2(codec="zstd", filters=["shuffle", "bytedelta"], blocksize=1 << 16).filter_options
    assert opts[:7] == (0, 1 << 16, 0, 0, 5, 35, 5)
    assert opts[7:] == (0x4F580001, 0, 0, 0, 0, 1, 35, 0, 0, 0, 0, 0, 0, 4)
    for bad in (
        dict(codec="snappy"),
        dict(clevel=10),
        dict(filters=[1] * 7),
        dict(filters=[1, 2], filters_meta=[0]),
        dict(splitmode=9),
    ):
        with pytest.raises(ValueError):
            oh5.Blosc2(**bad)
    with pytest.raises(ValueError):
        oh5.Blosc("snappy")


def test_pipelines_need_chunk_ranks_2_to_8(tmp_path):
    # hdf5plugin's decoder refuses chunks whose cd_values have a slot 7 that is not a rank in
    # 2..8, so a pipeline on 1-D chunks is refused at creation instead of making unreadable files.
    with h5py.File(tmp_path / "p.h5", "w") as f:
        with pytest.raises(ValueError):
            f.create_dataset(
                "x", shape=(100,), dtype="f4", chunks=(10,), **oh5.Blosc2(filters=["shuffle", "bytedelta"])
            )
        f.create_dataset("y", shape=(100,), dtype="f4", chunks=(10,), **oh5.Blosc2(filters="bitshuffle"))


def test_module_prints_plugin_path():
    r = subprocess.run([sys.executable, "-m", "oxblosc.hdf5"], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == oh5.PLUGIN_PATH
    assert oh5.plugin_file().is_file()


@pytest.mark.parametrize("opts", [oh5.Blosc2("zstd", 5), oh5.Blosc2("lz4", 5), oh5.Blosc("lz4", 5)], ids=repr)
@pytest.mark.parametrize("rank", [1, 2])
def test_corrupt_chunks_raise_never_crash(tmp_path, opts, rank):
    shape, chunks = ((4000,), (1000,)) if rank == 1 else ((40, 100), (10, 100))
    data = (np.arange(4000) // 7).astype("<i8").reshape(shape)
    with h5py.File(tmp_path / "c.h5", "w") as f:
        d = f.create_dataset("x", data=data, chunks=chunks, **opts)
        origin = (0,) * rank
        mask, good = d.id.read_direct_chunk(origin)
        assert mask == 0
        bad = [
            good[: len(good) // 2],
            good[:10],
            good[:-1],
            good[:40] + bytes(len(good) - 40),
            bytes(b ^ 0x5A for b in good),
            b"\x00" * len(good),
        ]
        for raw in bad:
            d.id.write_direct_chunk(origin, raw)
            with pytest.raises(OSError):
                d[...]
        # The other chunks, and the good bytes put back, still read.
        d.id.write_direct_chunk(origin, good)
        assert np.array_equal(d[...], data)


def test_debian_hdf5_tools_read_and_write_through_plugin_path(tmp_path):
    # A C application on another HDF5 (Debian's 1.10.8): h5dump decodes our chunks, and
    # h5repack writes with our filter, its set_local finding HDF5 in the global namespace.
    import shutil

    if shutil.which("h5dump") is None or shutil.which("h5repack") is None:
        pytest.skip("Debian's hdf5-tools are not installed (`make test-python` installs them with apt)")
    env = {**os.environ, "HDF5_PLUGIN_PATH": oh5.PLUGIN_PATH}
    src, dst, out = tmp_path / "a.h5", tmp_path / "b.h5", tmp_path / "x.bin"
    x = (np.arange(20 * 30 * 4) // 5).astype("<f4").reshape(20, 30, 4)
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=x, chunks=(7, 8, 3), **oh5.Blosc2("zstd", 5, "bitshuffle"))
        f.create_dataset("plain", data=x.astype("<i8"), chunks=(7, 8, 4))
        f.create_dataset("b", data=x, chunks=(7, 8, 3), **oh5.Blosc("lz4", 5, oh5.Blosc.BITSHUFFLE))
    for name in ("x", "b"):
        cmd = ["h5dump", "-d", name, "-b", "LE", "-o", str(out), str(src)]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        assert np.array_equal(np.fromfile(out, "<f4").reshape(x.shape), x)
    filt = "/plain:UD=32026,0,7,0,0,0,0,5,1,1"
    subprocess.run(["h5repack", "-f", filt, str(src), str(dst)], env=env, check=True, capture_output=True)
    with h5py.File(dst, "r") as f:
        d = f["plain"]
        assert d.id.get_create_plist().get_filter(0)[2] == (1, 0, 8, 1792, 5, 1, 1, 3, 7, 8, 4)
        assert np.array_equal(d[...], x.astype("<i8"))


def test_register_takes_over_from_hdf5plugin_in_one_process(tmp_path):
    # Code that still imports hdf5plugin: after register() our classes serve both ids.
    code = (
        "import sys, hdf5plugin, h5py, numpy as np, oxblosc.hdf5 as oh5\n"
        "oh5.register()\n"
        "a = np.arange(1000.0).reshape(10, 100)\n"
        "with h5py.File(sys.argv[1], 'w') as f:\n"
        "    d = f.create_dataset('x', data=a, chunks=(5, 50), **oh5.Blosc2(filters=['shuffle', 'bytedelta']))\n"
        "    assert d.id.get_create_plist().get_filter(0)[3] == b'blosc2 (oxblosc)'\n"
        "    assert (d[...] == a).all()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "b.h5")], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
