"""python-blosc2's CTable methods on oxblosc.CTable (delete/compact, views and copies, schema
edits, summaries, user metadata), each checked against the real python-blosc2 wheel: the same
calls on the same data give the same rows, and tables changed by one library are read (and
changed further) by the other."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass

import numpy as np
import oxblosc
import oxblosc.ctable_layout as L
import pytest

blosc2 = pytest.importorskip("blosc2")

N = 3000


def data(n: int = N) -> dict:
    rng = np.random.default_rng(7)
    return {
        "i": rng.integers(-20, 20, n).astype("i4"),
        "g": np.round(rng.standard_normal(n) * 10, 3),
        "k": np.arange(n, dtype="i8"),
        "b": rng.random(n) < 0.4,
        "s": np.array(["ab", "c", "xyz", ""])[rng.integers(0, 4, n)],
        "y": np.array([b"p", b"qq", b""])[rng.integers(0, 3, n)],
        "t": (np.arange(n) * 1000).astype("M8[ms]"),
    }


@dataclass
class Row:
    i: int = blosc2.field(blosc2.int32())
    g: float = blosc2.field(blosc2.float64())
    k: int = blosc2.field(blosc2.int64())
    b: bool = blosc2.field(blosc2.bool())
    s: str = blosc2.field(blosc2.string(max_length=3))
    y: bytes = blosc2.field(blosc2.bytes(max_length=2))
    t: object = blosc2.field(blosc2.timestamp(unit="ms"))


def ours(path=None, n: int = N) -> oxblosc.CTable:
    return oxblosc.CTable(data(n), urlpath=None if path is None else str(path), chunks=1024, blocks=256)


def theirs(path=None, n: int = N):
    """python-blosc2's table with the same rows."""
    d = data(n)
    t = blosc2.CTable(Row, urlpath=None if path is None else str(path), mode="w")
    t.extend([tuple(d[c][j] for c in d) for j in range(n)])
    return t


def rows(t) -> dict:
    """Every column of a table of either library, as NumPy arrays."""
    return {c: np.asarray(t[c][:] if isinstance(t, blosc2.CTable) else t[c].to_numpy()) for c in t.col_names}


def assert_same(a, b) -> None:
    ra, rb = rows(a), rows(b)
    assert list(ra) == list(rb)
    for c in ra:
        np.testing.assert_array_equal(ra[c], rb[c], err_msg=c)


# ------------------------------------------------------------------ delete / compact

DELETES = [
    5,
    -1,
    np.int64(7),
    slice(10, 400, 3),
    slice(None, None, -50),
    [0, 3, 3, 2999, -2],
    np.array([4, 9, 12]),
    (np.arange(N) % 7 == 0).tolist(),
    np.arange(N) % 5 == 1,
]


@pytest.mark.parametrize("ind", DELETES, ids=range(len(DELETES)))
def test_delete_like_python_blosc2(tmp_path, ind):
    t, b = ours(tmp_path / "o.b2d"), theirs()
    t.delete(ind)
    b.delete(int(ind) if isinstance(ind, np.integer) else ind)  # python-blosc2 refuses NumPy ints
    assert len(t) == len(b) < N
    assert_same(t, b)
    # deleted rows are invisible to queries and aggregations too
    assert len(t.where("i > 5")) == int((rows(b)["i"] > 5).sum())
    assert t["g"].sum(where="b") == pytest.approx(rows(b)["g"][rows(b)["b"]].sum())
    # python-blosc2 reads our deletions, and we read its
    assert_same(blosc2.CTable.open(str(tmp_path / "o.b2d")), b)
    b.save(str(tmp_path / "b.b2d"))
    assert_same(oxblosc.CTable.open(str(tmp_path / "b.b2d")), b)


def test_delete_errors(tmp_path):
    t = ours(tmp_path / "o.b2d")
    b = theirs()
    for bad, err in ((N, IndexError), ("i > 3", TypeError), (2.5, TypeError)):
        with pytest.raises(err):
            t.delete(bad)
        with pytest.raises(err):
            b.delete(bad)
    assert len(t) == N
    with pytest.raises(ValueError, match="view"):
        t.where("i > 0").delete(0)
    t.close()
    with pytest.raises(ValueError, match="read-only"):
        oxblosc.CTable.open(str(tmp_path / "o.b2d")).delete(0)
    t.delete([])  # nothing to delete: nothing changes
    assert len(t) == N


