"""Reductions of NDArrays and lazy expressions, chunk by chunk, against NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import oxblosc
import pytest
from oxblosc import reductions

OPS = ["sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax"]
AXES = [None, 0, 1, 2, -1, (0, 1), (0, 2), (1, 2), (2, 0, 1)]


def _close(got, want, dt):
    want = np.asarray(want)
    assert np.shape(got) == want.shape
    assert np.asarray(got).dtype == want.dtype, (np.asarray(got).dtype, want.dtype)
    if want.dtype.kind == "f":
        tol = 1e-4 if np.dtype(dt) == np.float32 or want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.mark.parametrize("dt", ["f8", "f4", "i4", "u1", "i8", "?"])
def test_every_axis_and_keepdims(dt):
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(7, 9, 5)) * 3).astype(dt)
    a = oxblosc.asarray(x, chunks=(3, 4, 5), blocks=(2, 2, 5))  # edge chunks on two axes
    for op in OPS:
        for ax in AXES:
            if op.startswith("arg") and isinstance(ax, tuple):
                continue
            for kd in (False, True):
                want = getattr(np, op)(x, axis=ax, keepdims=kd)
                _close(getattr(np, op)(a, axis=ax, keepdims=kd), want, dt)  # np.op dispatches
                _close(getattr(a, op)(axis=ax, keepdims=kd), want, dt)


def test_expressions_dtype_where_ddof_out():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 20))
    y = rng.integers(-5, 5, size=(30, 20)).astype(np.int16)
    a = oxblosc.asarray(x, chunks=(8, 6), blocks=(4, 3))
    b = oxblosc.asarray(y, chunks=(7, 20), blocks=(7, 5))
    e = a * b + 1
    ref = x * y + 1
    mask = ref > 0
    for ax in (None, 0, 1):
        _close(e.sum(axis=ax), ref.sum(axis=ax), "f8")
        _close(e.mean(axis=ax, where=mask), ref.mean(axis=ax, where=mask), "f8")
        _close(e.std(axis=ax, ddof=1), ref.std(axis=ax, ddof=1), "f8")
        _close(e.var(axis=ax, where=e > 0), ref.var(axis=ax, where=mask), "f8")
        _close(e.max(axis=ax, where=mask, initial=-np.inf), ref.max(axis=ax, where=mask, initial=-np.inf), "f8")
        _close(np.argmax(e, axis=ax), np.argmax(ref, axis=ax), "f8")
        _close(b.sum(axis=ax, dtype=np.int8), y.sum(axis=ax, dtype=np.int8), "i1")
        _close(b.mean(axis=ax, dtype=np.float32), y.mean(axis=ax, dtype=np.float32), "f4")
        _close((a > 0).any(axis=ax), (x > 0).any(axis=ax), "?")
        _close((a > -3).all(axis=ax), (x > -3).all(axis=ax), "?")
    out = np.empty(20)
    assert e.sum(axis=0, out=out) is out
    _close(out, ref.sum(axis=0), "f8")
    _close(b.sum(initial=5), y.sum(initial=5), "i8")
    with pytest.raises(ValueError):
        e.min(where=mask)  # NumPy needs an initial value there too


def test_nan_ties_and_argmin():
    x = np.array([[3.0, 1.0, 1.0, 5.0], [np.nan, 0.0, 7.0, np.nan], [2.0, 0.0, 0.0, 9.0]])
    a = oxblosc.asarray(x, chunks=(2, 2), blocks=(1, 1))
    for op in ("argmin", "argmax", "min", "max", "sum", "mean"):
        for ax in (None, 0, 1):
            _close(getattr(a, op)(axis=ax), getattr(np, op)(x, axis=ax), "f8")
    y = np.array([5, 1, 7, 1, 7, 0, 0], dtype=np.int8)
    b = oxblosc.asarray(y, chunks=(2,), blocks=(1,))
    assert b.argmin() == 5 and b.argmax() == 2 and np.argmax(b, keepdims=True).shape == (1,)


def test_empty_and_zero_d():
    z = oxblosc.zeros((0, 3))
    _close(z.sum(axis=0), np.zeros((0, 3)).sum(axis=0), "f8")
    with pytest.raises(ValueError):
        z.max()
    s = oxblosc.asarray(np.array(4.5))
    assert s.sum() == 4.5 and s.max() == 4.5 and (s * 2).mean() == 9.0


def test_large_float_sum_within_pairwise_tolerance():
    rng = np.random.default_rng(7)
    x = rng.random(3_000_000, dtype=np.float32)
    a = oxblosc.asarray(x, chunks=(250_000,), blocks=(25_000,))
    # NumPy's own pairwise float32 sum against the exact one: ours must be as close.
    exact = np.sum(x, dtype=np.float64)
    assert abs(float(a.sum()) - exact) <= max(4 * abs(float(np.sum(x)) - exact), 1e-6 * exact)
    assert a.sum().dtype == np.float32


def test_reductions_never_load_the_whole_array(monkeypatch):
    x = np.arange(10_000, dtype=np.float64).reshape(100, 100)
    a = oxblosc.asarray(x, chunks=(25, 50))

    def refuse(*args, **kwargs):
        raise AssertionError("the whole array was converted")

    monkeypatch.setattr(oxblosc.NDArray, "__array__", refuse)
    monkeypatch.setattr(oxblosc.LazyExpr, "__array__", refuse)
    assert np.sum(a) == x.sum() and np.mean(a * 2) == (x * 2).mean() and np.argmax(a) == 9999
    np.testing.assert_array_equal(np.max(a, axis=1), x.max(axis=1))


def test_threads_give_the_same_result(monkeypatch):
    x = np.random.default_rng(1).normal(size=(64, 64))
    a = oxblosc.asarray(x, chunks=(8, 8), blocks=(4, 4))
    monkeypatch.setattr(oxblosc._core, "nthreads", 4)
    many = [a.sum(axis=0), a.std(axis=1), a.argmin(axis=0), a.max()]
    monkeypatch.setattr(oxblosc._core, "nthreads", 1)
    one = [a.sum(axis=0), a.std(axis=1), a.argmin(axis=0), a.max()]
    for m, o in zip(many, one, strict=True):
        np.testing.assert_array_equal(m, o)


def test_float64_reductions_run_in_the_engine_and_match_numpy(monkeypatch):
    # Edge chunks on every axis and blocks that do not divide the chunks (padding inside).
    rng = np.random.default_rng(7)
    x = 1.0 + 0.01 * rng.normal(size=(13, 17, 9))
    a = oxblosc.asarray(x, chunks=(5, 6, 4), blocks=(2, 4, 3))

    def refuse(*args, **kwargs):
        raise AssertionError("reduced chunk by chunk in NumPy")

    monkeypatch.setattr(reductions, "_chunked", refuse)
    for axis in (None, 0, 1, 2, -1, (0, 1), (0, 2), (1, 2), (0, 1, 2)):
        for op in ("sum", "prod", "mean", "std", "var", "min", "max"):
            got, want = getattr(a, op)(axis=axis), getattr(x, op)(axis=axis)
            assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.float64, (op, axis)
            np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=f"{op} {axis}")
    np.testing.assert_allclose(a.std(axis=1, ddof=1, keepdims=True), x.std(axis=1, ddof=1, keepdims=True), rtol=1e-13)
    y = x.copy()
    y[12, 16, 8] = np.nan  # the last item, in the last (edge) chunk
    b = oxblosc.asarray(y, chunks=(5, 6, 4), blocks=(2, 4, 3))
    for op in ("sum", "min", "max", "mean"):
        assert np.isnan(getattr(b, op)())
        np.testing.assert_allclose(getattr(b, op)(axis=2), getattr(y, op)(axis=2), rtol=1e-13)
    z = oxblosc.asarray(np.full((4, 5), -0.0))
    assert np.signbit(z.sum()) and np.signbit(z.sum(axis=0)).all()


def test_other_reductions_keep_the_chunked_path():
    x = np.arange(60, dtype=np.int64).reshape(6, 10)
    a = oxblosc.asarray(x, chunks=(4, 4))
    assert a.sum(axis=0).dtype == x.sum(axis=0).dtype
    np.testing.assert_array_equal(a.sum(axis=0), x.sum(axis=0))
    f = oxblosc.asarray(x.astype(np.float64), chunks=(4, 4))
    np.testing.assert_array_equal(f.sum(axis=1, where=x % 2 == 0), x.sum(axis=1, where=x % 2 == 0))
    np.testing.assert_array_equal(f.max(initial=100.0), 100.0)
