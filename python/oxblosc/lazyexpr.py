"""Lazy expressions over compressed arrays (python-blosc2's ``LazyExpr``), evaluated by
oxblosc's expression engine (Rust, GIL released; never Python ``eval``).

An expression is its text (``"o0 * o1 + sin(o2)"``) and its operands (name -> ``NDArray``,
NumPy array or 0-d NumPy scalar; Python scalars are literals in the text, weakly typed as in
NumPy 2). Shapes broadcast as in NumPy. ``expr[sel]`` reads only the part of each operand the
selection needs (an ``NDArray`` decodes only the blocks it touches) and evaluates it;
``compute()`` writes the result chunk by chunk into a new ``NDArray``, so memory stays a few
chunks whatever the size.
"""

from __future__ import annotations

import enum
import itertools
import math
import os
import re
import shutil
import sys
import tempfile
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import core as _core
from . import lazytext
from ._native import NativeNDArray, auto_chunks_blocks, expr_compute, expr_evaluate, expr_names, expr_read
from .info import InfoTable
from .ndarray import NDArray, _expand, _filling, _is_bool_scalar, asarray, empty
from .operators import Operators

__all__ = ["LazyArray", "LazyExpr", "lazyexpr", "combine", "numpy_fallback"]

# Names the engine reads as constants when no operand has that name.
_CONSTANTS = {"inf", "nan", "pi"}
# Elements per piece when an expression without a same-shaped NDArray operand is computed
# or reduced piece by piece.
_PIECE_ITEMS = 1 << 21


def _check_dtype(dt: np.dtype, what: str) -> np.dtype:
    dt = np.dtype(dt)
    if dt.kind not in "biuf" or dt.itemsize > 8 or dt == np.float16:
        raise TypeError(f"{what} has dtype {dt}: expressions support bool, int8-64, uint8-64, float32 and float64")
    return dt


def _operand(x: Any) -> tuple[str, Any]:
    """What ``x`` is in an expression: ("lit", text), ("op", array) or ("expr", LazyExpr)."""
    if isinstance(x, LazyExpr):
        return "expr", x
    if isinstance(x, LazyArray):  # a lazyudf or where(x) filter: read part by part like an array
        _check_dtype(x.dtype, "a lazy array operand")
        return "op", x
    if isinstance(x, NDArray):
        _check_dtype(x.dtype, "an NDArray operand")
        return "op", x
    if isinstance(x, np.ndarray | np.generic | list | tuple):
        a = np.asarray(x)
        _check_dtype(a.dtype, "a NumPy operand")
        return "op", a
    if isinstance(x, bool):
        return "lit", "True" if x else "False"
    if isinstance(x, int):
        return "lit", repr(x) if x >= 0 else f"({x})"
    if isinstance(x, float):
        if math.isnan(x):
            return "lit", "nan"
        if math.isinf(x):
            return "lit", "inf" if x > 0 else "(-inf)"
        return "lit", repr(x) if x >= 0 else f"({x!r})"
    raise TypeError(f"unsupported operand type for an expression: {type(x).__name__}")


_STRING = re.compile(r"""(b?'[^']*'|b?"[^"]*")""")


def _rename(text: str, mapping: dict[str, str]) -> str:
    """``text`` with each name in ``mapping`` replaced (whole identifiers outside string
    literals, not in call position)."""
    mapping = {k: v for k, v in mapping.items() if k != v}
    if not mapping:
        return text
    names = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, mapping)) + r")(?![\w])(?!\s*\()")
    parts = _STRING.split(text)
    return "".join(p if i % 2 else names.sub(lambda m: mapping[m.group(1)], p) for i, p in enumerate(parts))


