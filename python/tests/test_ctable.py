"""oxblosc.CTable: construction, queries against NumPy, statistics and skipping, malformed
tables, and interop with python-blosc2's CTable (the real wheel) both ways."""

from __future__ import annotations

import os
import shutil

import numpy as np
import oxblosc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

blosc2 = pytest.importorskip("blosc2")


def table_data(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    d = {
        "i": rng.integers(-50, 50, n).astype("i4"),
        "u": rng.integers(0, 1000, n).astype("u2"),
        "f": rng.standard_normal(n).astype("f4"),
        "g": rng.standard_normal(n) * 100,
        "k": np.arange(n, dtype="i8"),  # sorted: skipping must kick in
        "b": rng.random(n) < 0.3,
        "s": np.array([b"ab", b"c", b"xyz"])[rng.integers(0, 3, n)],
        "w": np.array(["one", "two", "three"])[rng.integers(0, 3, n)],
        "t": (np.arange(n) * 60).astype("M8[s]"),
    }
    if n:
        d["g"][rng.random(n) < 0.1] = np.nan
        d["f"][rng.random(n) < 0.05] = np.nan
    return d


def structured(d: dict) -> np.ndarray:
    n = len(next(iter(d.values())))
    a = np.empty(n, dtype=[(k, v.dtype) for k, v in d.items()])
    for k, v in d.items():
        a[k] = v
    return a


def assert_rows(got: np.ndarray, want: np.ndarray) -> None:
    """Structured arrays equal field by field (NaN equal to NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for name in want.dtype.names:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


# ------------------------------------------------------------------ random conditions

LEAVES = [
    ("i > {}", lambda d, x: d["i"] > x, st.integers(-60, 60)),
    ("i <= {}", lambda d, x: d["i"] <= x, st.integers(-60, 60)),
    ("u == {}", lambda d, x: d["u"] == x, st.integers(0, 999)),
    ("f < {}", lambda d, x: d["f"] < np.float32(x), st.floats(-3, 3, width=32)),
    ("g >= {}", lambda d, x: d["g"] >= x, st.floats(-300, 300)),
    ("k < {}", lambda d, x: d["k"] < x, st.integers(-5, 5000)),
    ("k >= {}", lambda d, x: d["k"] >= x, st.integers(-5, 5000)),
    ("(g * 2 + i) > {}", lambda d, x: (d["g"] * 2 + d["i"]) > x, st.floats(-100, 100)),
    ("abs(f) < {}", lambda d, x: np.abs(d["f"]) < np.float32(x), st.floats(0, 2, width=32)),
    ("isnan(g)", lambda d, x: np.isnan(d["g"]), st.just(0)),
    ("b", lambda d, x: d["b"], st.just(0)),
    ("s == b'c'", lambda d, x: d["s"] == b"c", st.just(0)),
]


@st.composite
def conditions(draw, depth: int = 0):
    if depth >= 3 or draw(st.booleans()):
        text, fn, lits = LEAVES[draw(st.integers(0, len(LEAVES) - 1))]
        x = draw(lits)
        return text.format(repr(x)), (lambda d, f=fn, x=x: f(d, x))
    op = draw(st.sampled_from(["&", "|", "~"]))
    a_text, a = draw(conditions(depth + 1))
    if op == "~":
        return f"~({a_text})", (lambda d: ~a(d))
    b_text, b = draw(conditions(depth + 1))
    if op == "&":
        return f"({a_text}) & ({b_text})", (lambda d: a(d) & b(d))
    return f"({a_text}) | ({b_text})", (lambda d: a(d) | b(d))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 2, 63, 64, 65, 700, 2049]),
    seed=st.integers(0, 3),
    cond=conditions(),
    nthreads=st.sampled_from([1, 2]),
)
def test_where_matches_numpy(n, seed, cond, nthreads):
    text, fn = cond
    d = table_data(n, seed)
    t = oxblosc.CTable(d, chunks=256, blocks=64, nthreads=nthreads)
    want = fn(d)
    v = t.where(text)
    assert len(v) == int(want.sum())
    got = v.to_numpy()
    assert_rows(got, structured(d)[want])
    # skipping never changes a result
    t.skip_blocks = False
    assert_rows(t.where(text).to_numpy(), got)
    assert t.last_query["blocks_skipped"] == 0


def test_constructors_and_exports():
    d = table_data(500)
    a = structured(d)
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    for src in (a, d, pd.DataFrame(d), pa.table(d)):
        t = oxblosc.CTable(src)
        assert len(t) == 500 and t.col_names == list(d)
        assert_rows(t.to_numpy(), a)
    assert t.dtype == a.dtype and t.columns == list(d) and t.schema["w"] == np.dtype("<U5")
    df = t.to_pandas()
    assert list(df.columns) == list(d) and (df["i"].to_numpy() == d["i"]).all()
    at = t.to_arrow()
    assert at.num_rows == 500 and at.column("k").to_pylist() == list(range(500))
    assert_rows(t[10:20].to_numpy(), a[10:20])
    assert_rows(t.head(3).to_numpy(), a[:3])
    assert_rows(t.tail(3).to_numpy(), a[-3:])
    assert_rows(np.array([t[7]]), a[7:8])
    np.testing.assert_array_equal(t["g"][5:50:3], d["g"][5:50:3])
    assert t["k"][-1] == 499
    assert "nrows" in t.info and "statistics" in t.info


def test_aggregations_and_chained_views():
    d = table_data(3000, 1)
    t = oxblosc.CTable(d, chunks=512, blocks=128)
    m = d["i"] > 10
    assert t["u"].sum(where="i > 10") == d["u"][m].sum()
    assert t["i"].min(where="i > 10") == d["i"][m].min()
    assert t["k"].max(where="i > 10") == d["k"][m].max()
    np.testing.assert_allclose(t["g"].mean(where="~isnan(g) & (i > 10)"), np.nanmean(d["g"][m]))
    v = t["i > 10"].where("b").where("k < 2000")
    want = m & d["b"] & (d["k"] < 2000)
    assert len(v) == want.sum()
    np.testing.assert_array_equal(v["k"].to_numpy(), d["k"][want])
    np.testing.assert_array_equal(v.to_pandas()["i"].to_numpy(), d["i"][want])
    # a slice view, then a condition
    w = t[100:400].where("i < 0")
    assert_rows(w.to_numpy(), structured(d)[100:400][d["i"][100:400] < 0])
    cols = t.where("i < 0", columns=["k", "s"]).to_numpy()
    assert cols.dtype.names == ("k", "s")


def test_skipping_sorted_column_and_counter():
    n = 1 << 16
    t = oxblosc.CTable(table_data(n), chunks=4096, blocks=1024)
    v = t.where("(k >= 20000) & (k < 21000)")
    assert len(v) == 1000
    q = t.last_query
    total = n // 1024
    assert q["blocks_skipped"] >= total - 3 and q["blocks_scanned"] <= 3
    t.skip_blocks = False
    assert len(t.where("(k >= 20000) & (k < 21000)")) == 1000
    assert t.last_query["blocks_scanned"] == total


def test_stats_after_appends(tmp_path):
    d = table_data(1000, 2)
    path = str(tmp_path / "t.b2d")
    t = oxblosc.CTable({k: v[:10] for k, v in d.items()}, urlpath=path, chunks=128, blocks=32)
    for lo, hi in ((10, 11), (11, 300), (300, 301), (301, 1000)):
        t.extend({k: v[lo:hi] for k, v in d.items()})
    t.append(tuple(structured(d)[0]))
    assert len(t) == 1001
    t.verify_stats()
    fresh = oxblosc.CTable(d, chunks=128, blocks=32)
    fresh.extend(structured(d)[:1])
    assert t._stats == fresh._stats
    r = oxblosc.CTable.open(path)
    assert_rows(r.to_numpy()[:1000], structured(d))
    assert r._stats == fresh._stats
    assert len(r.where("k > 990")) == 9
    mapped = oxblosc.CTable.open(path, mmap_mode="r")  # chunks borrowed from the map
    assert len(mapped.where("k > 990")) == 9 and mapped.to_numpy().tobytes() == r.to_numpy().tobytes()
    with pytest.raises(ValueError, match="read-only"):
        r.extend(structured(d)[:1])
    a = oxblosc.CTable.open(path, mode="a")
    a.extend(structured(d)[:5])
    assert len(a.where("k < 5")) == 6 + 5  # chunks read from the file (not mapped), one chunk at a time
    assert len(oxblosc.open(path)) == 1006


def test_empty_and_one_row():
    d = table_data(0)
    t = oxblosc.CTable(d)
    assert len(t) == 0 and len(t.where("i > 0")) == 0 and t.where("i > 0").to_numpy().dtype == structured(d).dtype
    t.extend(table_data(1))
    assert len(t) == 1 and len(t.where("k == 0")) == 1


def test_errors_name_position_and_column():
    t = oxblosc.CTable(table_data(10))
    with pytest.raises(ValueError, match="nosuch"):
        t.where("nosuch > 1")
    with pytest.raises(ValueError, match="at byte 5"):
        t.where("(i > ")
    with pytest.raises(ValueError):
        t.where("i + 1")  # not a condition
    with pytest.raises(ValueError):
        t.where("(" * 10000 + "i > 1" + ")" * 10000)
    with pytest.raises(TypeError):
        t.extend({k: v.astype("f8") if k == "i" else v for k, v in table_data(3).items()})
    with pytest.raises(ValueError, match="differ"):
        t.extend({"i": np.zeros(2, "i4")})
    assert len(t) == 10


# ------------------------------------------------------------------ interop with python-blosc2


@pytest.mark.parametrize("suffix", [".b2d", ".b2z"])
def test_ours_read_by_python_blosc2(tmp_path, suffix):
    d = {k: v for k, v in table_data(5000, 3).items() if k != "t"}
    path = str(tmp_path / f"ours{suffix}")
    t = oxblosc.CTable(d, urlpath=path, chunks=1024, blocks=256)
    t.close()
    b = blosc2.CTable.open(path)
    assert len(b) == 5000 and b.col_names == list(d)
    for k, v in d.items():
        np.testing.assert_array_equal(b[k][:], v)
    # our block statistics are python-blosc2's SUMMARY indexes: listed, current, right values
    assert {ix.col_name for ix in b.indexes if ix.kind == "summary" and not ix.stale} == {"i", "u", "f", "g", "k", "b"}
    if suffix == ".b2d":
        rec = blosc2.open(os.path.join(path, "_indexes/g/summary.block.b2nd"))[:]
        blocks = [d["g"][lo : lo + 256] for lo in range(0, 5000, 256)]
        np.testing.assert_array_equal(rec["max"], [np.nanmax(x) for x in blocks])
        np.testing.assert_array_equal(rec["flags"] & 2 != 0, [np.isnan(x).any() for x in blocks])
    m = (d["i"] > 10) & (d["k"] < 3000)
    assert len(b.where("(i > 10) & (k < 3000)")) == m.sum()
    np.testing.assert_array_equal(b.where("(i > 10) & (k < 3000)")["g"][:], d["g"][m])
    # the memory table saved, too
    mem = oxblosc.CTable(d, chunks=1024, blocks=256)
    out = str(tmp_path / f"saved{suffix}")
    mem.save(out)
    assert len(blosc2.CTable.open(out).where("k < 10")) == 10


def _b2_table(path, n=4000):
    from dataclasses import dataclass

    @dataclass
    class Row:
        i: int = blosc2.field(blosc2.int32())
        g: float = blosc2.field(blosc2.float64())
        b: bool = blosc2.field(blosc2.bool())
        s: str = blosc2.field(blosc2.string(max_length=5))
        y: bytes = blosc2.field(blosc2.bytes(max_length=3))
        t: object = blosc2.field(blosc2.timestamp(unit="ms"))

    rng = np.random.default_rng(5)
    rows = [
        (
            int(rng.integers(-9, 9)),
            float(rng.standard_normal()),
            bool(rng.random() < 0.5),
            "ab"[: i % 3],
            b"xy"[: i % 3],
            np.datetime64(i, "ms"),
        )
        for i in range(n)
    ]
    t = blosc2.CTable(Row, urlpath=path, mode="w")
    t.extend(rows)
    return t, rows


@pytest.mark.parametrize("suffix", [".b2d", ".b2z"])
def test_python_blosc2_read_by_ours(tmp_path, suffix):
    path = str(tmp_path / "b2.b2d")
    bt, rows = _b2_table(path)
    bt.delete([3, 10, 11])  # deleted rows: the validity column says so
    bt.close()
    if suffix == ".b2z":
        blosc2.CTable.open(path).save(str(tmp_path / "b2.b2z"))
        path = str(tmp_path / "b2.b2z")
    live = [r for j, r in enumerate(rows) if j not in (3, 10, 11)]
    t = oxblosc.open(path)
    assert isinstance(t, oxblosc.CTable) and len(t) == len(live)
    a = t.to_numpy()
    assert a["i"].tolist() == [r[0] for r in live]
    assert a["s"].tolist() == [r[3] for r in live] and a["y"].tolist() == [r[4] for r in live]
    assert a["t"].tolist() == [r[5].astype(object) for r in live]
    want = [r for r in live if r[0] > 3 and r[2]]
    v = t.where("(i > 3) & b")
    assert len(v) == len(want) and v["g"].to_numpy().tolist() == [r[1] for r in want]
    assert t["i"].sum(where="i > 0") == sum(r[0] for r in live if r[0] > 0)


def test_python_blosc2_computed_columns_refused(tmp_path):
    path = str(tmp_path / "c.b2d")
    bt, _ = _b2_table(path, 10)
    bt.add_computed_column("twice", "i * 2")
    bt.close()
    with pytest.raises(ValueError, match="computed_columns"):
        oxblosc.CTable.open(path)


# ------------------------------------------------------------------ malformed tables


def test_malformed_tables(tmp_path):
    d = table_data(3000, 4)
    path = str(tmp_path / "m.b2d")
    oxblosc.CTable(d, urlpath=path, chunks=512, blocks=128)
    # a column of another length
    bad = str(tmp_path / "len.b2d")
    shutil.copytree(path, bad)
    oxblosc.asarray(d["i"][:100], urlpath=os.path.join(bad, "_cols/i.b2nd"), mode="w")
    with pytest.raises(ValueError, match="'i' holds 100 rows"):
        oxblosc.CTable.open(bad)
    # a truncated column file
    bad = str(tmp_path / "trunc.b2d")
    shutil.copytree(path, bad)
    f = os.path.join(bad, "_cols/g.b2nd")
    os.truncate(f, os.path.getsize(f) // 2)
    with pytest.raises((ValueError, OSError)):
        t = oxblosc.CTable.open(bad)
        t.where("g > 0").to_numpy()
    # a missing column file
    bad = str(tmp_path / "missing.b2d")
    shutil.copytree(path, bad)
    os.remove(os.path.join(bad, "_cols/u.b2nd"))
    with pytest.raises(ValueError, match="'u' has no file"):
        oxblosc.CTable.open(bad)


def test_lying_statistics_detected(tmp_path):
    d = table_data(4096, 6)
    path = str(tmp_path / "lie.b2d")
    oxblosc.CTable(d, urlpath=path, chunks=1024, blocks=256)
    rec = oxblosc.open(os.path.join(path, "_indexes/k/summary.block.b2nd"))
    r = rec[:]
    r["max"][3] = 0  # block 3 claims k <= 0
    oxblosc.asarray(
        r, urlpath=os.path.join(path, "_indexes/k/summary.block.b2nd"), mode="w", chunks=rec.chunks, blocks=rec.blocks
    )
    t = oxblosc.CTable.open(path)
    with pytest.raises(ValueError, match="'k'.*block 3"):
        t.verify_stats()
    t.skip_blocks = False
    assert len(t.where("(k >= 768) & (k < 1024)")) == 256
