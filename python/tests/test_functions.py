"""python-blosc2's module-level array functions (``oxblosc.sin(a)``, ``oxblosc.sum(a, axis=0)``):
lazy, NumPy's values and types, the same names and results as the real python-blosc2 wheel."""

import blosc2
import numpy as np
import oxblosc
import pytest
from oxblosc.functions import _ALIASES, ELEMENTWISE, REDUCTIONS

RNG = np.random.default_rng(7)
SHAPE, CHUNKS, BLOCKS = (23, 17), (10, 8), (4, 5)


def _data(dtype: str, positive: bool = False) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = RNG.uniform(0.05 if positive else -3, 3, SHAPE).astype(dt)
        if not positive:
            x[0, :3] = [0.0, -0.0, np.nan]
        return x
    if dt.kind == "b":
        return RNG.integers(0, 2, SHAPE).astype(bool)
    lo = 1 if positive else (0 if dt.kind == "u" else -50)
    return RNG.integers(lo, 50, SHAPE).astype(dt)


def _arr(x: np.ndarray) -> oxblosc.NDArray:
    if x.ndim != len(SHAPE):
        return oxblosc.asarray(x, chunks=(4,), blocks=(2,))
    return oxblosc.asarray(x, chunks=CHUNKS, blocks=BLOCKS)


def _numpy(name: str):
    return getattr(np, _ALIASES.get(name, name))


# Domain-restricted functions get positive inputs (and arccos/arcsin/arctanh values < 1).
UNIT = {"arcsin", "arccos", "arctanh", "asin", "acos", "atanh"}
POSITIVE = {"log", "log10", "log2", "log1p", "sqrt", "arccosh", "acosh", "floor_divide", "remainder"}
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert"}


@pytest.mark.parametrize("name", ELEMENTWISE)
@pytest.mark.parametrize("dtype", ["int32", "uint16", "float32", "float64"])  # 1-byte ints: float32, not float16
def test_elementwise_is_lazy_and_equals_numpy(name, dtype):
    if name in INT_ONLY and dtype.startswith("float"):
        pytest.skip("bitwise functions take integers")
    if name in ("arccosh", "acosh") and not dtype.startswith("float"):
        pytest.skip("integer inputs of arccosh are all >= 1 only by chance")
    f = getattr(oxblosc, name)
    nargs = 2 if "{1}" in oxblosc.functions._template(name) else 1
    xs = [_data(dtype, positive=name in POSITIVE) for _ in range(nargs)]
    if name in UNIT:
        xs = [(x / 4).astype(dtype) if dtype.startswith("float") else x % 1 for x in xs]
    if name in ("arccosh", "acosh"):
        xs = [x + 1 for x in xs]
    if name == "pow" or name == "power":
        xs[1] = np.abs(xs[1]) % 4 if dtype[0] in "iu" else xs[1]
    e = f(*[_arr(x) for x in xs])
    assert isinstance(e, oxblosc.LazyExpr)
    with np.errstate(all="ignore"):
        want = _numpy(name)(*xs)
    got = e[()]
    assert got.dtype == want.dtype, (name, dtype, got.dtype, want.dtype)
    rtol = 2e-6 if want.dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=rtol, equal_nan=True)
    # Broadcasting against a NumPy row and a scalar, as NumPy does.
    if nargs == 2:
        row = xs[1][0]
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(f(_arr(xs[0]), row)[()], _numpy(name)(xs[0], row), rtol=rtol, equal_nan=True)


def test_sign_matches_numpy_on_zeros_and_nan():
    x = np.array([-2.5, -0.0, 0.0, 3.0, np.nan, -np.inf])
    got = oxblosc.sign(_arr(x))[()]
    np.testing.assert_array_equal(got, np.sign(x))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.sign(x)))


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_reductions_equal_numpy(op, axis):
    if op in ("argmin", "argmax") and isinstance(axis, tuple):
        pytest.skip("NumPy's argmin/argmax take one axis")
    x = _data("float64", positive=True)
    got = getattr(oxblosc, op)(_arr(x), axis=axis)
    np.testing.assert_allclose(got, getattr(np, op)(x, axis=axis), rtol=1e-12)
    # On a lazy expression too, with keepdims.
    got = getattr(oxblosc, op)(oxblosc.sin(_arr(x)), axis=axis, keepdims=True) if "arg" not in op else None
    if got is not None:
        np.testing.assert_allclose(got, getattr(np, op)(np.sin(x), axis=axis, keepdims=True), rtol=1e-12)


def test_reductions_never_load_the_whole_array(monkeypatch):
    a = _arr(_data("int64"))

    def refuse(*args, **kwargs):
        raise AssertionError("the whole array was converted")

    monkeypatch.setattr(oxblosc.NDArray, "__array__", refuse)
    assert oxblosc.sum(a) == a[()].sum()
    assert oxblosc.count_nonzero(a) == np.count_nonzero(a[()])


def test_count_nonzero():
    x = _data("int16")
    x[x % 3 == 0] = 0
    a = _arr(x)
    n = oxblosc.count_nonzero(a)
    assert type(n) is int and n == np.count_nonzero(x)
    for axis in (0, 1, (0, 1)):
        np.testing.assert_array_equal(oxblosc.count_nonzero(a, axis=axis), np.count_nonzero(x, axis=axis))
    assert oxblosc.count_nonzero(x) == np.count_nonzero(x)


