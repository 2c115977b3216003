"""Random sequences of n-d array edits on a real file, checked after every step against a NumPy
model *and* against python-blosc2 opening the same file.

Slice writes (with edges, partial chunks and blocks), resizes that grow and shrink, vlmeta,
reopening, and python-blosc2 editing the same file between our sessions. Hypothesis shrinks any
difference to the shortest sequence.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import blosc2
import numpy as np
import oxblosc
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from .helpers import file_size_limit


def region(data, shape: tuple[int, ...]) -> tuple[slice, ...]:
    """A non-empty box inside `shape` (or an empty one when a dimension is 0)."""
    out = []
    for n in shape:
        if n == 0:
            out.append(slice(0, 0))
            continue
        a = data.draw(st.integers(0, n - 1))
        b = data.draw(st.integers(a + 1, n))
        out.append(slice(a, b))
    return tuple(out)


class NDArrayVsBlosc2(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ox-ndstateful-"))
        self.ours = None

    @initialize(
        dtype=st.sampled_from(["i2", "f4", "f8", "u1"]),
        shape=st.tuples(st.integers(1, 23), st.integers(1, 17)),
        chunks=st.tuples(st.integers(2, 9), st.integers(2, 9)),
        contiguous=st.booleans(),
    )
    def create(self, dtype, shape, chunks, contiguous) -> None:
        self.path = str(self.dir / ("a.b2nd" if contiguous else "d.b2nd"))
        blocks = tuple(max(1, c // 2) for c in chunks)
        self.model = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
        self.ours = oxblosc.asarray(
            self.model, urlpath=self.path, contiguous=contiguous, chunks=chunks, blocks=blocks, mode="w"
        )
        self.vlmeta: dict[str, object] = {}
        self.counter = 0

    def _fresh(self, shape) -> np.ndarray:
        self.counter += 1
        return (np.arange(int(np.prod(shape))).reshape(shape) * 7 + self.counter * 1000).astype(self.model.dtype)

    @rule(data=st.data())
    def write_region(self, data) -> None:
        sl = region(data, self.model.shape)
        value = self._fresh(self.model[sl].shape)
        self.ours[sl] = value
        self.model[sl] = value

    @rule(data=st.data())
    def write_scalar(self, data) -> None:
        sl = region(data, self.model.shape)
        self.ours[sl] = 3
        self.model[sl] = 3

    @rule(new0=st.integers(0, 30), new1=st.integers(1, 20))
    def resize(self, new0: int, new1: int) -> None:
        self.ours.resize((new0, new1))
        grown = np.zeros((new0, new1), dtype=self.model.dtype)
        keep = tuple(slice(0, min(a, b)) for a, b in zip(self.model.shape, (new0, new1), strict=True))
        grown[keep] = self.model[keep]
        self.model = grown

    @rule(rows=st.integers(0, 7))
    def append_rows(self, rows: int) -> None:
        new = self._fresh((rows, *self.model.shape[1:]))
        assert self.ours.append(new) == self.model.shape[0] + rows
        self.model = np.concatenate([self.model, new])

    @rule(data=st.data(), op=st.sampled_from(["write", "resize", "append", "vlmeta"]))
    def edit_under_file_size_limit(self, data, op: str) -> None:
        """RLIMIT_FSIZE somewhere below the array's file sizes (writes past it fail with
        EFBIG): the edit happens completely or raises and changes nothing; the handle stays
        usable (the invariant reads both libraries' views)."""
        files = (
            [self.path] if os.path.isfile(self.path) else [os.path.join(self.path, f) for f in os.listdir(self.path)]
        )
        limit = data.draw(st.integers(0, max(os.path.getsize(f) for f in files)))
        model, vlmeta = self.model.copy(), dict(self.vlmeta)
        try:
            with file_size_limit(limit):
                if op == "write":
                    self.write_region(data)
                elif op == "resize":
                    self.resize(data.draw(st.integers(0, 30)), data.draw(st.integers(1, 20)))
                elif op == "append":
                    self.append_rows(data.draw(st.integers(1, 5)))
                else:
                    self.set_vlmeta("units", data.draw(st.integers(-3, 3)))
        except OSError as e:
            assert "File too large" in str(e), e
            self.model, self.vlmeta = model, vlmeta

    @rule(key=st.sampled_from(["units", "n"]), value=st.one_of(st.integers(-3, 3), st.text(max_size=3)))
    def set_vlmeta(self, key, value) -> None:
        self.ours.vlmeta[key] = value
        self.vlmeta[key] = value

    @rule()
    def reopen(self) -> None:
        del self.ours
        self.ours = oxblosc.open(self.path, mode="a")

    @rule(data=st.data())
    def blosc2_writes(self, data) -> None:
        del self.ours
        theirs = blosc2.open(self.path, mode="a")
        sl = region(data, self.model.shape)
        value = self._fresh(self.model[sl].shape)
        theirs[sl] = value
        self.model[sl] = value
        theirs.vlmeta["b2"] = self.counter
        self.vlmeta["b2"] = self.counter
        del theirs
        self.ours = oxblosc.open(self.path, mode="a")

    @invariant()
    def both_views_match_the_model(self) -> None:
        if self.ours is None:
            return
        assert self.ours.shape == self.model.shape
        np.testing.assert_array_equal(self.ours[...], self.model)
        assert dict(self.ours.vlmeta.getall()) == self.vlmeta
        theirs = blosc2.open(self.path, mode="r")
        assert theirs.shape == self.model.shape
        np.testing.assert_array_equal(theirs[...], self.model)
        assert {k: theirs.vlmeta[k] for k in theirs.vlmeta.getall()} == self.vlmeta

    def teardown(self) -> None:
        self.ours = None
        shutil.rmtree(self.dir, ignore_errors=True)


NDArrayVsBlosc2.TestCase.settings = settings(max_examples=30, stateful_step_count=12, deadline=None)
test_ndarray_edits_agree_with_model_and_blosc2 = NDArrayVsBlosc2.TestCase
