"""python-blosc2's process-wide names: ``Storage`` and the ``*_dflts`` dicts, ``IS_WASM``,
``set_releasegil``, ``print_versions`` (documented behaviour, the wheel as reference)."""

from __future__ import annotations

import dataclasses
import pathlib

import blosc2
import numpy as np
import oxblosc as ox
import pytest


def test_storage_fields_and_defaults_match_blosc2():
    assert [f.name for f in dataclasses.fields(ox.Storage)] == [f.name for f in dataclasses.fields(blosc2.Storage)]
    assert ox.storage_dflts == blosc2.storage_dflts
    assert ox.Storage().contiguous is False and ox.Storage(urlpath="x").contiguous is True
    assert ox.Storage(urlpath=pathlib.Path("d") / "x.b2nd").urlpath == str(pathlib.Path("d") / "x.b2nd")
    with pytest.warns(UserWarning, match="mode"):
        assert ox.Storage(mode=None).mode == "a"


def _plain(v):
    return [_plain(x) for x in v] if isinstance(v, list) else int(getattr(v, "value", v))


def test_param_defaults_match_blosc2():
    assert ox.dparams_dflts == {"nthreads": ox.nthreads}
    ours = {k: _plain(v) for k, v in ox.cparams_dflts.items() if k != "nthreads"}
    assert ours == {k: _plain(v) for k, v in blosc2.cparams_dflts.items() if k in ours}
    assert set(blosc2.cparams_dflts) == set(ox.cparams_dflts)
    assert ox.CParams(tuner=blosc2.Tuner.STUNE).tuner == ox.Tuner.STUNE
    # BTUNE: oxblosc's per-chunk tuner in SChunk/NDArray writes (test_chunk_tuner.py), not
    # in one-shot compress2.
    assert ox.SChunk(cparams={"tuner": ox.Tuner.BTUNE}).cparams.tuner == ox.Tuner.BTUNE
    with pytest.raises(ValueError, match="BTUNE"):
        ox.compress2(b"x" * 100, tuner=ox.Tuner.BTUNE)


def test_storage_object_in_constructors(tmp_path):
    p = str(tmp_path / "a.b2nd")
    a = ox.zeros((10,), dtype=np.int32, storage=ox.Storage(urlpath=p, mode="w", meta={"m": [1, 2]}))
    assert a.urlpath == p and a.contiguous and a.meta["m"] == [1, 2]
    assert blosc2.open(p).shape == (10,)
    s = ox.SChunk(chunksize=40, data=np.arange(10, dtype=np.int32), storage=ox.Storage(urlpath=str(tmp_path / "s")))
    assert s.contiguous and blosc2.open(str(tmp_path / "s")).nchunks == 1
    d = ox.SChunk(chunksize=40, storage=ox.Storage(urlpath=str(tmp_path / "d"), contiguous=False))
    assert not d.contiguous


def test_is_wasm_releasegil_print_versions(capsys):
    assert ox.IS_WASM is False
    old = ox.set_releasegil(True)
    assert old is False
    assert ox.set_releasegil(0) is True
    assert ox.set_releasegil(old) is False
    ox.print_versions()
    out = capsys.readouterr().out
    assert ox.__version__ in out and np.__version__ in out and "ZSTD" in out
