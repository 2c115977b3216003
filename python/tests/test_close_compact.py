"""Closing a frame file written live compacts it (issue 14, "keep live files compact"): the
reopened ``cbytes`` is the bytes of its chunks, as in python-blosc2's file for the same
appends, and the file is as small as python-blosc2's."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import blosc2
import numpy as np
import oxblosc


def _one_chunk(lib, path: Path):
    s = lib.SChunk(chunksize=80000, urlpath=str(path), mode="w", cparams=lib.CParams(typesize=8))
    s.append_data(np.arange(10000, dtype="f8"))
    s.vlmeta["a"] = "hello"
    live = s.cbytes
    del s
    gc.collect()
    return live


def test_closed_schunk_cbytes_is_its_chunks(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.b2frame", tmp_path / "theirs.b2frame"
    live = _one_chunk(oxblosc, ours)
    _one_chunk(blosc2, theirs)
    mem = oxblosc.SChunk(chunksize=80000, cparams=oxblosc.CParams(typesize=8))
    mem.append_data(np.arange(10000, dtype="f8"))
    assert blosc2.open(str(ours)).cbytes == live == mem.cbytes == blosc2.open(str(theirs)).cbytes
    assert oxblosc.open(str(ours)).cbytes == live
    assert abs(os.path.getsize(ours) - os.path.getsize(theirs)) <= 16


def test_sessions_of_appends_and_updates_stay_compact(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    chunks = [rng.integers(0, 1000, 4096).astype("i8") for _ in range(40)]
    files = {}
    for lib in (oxblosc, blosc2):
        p = tmp_path / f"{lib.__name__}.b2frame"
        s = lib.SChunk(chunksize=4096 * 8, urlpath=str(p), mode="w", cparams={"typesize": 8})
        for c in chunks[:20]:
            s.append_data(c)
        del s
        s = lib.open(str(p), mode="a")
        for c in chunks[20:]:
            s.append_data(c)
        s.update_data(3, chunks[0], copy=True)
        del s
        gc.collect()
        files[lib.__name__] = p
    ours = blosc2.open(str(files["oxblosc"]))
    sizes = sum(len(ours.get_chunk(i)) for i in range(ours.nchunks))
    assert ours.cbytes == sizes == oxblosc.open(str(files["oxblosc"])).cbytes
    assert os.path.getsize(files["oxblosc"]) <= os.path.getsize(files["blosc2"]) + 64
    for i in range(ours.nchunks):
        want = chunks[0] if i == 3 else chunks[i]
        assert np.array_equal(np.frombuffer(ours.decompress_chunk(i), dtype="i8"), want)


def test_save_array_size_as_python_blosc2(tmp_path: Path) -> None:
    a = np.random.default_rng(0).integers(0, 1000, (300, 500)).astype("f8")
    ours = oxblosc.save_array(a, str(tmp_path / "ours.bl2"), mode="w")
    theirs = blosc2.save_array(a, str(tmp_path / "theirs.bl2"), mode="w")
    assert ours == os.path.getsize(tmp_path / "ours.bl2")
    assert abs(ours - theirs) <= 64, (ours, theirs)
    assert np.array_equal(blosc2.load_array(str(tmp_path / "ours.bl2")), a)


def test_unaligned_slab_writes_end_compact(tmp_path: Path) -> None:
    p = tmp_path / "slabs.b2nd"
    a = oxblosc.empty((4000, 100), dtype="f8", chunks=(1000, 100), blocks=(100, 100), urlpath=str(p), mode="w")
    data = np.round(np.sin(np.arange(400_000).reshape(4000, 100) / 300.0), 3)
    for i in range(0, 4000, 1024):
        a[i : i + 1024] = data[i : i + 1024]
    del a
    gc.collect()
    r = blosc2.open(str(p))
    stored = sum(len(r.schunk.get_chunk(i)) for i in range(r.schunk.nchunks))
    assert r.schunk.cbytes == stored
    assert os.path.getsize(p) <= stored + 1024
    assert np.array_equal(r[:], data)