def test_deletions_interleaved_between_libraries(tmp_path):
    path = str(tmp_path / "o.b2d")
    ours(path).delete(slice(0, 100))
    b = blosc2.CTable.open(path, mode="a")
    b.delete([0, 1, -1])
    b.close()
    t = oxblosc.CTable.open(path, mode="a")
    assert len(t) == N - 103 and t["k"][0] == 102
    t.delete(0)
    t.extend({c: v[:2] for c, v in data(2).items()})  # appending after deletions
    want = np.r_[np.arange(103, N - 1), [0, 1]]
    np.testing.assert_array_equal(t["k"].to_numpy(), want)
    np.testing.assert_array_equal(blosc2.CTable.open(path)["k"][:], want)
    np.testing.assert_array_equal(t.where("k < 200")["k"].to_numpy(), want[want < 200])


@pytest.mark.parametrize("kind", ["memory", ".b2z"])
def test_delete_memory_and_zip(tmp_path, kind):
    path = None if kind == "memory" else tmp_path / "o.b2z"
    t, b = ours(path), theirs()
    t.delete(slice(0, N, 2))
    b.delete(slice(0, N, 2))
    assert_same(t, b)
    if path is not None:
        t.close()
        assert_same(blosc2.CTable.open(str(path)), b)
        assert_same(oxblosc.CTable.open(str(path)), b)
    t.compact()
    assert_same(t, b) and t._phys == len(b)


def _fail_on(monkeypatch, module, name: str, suffix: str) -> None:
    """Make ``module.<name>`` (os.replace/os.rename) raise once, for the first target ending
    in ``suffix``."""
    real, failed = getattr(module.os, name), []

    def failing(src, dst, *a, **k):
        if os.fspath(dst).endswith(suffix) and not failed:
            failed.append(dst)
            raise OSError(28, "No space left on device (test)")
        return real(src, dst, *a, **k)

    monkeypatch.setattr(module.os, name, failing)


def test_delete_failure_leaves_table_unchanged(tmp_path, monkeypatch):
    path = str(tmp_path / "o.b2d")
    t = ours(path)
    t.delete([1, 2])
    before = rows(t)
    with monkeypatch.context() as m:
        _fail_on(m, L, "replace", L.VALID)
        with pytest.raises(OSError, match="No space"):
            t.delete(slice(0, 500))
    for table in (t, oxblosc.CTable.open(path), blosc2.CTable.open(path)):
        assert len(table) == N - 2
        for c, v in before.items():
            np.testing.assert_array_equal(rows(table)[c], v)
    assert len(blosc2.CTable.open(path).where("k < 10")) == 8
    t.delete(0)  # the handle still works
    assert len(blosc2.CTable.open(path)) == N - 3


def test_delete_failure_after_commit_keeps_deletion(tmp_path, monkeypatch):
    path = str(tmp_path / "o.b2d")
    t = ours(path)
    real = L._open

    def failing_reopen(p, *a, **k):
        if p.endswith(L.VALID):
            raise OSError(5, "Input/output error (test)")
        return real(p, *a, **k)

    with monkeypatch.context() as m:
        m.setattr(L, "_open", failing_reopen)
        with pytest.raises(OSError, match="Input/output"):
            t.delete(slice(0, 10))
    # the validity column was replaced: the rows are gone, for the handle and both libraries
    for table in (t, oxblosc.CTable.open(path), blosc2.CTable.open(path)):
        assert len(table) == N - 10 and rows(table)["k"][0] == 10
    t.delete(0)
    assert len(blosc2.CTable.open(path)) == N - 11


def test_compact(tmp_path):
    path = str(tmp_path / "b.b2d")
    b = theirs(path)
    b.delete(slice(0, N, 3))
    b.attrs["who"] = "them"
    b.close()
    want = rows(blosc2.CTable.open(path))
    t = oxblosc.CTable.open(path, mode="a")
    t.compact()
    assert t._phys == len(t) == len(want["k"]) and t._all_valid
    t.verify_stats()  # statistics rebuilt for the moved rows
    assert len(t.where("k < 300")) == 200
    fresh = {ix.col_name for ix in blosc2.CTable.open(path).indexes if ix.kind == "summary" and not ix.stale}
    assert fresh == {"i", "g", "k", "b", "t"}  # python-blosc2 had marked them stale; ours are current
    for table in (t, oxblosc.CTable.open(path), blosc2.CTable.open(path)):
        for c, v in want.items():
            np.testing.assert_array_equal(rows(table)[c], v)
    assert blosc2.CTable.open(path).attrs["who"] == "them"
    assert not [f for f in os.listdir(tmp_path) if ".tmp-" in f]


