"""Reductions in the engine (no NumPy chunk loop): every integer and float type with NumPy's
result types, argmin/argmax/any/all, and reductions of lazy expressions fused with their
evaluation (the expression's values are never stored), against NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import oxblosc
import pytest
from oxblosc import reductions

OPS = ["sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax"]
AXES = [None, 0, 1, 2, -1, (0, 1), (0, 2), (1, 2)]
# Edge chunks on every axis and blocks that do not divide the chunks (padding inside).
SHAPE, CHUNKS, BLOCKS = (7, 10, 9), (3, 4, 5), (2, 3, 2)


@pytest.fixture
def engine_only(monkeypatch):
    """Fail if a reduction falls back to NumPy chunk by chunk."""

    def refuse(*args, **kwargs):
        raise AssertionError("reduced chunk by chunk in NumPy, not in the engine")

    monkeypatch.setattr(reductions, "_chunked", refuse)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _check(got, want, what):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        tol = 2e-6 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=str(what))
    else:
        np.testing.assert_array_equal(got, want, err_msg=str(what))


def _values(dt: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = np.dtype(dt)
    if d.kind == "f":
        return (rng.normal(size=SHAPE) * 3).astype(d)
    if d.kind == "b":
        return rng.random(SHAPE) < 0.7
    info = np.iinfo(d)
    return rng.integers(info.min, info.max, size=SHAPE, dtype=d, endpoint=True)


@pytest.mark.parametrize("dt", ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "?"])
def test_every_type_axis_and_keepdims_in_the_engine(engine_only, dt):
    x = _values(dt, 11)
    a = oxblosc.asarray(x, chunks=CHUNKS, blocks=BLOCKS)
    for op in OPS:
        for ax in AXES:
            if op.startswith("arg") and isinstance(ax, tuple):
                continue
            for kd in (False, True):
                want = getattr(np, op)(x, axis=ax, keepdims=kd)
                _check(getattr(a, op)(axis=ax, keepdims=kd), want, (dt, op, ax, kd))


def test_integer_sums_and_products_wrap_as_numpy(engine_only):
    # Large int64 and uint64 items: sums and products leave 64 bits and wrap, as NumPy's do.
    for dt in ("i8", "u8", "i1"):
        x = _values(dt, 5)
        a = oxblosc.asarray(x, chunks=CHUNKS, blocks=BLOCKS)
        for ax in (None, 0, 2):
            _check(a.sum(axis=ax), x.sum(axis=ax), (dt, "sum", ax))
            _check(a.prod(axis=ax), x.prod(axis=ax), (dt, "prod", ax))
        _check(a.sum(dtype=np.float64), x.sum(dtype=np.float64), (dt, "sum f8"))


def test_nan_in_edge_chunks_and_ties(engine_only):
    x = np.round(_values("f4", 3))  # few distinct values: ties everywhere
    x[6, 9, 8] = np.nan  # the last item, in the last (edge) chunk
    x[6, 0, 3] = np.nan
    a = oxblosc.asarray(x, chunks=CHUNKS, blocks=BLOCKS)
    for op in ("sum", "mean", "min", "max", "argmin", "argmax", "any", "all", "std"):
        for ax in (None, 0, 1, 2):
            _check(getattr(a, op)(axis=ax), getattr(np, op)(x, axis=ax), (op, ax))


def test_lazy_expression_reductions_are_fused(engine_only, monkeypatch):
    rng = np.random.default_rng(9)
    xs = [rng.normal(size=SHAPE) for _ in range(3)]
    a, b, c = (oxblosc.asarray(v, chunks=CHUNKS, blocks=BLOCKS) for v in xs)
    x, y, z = xs

    def refuse(*args, **kwargs):
        raise AssertionError("the expression's values were computed")

    # Neither evaluated piece by piece nor computed into an array.
    monkeypatch.setattr(oxblosc.LazyExpr, "__getitem__", refuse)
    monkeypatch.setattr(oxblosc.LazyExpr, "compute", refuse)
    for ax in (None, 0, 1, 2, (0, 2)):
        _check((a * b + c).sum(axis=ax), (x * y + z).sum(axis=ax), ("sum", ax))
        _check((a * b + c).mean(axis=ax, keepdims=True), (x * y + z).mean(axis=ax, keepdims=True), ("mean", ax))
        _check(np.std(a * 2 - c, axis=ax, ddof=1), np.std(x * 2 - z, axis=ax, ddof=1), ("std", ax))
        _check((a + np.sin(c)).min(axis=ax), (x + np.sin(z)).min(axis=ax), ("min", ax))
        _check(np.max(a - b, axis=ax), np.max(x - y, axis=ax), ("max", ax))
        _check((a > b).sum(axis=ax), (x > y).sum(axis=ax), ("count", ax))
        _check((a > 2).any(axis=ax), (x > 2).any(axis=ax), ("any", ax))
        _check((a > -4).all(axis=ax), (x > -4).all(axis=ax), ("all", ax))
    for ax in (None, 0, 2):
        _check((a * c).argmax(axis=ax), (x * z).argmax(axis=ax), ("argmax", ax))
        _check((a * c).argmin(axis=ax), (x * z).argmin(axis=ax), ("argmin", ax))
    # Scalars and integer operands mix in; the result type is NumPy's.
    i = oxblosc.asarray((x * 10).astype(np.int16), chunks=CHUNKS, blocks=BLOCKS)
    _check((i * 3 + 1).sum(axis=1), ((x * 10).astype(np.int16) * 3 + 1).sum(axis=1), "int16 expr")
    _check((i * np.float32(0.5)).sum(), ((x * 10).astype(np.int16) * np.float32(0.5)).sum(), "float32 expr")


def test_reductions_in_expression_text_are_fused(engine_only):
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=SHAPE), rng.normal(size=SHAPE)
    a = oxblosc.asarray(x, chunks=CHUNKS, blocks=BLOCKS)
    b = oxblosc.asarray(y, chunks=CHUNKS, blocks=BLOCKS)
    _check(oxblosc.lazyexpr("sum(a * b)", {"a": a, "b": b})[()], (x * y).sum(), "sum(a*b)")
    got = oxblosc.lazyexpr("a - mean(a * b, axis=0)", {"a": a, "b": b})[:]
    _check(got, x - (x * y).mean(axis=0), "a - mean(a*b, axis=0)")


def test_fused_results_do_not_depend_on_threads(monkeypatch):
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=SHAPE).astype(np.float32), rng.normal(size=SHAPE)
    a = oxblosc.asarray(x, chunks=CHUNKS, blocks=BLOCKS)
    b = oxblosc.asarray(y, chunks=CHUNKS, blocks=BLOCKS)

    def run():
        return [(a * b).sum(), (a * b).std(axis=1), a.sum(axis=0), (a - b).argmax(axis=2), a.mean()]

    monkeypatch.setattr(oxblosc._core, "nthreads", 1)
    one = run()
    monkeypatch.setattr(oxblosc._core, "nthreads", 3)
    for m, o in zip(run(), one, strict=True):
        np.testing.assert_array_equal(m, o)


def test_mismatched_geometry_and_where_take_the_numpy_path():
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=SHAPE), rng.normal(size=SHAPE)
    a = oxblosc.asarray(x, chunks=CHUNKS, blocks=BLOCKS)
    b = oxblosc.asarray(y, chunks=(7, 5, 9))  # other chunks: not fused, still right
    _check((a * b).sum(axis=1), (x * y).sum(axis=1), "other chunks")
    _check(a.sum(axis=0, where=x > 0), x.sum(axis=0, where=x > 0), "where")
    _check((a * y).max(axis=2), (x * y).max(axis=2), "NumPy operand")
