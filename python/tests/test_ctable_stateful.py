"""Random sequences of table edits on a real table directory, checked after every step against
a NumPy model *and* against python-blosc2 opening the same table.

Appends and extends of a few rows or several chunks, deletions (ints, slices, masks), compact,
column adds/drops, queries, reopening, and python-blosc2 editing the same table between our
sessions (appends and deletions). Hypothesis shrinks any difference.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import oxblosc
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

blosc2 = pytest.importorskip("blosc2")


@dataclass
class Row:
    i: int = blosc2.field(blosc2.int32())
    g: float = blosc2.field(blosc2.float64())
    s: str = blosc2.field(blosc2.string(max_length=3))


def make_rows(start: int, n: int) -> dict[str, np.ndarray]:
    k = np.arange(start, start + n)
    return {
        "i": (k * 7 % 23 - 11).astype("i4"),
        "g": k * 0.5,
        "s": np.array(["a", "bc", "xyz", ""])[k % 4],
    }


class TableVsBlosc2(RuleBasedStateMachine):
    #: ``.b2z``: one zip file, written when closed (python-blosc2 checks it after a close).
    ZIP = False

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ox-ctstateful-"))
        self.ours = None

    @initialize(n=st.integers(0, 300), chunks=st.sampled_from([64, 100, 256]))
    def create(self, n: int, chunks: int) -> None:
        self.path = str(self.dir / ("t.b2z" if self.ZIP else "t.b2d"))
        self.model = make_rows(0, n)
        self.next, self.chunks = n, chunks
        self.ours = oxblosc.CTable(self.model, urlpath=self.path, mode="w", chunks=chunks, blocks=chunks // 4)

    def _rows(self, n: int) -> dict[str, np.ndarray]:
        """``n`` new rows with every column the table has now (extras hold 4)."""
        rows = make_rows(self.next, n)
        return {c: rows[c] if c in rows else np.full(n, 4, "i2") for c in self.model}

    def _add(self, rows: dict[str, np.ndarray]) -> None:
        self.model = {c: np.concatenate([self.model[c], rows[c]]) for c in self.model}
        self.next += len(rows["i"])

    @rule(n=st.integers(1, 700))
    def extend(self, n: int) -> None:
        rows = self._rows(n)
        self.ours.extend(rows)
        self._add(rows)

    @rule()
    def append_one(self) -> None:
        rows = self._rows(1)
        self.ours.append({c: v[0].item() for c, v in rows.items()})
        self._add(rows)

    @precondition(lambda self: len(self.model["i"]) > 0)
    @rule(data=st.data(), kind=st.sampled_from(["int", "slice", "list", "mask"]))
    def delete(self, data, kind: str) -> None:
        n = len(self.model["i"])
        if kind == "int":
            ind = data.draw(st.integers(-n, n - 1))
        elif kind == "slice":
            a, b = sorted(data.draw(st.tuples(st.integers(0, n), st.integers(0, n))))
            ind = slice(a, b, data.draw(st.integers(1, 5)))
        elif kind == "list":
            ind = data.draw(st.lists(st.integers(0, n - 1), max_size=20))
        else:
            ind = self.model["i"] > data.draw(st.integers(-12, 12))
        self.ours.delete(ind)
        keep = np.ones(n, bool)
        keep[np.arange(n)[ind] if not isinstance(ind, list) else ind] = False
        self.model = {c: v[keep] for c, v in self.model.items()}

    @rule()
    def compact(self) -> None:
        self.ours.compact()

    @precondition(lambda self: "x" not in self.model and "y" not in self.model)
    @rule(values=st.booleans())
    def add_column(self, values: bool) -> None:
        n = len(self.model["i"])
        if values:
            x = (np.arange(n) * 3 % 17).astype("i2")
            self.ours.add_column("x", blosc2.int16(), x)
        else:
            x = np.full(n, 4, "i2")
            self.ours.add_column("x", blosc2.field(blosc2.int16(), default=4))
        self.model["x"] = x

    @precondition(lambda self: "x" in self.model or "y" in self.model)
    @rule()
    def rename_column(self) -> None:
        old = "x" if "x" in self.model else "y"
        new = "y" if old == "x" else "x"
        self.ours.rename_column(old, new)
        self.model = {(new if c == old else c): v for c, v in self.model.items()}

    @precondition(lambda self: "x" in self.model or "y" in self.model)
    @rule()
    def drop_column(self) -> None:
        name = "x" if "x" in self.model else "y"
        self.ours.drop_column(name)
        del self.model[name]

    @rule(desc=st.booleans())
    def sort_in_place(self, desc: bool) -> None:
        # stable on (i, g): g is unique per row, so the order is fully determined
        order = np.lexsort((self.model["g"], self.model["i"]))
        if desc:
            order = order[::-1]
        self.ours.sort_by(["i", "g"], ascending=not desc, inplace=True)
        self.model = {c: v[order] for c, v in self.model.items()}

    @rule(c=st.integers(-12, 12), op=st.sampled_from(["<", ">=", "=="]))
    def query(self, c: int, op: str) -> None:
        mask = {"<": self.model["i"] < c, ">=": self.model["i"] >= c, "==": self.model["i"] == c}[op]
        mask &= self.model["g"] > 10.0
        got = self.ours.where(f"(i {op} {c}) & (g > 10.0)")
        assert len(got) == int(mask.sum()) == self.ours.count(f"(i {op} {c}) & (g > 10.0)")
        for col in ("i", "g", "s"):
            np.testing.assert_array_equal(got[col].to_numpy(), self.model[col][mask], err_msg=col)

    @rule()
    def reopen(self) -> None:
        self.ours.close()
        self.check_blosc2()
        if self.ZIP:  # a .b2z opens read-only: check it, then write a new one from it
            ro = oxblosc.CTable.open(self.path)
            cols = {c: ro[c].to_numpy() for c in self.model}
            for c, want in self.model.items():
                np.testing.assert_array_equal(cols[c], want, err_msg=f"reopened {c}")
            ro.close()
            self.ours = oxblosc.CTable(cols, urlpath=self.path, mode="w", chunks=self.chunks, blocks=self.chunks // 4)
            return
        self.ours = oxblosc.CTable.open(self.path, mode="a")

    @precondition(lambda self: not self.ZIP)
    @rule(data=st.data(), what=st.sampled_from(["extend", "delete"]))
    def blosc2_edits(self, data, what: str) -> None:
        self.ours.close()
        theirs = blosc2.CTable.open(self.path, mode="a")
        n = len(self.model["i"])
        if what == "extend" or n == 0:
            rows = self._rows(data.draw(st.integers(1, 300)))
            theirs.extend([tuple(rows[c][j].item() for c in self.model) for j in range(len(rows["i"]))])
            self._add(rows)
        else:
            pos = sorted(set(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=10))))
            theirs.delete(pos)
            keep = np.ones(n, bool)
            keep[pos] = False
            self.model = {c: v[keep] for c, v in self.model.items()}
        theirs.close()
        self.ours = oxblosc.CTable.open(self.path, mode="a")

    @invariant()
    def both_views_match_the_model(self) -> None:
        if self.ours is None:
            return
        assert len(self.ours) == len(self.model["i"])
        for c, want in self.model.items():
            np.testing.assert_array_equal(self.ours[c].to_numpy(), want, err_msg=c)
        # a query sees live rows only
        np.testing.assert_array_equal(self.ours.where("i > 3")["g"].to_numpy(), self.model["g"][self.model["i"] > 3])
        if not self.ZIP:
            self.check_blosc2()

    def check_blosc2(self) -> None:
        theirs = blosc2.CTable.open(self.path)
        assert len(theirs) == len(self.model["i"])
        for c, want in self.model.items():
            np.testing.assert_array_equal(np.asarray(theirs[c][:]), want, err_msg=f"python-blosc2 {c}")

    def teardown(self) -> None:
        if self.ours is not None:
            self.ours.close()
            if self.ZIP:
                self.check_blosc2()
        self.ours = None
        shutil.rmtree(self.dir, ignore_errors=True)


TableVsBlosc2.TestCase.settings = settings(max_examples=15, stateful_step_count=10, deadline=None)
test_table_edits_agree_with_model_and_blosc2 = TableVsBlosc2.TestCase


class ZipTableVsBlosc2(TableVsBlosc2):
    ZIP = True


ZipTableVsBlosc2.TestCase.settings = settings(max_examples=8, stateful_step_count=10, deadline=None)
test_zip_table_edits_agree_with_model_and_blosc2 = ZipTableVsBlosc2.TestCase


def test_reopening_while_the_old_handle_lives_keeps_appends(tmp_path):
    """``t = CTable.open(p, mode="a")`` run again drops the old handle only after the new one
    opened; the old handle's columns closing used to rewrite their files under the new
    handle, whose appends then went to unlinked files (lost without an error)."""
    path = str(tmp_path / "t.b2d")
    t = oxblosc.CTable(make_rows(0, 1), urlpath=path, mode="w", chunks=64, blocks=16)
    theirs = blosc2.CTable.open(path, mode="a")
    theirs.delete([0])
    theirs.close()
    t = oxblosc.CTable.open(path, mode="a")  # the first `t` is dropped here, after the open
    t.extend(make_rows(1, 3))
    t = oxblosc.CTable.open(path, mode="a")
    t.extend(make_rows(4, 2))
    want = np.concatenate([make_rows(1, 3)["i"], make_rows(4, 2)["i"]])
    np.testing.assert_array_equal(t["i"].to_numpy(), want)
    del t
    np.testing.assert_array_equal(oxblosc.CTable.open(path)["i"].to_numpy(), want)
    np.testing.assert_array_equal(np.asarray(blosc2.CTable.open(path)["i"][:]), want)
