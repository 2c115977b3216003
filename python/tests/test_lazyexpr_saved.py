"""Saved lazy expressions: python-blosc2's files open as oxblosc expressions and ours open in
python-blosc2; stored Python code is refused, never run."""

from __future__ import annotations

import os
import warnings

import blosc2
import numpy as np
import oxblosc
import pytest


@blosc2.dsl_kernel
def plus_one(x):
    return x + 1


def _operands(tmp_path):
    x, y = np.linspace(0, 3, 60).reshape(6, 10), np.arange(60.0).reshape(6, 10)
    blosc2.asarray(x, urlpath=str(tmp_path / "a.b2nd"), mode="w", chunks=(4, 5))
    blosc2.asarray(y, urlpath=str(tmp_path / "b.b2nd"), mode="w", chunks=(4, 5))
    return x, y


def test_blosc2_saved_expression_opens_here(tmp_path):
    x, y = _operands(tmp_path)
    a, b = blosc2.open(str(tmp_path / "a.b2nd")), blosc2.open(str(tmp_path / "b.b2nd"))
    blosc2.lazyexpr("a * b + sin(a)", {"a": a, "b": b}).save(str(tmp_path / "e.b2nd"))
    (a - b * 2).save(str(tmp_path / "ops.b2nd"))
    e = oxblosc.open(str(tmp_path / "e.b2nd"))
    assert isinstance(e, oxblosc.LazyExpr) and e.expression == "a * b + sin(a)"
    np.testing.assert_allclose(e[1:4], (x * y + np.sin(x))[1:4])
    np.testing.assert_allclose(oxblosc.open(str(tmp_path / "ops.b2nd"))[:], x - y * 2)
    np.testing.assert_allclose(e.sum(axis=1), (x * y + np.sin(x)).sum(axis=1))


def test_our_saved_expression_opens_in_blosc2(tmp_path):
    x, y = _operands(tmp_path)
    os.mkdir(tmp_path / "sub")
    a, b = oxblosc.open(str(tmp_path / "a.b2nd")), oxblosc.open(str(tmp_path / "b.b2nd"))
    (a * b + np.sin(a)).save(str(tmp_path / "e.b2nd"))
    oxblosc.lazyexpr("where(a > 1, a, b)", {"a": a, "b": b}).save(str(tmp_path / "sub" / "w.b2nd"))
    theirs = blosc2.open(str(tmp_path / "e.b2nd"), deserialize="full")
    assert isinstance(theirs, blosc2.LazyExpr)
    np.testing.assert_allclose(theirs[:], x * y + np.sin(x))
    np.testing.assert_allclose(
        blosc2.open(str(tmp_path / "sub" / "w.b2nd"), deserialize="full")[:], np.where(x > 1, x, y)
    )
    np.testing.assert_allclose(oxblosc.open(str(tmp_path / "sub" / "w.b2nd"))[:], np.where(x > 1, x, y))
    with pytest.raises(ValueError, match="stored on disk"):
        (a + oxblosc.asarray(y)).save(str(tmp_path / "bad.b2nd"))
    with pytest.raises(ValueError, match="stored on disk"):
        (a + y).save(str(tmp_path / "bad.b2nd"))


def test_stored_code_is_refused(tmp_path):
    _operands(tmp_path)
    a = blosc2.open(str(tmp_path / "a.b2nd"))
    blosc2.lazyudf(plus_one, (a,), np.float64).save(str(tmp_path / "dsl.b2nd"))
    with pytest.raises(ValueError, match="never executes stored code"):
        oxblosc.open(str(tmp_path / "dsl.b2nd"))

    def udf(inputs, output, offset):
        output[:] = inputs[0] + 1

    blosc2.lazyudf(udf, (a,), np.float64).save(str(tmp_path / "udf.b2nd"))
    with pytest.raises(ValueError, match="never executes stored code"):
        oxblosc.open(str(tmp_path / "udf.b2nd"))
    # A hand-made payload whose "kernel" would leave a file behind if it ran.
    marker = tmp_path / "ran"
    c = oxblosc.empty((3,), np.float64, urlpath=str(tmp_path / "evil.b2nd"), mode="w",
                      meta={"b2o": {"kind": "lazyudf", "version": 1}})  # fmt: skip
    c.vlmeta["b2o"] = {
        "kind": "lazyudf", "version": 1, "function_kind": "dsl", "name": "k",
        "udf_source": f"import pathlib; pathlib.Path({str(marker)!r}).touch()\ndef k(x):\n    return x\n",
        "operands": {}, "shape": [3], "dtype": "<f8",
    }  # fmt: skip
    with pytest.raises(ValueError, match="never executes stored code"):
        oxblosc.open(str(tmp_path / "evil.b2nd"))
    assert not marker.exists()
    # Hostile expression text in a saved file: a clear error, nothing evaluated by Python.
    c = oxblosc.empty((3,), np.float64, urlpath=str(tmp_path / "text.b2nd"), mode="w",
                      meta={"b2o": {"kind": "lazyexpr", "version": 1}})  # fmt: skip
    c.vlmeta["b2o"] = {"kind": "lazyexpr", "version": 1, "expression": "__import__('os').getcwd()", "operands": {}}
    with pytest.raises((ValueError, NameError)):
        oxblosc.open(str(tmp_path / "text.b2nd"))


def test_missing_operand_names_the_file(tmp_path):
    _operands(tmp_path)
    a = oxblosc.open(str(tmp_path / "a.b2nd"))
    (a + 1).save(str(tmp_path / "e.b2nd"))
    os.remove(tmp_path / "a.b2nd")
    with pytest.raises(FileNotFoundError, match="a.b2nd"):
        oxblosc.open(str(tmp_path / "e.b2nd"))


def test_saving_a_function_python_blosc2_lacks_warns_and_still_opens(tmp_path):
    """fmax, exp2... are ours only: saving one warns that python-blosc2 cannot evaluate it
    (it raises on open); oxblosc reopens it; hypot (both have it) saves silently and opens
    in python-blosc2."""
    x = np.linspace(-2, 2, 60).reshape(6, 10)
    a = oxblosc.asarray(x, urlpath=str(tmp_path / "a.b2nd"), mode="w")
    with pytest.warns(UserWarning, match="cannot evaluate fmax"):
        np.fmax(a, 0.5).save(str(tmp_path / "e.b2nd"))
    np.testing.assert_array_equal(oxblosc.open(str(tmp_path / "e.b2nd"))[:], np.fmax(x, 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.hypot(a, 2.0).save(str(tmp_path / "h.b2nd"))
    r = blosc2.open(str(tmp_path / "h.b2nd"), deserialize="full")
    np.testing.assert_allclose(r[:], np.hypot(x, 2.0))