class _Builder:
    """Operands of a combined expression, each object once (by identity), named o0, o1..."""

    def __init__(self) -> None:
        self.operands: dict[str, Any] = {}
        self._ids: dict[int, str] = {}

    def name(self, obj: Any) -> str:
        key = id(obj)
        if key not in self._ids:
            self._ids[key] = f"o{len(self.operands)}"
            self.operands[self._ids[key]] = obj
        return self._ids[key]

    def text(self, x: Any, bare: Any = lambda prec: False) -> str:
        """``x`` as text in the combined expression; an expression is parenthesised unless
        ``bare(its precedence)`` says the template does not need it."""
        kind, v = _operand(x)
        if kind == "lit":
            return v
        if kind == "op":
            return self.name(v)
        mapping = {n: self.name(o) for n, o in v.operands.items()}
        t = _rename(v.expression, mapping)
        return t if re.fullmatch(r"\w+", t) or bare(v._prec) else f"({t})"


# Python's precedence of the binary operators (comparisons chain, `**` groups to the right:
# neither is left bare on an equal footing); _ATOM: a name or call, _UNKNOWN: user text.
_PREC = {"<": 1, "<=": 1, ">": 1, ">=": 1, "==": 1, "!=": 1, "|": 2, "^": 3, "&": 4, "+": 6, "-": 6}
_PREC.update({"*": 7, "/": 7, "//": 7, "%": 7, "**": 9})
_UNARY, _ATOM, _UNKNOWN = 8, 100, -1
_BINARY = re.compile(r"\{0\} (\S+) \{1\}")
_CALL = re.compile(r"\w+\((?:[^()]|\([^()]*\))*\)")
# A placeholder that is not a whole argument of a call (``{0} - {0}`` inside ``where(..)``).
_INNER = re.compile(r"(?<!\()(?<!, )\{\d\}|\{\d\}(?![,)])")


def combine(template: str, *args: Any) -> Any:
    """The expression ``template`` (``"{0} + {1}"``) over ``args`` (arrays, expressions,
    scalars); NotImplemented for operand types it does not know (Python then tries the other
    side). Parentheses are added only where precedence needs them, so long operator chains
    (``x = x + a`` in a loop) stay within the parser's nesting limit."""
    b = _Builder()
    m = _BINARY.fullmatch(template)
    try:
        if m:
            p = _PREC[m.group(1)]
            chains = p in (1, 9)
            left = b.text(args[0], lambda q: q > p or (q == p and not chains))
            parts = [left, b.text(args[1], lambda q: q > p)]
        elif _CALL.fullmatch(template) and not _INNER.search(template):  # whole call arguments: bare
            parts = [b.text(a, lambda q: q != _UNKNOWN) for a in args]
        else:
            parts = [b.text(a) for a in args]
    except TypeError:
        return NotImplemented
    e = LazyExpr(template.format(*parts), b.operands)
    if m:
        e._prec = _PREC[m.group(1)]
    elif _CALL.fullmatch(template):
        e._prec = _ATOM
    elif re.fullmatch(r"[-+~]\{0\}", template):
        e._prec = _UNARY
    return e


def numpy_fallback(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Run a ufunc the engine does not handle on the inputs' values (``out=`` NDArrays are
    written back)."""
    outs = kwargs.pop("out", None)
    vals = [np.asarray(x) if isinstance(x, NDArray | LazyExpr) else x for x in inputs]
    targets = outs if isinstance(outs, tuple) else (outs,) if outs is not None else ()
    if any(isinstance(o, NDArray) for o in targets):
        res = getattr(ufunc, method)(*vals, **kwargs)
        results = res if isinstance(res, tuple) else (res,)
        for o, r in zip(targets, results, strict=False):
            o[...] = r
        return outs
    if outs is not None:
        kwargs["out"] = outs
    return getattr(ufunc, method)(*vals, **kwargs)


class _Selection:
    """A basic selection of an expression: the box read (a slice per axis) and the index
    that turns the box into NumPy's result (ints drop axes, ``None`` adds them)."""

    def __init__(self, key: Any, shape: tuple[int, ...]) -> None:
        self.box: list[slice] = []
        post: list[Any] = []
        axis = 0
        for k in _expand(key, len(shape)):
            if k is None:
                post.append(None)
                continue
            n = shape[axis]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                self.box.append(slice(start, None if stop < 0 else stop, step))
                post.append(slice(None))
            elif isinstance(k, np.ndarray) or _is_bool_scalar(k):
                raise IndexError("expressions take integers, slices, ... and None as indices (or a boolean mask)")
            else:
                i = int(k.__index__())
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                i %= n
                self.box.append(slice(i, i + 1))
                post.append(0)
            axis += 1
        self.post = tuple(post)
        self.shape = tuple(len(range(*s.indices(n))) for s, n in zip(self.box, shape, strict=True))

    def operand_key(self, op_shape: tuple[int, ...]) -> tuple[slice, ...]:
        """The part of an operand of shape ``op_shape`` (broadcast to the expression) that
        the box needs: its own axes, a length-1 axis read once."""
        lead = len(self.box) - len(op_shape)
        return tuple(slice(0, 1) if n == 1 else s for s, n in zip(self.box[lead:], op_shape, strict=True))


