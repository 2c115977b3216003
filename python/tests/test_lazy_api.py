"""The lazy-expression API a python-blosc2 user reaches for, checked against the real
python-blosc2 wheel (same values, same kinds of errors) and NumPy: reductions inside the
expression text, ``expr.where(x)``, the attributes and methods of ``LazyExpr``
(``info``, ``slice``, ``get_chunk``...), indexing, saved expressions both ways and hostile
text."""

from __future__ import annotations

import warnings

import blosc2
import numpy as np
import oxblosc
import pytest

X = np.arange(60, dtype="f8").reshape(6, 10)
Y = np.linspace(0, 1, 60).reshape(6, 10)


def _pair(mod, tmp_path=None):
    kw = {"chunks": (4, 5), "blocks": (2, 5)}
    if tmp_path is None:
        return mod.asarray(X, **kw), mod.asarray(Y, **kw)
    return (
        mod.asarray(X, urlpath=str(tmp_path / "a.b2nd"), mode="w", **kw),
        mod.asarray(Y, urlpath=str(tmp_path / "b.b2nd"), mode="w", **kw),
    )


# Reductions inside the text, with NumPy's answer on X (a) and Y (b).
TEXT_REDUCTIONS = [
    ("sum(a) + b", X.sum() + Y),
    ("a - mean(a, axis=0)", X - X.mean(axis=0)),
    ("a - mean(a, axis=1, keepdims=True)", X - X.mean(axis=1, keepdims=True)),
    ("sum(a + b)", (X + Y).sum()),
    ("sum(a, axis=(0,1))", X.sum()),
    ("sum(a, axis=-1)", X.sum(axis=-1)),
    ("a.sum(axis=0)", X.sum(axis=0)),
    ("a.sum() + b", X.sum() + Y),
    ("sum(sin(a)) * 2", np.sin(X).sum() * 2),
    ("max(a) - min(a)", X.max() - X.min()),
    ("std(a, axis=1, keepdims=True)", X.std(axis=1, keepdims=True)),
    ("argmax(a, axis=1)", X.argmax(axis=1)),
    ("argmin(b)", Y.argmin()),
    ("any(a > 3)", (X > 3).any()),
    ("all(a > -1, axis=0)", (X > -1).all(axis=0)),
    ("sum(sum(a, axis=0))", X.sum()),
    ("prod(b+1, axis=0)", (Y + 1).prod(axis=0)),
    ("min(a, axis=0) + b", X.min(axis=0) + Y),
    ("sum(a, keepdims=True) + b", X.sum(keepdims=True) + Y),
    ("sum(a)/b.sum()", X.sum() / Y.sum()),
    ("(a + b).mean(axis=0) * 2", (X + Y).mean(axis=0) * 2),
    ("sum(a, dtype='float32')", X.sum(dtype="float32")),
]


@pytest.mark.parametrize(("text", "expected"), TEXT_REDUCTIONS, ids=[t for t, _ in TEXT_REDUCTIONS])
def test_reductions_in_expression_text(text, expected):
    a, b = _pair(oxblosc)
    e = oxblosc.lazyexpr(text, {"a": a, "b": b})
    assert (e.shape, e.dtype) == (np.shape(expected), np.asarray(expected).dtype)
    np.testing.assert_allclose(e[()], expected, rtol=1e-12)
    np.testing.assert_allclose(e.compute()[()], expected, rtol=1e-12)
    # python-blosc2 gives the same (where it accepts the text)
    ta, tb = _pair(blosc2)
    if "dtype=" not in text:
        theirs = blosc2.lazyexpr(text, {"a": ta, "b": tb})
        np.testing.assert_allclose(e[()], theirs[()], rtol=1e-12)
        assert e.shape == theirs.shape


def test_text_reductions_compose_slice_and_name_lookup():
    a, b = _pair(oxblosc)
    e = oxblosc.lazyexpr("a - mean(a, axis=0)")  # names from the caller's variables
    np.testing.assert_allclose(e[2:4, ::3], (X - X.mean(axis=0))[2:4, ::3])
    np.testing.assert_allclose((e * 2 + b)[()], (X - X.mean(axis=0)) * 2 + Y)  # combined: text kept
    assert "mean(" in (e * 2).expression
    np.testing.assert_allclose(np.sum(e, axis=1), (X - X.mean(axis=0)).sum(axis=1), atol=1e-9)
    # a reduction's text may mention operands the body does not
    np.testing.assert_allclose(oxblosc.lazyexpr("a + sum(b)", {"a": a, "b": b})[()], X + Y.sum())


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ("a - mean(a, axis=1)", ValueError, "broadcast"),  # NumPy would refuse too
        ("sum(a, axis=2)", np.exceptions.AxisError, "axis"),
        ("sum(a, dtype=np.float32)", ValueError, "literal"),
        ("sum(a, where=a > 3)", ValueError, "literal"),
        ("sum(a, axis=__import__('os'))", ValueError, "literal"),
        ("sum()", ValueError, "first argument"),
        ("sum(axis=0)", ValueError, "first argument"),
        ("sum(a, 0, 1)", ValueError, "positional"),
        ("sum(a, bogus=1)", TypeError, "bogus"),
        ("sum(a, axis=0, axis=1)", ValueError, "twice"),
        ("sum(a", ValueError, "unbalanced"),
        ("sum(zz)", NameError, "zz"),
        ("+".join(["sum(a)"] * 70), ValueError, "reductions"),
    ],
)
def test_text_reduction_errors(text, error, match):
    a, b = _pair(oxblosc)
    with pytest.raises(error, match=match):
        oxblosc.lazyexpr(text, {"a": a, "b": b})
