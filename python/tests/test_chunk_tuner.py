"""CParams(tuner=Tuner.BTUNE): oxblosc's per-chunk tuner picks each chunk's parameters while
an SChunk or NDArray is written; only the chunk headers record them, so python-blosc2 reads
the files; deterministic with a seed for the ratio objective; never lossy unless allowed."""

import blosc2
import numpy as np
import oxblosc
import pytest


@pytest.fixture(autouse=True)
def _restore_tuner_settings():
    yield
    oxblosc.set_chunk_tuner()


def smooth(n, phase=0.0):
    x = np.arange(n, dtype=np.float32)
    return (np.sin(x * 1e-3 + phase) * 100 + 280).astype(np.float32)


def noise(n, seed=1):
    return np.random.default_rng(seed).integers(0, 2**32, n, dtype=np.uint32).view(np.float32)


def test_schunk_picks_per_chunk_and_python_blosc2_reads_it(tmp_path):
    oxblosc.set_chunk_tuner(objective="ratio", every=0, drift=0.2, time_budget=60)
    parts = [smooth(1 << 18), smooth(1 << 18, 1.0), noise(1 << 18), noise(1 << 18, 2)]
    path = str(tmp_path / "tuned.b2frame")
    cp = oxblosc.CParams(typesize=4, codec=oxblosc.Codec.LZ4, clevel=1, tuner=oxblosc.Tuner.BTUNE)
    sc = oxblosc.SChunk(chunksize=parts[0].nbytes, urlpath=path, mode="w", cparams=cp)
    assert sc.cparams.tuner == oxblosc.Tuner.BTUNE
    for p in parts:
        sc.append_data(p)
    whole = np.concatenate(parts)
    assert bytes(sc[:]) == whole.tobytes()  # lossless, bit for bit
    fixed = oxblosc.SChunk(chunksize=parts[0].nbytes, cparams={**vars(cp), "tuner": oxblosc.Tuner.STUNE})
    for p in parts:
        fixed.append_data(p)
    # The ratio objective does better than the fixed LZ4 clevel 1 on the smooth chunks.
    tuned = [len(sc.get_chunk(i)) for i in range(2)]
    plain = [len(fixed.get_chunk(i)) for i in range(2)]
    assert all(t < p for t, p in zip(tuned, plain, strict=False))
    # The frame keeps the super-chunk's own parameters; python-blosc2 decodes every chunk.
    b2 = blosc2.open(path)
    assert b2[:] == whole.tobytes()
    assert b2.cparams.codec == blosc2.Codec.LZ4 and b2.cparams.clevel == 1
    # Same data and seed: the same chunks again.
    again = oxblosc.SChunk(chunksize=parts[0].nbytes, cparams=cp)
    for p in parts:
        again.append_data(p)
    assert [again.get_chunk(i) for i in range(4)] == [sc.get_chunk(i) for i in range(4)]


def test_ndarray_tuned_file_reads_in_python_blosc2(tmp_path):
    oxblosc.set_chunk_tuner(objective="ratio", time_budget=60, seed=5)
    a = smooth(64 * 4096).reshape(64, 4096)
    cp = oxblosc.CParams(codec=oxblosc.Codec.LZ4, clevel=1, tuner=oxblosc.Tuner.BTUNE)
    path = str(tmp_path / "tuned.b2nd")
    x = oxblosc.asarray(a, urlpath=path, mode="w", chunks=(16, 4096), blocks=(4, 4096), cparams=cp)
    y = oxblosc.asarray(a, chunks=(16, 4096), blocks=(4, 4096), cparams=cp)
    plain = oxblosc.asarray(a, chunks=(16, 4096), blocks=(4, 4096), cparams={**vars(cp), "tuner": 0})
    np.testing.assert_array_equal(x[:], a)
    assert x.schunk.cparams.tuner == oxblosc.Tuner.BTUNE
    assert x.schunk.cbytes == y.schunk.cbytes < plain.schunk.cbytes
    # A slice written later through the same handle is tuned too, and the blocks keep the
    # geometry's size (python-blosc2 slices the file).
    x[8:24] = a[8:24] * 2
    want = a.copy()
    want[8:24] *= 2
    b2 = blosc2.open(path)
    np.testing.assert_array_equal(b2[:], want)
    np.testing.assert_array_equal(b2[3:40, 100:200], want[3:40, 100:200])


def test_lossless_by_default_lossy_only_when_allowed():
    a = smooth(1 << 18)
    cp = oxblosc.CParams(typesize=4, tuner=oxblosc.Tuner.BTUNE)
    for allow in (False, True):
        oxblosc.set_chunk_tuner(objective="ratio", allow_lossy=allow, time_budget=60)
        sc = oxblosc.SChunk(chunksize=a.nbytes, cparams=cp)
        sc.append_data(a)
        back = np.frombuffer(sc.decompress_chunk(0), np.float32)
        if allow:
            assert not np.array_equal(back, a)  # the ratio objective takes trunc_prec
            np.testing.assert_allclose(back, a, rtol=1e-4)
        else:
            np.testing.assert_array_equal(back, a)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="objective"):
        oxblosc.set_chunk_tuner(objective="fast")
    with pytest.raises(ValueError, match="non-negative"):
        oxblosc.set_chunk_tuner(every=-1)
    # Setting STUNE again turns the tuner off for the chunks that follow.
    sc = oxblosc.SChunk(chunksize=4096, cparams={"typesize": 4, "tuner": oxblosc.Tuner.BTUNE})
    sc.cparams = {"typesize": 4}
    assert sc.cparams.tuner == oxblosc.Tuner.STUNE