class FPAccuracy(enum.Enum):
    """python-blosc2's floating-point accuracy choice for evaluation. Accepted for
    compatibility (``compute(fp_accuracy=...)``, reductions): oxblosc's engine has one
    accuracy, NumPy's operations with libm's functions (see ``oxblosc-expr``)."""

    HIGH = 1
    MEDIUM = 2


# python-blosc2's evaluation tuning keywords: accepted, nothing to tune here.
_EVAL_TUNING = ("fp_accuracy", "jit", "jit_backend")


def drop_tuning(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` without python-blosc2's evaluation tuning keywords."""
    return {k: v for k, v in kwargs.items() if k not in _EVAL_TUNING}


class LazyArray:
    """What python-blosc2 calls a lazy array: something computed on demand
    (``isinstance(x, oxblosc.LazyArray)`` holds for lazy expressions and ``where(x)``
    filters)."""


class LazyExpr(Operators, LazyArray):
    """An expression over arrays, evaluated on demand: ``expr[sel]`` (NumPy result),
    ``expr.compute()`` (a new ``NDArray``), ``np.asarray(expr)``, reductions."""

    def __init__(self, expression: str, operands: dict[str, Any]) -> None:
        # Reductions in the text (``"a - mean(a, axis=0)"``) become operands of the body.
        body, found = lazytext.split(expression, set(operands))
        reduced = {
            ph: lazytext.operand(op, LazyExpr(inner, operands) if inner else None, kw) for ph, op, inner, kw in found
        }
        names = _body_names(body, expression, found)
        missing = [n for n in names if n not in operands and n not in reduced and n not in _CONSTANTS]
        if missing:
            raise NameError(f"name {missing[0]!r} in the expression {expression!r} is not among the operands")
        self.expression = expression
        self._prec = _UNKNOWN  # precedence of the top-level operator (set by `combine`)
        inners = [r.inner for r in reduced.values() if isinstance(getattr(r, "inner", None), LazyExpr)]
        used = set(names).union(*(i.operands for i in inners))
        self.operands = {n: o for n, o in operands.items() if n in used}
        # What the engine evaluates: the body over the operands and the reductions' results.
        self._body = body
        self._ops = {n: reduced[n] if n in reduced else operands[n] for n in names if n not in _CONSTANTS}
        for n, o in self._ops.items():
            _check_dtype(o.dtype, f"operand {n!r}")
        shapes = [tuple(o.shape) for o in self._ops.values()]
        try:
            self._shape = tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise ValueError(
                f"operands of {expression!r} have shapes {shapes} that do not broadcast together"
            ) from None
        # The result type, from one item of each operand's type (type errors surface now).
        sample = {n: np.ones((), o.dtype) for n, o in self._ops.items()}
        self._dtype = expr_evaluate(body, sample, 1).dtype

    # ------------------------------------------------------------------ properties

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: math.prod(self._shape))

    @property
    def chunks(self) -> tuple[int, ...]:
        """The chunk shape results are computed in: the first same-shaped NDArray operand's,
        else slabs along the first axis."""
        base = self._base()
        if base is not None:
            return base.chunks
        rest = math.prod(self._shape[1:]) or 1
        return (max(1, min(self._shape[0], _PIECE_ITEMS // rest)), *self._shape[1:]) if self._shape else ()

    def _base(self) -> NDArray | None:
        return next(
            (o for o in self._ops.values() if isinstance(o, NDArray) and o.shape == self._shape and o.ndim),
            None,
        )

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def __reduce__(self) -> tuple:
        # Rebuilt from its text and operands (reductions in the text are computed again).
        return _rebuild, (self.expression, self.operands, dict(self.vlmeta))

    def __repr__(self) -> str:
        return f"<oxblosc.LazyExpr {self.expression!r} shape={self._shape} dtype={self._dtype}>"

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError("the truth value of an expression with more than one element is ambiguous")
        return bool(self[()].reshape(()))

    # ------------------------------------------------------------------ evaluation

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, LazyExpr | NDArray) or (isinstance(key, np.ndarray) and key.dtype == bool):
            from .masks import masked

            return masked(self, key)
        if any(isinstance(k, list | np.ndarray) for k in (key if isinstance(key, tuple) else (key,))):
            return self._fancy(key)
        if _whole(key) and (whole := _read_native(self)) is not None:
            return whole
        sel = _Selection(key, self._shape)
        return self._eval_box(sel)[sel.post]

    def _fancy(self, key: Any) -> np.ndarray:
        """NumPy's advanced indexing (integer arrays, 1-D boolean arrays per axis): the
        box spanning the indexed items is evaluated, then indexed by NumPy with the same
        key made relative to the box (integers stay integers, so NumPy's placement of the
        advanced axes is unchanged)."""
        box: list[Any] = []
        rest: list[Any] = []
        axis = 0
        for k in _expand(key, self.ndim):
            if k is None:
                rest.append(None)
                continue
            n = self._shape[axis]
            if isinstance(k, np.ndarray) and k.dtype == bool:
                if k.ndim != 1 or len(k) != n:
                    raise IndexError(f"boolean index of shape {k.shape} does not match axis {axis} of size {n}")
                k = np.flatnonzero(k)
            if isinstance(k, np.ndarray):
                if k.dtype.kind not in "iu":
                    raise IndexError(f"arrays used as indices must be of integer (or boolean) type, not {k.dtype}")
                if k.size and (k.min() < -n or k.max() >= n):
                    bad = k.min() if k.min() < -n else k.max()
                    raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
                k = np.where(k < 0, k + n, k).astype(np.intp)
                lo = int(k.min()) if k.size else 0
                box.append(slice(lo, int(k.max()) + 1 if k.size else 0))
                rest.append(k - lo)
            elif isinstance(k, slice):
                box.append(k)
                rest.append(slice(None))
            else:
                i = int(k.__index__())
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                box.append(slice(i % n, i % n + 1))
                rest.append(0)
            axis += 1
        return self[tuple(box)][tuple(rest)]

    def _eval_box(self, sel: _Selection) -> np.ndarray:
        if 0 in sel.shape:
            return np.empty(sel.shape, self._dtype)
        parts = {}
        for n, o in self._ops.items():
            v = o[sel.operand_key(tuple(o.shape))] if o.ndim else np.asarray(o[()])
            parts[n] = np.broadcast_to(v, sel.shape) if v.ndim and v.shape != sel.shape else v
        out = expr_evaluate(self._body, parts, None)
        return out if out.shape == sel.shape else np.broadcast_to(out, sel.shape).copy()

    def regions(self) -> Iterator[tuple[slice, ...]]:
        """The pieces (one per chunk of :attr:`chunks`) results are computed in, in C order."""
        return _grid(self._shape, self.chunks)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = np.asarray(self[()])
        return a if dtype is None else a.astype(dtype, copy=False)

    def compute(self, item: Any = (), out: NDArray | None = None, **kwargs: Any) -> NDArray:
        """The result as a new ``NDArray``, written chunk by chunk (memory: a few chunks).
        ``kwargs`` as for :func:`oxblosc.empty` (``urlpath``, ``cparams``, ``chunks``...);
        ``item`` computes only that selection; ``out`` (an array of the result's shape)
        receives it instead."""
        kwargs = drop_tuning(kwargs)
        if out is not None:
            if kwargs:
                raise TypeError(f"compute(out=...) takes no storage keywords, got {sorted(kwargs)}")
            if not (item is None or item is Ellipsis or (isinstance(item, tuple) and not item)):
                out[...] = self[item]
                return out
            same = isinstance(out, NDArray) and tuple(out.shape) == self._shape
            # In the engine when the geometry allows: one commit, so an expression that fails
            # part way (an integer to a negative power) leaves ``out`` as it was.
            if same and not any(o is out for o in self._ops.values()) and _compute_native(self, out):
                return out
            return _fill_after(out, self)
        if not (item is None or item is Ellipsis or (isinstance(item, tuple) and not item)):
            return asarray(self[item], **kwargs)
        base = self._base()
        if base is not None and "chunks" not in kwargs and "blocks" not in kwargs:
            kwargs["chunks"], kwargs["blocks"] = base.chunks, base.blocks
        # A file gets its name only once complete: a failure leaves ``urlpath`` as it was.
        with _filling(self._shape, self._dtype, kwargs) as out:
            return out if _compute_native(self, out) else _fill(out, self)

    def where(self, value1: Any = None, value2: Any = None) -> Any:
        """``where(self, value1, value2)`` (python-blosc2's method form); with one argument,
        the items of ``value1`` where this boolean expression holds (1-D, C order, as
        ``value1[self]``), computed when read."""
        if value1 is not None and value2 is None:
            from .lazyfilter import Filtered

            return Filtered(self, value1)
        from .masks import where

        return where(self, value1, value2)

    # ------------------------------------------------------------------ python-blosc2's extras

    @property
    def blocks(self) -> tuple[int, ...]:
        """The block shape of computed results: the same-shaped NDArray operand's, else what
        a new array with :attr:`chunks` gets."""
        base = self._base()
        if base is not None:
            return base.blocks
        if not self._shape:
            return ()
        return tuple(auto_chunks_blocks(list(self._shape), self._dtype.itemsize, list(self.chunks), None)[1])

    device = property(lambda self: "cpu", doc="Where results live: always ``'cpu'``.")

    @property
    def vlmeta(self) -> VLMeta:
        """User metadata (name -> msgpack-able value), stored by :meth:`save` and read back
        by ``oxblosc.open`` (python-blosc2's place for it, both ways)."""
        if getattr(self, "_vlmeta", None) is None:
            self._vlmeta = VLMeta()
        return self._vlmeta

    attrs = vlmeta

    def to_device(self, device: str) -> LazyExpr:
        if device != "cpu":
            raise ValueError(f"unsupported device {device!r}: only 'cpu'")
        return self

    def will_use_index(self) -> bool:
        """Always False: oxblosc has no indexes (python-blosc2's index planner)."""
        return False

    def explain(self) -> dict[str, Any]:
        """How the expression is evaluated, in python-blosc2's keys: never through an
        index; every chunk a selection touches is evaluated."""
        nchunks = math.prod(-(-n // c) for n, c in zip(self._shape, self.chunks, strict=True)) if self.size else 0
        plan: dict[str, Any] = dict.fromkeys(("target", "field", "kind", "level", "order", "exact_rows"))
        plan.update(will_use_index=False, reason="oxblosc has no indexes: every chunk needed is evaluated")
        plan.update(ordered_access=False, candidate_chunks=nchunks, total_chunks=nchunks)
        return plan

    @property
    def info_items(self) -> list[tuple[str, Any]]:
        """The ``(name, value)`` rows of :attr:`info`."""
        ops = {n: f"<{type(o).__name__} shape={tuple(o.shape)} dtype={o.dtype}>" for n, o in self.operands.items()}
        return [
            ("type", "LazyExpr"),
            ("expression", self.expression),
            ("operands", ops),
            ("shape", self._shape),
            ("dtype", self._dtype),
        ]

    @property
    def info(self) -> InfoTable:
        """A readable summary: expression, operands, shape and dtype."""
        return InfoTable(self.info_items)

    def item(self) -> Any:
        """The one item of a one-item result, as a Python scalar."""
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self[()].item()

    def slice(self, item: Any, **kwargs: Any) -> NDArray:
        """``self[item]`` as a new ``NDArray`` (``kwargs`` as for :func:`oxblosc.asarray`)."""
        return asarray(np.asarray(self[item]), **kwargs)

    def get_chunk(self, nchunk: int) -> bytes:
        """Chunk ``nchunk`` (C order over :attr:`chunks`) of the result, compressed as an
        ``NDArray`` of these chunks and :attr:`blocks` stores it (edge chunks padded with
        zeros); only that chunk is evaluated."""
        regions = list(self.regions()) if self.ndim else [()]
        n = int(nchunk.__index__())
        if not 0 <= n < len(regions):
            raise ValueError(f"chunk {n} is out of range: the expression has {len(regions)} chunks")
        region = regions[n]
        one = empty(self.chunks, self._dtype, chunks=self.chunks or None, blocks=self.blocks or None)
        one[tuple(slice(0, s.stop - s.start) for s in region)] = self[region]
        return one.get_chunk(0)

    def to_cframe(self) -> bytes:
        """The saved form (see :meth:`save`) as a contiguous frame in memory; operands must be
        NDArrays stored in files (referenced by absolute path)."""
        from .saved import carrier

        return carrier(self, None).to_cframe()

    def cumulative_sum(self, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> NDArray:
        from .functions import cumulative_sum

        return cumulative_sum(self, axis, dtype, include_initial)

    def cumulative_prod(self, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> NDArray:
        from .functions import cumulative_prod

        return cumulative_prod(self, axis, dtype, include_initial)

    def save(self, urlpath: str, **kwargs: Any) -> None:
        """Store the expression in ``urlpath`` in python-blosc2's layout (operands must be
        NDArrays stored in files)."""
        from .saved import save

        save(self, urlpath, **kwargs)


def _rebuild(expression: str, operands: dict[str, Any], vlmeta: dict) -> LazyExpr:
    e = LazyExpr(expression, operands)
    e.vlmeta.update(vlmeta)
    return e


class VLMeta(dict):
    """A lazy expression's user metadata: a dict; ``vlmeta[:]`` is all of it, as for
    arrays."""

    def __getitem__(self, key: Any) -> Any:
        return dict(self) if key == slice(None) else super().__getitem__(key)

    def getall(self) -> dict:
        return dict(self)


def _grid(shape: tuple[int, ...], chunks: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    """The chunk-grid regions of ``shape`` in C order (edge chunks clipped)."""
    if not shape:
        yield ()
        return
    if 0 in shape:
        return
    counts = [-(-n // c) for n, c in zip(shape, chunks, strict=True)]
    for idx in np.ndindex(*counts):
        yield tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(idx, chunks, shape, strict=True))


def lazyexpr(
    expression: str | LazyExpr,
    operands: dict[str, Any] | None = None,
    out: NDArray | None = None,
    where: Any = None,
    local_dict: dict | None = None,
    global_dict: dict | None = None,
    ne_args: dict | None = None,
) -> LazyExpr:
    """A lazy expression from text (``"a * b + sin(c)"``) and its operands (name ->
    ``NDArray``, NumPy array or scalar; nested ``LazyExpr`` operands are inlined). Without
    ``operands`` the names are looked up (never evaluated) in ``local_dict``/``global_dict``,
    else in the caller's variables. The text is parsed by oxblosc's engine: only arithmetic,
    comparisons and the engine's functions, never Python code. ``where=(x, y)``: the items
    of ``x`` where the (boolean) expression holds, else of ``y``. ``ne_args`` (numexpr's
    options in python-blosc2) is accepted and has nothing to tune here."""
    if where is not None:
        where = tuple(where)
        if len(where) != 2:
            raise ValueError("where= takes (x, y): items of x where the expression holds, else of y")
    if isinstance(expression, LazyExpr):
        e = expression if operands is None else lazyexpr(expression.expression, operands)
        return _store(e, out, where)
    if isinstance(expression, NDArray):  # an array as the expression of itself
        return _store(LazyExpr("o0", {"o0": expression}), out, where)
    if isinstance(expression, bytes):
        expression = expression.decode("utf-8")
    if not isinstance(expression, str):
        raise TypeError(f"expression must be a string or LazyExpr, got {type(expression).__name__}")
    names = _text_names(expression)
    if operands is None:
        frame = sys._getframe(1)
        scopes = [d for d in (local_dict, global_dict) if d is not None] or [frame.f_locals, frame.f_globals]
        operands = {}
        for n in names:
            for scope in scopes:
                if n in scope:
                    operands[n] = scope[n]
                    break
    if all(n in operands or n in _CONSTANTS for n in names) and all(
        _operand(operands[n])[0] == "op" for n in names if n in operands
    ):  # arrays only: the text and its names are kept as written
        return _store(LazyExpr(expression, {n: _operand(operands[n])[1] for n in names if n in operands}), out, where)
    b = _Builder()
    mapping = {}
    for n in names:
        if n in operands:
            mapping[n] = b.text(operands[n])
        elif n not in _CONSTANTS:
            raise NameError(f"name {n!r} in the expression {expression!r} is not among the operands")
    return _store(LazyExpr(_rename(expression, mapping), b.operands), out, where)


def _body_names(body: str, text: str, found: list) -> list[str]:
    """The names in ``body`` (``text`` split by ``lazytext.split``); parse errors name the
    whole text too, as the body shows placeholders."""
    try:
        return expr_names(body)  # syntax errors name the position
    except (ValueError, NameError) as e:
        if not found:
            raise
        raise type(e)(f"{e}\nin {text!r} (reductions and indexing shown as _r0, _r1...)") from None


def _text_names(text: str) -> list[str]:
    """The names in ``text``, reductions' arguments included, in order of appearance."""
    body, found = lazytext.split(text, set())
    names = [n for n in _body_names(body, text, found) if n not in {ph for ph, *_ in found}]
    for _, _, inner, _ in found:
        names += _text_names(inner) if inner else []
    return list(dict.fromkeys(names))


def _store(e: LazyExpr, out: NDArray | None, where: tuple | None = None) -> Any:
    """``e`` (``where(e, *where)`` when given), or ``out`` with it written into it chunk by
    chunk."""
    if where is not None:
        e = e.where(*where)
    return e if out is None else _fill(out, e)


def _native_order(dt: np.dtype) -> bool:
    return dt.byteorder in "=|" or (dt.byteorder == "<") == (sys.byteorder == "little")


# NDArray operands of another shape or geometry up to this size are read whole and handed
# to the engine as dense operands (larger ones take the general paths).
_DENSE_NDARRAY_LIMIT = 64 << 20


def native_args(e: LazyExpr, geometry: tuple) -> tuple[list, list, list] | None:
    """The engine's operands of ``e``: ``(name, native array, dtype)`` for native NDArrays of
    ``geometry`` (shape, chunks, blocks), ``(name, dtype, bytes)`` for scalars, and ``(name,
    dtype, C-contiguous array, dims)`` for dense operands (NumPy arrays, and small NDArrays
    of another geometry, that broadcast to the shape); None when an operand fits none of
    these. Arrays behind file locks take the general paths, which re-sync them."""
    arrays, scalars, dense = [], [], []
    shape = tuple(geometry[0])
    for name, o in e._ops.items():
        if not _native_order(o.dtype):
            return None
        if isinstance(o, NDArray) and o.ndim and (o.shape, o.chunks, o.blocks) == geometry:
            if type(o._n) is not NativeNDArray:
                return None
            arrays.append((name, o._n, o.dtype.str))
        elif o.ndim == 0:
            v = np.ascontiguousarray(o[()])
            scalars.append((name, v.dtype.str, v.tobytes()))
        else:
            d = _dense(o, shape)
            if d is None:
                return None
            dense.append((name, d.dtype.str, d, list(d.shape)))
    return arrays, scalars, dense


def _dense(o: Any, shape: tuple) -> np.ndarray | None:
    """``o`` as a C-contiguous array of ``len(shape)`` dimensions, each ``shape``'s length or
    1 (axes it is broadcast along, kept at length 1: never expanded), or None."""
    oshape = tuple(o.shape)
    if len(oshape) > len(shape) or any(a not in (1, b) for a, b in zip(oshape[::-1], shape[::-1], strict=False)):
        return None
    if isinstance(o, NDArray):
        if o.dtype.itemsize * math.prod(oshape) > _DENSE_NDARRAY_LIMIT:
            return None
        o = o[()]
    elif not isinstance(o, np.ndarray):
        return None
    # Axes a NumPy view broadcasts (stride 0) are cut to length 1 rather than copied out.
    o = o[tuple(slice(0, 1) if n > 1 and st == 0 else slice(None) for n, st in zip(o.shape, o.strides, strict=True))]
    return np.ascontiguousarray(o).reshape((1,) * (len(shape) - o.ndim) + o.shape)


def _compute_native(e: LazyExpr, out: NDArray) -> bool:
    """Evaluate ``e`` into the new array ``out`` entirely in the engine (decode, evaluate and
    compress block by block, in parallel, GIL released) when :func:`native_args` takes it
    with ``out``'s geometry; False (nothing written) otherwise."""
    if type(out._n) is not NativeNDArray or not out.ndim or not _native_order(out.dtype):
        return False
    args = native_args(e, (out.shape, out.chunks, out.blocks))
    if args is None:
        return False
    arrays, scalars, dense = args
    expr_compute(e._body, arrays, scalars, out._n, _core.call_nthreads(None), dense)
    return True


def _whole(key: Any) -> bool:
    """Whether ``key`` selects the whole array as it is (``()``, ``...``, ``:``, ``:, :``)."""
    items = key if isinstance(key, tuple) else (key,)
    return all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in items)


def _read_native(e: LazyExpr) -> np.ndarray | None:
    """The whole of ``e`` as a new NumPy array, evaluated in the engine block by block
    straight into it (in parallel, GIL released) when :func:`native_args` takes it; None
    otherwise."""
    base = e._base()
    if base is None or not _native_order(e._dtype) or e._dtype.kind not in "biuf":
        return None
    args = native_args(e, (base.shape, base.chunks, base.blocks))
    if args is None:
        return None
    out = np.empty(e._shape, e._dtype)
    arrays, scalars, dense = args
    expr_read(e._body, arrays, scalars, out, _core.call_nthreads(None), dense)
    return out


def _fill_after(out: Any, e: LazyExpr) -> Any:
    """``compute(out=...)`` outside the engine: ``e`` is evaluated completely first (into a
    compressed array in memory, in ``out``'s chunks), and only then written into ``out``,
    so an expression that fails part way (an integer to a negative power, a failing
    function) leaves ``out`` as it was, and an ``out`` that is also an operand is read
    before any of it is overwritten. (Costs one more compression of the result.) For an
    ``out`` on disk the result waits in a temporary file beside it, not in memory (it may be
    larger than RAM), removed afterwards."""
    if tuple(out.shape) != e.shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the expression {e.shape}")
    if not isinstance(out, NDArray):
        out[...] = e[()]
        return out
    where = None
    if out.urlpath is not None:
        where = tempfile.mkdtemp(prefix=".oxblosc-compute-", dir=os.path.dirname(os.path.abspath(out.urlpath)))
    try:
        path = None if where is None else os.path.join(where, "result.b2nd")
        done = _fill(empty(e.shape, dtype=e.dtype, chunks=out.chunks, blocks=out.blocks, urlpath=path), e)
        for region in _grid(e.shape, out.chunks) if out.ndim else [()]:
            out[region] = done[region]
        del done
    finally:
        if where is not None:
            shutil.rmtree(where, ignore_errors=True)
    return out


def _fill(out: NDArray, e: LazyExpr) -> NDArray:
    """Write ``e`` into ``out`` chunk by chunk: a few chunks are evaluated ahead in threads
    while the main thread writes the finished ones in order (memory: that window)."""
    if tuple(out.shape) != e.shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the expression {e.shape}")
    regions = iter(_grid(e.shape, out.chunks) if out.ndim else [()])
    window = max(1, min(_core.nthreads, 8)) + 1
    with ThreadPoolExecutor(window - 1 or 1) as pool:
        pending: deque = deque()
        for region in itertools.chain(regions, [None]):
            if region is not None:
                pending.append((region, pool.submit(e.__getitem__, region)))
            while pending and (region is None or len(pending) >= window):
                r, fut = pending.popleft()
                out[r] = fut.result()
    return out