def test_numpy_and_list_inputs():
    np.testing.assert_allclose(oxblosc.sin([1.0, 2.0])[()], np.sin([1.0, 2.0]))
    assert oxblosc.sum(np.arange(5)) == 10
    np.testing.assert_array_equal(oxblosc.add(np.arange(3), 1)[()], np.arange(1, 4))


def test_bad_calls_give_clear_errors():
    a = _arr(_data("float64"))
    with pytest.raises(TypeError, match=r"sin\(\) takes 1 positional argument but 2"):
        oxblosc.sin(a, a)
    with pytest.raises(TypeError, match="unsupported operand type for an expression: object"):
        oxblosc.add(a, object())
    with pytest.raises(TypeError, match="complex128"):
        oxblosc.sin(np.ones(3, complex))


def test_names_dtypes_and_constants_as_in_python_blosc2():
    for name in [*ELEMENTWISE, *REDUCTIONS, "count_nonzero"]:
        assert hasattr(blosc2, name), name
    for name in "bool_ pi e inf nan newaxis".split():
        v, w = getattr(oxblosc, name), getattr(blosc2, name)
        assert v is w or v == w or (name == "nan" and np.isnan(v) and np.isnan(w)), name
    # Builtins are not shadowed by ``from oxblosc import *``.
    assert "sum" not in oxblosc.__all__ and "abs" not in oxblosc.__all__


@pytest.mark.parametrize("name", ["sin", "sqrt", "square", "add", "maximum", "atan2", "logical_xor", "sign"])
def test_same_values_as_python_blosc2(name):
    kind = "bool" if name.startswith("logical") else "float64"
    x = _data(kind, positive=True)
    y = _data(kind, positive=True)
    nargs = 2 if "{1}" in oxblosc.functions._template(name) else 1
    ours = getattr(oxblosc, name)(*[_arr(v) for v in (x, y)[:nargs]])[()]
    theirs = getattr(blosc2, name)(*[blosc2.asarray(v, chunks=CHUNKS, blocks=BLOCKS) for v in (x, y)[:nargs]])[()]
    np.testing.assert_allclose(ours, theirs, rtol=1e-14)
    assert ours.dtype == theirs.dtype
    for op in ("sum", "mean", "max", "std") if kind == "float64" else ():
        np.testing.assert_allclose(
            getattr(oxblosc, op)(_arr(x), axis=1), getattr(blosc2, op)(blosc2.asarray(x), axis=1), rtol=1e-12
        )


@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_equals_numpy_exactly(op, axis, include_initial):
    x = RNG.normal(size=(7, 9, 5)) if op == "sum" else RNG.uniform(0.5, 1.5, (7, 9, 5))
    a = oxblosc.asarray(x, chunks=(3, 4, 2), blocks=(1, 2, 1))
    want = getattr(np, f"cumulative_{op}")(x, axis=axis, include_initial=include_initial)
    for got in (
        getattr(oxblosc, f"cumulative_{op}")(a, axis=axis, include_initial=include_initial),
        getattr(a, f"cumulative_{op}")(axis=axis, include_initial=include_initial),
    ):
        assert isinstance(got, oxblosc.NDArray) and got.shape == want.shape
        np.testing.assert_array_equal(got[()], want)  # the same left-to-right order: exact
    e = oxblosc.sin(a) + 1
    # sin is evaluated per chunk here and may differ from NumPy's by an ULP.
    want = getattr(np, f"cumulative_{op}")(np.sin(x) + 1, axis=axis)
    np.testing.assert_allclose(getattr(oxblosc, f"cumulative_{op}")(e, axis=axis)[()], want, rtol=1e-13, atol=1e-14)


def test_cumulative_types_and_errors():
    xi = np.arange(12, dtype="i2").reshape(3, 4)
    got = oxblosc.cumulative_sum(oxblosc.asarray(xi), axis=1)
    theirs = blosc2.cumulative_sum(blosc2.asarray(xi), axis=1)
    assert got.dtype == theirs.dtype == np.int64
    np.testing.assert_array_equal(got[()], theirs[()])
    assert oxblosc.cumulative_sum(oxblosc.asarray(xi), axis=0, dtype="f4").dtype == np.float32
    np.testing.assert_array_equal(oxblosc.cumulative_sum(oxblosc.asarray(np.arange(5)))[()], [0, 1, 3, 6, 10])
    with pytest.raises(ValueError, match="axis must be specified"):
        oxblosc.cumulative_sum(oxblosc.asarray(xi))
    with pytest.raises(np.exceptions.AxisError):
        oxblosc.cumulative_prod(oxblosc.asarray(xi), axis=2)
    empty = oxblosc.cumulative_sum(oxblosc.zeros((0, 3)), axis=0, include_initial=True)
    np.testing.assert_array_equal(empty[()], np.zeros((1, 3)))


def test_namespace_builds_without_numpy2_isdtype(monkeypatch):
    """NumPy 1.x has no ``np.isdtype``: importing oxblosc used to fail there (its namespace
    took ``np.isdtype`` at import). Now only calling ``isdtype`` says it needs NumPy 2."""
    from oxblosc import functions

    assert oxblosc.isdtype(np.dtype("f4"), "real floating")
    monkeypatch.delattr(np, "isdtype")
    ns = functions.namespace()
    with pytest.raises(NotImplementedError, match="NumPy >= 2.0"):
        ns["isdtype"](np.dtype("f4"), "real floating")
