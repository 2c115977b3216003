"""``expr[:]`` of a lazy expression over NDArrays of one geometry: evaluated in the engine
block by block straight into the NumPy result (no operand read whole, no Python loop)."""

from __future__ import annotations

import sys

import numpy as np
import oxblosc
import pytest

lazymod = sys.modules["oxblosc.lazyexpr"]


@pytest.fixture
def engine_only(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("evaluated box by box in Python")

    monkeypatch.setattr(lazymod.LazyExpr, "_eval_box", refuse)


GEOMETRIES = [
    ((7, 10, 9), (3, 4, 5), (2, 3, 2)),  # edge chunks, blocks not dividing chunks
    ((9, 6, 4), (4, 6, 4), (1, 6, 4)),  # blocks spanning the trailing axes whole
    ((13,), (5,), (2,)),
    ((2, 3, 4, 5), (2, 2, 3, 5), (1, 2, 2, 5)),
]


@pytest.mark.parametrize(("shape", "chunks", "blocks"), GEOMETRIES)
def test_whole_reads_match_numpy(engine_only, shape, chunks, blocks):
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=shape), rng.integers(-9, 9, size=shape).astype(np.int32)
    a = oxblosc.asarray(x, chunks=chunks, blocks=blocks)
    b = oxblosc.asarray(y, chunks=chunks, blocks=blocks)
    cases = {
        "a * b + sin(a)": (a * b + np.sin(a), x * y + np.sin(x)),
        "b * 3 - 1": (b * 3 - 1, y * 3 - 1),
        "a > b": (a > b, x > y),
        "a * np.float32(2)": (a * np.float32(2), x * np.float32(2)),
    }
    for name, (e, want) in cases.items():
        for key in ((), slice(None), Ellipsis, (slice(None),) * len(shape)):
            got = e[key]
            assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15, err_msg=name)
    np.testing.assert_allclose(np.asarray(a * b), x * y)
    text = oxblosc.lazyexpr("a * b + 1", {"a": a, "b": b})
    np.testing.assert_allclose(text[:], x * y + 1)


def test_other_reads_keep_the_general_path():
    x = np.arange(60.0).reshape(6, 10)
    a = oxblosc.asarray(x, chunks=(4, 4))
    b = oxblosc.asarray(x, chunks=(3, 5))  # another geometry
    np.testing.assert_array_equal((a + b)[:], x + x)
    np.testing.assert_array_equal((a + x)[:], x + x)  # a NumPy operand
    np.testing.assert_array_equal((a * 2)[1:4, ::3], (x * 2)[1:4, ::3])


def test_operands_in_files_are_read_by_chunk_rows(engine_only, tmp_path):
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(7, 10, 9)), rng.normal(size=(7, 10, 9))
    geo = {"chunks": (3, 4, 5), "blocks": (2, 3, 2)}
    a = oxblosc.asarray(x, urlpath=str(tmp_path / "a.b2nd"), mode="w", **geo)
    b = oxblosc.asarray(y, urlpath=str(tmp_path / "b.b2nd"), mode="w", **geo)
    np.testing.assert_allclose((a * b - 2)[:], x * y - 2, rtol=1e-15)
    reopened = oxblosc.open(str(tmp_path / "a.b2nd"))
    np.testing.assert_allclose((reopened + b)[...], x + y, rtol=1e-15)