def test_compact_failure_leaves_table_unchanged(tmp_path, monkeypatch):
    from oxblosc import ctable_edit

    path = str(tmp_path / "o.b2d")
    t = ours(path)
    t.delete(slice(0, 1000))
    with monkeypatch.context() as m:
        _fail_on(m, ctable_edit, "rename", "o.b2d")  # the second rename: the new table in place
        with pytest.raises(OSError, match="No space"):
            t.compact()
    assert not [f for f in os.listdir(tmp_path) if ".tmp-" in f]
    assert len(t) == N - 1000 and t._phys == N
    np.testing.assert_array_equal(blosc2.CTable.open(path)["k"][:], np.arange(1000, N))
    t.compact()
    np.testing.assert_array_equal(blosc2.CTable.open(path)["k"][:], np.arange(1000, N))


def test_compact_killed_between_renames_is_recovered(tmp_path, monkeypatch):
    from oxblosc import ctable_edit

    path = str(tmp_path / "o.b2d")
    t = ours(path)
    t.delete(slice(0, 1000))
    real = os.rename

    def crash(src, dst):  # the new table never moves in, the old one never moves back
        if dst == path:
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(ctable_edit.os, "rename", crash)
    with pytest.raises(KeyboardInterrupt):
        t.compact()
    monkeypatch.undo()
    assert not os.path.exists(path)
    r = oxblosc.CTable.open(path)  # the old table returns under its name
    assert len(r) == N - 1000 and r._phys == N
    np.testing.assert_array_equal(blosc2.CTable.open(path)["k"][:], np.arange(1000, N))
    assert [f for f in os.listdir(tmp_path)] == ["o.b2d"]


# ------------------------------------------------------------------ views and copies


@pytest.fixture
def pair(tmp_path):
    """Our table and python-blosc2's with the same rows and the same deletions."""
    t, b = ours(tmp_path / "o.b2d"), theirs()
    for x in (t, b):
        x.delete(slice(5, N, 4))
    return t, b


def test_select_take_slice_sample(pair):
    t, b = pair
    s = t.select(["k", "s"])
    assert s.col_names == ["k", "s"] == b.select(["k", "s"]).col_names
    assert_same(s, b.select(["k", "s"]))
    assert s.to_numpy().dtype.names == ("k", "s")
    assert list(dict(s.info.items)["columns"]) == ["k", "s"]
    assert_same(s.head(N=3), b.select(["k", "s"]).head(N=3))
    assert_same(t.tail(N=4), b.tail(N=4))
    assert_same(s.where("k > 2000"), b.select(["k", "s"]).where("k > 2000"))
    with pytest.raises(KeyError):
        t.select(["nope"])
    with pytest.raises(KeyError):
        s["i"]
    for idx in ([3, 1, 1, -1], np.array([0, 2000, 5]), []):
        assert_same(t.take(idx), b.take(idx))
    with pytest.raises(IndexError):
        t.take([len(t)])
    for args in ((10,), (5, 900), (-20, -3), (slice(100, 200),)):
        assert_same(t.slice(*args), b.slice(*args))
        assert_same(t.slice(*args, copy=False), b.slice(*args, copy=False))
    assert t.slice(5, 900)._root is not t._root and t.slice(5, 900, copy=False)._root is t
    for n, seed in ((7, 1), (0, 2), (len(t) + 5, 3), (100, None)):
        if seed is None:
            assert len(t.sample(n)) == n
            continue
        assert_same(t.sample(n, seed=seed), b.sample(n, seed=seed))  # the same rows for a seed


