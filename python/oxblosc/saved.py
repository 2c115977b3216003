"""Lazy expressions stored in files, in python-blosc2 4.x's layout, both directions.

A saved expression is an empty b2nd array of the result's shape and dtype (the carrier)
whose metalayer ``b2o`` is ``{"kind": "lazyexpr", "version": 1}`` and whose vlmeta ``b2o``
holds ``{"kind", "version", "expression", "operands": {name: {"kind": "urlpath",
"version": 1, "urlpath": path}}}`` (paths relative to the carrier's directory when the
operand lies below it), plus the user vlmeta under ``_b2o_user_vlmeta``. python-blosc2's
older layout (metalayer ``LazyArray``, vlmeta ``_LazyArray``) is read too.

Opening one gives a ``LazyExpr`` over the operands (opened read-only), parsed and evaluated by
oxblosc's engine. Stored Python code - user-defined functions, DSL kernels - is refused with
an error naming it, never executed.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

from .lazyexpr import LazyExpr, lazyexpr
from .ndarray import NDArray, _filling

_KEY = "b2o"
_USER = "_b2o_user_vlmeta"
_VERSION = 1
# Functions of our engine that python-blosc2 4.14 cannot evaluate in a saved expression.
_OURS_ONLY = "exp2 cbrt rint deg2rad rad2deg degrees radians conjugate logaddexp2 fmin fmax".split()
_NOT_IN_BLOSC2 = re.compile(r"(?<![\w.])(" + "|".join(_OURS_ONLY) + r")\s*\(")


def save(expr: LazyExpr, urlpath: str, **kwargs: Any) -> None:
    """Write ``expr`` to ``urlpath`` (replaced) as python-blosc2 does. An expression using a
    function python-blosc2 cannot evaluate is saved too (oxblosc opens it), with a warning."""
    unknown = sorted(set(_NOT_IN_BLOSC2.findall(expr.expression)))
    if unknown:
        warnings.warn(
            f"saving {expr.expression!r} to {os.fspath(urlpath)!r}: python-blosc2 (4.14) cannot evaluate "
            f"{', '.join(unknown)}; oxblosc opens it",
            UserWarning,
            stacklevel=3,
        )
    carrier(expr, os.fspath(urlpath), **kwargs)


def carrier(expr: LazyExpr, urlpath: str | None, **kwargs: Any) -> NDArray:
    """The array that stores ``expr``: in ``urlpath``, or in memory (``None``: operand
    paths absolute)."""
    parent = os.path.dirname(os.path.abspath(urlpath)) if urlpath is not None else None
    refs = {}
    for name, op in expr.operands.items():
        if not isinstance(op, NDArray) or op.urlpath is None:
            raise ValueError(
                f"to save an expression all operands must be NDArrays stored on disk; operand {name!r} is "
                + ("in memory" if isinstance(op, NDArray) else f"a {type(op).__name__}")
            )
        path = os.path.abspath(op.urlpath)
        rel = os.path.relpath(path, parent) if parent is not None else ".."
        refs[name] = {"kind": "urlpath", "version": _VERSION, "urlpath": path if rel.startswith("..") else rel}
    if urlpath is not None:
        kwargs.update(urlpath=urlpath, mode="w")
    meta = dict(kwargs.pop("meta", None) or {})
    meta[_KEY] = {"kind": "lazyexpr", "version": _VERSION}
    kwargs.setdefault("chunks", expr.chunks or None)
    # Named only with its vlmeta written: a kill cannot leave an array without them.
    with _filling(expr.shape, expr.dtype, {**kwargs, "meta": meta}) as out:
        out.vlmeta[_KEY] = {"kind": "lazyexpr", "version": _VERSION, "expression": expr.expression, "operands": refs}
        out.vlmeta[_USER] = dict(expr.vlmeta)
    return out


def is_saved(arr: NDArray) -> bool:
    keys = set(arr.meta.keys())
    return _KEY in keys or "LazyArray" in keys


def _open_operand(ref: Any, parent: str, where: str) -> NDArray:
    from .opening import open as open_

    path = ref
    if isinstance(ref, dict):
        if ref.get("kind") != "urlpath":
            raise ValueError(f"{where}: operand reference of kind {ref.get('kind')!r} is not supported")
        path = ref.get("urlpath")
    if not isinstance(path, str):
        raise ValueError(f"{where}: an operand reference is not a path: {ref!r}")
    full = path if os.path.isabs(path) else os.path.join(parent, path)
    if not os.path.exists(full):
        raise FileNotFoundError(2, f"{where}: operand file not found", full)
    op = open_(full, mode="r")
    if not isinstance(op, NDArray):
        raise ValueError(f"{where}: operand {full} is not an array")
    return op


def open_saved(arr: NDArray) -> LazyExpr:
    """The expression a carrier array holds (see the module docs)."""
    where = f"saved expression {arr.urlpath}"
    parent = os.path.dirname(os.path.abspath(arr.urlpath)) if arr.urlpath else os.getcwd()
    if _KEY in arr.meta.keys():
        payload = arr.vlmeta[_KEY]
        if not isinstance(payload, dict):
            raise ValueError(f"{where}: vlmeta 'b2o' is not a mapping")
        kind = payload.get("kind")
        if payload.get("version") != _VERSION:
            raise ValueError(f"{where}: version {payload.get('version')!r} is not supported")
        if kind == "lazyudf":
            raise ValueError(
                f"{where} holds Python code (a {payload.get('function_kind', 'user')} function "
                f"{payload.get('name')!r}); oxblosc never executes stored code"
            )
        if kind != "lazyexpr":
            raise ValueError(f"{where}: stored object of kind {kind!r} is not supported")
        text, refs = payload.get("expression"), payload.get("operands")
    else:
        payload = arr.vlmeta["_LazyArray"]
        if not isinstance(payload, dict):
            raise ValueError(f"{where}: vlmeta '_LazyArray' is not a mapping")
        if "UDF" in payload:
            raise ValueError(f"{where} holds Python code (a user-defined function); oxblosc never executes stored code")
        text, refs = payload.get("expression"), payload.get("operands")
    if not isinstance(text, str) or not isinstance(refs, dict):
        raise ValueError(f"{where}: the expression or its operands are missing")
    operands = {str(k): _open_operand(v, parent, where) for k, v in refs.items()}
    e = lazyexpr(text, operands)
    e.array = arr
    user = arr.vlmeta[_USER] if _USER in arr.vlmeta else None
    if isinstance(user, dict):
        e.vlmeta.update(user)
    return e
