"""oxblosc.evaluate against NumPy: random expression trees over random data.

Each tree is rendered to text for oxblosc (parsed by its Rust engine) and evaluated directly
by NumPy from the same tree (never from the text), so both see the same expression.
"""

from __future__ import annotations

import operator

import numpy as np
import oxblosc
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]
COLS = ["a", "b", "c"]
BINOPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
# Exact functions only (transcendental ones are checked with a tolerance below).
FUNCS1 = {
    "abs": np.abs,
    "sqrt": np.sqrt,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}
FUNCS2 = {"minimum": np.minimum, "maximum": np.maximum, "fmod": np.fmod}


def leaves():
    return st.one_of(
        st.sampled_from(COLS).map(lambda n: ("col", n)),
        st.integers(-300, 300).map(lambda v: ("lit", v)),
        st.sampled_from([0.5, 2.0, -1.0, 1.5, 1e-3, 1e300, float("inf"), float("nan"), 0.0]).map(lambda v: ("lit", v)),
        st.booleans().map(lambda v: ("lit", v)),
    )


def extend(children):
    return st.one_of(
        st.tuples(st.just("bin"), st.sampled_from(sorted(BINOPS)), children, children),
        st.tuples(st.just("un"), st.sampled_from(["-", "~"]), children),
        st.tuples(st.just("f1"), st.sampled_from(sorted(FUNCS1)), children),
        st.tuples(st.just("f2"), st.sampled_from(sorted(FUNCS2)), children, children),
        st.tuples(st.just("where"), children, children, children),
    )


trees = st.recursive(leaves(), extend, max_leaves=8)


def render(t) -> str:
    kind = t[0]
    if kind == "col":
        return t[1]
    if kind == "lit":
        v = t[1]
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, float) and np.isnan(v):
            return "nan"
        if isinstance(v, float) and np.isinf(v):
            return "inf" if v > 0 else "(-inf)"
        return f"({v!r})" if v < 0 else repr(v)
    if kind == "bin":
        return f"({render(t[2])} {t[1]} {render(t[3])})"
    if kind == "un":
        return f"({t[1]}{render(t[2])})"
    if kind == "f1":
        return f"{t[1]}({render(t[2])})"
    if kind == "f2":
        return f"{t[1]}({render(t[2])}, {render(t[3])})"
    return f"where({render(t[1])}, {render(t[2])}, {render(t[3])})"


class Float16(Exception):
    """NumPy produced float16 (we give float32 there, documented)."""


def numpy_eval(t, env):
    kind = t[0]
    if kind == "col":
        return env[t[1]]
    if kind == "lit":
        return t[1]
    if kind == "bin":
        x, y = numpy_eval(t[2], env), numpy_eval(t[3], env)
        r = BINOPS[t[1]](x, y)
    elif kind == "un":
        x = numpy_eval(t[2], env)
        if t[1] == "~" and isinstance(x, bool):
            r = not x
        else:
            r = operator.neg(x) if t[1] == "-" else operator.invert(x)
    elif kind == "f1":
        r = FUNCS1[t[1]](numpy_eval(t[2], env))
    elif kind == "f2":
        r = FUNCS2[t[1]](numpy_eval(t[2], env), numpy_eval(t[3], env))
    else:
        r = np.where(numpy_eval(t[1], env), numpy_eval(t[2], env), numpy_eval(t[3], env))
    if getattr(r, "dtype", None) == np.float16:
        raise Float16
    if isinstance(r, complex) or (isinstance(r, int) and not -(2**63) <= r < 2**64):
        raise ArithmeticError("outside what the engine folds")
    return r


@st.composite
def tables(draw):
    n = draw(st.sampled_from([0, 1, 2, 7, 33]))
    env = {}
    for name in COLS:
        dt = np.dtype(draw(st.sampled_from(DTYPES)))
        elems = None
        if dt.kind == "f":
            elems = st.floats(width=dt.itemsize * 8, allow_nan=True, allow_infinity=True)
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            elems = st.one_of(
                st.integers(-5, 5).filter(lambda v, lo=info.min: v >= lo), st.integers(int(info.min), int(info.max))
            )
        env[name] = draw(hnp.arrays(dt, n, elements=elems))
    return env


def same(ours, want):
    want = np.asarray(want)
    assert ours.dtype == want.dtype, (ours.dtype, want.dtype)
    want = np.broadcast_to(want, ours.shape)
    if ours.dtype.kind == "f":
        np.testing.assert_array_equal(ours, want)  # NaN positions equal, values exact
        assert (np.signbit(ours) == np.signbit(want))[~np.isnan(want)].all()
    else:
        np.testing.assert_array_equal(ours, want)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees, tables())
def test_random_expressions_match_numpy(tree, env):
    text = render(tree)
    try:
        with np.errstate(all="ignore"):
            want = numpy_eval(tree, env)
        refused = None
    except Float16:
        assume(False)
    except ArithmeticError:
        assume(False)
    except (TypeError, ValueError, ZeroDivisionError) as e:
        refused = e
    if refused is not None:
        with pytest.raises((TypeError, ValueError)):
            oxblosc.evaluate(text, env)
        return
    ours = oxblosc.evaluate(text, env, nthreads=2)
    same(ours, want)