def test_copy(pair, tmp_path):
    t, b = pair
    t.attrs["note"] = "kept"
    for dest in (None, tmp_path / "c.b2d", tmp_path / "c.b2z"):
        c = t.copy(urlpath=dest, chunks=512, blocks=128)
        assert_same(c, b) and c.chunks == (512,) and c.blocks == (128,) and c._all_valid
        assert c.attrs["note"] == "kept"
        if dest is not None:
            c.close()
            assert_same(blosc2.CTable.open(str(dest)), b)
            assert blosc2.CTable.open(str(dest)).attrs["note"] == "kept"
            with pytest.raises(FileExistsError):
                t.copy(urlpath=dest)
            t.copy(urlpath=dest, overwrite=True)
    keep = t.copy(compact=False, urlpath=tmp_path / "k.b2d")
    assert keep._phys == N and len(keep) == len(t)
    assert_same(blosc2.CTable.open(str(tmp_path / "k.b2d")), b)
    assert_same(t.where("i > 3").copy(), b.where("i > 3"))


def test_sort_by(pair, tmp_path):
    t, b = pair
    for cols, asc in (("i", True), ("g", False), (["i", "s"], [True, False]), (["b", "y", "k"], False)):
        assert_same(t.sort_by(cols, ascending=asc), b.sort_by(cols, ascending=asc))
        assert_same(t.sort_by(cols, ascending=asc, view=True), b.sort_by(cols, ascending=asc, view=True))
    v = t.sort_by("g", view=True)
    np.testing.assert_array_equal(v[:10]["g"].to_numpy(), np.sort(rows(b)["g"])[:10])
    assert_same(t.where("i > 0").sort_by("g"), b.where("i > 0").sort_by("g"))
    with pytest.raises(KeyError):
        t.sort_by("nope")
    with pytest.raises(ValueError):
        t.sort_by("i", inplace=True, view=True)
    want = b.sort_by(["i", "k"], ascending=[False, True])
    assert t.sort_by(["i", "k"], ascending=[False, True], inplace=True) is t
    assert_same(t, want) and t._all_valid
    t.verify_stats()
    assert_same(blosc2.CTable.open(str(tmp_path / "o.b2d")), want)


# ------------------------------------------------------------------ schema edits


@pytest.mark.parametrize("kind", [".b2d", ".b2z", "memory"])
def test_schema_edits_read_by_python_blosc2(tmp_path, kind):
    path = None if kind == "memory" else tmp_path / f"o{kind}"
    t = ours(path)
    t.delete([0, 1])
    live = N - 2
    t.add_column("z", blosc2.field(blosc2.int16(ge=0), default=3))  # python-blosc2's spec, its default
    t.add_column("w", np.float32, values=np.arange(live))  # a NumPy dtype
    t.add_column("v", {"kind": "string", "max_length": 4}, values=["ab"] * live)
    t.rename_column("g", "gg")
    t.drop_column("i")
    want = ["gg", "k", "b", "s", "y", "t", "z", "w", "v"]
    assert t.col_names == want and len(t) == live
    np.testing.assert_array_equal(t["z"].to_numpy(), np.full(live, 3, "i2"))
    assert len(t.where("(w < 10) & (z == 3)")) == 10  # new columns are queried, statistics and all
    t.verify_stats()
    if path is None:
        return
    t.close()
    b = blosc2.CTable.open(str(path))
    assert b.col_names == want and len(b) == live
    np.testing.assert_array_equal(b["gg"][:], data()["g"][2:])
    np.testing.assert_array_equal(b["w"][:], np.arange(live, dtype="f4"))
    assert b["v"][:].tolist() == ["ab"] * live and b["z"][:].tolist() == [3] * live
    assert b.schema.columns_by_name["z"].spec.ge == 0
    assert len(b.where("w < 10")) == 10
    if kind == ".b2d":
        assert sorted(os.listdir(path / "_cols")) == sorted(f"{c}.b2nd" for c in want)
        t = oxblosc.CTable.open(str(path), mode="a")  # and appends go on with the new schema
        t.extend({c: v[:1] for c, v in rows(t).items()})
        assert len(blosc2.CTable.open(str(path))) == live + 1


