"""oxblosc.tune: deterministic with a seed, lossless unless allowed, and its pick round-trips
through compress2, SChunk and asarray."""

import numpy as np
import oxblosc
import pytest


def field(n=1 << 16):
    x = np.arange(n, dtype=np.float32)
    return np.sin(x * 0.001) * 100 + (x % 7) * 0.01


def test_ratio_pick_is_deterministic_and_round_trips(tmp_path):
    a = field()
    r1 = oxblosc.tune(a, objective="ratio", seed=3, time_budget=600)
    r2 = oxblosc.tune(a, objective="ratio", seed=3, time_budget=600)
    assert r1.cparams == r2.cparams and r1.best.ratio == r2.best.ratio
    cp = r1.cparams
    assert cp.typesize == 4 and not r1.truncated
    assert all(p.ratio <= r1.best.ratio for p in r1.front)
    assert oxblosc.decompress2(oxblosc.compress2(a, cparams=cp)) == a.tobytes()
    sc = oxblosc.SChunk(chunksize=a.nbytes // 4, cparams=cp, urlpath=str(tmp_path / "t.b2frame"), mode="w")
    sc.append_data(a)
    assert bytes(sc[:]) == a.tobytes()
    nd = oxblosc.asarray(a.reshape(64, -1), cparams=cp)
    np.testing.assert_array_equal(nd[:], a.reshape(64, -1))
    text = str(r1)
    assert text.splitlines()[0].split()[:2] == ["codec", "clevel"]
    assert sum(line.startswith("*") for line in text.splitlines()) == 1


def test_never_lossy_unless_allowed():
    a = field(1 << 14)
    for objective in ("balanced", "ratio", "cspeed", "dspeed"):
        r = oxblosc.tune(a, objective=objective)
        assert oxblosc.Filter.TRUNC_PREC not in r.cparams.filters
        assert all(oxblosc.Filter.TRUNC_PREC not in p.filters for p in r.front)
    r = oxblosc.tune(a, objective="ratio", allow_lossy=True)
    assert r.best.filter_names.startswith("trunc_prec")
    back = np.frombuffer(oxblosc.decompress2(oxblosc.compress2(a, cparams=r.cparams)), np.float32)
    np.testing.assert_allclose(back, a, rtol=1e-4)


def test_arguments():
    with pytest.raises(ValueError, match="objective"):
        oxblosc.tune(field(), objective="fast")
    with pytest.raises(ValueError, match="too few"):
        oxblosc.tune(b"abc", typesize=1)
    with pytest.raises(ValueError, match="time_budget"):
        oxblosc.tune(field(), time_budget=-1)
    r = oxblosc.tune(field().tobytes(), typesize=4, time_budget=0)
    assert r.truncated and r.npoints == 1 and r.cparams.typesize == 4


def test_plot_shows_the_front_and_marks_the_pick():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = oxblosc.tune(field(), objective="balanced", seed=1, time_budget=600)
    assert len(r.front) >= 2
    ax = r.plot()
    try:
        assert "decompression" in ax.get_xlabel() and "ratio" in ax.get_ylabel()
        assert r.objective in ax.get_title()
        front, pick = ax.collections
        got = sorted(map(tuple, front.get_offsets().tolist()))
        assert got == sorted((p.dspeed, p.ratio) for p in r.front)
        assert pick.get_offsets().tolist() == [[r.best.dspeed, r.best.ratio]]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Pareto front", "pick"]
        # One label per front point says which parameters it stands for.
        labels = [t.get_text() for t in ax.texts]
        assert len(labels) == len(r.front)
        assert all(p.codec.name.lower() in t for p, t in zip(r.front, labels, strict=True))
    finally:
        plt.close(ax.figure)