@pytest.mark.parametrize(
    "fn",
    [
        "exp",
        "expm1",
        "log",
        "log10",
        "log1p",
        "log2",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
    ],
)
@pytest.mark.parametrize("dt", ["f4", "f8", "i2", "i8"])
def test_float_functions_close_to_numpy(fn, dt):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(5000) * 3).astype(dt)
    with np.errstate(all="ignore"):
        want = getattr(np, fn)(x)
    ours = oxblosc.evaluate(f"{fn}(x)", {"x": x})
    assert ours.dtype == want.dtype
    rtol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours, want, rtol=rtol, atol=0, equal_nan=True)
    with np.errstate(all="ignore"):
        want = np.arctan2(x, 1.5)
    np.testing.assert_allclose(oxblosc.evaluate("arctan2(x, 1.5)", {"x": x}), want, rtol=rtol)


def test_bench_queries_and_blocks():
    """The six queries of the table benchmark, over several sub-blocks and threads."""
    rng = np.random.default_rng(0)
    n = 300_001
    cols = {
        k: (rng.standard_normal(n) * 10 + 50).astype("f4")
        for k in ["lat", "lon", "wind", "pressure", "temperature", "humidity", "precip"]
    }
    cols["time"] = (np.arange(n) // 1000).astype("i4")
    for q in [
        "(wind > 60.5) & (pressure < 40.25)",
        "temperature > 70",
        "(lat > 45) & (lat < 55) & (lon > 40) & (lon < 60) & (temperature > 65)",
        "(time >= 100) & (time < 130) & (humidity > 70)",
        "(pressure < 30) | (wind > 75)",
        "(wind * wind + 0.5 * precip) > 4000",
    ]:
        want = eval_numpy_query(q, cols)
        for nthreads in (1, 3):
            ours = oxblosc.evaluate(q, cols, nthreads=nthreads)
            np.testing.assert_array_equal(ours, want, err_msg=q)
    assert oxblosc.expr_names("(wind * wind + 0.5 * precip) > 4000") == ["wind", "precip"]


def eval_numpy_query(q, c):
    # The same six queries written out for NumPy (NEP 50: comparisons in float32).
    table = {
        "(wind > 60.5) & (pressure < 40.25)": lambda: (c["wind"] > 60.5) & (c["pressure"] < 40.25),
        "temperature > 70": lambda: c["temperature"] > 70,
        "(lat > 45) & (lat < 55) & (lon > 40) & (lon < 60) & (temperature > 65)": lambda: (c["lat"] > 45)
        & (c["lat"] < 55)
        & (c["lon"] > 40)
        & (c["lon"] < 60)
        & (c["temperature"] > 65),
        "(time >= 100) & (time < 130) & (humidity > 70)": lambda: (c["time"] >= 100)
        & (c["time"] < 130)
        & (c["humidity"] > 70),
        "(pressure < 30) | (wind > 75)": lambda: (c["pressure"] < 30) | (c["wind"] > 75),
        "(wind * wind + 0.5 * precip) > 4000": lambda: (c["wind"] * c["wind"] + 0.5 * c["precip"]) > 4000,
    }
    return table[q]()


def test_scalars_bytes_and_shapes():
    a = np.arange(12, dtype="i2").reshape(3, 4)
    out = oxblosc.evaluate("a * k + 1", {"a": a, "k": np.int16(3)})
    np.testing.assert_array_equal(out, a * np.int16(3) + 1)
    assert out.dtype == np.int16 and out.shape == (3, 4)
    s = np.array([b"ab", b"abc", b"", b"zz"], dtype="S3")
    np.testing.assert_array_equal(oxblosc.evaluate("s == 'ab'", {"s": s}), s == b"ab")
    np.testing.assert_array_equal(oxblosc.evaluate("s > b'ab'", {"s": s}), s > b"ab")
    with pytest.raises(ValueError, match="shapes must match"):
        oxblosc.evaluate("a + b", {"a": a, "b": np.arange(3)})
    with pytest.raises(TypeError, match="dtype"):
        oxblosc.evaluate("a + 1", {"a": np.arange(3, dtype="f2")})
    be = np.arange(5, dtype=">i4")
    np.testing.assert_array_equal(oxblosc.evaluate("a + 1", {"a": be}), np.arange(5) + 1)


def test_hostile_text_fails_fast_and_clearly():
    a = np.arange(10.0)
    cases = [
        ("(" * 100_000 + "a" + ")" * 100_000, ValueError, "at most 100000"),
        ("(" * 40_000 + "a" + ")" * 40_000, ValueError, "more than 40000 tokens"),
        ("(" * 150 + "a" + ")" * 150, ValueError, "nested deeper than 100"),
        ("-" * 150 + "a", ValueError, "nested deeper than 100"),
        ("a" + "+a" * 49_000, ValueError, "more than 40000 tokens"),
        ("a" + "+a" * 12_000, ValueError, "more than 10000 nodes"),
        ("a > " + "9" * 10_000, ValueError, "numeric literal"),
        ("a > 99999999999999999999999", TypeError, "64 bits"),
        ("(tmp > 3)", NameError, "did you mean 'tmp_a'"),
        ("a & 1", TypeError, "float64"),
        ("a >", ValueError, "at byte 3"),
        ("__import__('os').system('true')", ValueError, "not supported|unexpected"),
        ("a.real", ValueError, "not supported"),
    ]
    for text, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            oxblosc.evaluate(text, {"a": a, "tmp_a": a})