def test_schema_edits_by_python_blosc2_read_by_ours(tmp_path):
    path = str(tmp_path / "b.b2d")
    b = theirs(path, n=50)
    b.rename_column("g", "gg")
    b.drop_column("s")
    b.add_column("w", blosc2.float32(), values=np.arange(50))
    b.close()
    t = oxblosc.CTable.open(path, mode="a")
    assert t.col_names == ["i", "gg", "k", "b", "y", "t", "w"]
    np.testing.assert_array_equal(t["w"].to_numpy(), np.arange(50, dtype="f4"))
    t.rename_column("w", "w2")
    assert blosc2.CTable.open(path)["w2"][:].tolist() == list(range(50))


def test_schema_edit_errors(tmp_path):
    t = ours(tmp_path / "o.b2d", n=10)
    with pytest.raises(KeyError):
        t.drop_column("nope")
    with pytest.raises(KeyError):
        t.rename_column("nope", "x")
    with pytest.raises(ValueError, match="already exists"):
        t.rename_column("i", "g")
    with pytest.raises(ValueError, match="already exists"):
        t.add_column("i", np.int8, values=np.zeros(10))
    with pytest.raises(ValueError, match="identifier"):
        t.add_column("a b", np.int8, values=np.zeros(10))
    with pytest.raises(ValueError, match="default"):
        t.add_column("z", np.int8)  # rows exist, nothing to fill them with
    with pytest.raises(ValueError, match="rows"):
        t.add_column("z", np.int8, values=np.zeros(9))
    with pytest.raises(ValueError, match="ge=0"):
        t.add_column("z", blosc2.int8(ge=0), values=-np.ones(10))
    with pytest.raises(ValueError, match="view"):
        t.select(["i"]).drop_column("i")
    one = oxblosc.CTable({"a": np.arange(3)})
    with pytest.raises(ValueError, match="last column"):
        one.drop_column("a")
    assert t.col_names == list(data())
    assert sorted(os.listdir(tmp_path / "o.b2d" / "_cols")) == sorted(f"{c}.b2nd" for c in data())
    assert blosc2.CTable.open(str(tmp_path / "o.b2d")).col_names == list(data())


# ------------------------------------------------------------------ summaries, CSV, metadata


def _printed(f) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        f()
    return out.getvalue()


def test_describe_cov_csv_like_python_blosc2(pair, tmp_path):
    t, b = pair
    assert _printed(t.describe) == _printed(b.describe)
    assert _printed(t.where("i > 3").describe) == _printed(b.where("i > 3").describe)
    num = ["i", "g", "k", "b", "t"]
    np.testing.assert_allclose(t.select(num).cov(), b.select(num).cov(), rtol=1e-12)
    with pytest.raises(TypeError, match="'s'"):
        t.cov()
    with pytest.raises(ValueError, match="2 live rows"):
        t.select(num)[:1].cov()
    assert t.to_csv() == b.to_csv()
    assert t.to_csv(header=False, sep="\t") == b.to_csv(header=False, sep="\t")
    assert t.select(["k", "s"]).to_csv(tmp_path / "x.csv") is None
    b.select(["k", "s"]).to_csv(str(tmp_path / "y.csv"))
    assert (tmp_path / "x.csv").read_bytes() == (tmp_path / "y.csv").read_bytes()


def test_cratio_chunks_blocks(pair):
    t, b = pair
    bt = oxblosc.CTable.open(str(t._root.urlpath))
    assert t.chunks == (1024,) and t.blocks == (256,)
    b2 = blosc2.CTable.open(str(t._root.urlpath))
    assert (b2.chunks, b2.blocks) == (t.chunks, t.blocks)
    assert bt.cratio == pytest.approx(b2.cratio)


@pytest.mark.parametrize("suffix", [".b2d", ".b2z"])
def test_attrs_shared_with_python_blosc2(tmp_path, suffix):
    path = str(tmp_path / f"o{suffix}")
    t = ours(path, n=10)
    t.attrs["author"] = "Al"
    t.vlmeta["tags"] = ["x", 1]
    del t.attrs["author"]
    t.attrs["n"] = 3
    t.close()
    assert blosc2.CTable.open(path).attrs[:] == {"tags": ["x", 1], "n": 3}
    assert oxblosc.CTable.open(path).attrs[:] == {"tags": ["x", 1], "n": 3}
    with pytest.raises(ValueError, match="read-only"):
        oxblosc.CTable.open(path).attrs["z"] = 1
    bpath = str(tmp_path / f"b{suffix}")
    b = theirs(bpath, n=5)
    b.attrs["who"] = {"a": 1}
    b.close()
    assert oxblosc.CTable.open(bpath).attrs[:] == {"who": {"a": 1}}
    assert list(oxblosc.CTable.open(bpath).attrs) == ["who"]
    assert oxblosc.CTable({"a": np.arange(2)}).attrs[:] == {}


def test_from_pandas_arrow_csv(pair, tmp_path):
    t, b = pair
    df = b.to_pandas()
    assert_same(oxblosc.CTable.from_pandas(df, Row), blosc2.CTable.from_pandas(df, Row))
    assert_same(oxblosc.CTable.from_pandas(df), b)
    sub = oxblosc.CTable.from_pandas(df, {"k": "i4", "g": "f8"}, urlpath=tmp_path / "p.b2d")
    assert sub.col_names == ["k", "g"] and sub.dtype["k"] == np.int32
    assert blosc2.CTable.open(str(tmp_path / "p.b2d"))["k"][:].tolist() == rows(b)["k"].tolist()
    with pytest.raises(ValueError, match="lack"):
        oxblosc.CTable.from_pandas(df[["k"]], Row)
    arrow = t.to_arrow()
    assert_same(oxblosc.CTable.from_arrow(arrow), b)
    assert_same(oxblosc.CTable.from_arrow(arrow.schema, arrow.to_batches(max_chunksize=500)), b)
    # CSV: python-blosc2 reads our CSV into the same rows as its own; we also read back
    # timestamps and bytes (which python-blosc2's from_csv cannot)
    num = ["i", "g", "k", "b", "s"]

    @dataclass
    class Num:
        i: int = blosc2.field(blosc2.int32())
        g: float = blosc2.field(blosc2.float64())
        k: int = blosc2.field(blosc2.int64())
        b: bool = blosc2.field(blosc2.bool())
        s: str = blosc2.field(blosc2.string(max_length=3))

    t.select(num).to_csv(tmp_path / "n.csv")
    assert_same(oxblosc.CTable.from_csv(tmp_path / "n.csv", Num), blosc2.CTable.from_csv(str(tmp_path / "n.csv"), Num))
    t.to_csv(tmp_path / "all.tsv", sep="\t")
    assert_same(oxblosc.CTable.from_csv(tmp_path / "all.tsv", Row, sep="\t"), b)
    (tmp_path / "bad.csv").write_text("i,g\n1,2\n3\n")
    with pytest.raises(ValueError, match="line 3"):
        oxblosc.CTable.from_csv(tmp_path / "bad.csv", {"i": "i4", "g": "f8"})


@pytest.mark.parametrize("mode", ["r", "a"])
def test_python_blosc2_added_column_on_another_grid(tmp_path, mode):
    path = str(tmp_path / "b.b2d")
    b = theirs(path, n=40)
    b.add_column("z", blosc2.int16(), values=np.arange(40))  # python-blosc2 gives it other blocks
    b.close()
    grid = {blosc2.open(os.path.join(path, f"_cols/{c}.b2nd")).blocks for c in ("z", "i")}
    assert len(grid) == 2
    t = oxblosc.CTable.open(path, mode=mode)
    np.testing.assert_array_equal(t.where("z < 5")["k"].to_numpy(), np.arange(5))
    if mode == "a":
        t.extend({c: v[:1] for c, v in rows(t).items()})
        assert blosc2.CTable.open(path)["z"][:].tolist() == [*range(40), 0]
        assert len(blosc2.CTable.open(path).where("z < 5")) == 6


def test_delete_after_python_blosc2_compact_and_two_handles(tmp_path):
    path = str(tmp_path / "b.b2d")
    b = theirs(path, n=300)
    b.delete(slice(0, 100))
    b.compact()  # python-blosc2 keeps the columns' old length (capacity) after compacting
    b.close()
    t = oxblosc.CTable.open(path, mode="a")
    other = oxblosc.CTable.open(path, mode="a")
    t.delete(-1)
    assert blosc2.CTable.open(path)["k"][:].tolist() == list(range(100, 299))
    with pytest.raises(oxblosc.FrameChangedError):
        other.delete(0)  # its view of the rows is stale: refused, nothing changed
    with pytest.raises(oxblosc.FrameChangedError):
        other.compact()
    assert len(oxblosc.CTable.open(path)) == 199


def test_save_keeps_attrs_and_edge_cases(tmp_path):
    t = ours(tmp_path / "o.b2d", n=20)
    t.attrs["who"] = "us"
    for i, dest in enumerate(("a.b2d", "a.b2z")):
        t.save(tmp_path / dest)
        assert blosc2.CTable.open(str(tmp_path / dest)).attrs[:] == {"who": "us"}
        t.delete(i)  # then the save goes row by row through copy
        t.save(tmp_path / f"d{dest}")
        assert blosc2.CTable.open(str(tmp_path / f"d{dest}")).attrs[:] == {"who": "us"}
        assert len(blosc2.CTable.open(str(tmp_path / f"d{dest}"))) == len(t)
    plain = ours(tmp_path / "p.b2d", n=5)
    plain.save(tmp_path / "p2.b2d")
    assert not os.path.exists(tmp_path / "p.b2d" / "_vlmeta.b2f")  # saving creates no metadata file
    e = oxblosc.CTable({"a": np.arange(0), "s": np.array([], "U2")})
    be = blosc2.CTable(_EmptyRow)
    assert len(e.sort_by("a")) == 0 and len(e.take([])) == 0 and len(e.sample(3, seed=1)) == 0
    assert e.to_csv() == be.to_csv() and _printed(e.describe) == _printed(be.describe)
    e.delete([])
    with pytest.raises(IndexError):
        e.delete(0)


@dataclass
class _EmptyRow:
    a: int = blosc2.field(blosc2.int64())
    s: str = blosc2.field(blosc2.string(max_length=2))


def test_schema_edit_makes_other_handles_refuse_writes(tmp_path):
    path = str(tmp_path / "o.b2d")
    a = ours(path, n=10)
    b = oxblosc.CTable.open(path, mode="a")
    a.add_column("z", np.int8, values=np.arange(10))
    with pytest.raises(oxblosc.FrameChangedError):
        b.extend({c: v[:1] for c, v in data(1).items()})  # would write its old schema back
    with pytest.raises(oxblosc.FrameChangedError):
        b.drop_column("i")
    a.rename_column("z", "z2")
    a.extend({**{c: v[:1] for c, v in data(1).items()}, "z2": [5]})
    assert blosc2.CTable.open(path)["z2"][:].tolist() == [*range(10), 5]


def test_sort_by_nan_and_ties_like_python_blosc2():
    t, b = ours(n=300), theirs(n=300)
    g = rows(b)["g"].copy()
    g[::7], g[::5] = np.nan, 1.0
    t.add_column("h", np.float64, values=g)
    b.add_column("h", blosc2.float64(), values=g)
    for cols, asc in (("h", True), ("h", False), (["t", "h"], [False, True]), (["s", "h"], False)):
        assert_same(t.sort_by(cols, ascending=asc), b.sort_by(cols, ascending=asc))


DELETER = """
import sys
sys.path.insert(0, {tests!r})
import oxblosc
t = oxblosc.CTable.open({path!r}, mode="a")
print("ready", flush=True)
i = 0
while True:
    t.delete(0)  # the live rows stay k >= m for some m
    i += 1
    if i % 7 == 0:
        t.compact()
"""


def test_killed_while_deleting_and_compacting(tmp_path):
    import random
    import signal
    import subprocess
    import sys
    import time

    path = str(tmp_path / "o.b2d")
    ours(path, n=2000)
    rnd, first = random.Random(99), 0
    code = DELETER.format(tests=os.path.dirname(__file__), path=path)
    for _ in range(4):
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        assert p.stdout.readline().strip() == b"ready"
        time.sleep(rnd.uniform(0.05, 0.5))
        p.send_signal(signal.SIGKILL)
        p.wait()
        t = oxblosc.CTable.open(path, mode="a")  # puts back a table a compact left aside
        k = t["k"].to_numpy()
        assert len(k) and k[0] >= first
        np.testing.assert_array_equal(k, np.arange(k[0], 2000))
        np.testing.assert_array_equal(blosc2.CTable.open(path)["k"][:], k)
        assert len(t.where("k < 1000")) == max(0, 1000 - int(k[0]))
        first = int(k[0])
        del t
    assert first > 0 and not [f for f in os.listdir(tmp_path) if ".tmp-" in f]
