"""python-blosc2's module-level array functions (``oxblosc.sin(a)``, ``oxblosc.add(a, b)``,
``oxblosc.sum(a, axis=0)``...) and the constants it re-exports.

Element-wise functions return lazy expressions over NDArrays, expressions, NumPy arrays and
scalars (the same templates the operators and ``np.sin(a)`` use, ``operators.UFUNCS``);
reductions run chunk by chunk (``reductions.reduce``). Array API spellings (``asin``,
``atan2``, ``bitwise_invert``, ``pow``) are aliases of NumPy's. Functions the expression
engine cannot evaluate (``nextafter``, ``reciprocal``...) are not offered, rather than
loading whole arrays behind the user's back.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .lazyexpr import FPAccuracy, LazyArray, LazyExpr, _operand, combine
from .lazyudf import LazyUDF, lazyudf
from .masks import round_
from .ndarray import NDArray, empty
from .operators import UFUNCS, lazy_ufunc
from .reductions import reduce

# Array API / python-blosc2 name -> NumPy ufunc name (a key of ``UFUNCS``).
_ALIASES = {
    "abs": "absolute",
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "atan2": "arctan2",
    "pow": "power",
    "bitwise_invert": "invert",
    "conj": "conjugate",
}
# Module-level element-wise functions python-blosc2 offers that the engine evaluates.
ELEMENTWISE = (
    "abs negative positive sqrt square sign exp expm1 log log10 log1p log2 "
    "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh "
    "asin acos atan asinh acosh atanh floor ceil trunc "
    "add subtract multiply divide floor_divide remainder pow "
    "equal not_equal less less_equal greater greater_equal "
    "logical_and logical_or logical_xor logical_not "
    "bitwise_and bitwise_or bitwise_xor bitwise_invert arctan2 atan2 maximum minimum "
    "hypot copysign logaddexp signbit conj real"
).split()
REDUCTIONS = ("sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax")


def _template(name: str) -> str:
    return UFUNCS[_ALIASES.get(name, name)]


def _elementwise(name: str) -> Any:
    template = _template(name)
    nargs = template.count("{1}") and 2 or 1

    def f(*args: Any) -> LazyExpr:
        if len(args) != nargs:
            raise TypeError(f"{name}() takes {nargs} positional argument{'s' * (nargs > 1)} but {len(args)} were given")
        for a in args:
            _operand(a)  # raises naming an operand the engine cannot take, and why
        return lazy_ufunc(_ALIASES.get(name, name), *args)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Element-wise ``{template.format('x1', 'x2')}`` as a lazy expression (NumPy's types and broadcasting)."
    return f


def _reduction(op: str) -> Any:
    def f(ndarr: Any, axis: Any = None, **kwargs: Any) -> Any:
        if isinstance(ndarr, NDArray | LazyExpr):
            return reduce(ndarr, op, axis=axis, **kwargs)
        return getattr(np, op)(np.asarray(ndarr), axis=axis, **kwargs)

    f.__name__ = f.__qualname__ = op
    f.__doc__ = (
        f"``{op}`` of an NDArray or lazy expression along ``axis``, chunk by chunk (NumPy's result; "
        "keywords as in NumPy: dtype, keepdims, where, ddof, initial, out)."
    )
    return f


def count_nonzero(ndarr: Any, axis: Any = None) -> Any:
    """How many items are not zero (``False`` counts as zero), along ``axis``, chunk by chunk."""
    if not isinstance(ndarr, NDArray | LazyExpr):
        return np.count_nonzero(np.asarray(ndarr), axis=axis)
    n = reduce(combine("{0} != 0", ndarr), "sum", axis=axis, dtype=np.intp)
    return int(n) if np.ndim(n) == 0 else n


def cumulative_sum(ndarr: Any, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Running sums along ``axis`` (NumPy's ``cumulative_sum``), written chunk by chunk into a
    new NDArray; the same sums, in the same order, as NumPy's."""
    return _cumulative("sum", ndarr, axis, dtype, include_initial)


def cumulative_prod(ndarr: Any, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Running products along ``axis`` (NumPy's ``cumulative_prod``), chunk by chunk."""
    return _cumulative("prod", ndarr, axis, dtype, include_initial)


def _cumulative(op: str, a: Any, axis: int | None, dtype: Any, include_initial: bool) -> Any:
    name = f"cumulative_{op}"
    if not isinstance(a, NDArray | LazyExpr):
        return getattr(np, name)(np.asarray(a), axis=axis, dtype=dtype, include_initial=include_initial)
    if axis is None:
        if a.ndim != 1:
            raise ValueError(f"axis must be specified for {name} of an array with {a.ndim} dimensions")
        axis = 0
    if not -a.ndim <= axis < a.ndim:
        raise np.exceptions.AxisError(axis, a.ndim)
    axis %= a.ndim
    out_dtype = getattr(np, name)(np.zeros(1, a.dtype), dtype=dtype).dtype
    shape = list(a.shape)
    shape[axis] += include_initial
    chunks = list(a.chunks)
    chunks[axis] = max(1, min(chunks[axis], shape[axis]))
    out = empty(tuple(shape), out_dtype, chunks=tuple(chunks))
    if include_initial:
        first = [slice(None)] * a.ndim
        first[axis] = slice(0, 1)
        out[tuple(first)] = 0 if op == "sum" else 1
    if 0 in a.shape:
        return out
    # In C order over the chunk grid, chunks along ``axis`` come in order for each position
    # of the other axes; the running value at that position's last row carries over. It is
    # folded into the chunk's first row before its own scan, so every item is the same
    # left-to-right sum (or product) NumPy computes.
    carry: dict[tuple, np.ndarray] = {}
    scan = np.cumsum if op == "sum" else np.cumprod
    for region in _chunk_grid(a):
        vals = np.array(a[region], dtype=out_dtype)
        key = tuple((s.start, s.stop) for d, s in enumerate(region) if d != axis)
        head = (slice(None),) * axis + (slice(0, 1),)
        if key in carry:
            if op == "sum":
                vals[head] += carry[key]
            else:
                vals[head] *= carry[key]
        res = scan(vals, axis=axis)
        carry[key] = res[(slice(None),) * axis + (slice(-1, None),)]
        dst = list(region)
        dst[axis] = slice(region[axis].start + include_initial, region[axis].stop + include_initial)
        out[tuple(dst)] = res
    return out


def _chunk_grid(a: Any) -> list[tuple[slice, ...]]:
    ranges = [[slice(i, min(i + c, n)) for i in range(0, n, c)] for n, c in zip(a.shape, a.chunks, strict=True)]
    return list(itertools.product(*ranges))


def get_expr_operands(expression: str) -> set[str]:
    """The operand names in expression text (reductions' arguments included; function
    names and the constants ``inf nan pi`` are not operands)."""
    from .lazyexpr import _CONSTANTS, _text_names

    return {n for n in _text_names(expression) if n not in _CONSTANTS}


def validate_expr(expr: str) -> None:
    """Raise ``ValueError`` (naming the position) if oxblosc's parser refuses ``expr``:
    bad syntax, attribute access, unknown functions, hostile sizes."""
    from ._native import expr_evaluate, expr_names
    from .lazyexpr import _CONSTANTS
    from .lazytext import split

    body, found = split(expr, set())
    names = [n for n in expr_names(body) if n not in _CONSTANTS]
    try:  # unknown functions show when compiled; types depend on the real operands
        expr_evaluate(body, {n: np.ones((), "f8") for n in names}, 1)
    except NameError as e:
        raise ValueError(str(e)) from None
    except TypeError:
        pass
    for _, _, inner, _ in found:
        validate_expr(inner)


def _dtype_of(x: Any) -> Any:
    """Arrays and expressions by their dtype (never their values), the rest as given."""
    return x.dtype if isinstance(x, NDArray | LazyExpr) else x


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """NumPy's ``result_type``; NDArrays and expressions count by their dtype."""
    return np.result_type(*map(_dtype_of, arrays_and_dtypes))


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """NumPy's ``can_cast``; an NDArray or expression counts by its dtype."""
    return np.can_cast(_dtype_of(from_), to, casting=casting)


def lazywhere(value1: Any = None, value2: Any = None) -> Any:
    """Decorator: the function's (boolean) lazy expression ``e`` becomes ``e.where(value1,
    value2)`` (one value: the filter form)."""

    def wrap(func: Any) -> Any:
        def inner(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs).where(value1, value2)

        inner.__name__, inner.__doc__ = getattr(func, "__name__", "lazywhere"), func.__doc__
        return inner

    return wrap


def isdtype(dtype: Any, kind: Any) -> bool:
    """NumPy's ``isdtype`` (NumPy >= 2.0). Looked up when called, so that importing oxblosc
    works with NumPy 1.x (which ``pyproject.toml`` allows) and only this call says what it needs."""
    f = getattr(np, "isdtype", None)
    if f is None:
        raise NotImplementedError(f"isdtype needs NumPy >= 2.0 (this is NumPy {np.__version__})")
    return f(dtype, kind)


def namespace() -> dict[str, Any]:
    """Everything this module adds to ``oxblosc``'s namespace."""
    ns: dict[str, Any] = {n: _elementwise(n) for n in ELEMENTWISE}
    ns.update({op: _reduction(op) for op in REDUCTIONS})
    ns.update(count_nonzero=count_nonzero, cumulative_sum=cumulative_sum, cumulative_prod=cumulative_prod)
    ns.update(round=round_)
    ns.update(get_expr_operands=get_expr_operands, validate_expr=validate_expr, lazywhere=lazywhere)
    ns.update(result_type=result_type, can_cast=can_cast, isdtype=isdtype, finfo=np.finfo, iinfo=np.iinfo)
    ns.update(LazyArray=LazyArray, FPAccuracy=FPAccuracy, lazyudf=lazyudf, LazyUDF=LazyUDF)
    ns.update(
        {
            n: getattr(np, n)
            # python-blosc2's ``int8``, ``float64``... are table schema specs, not NumPy types:
            # not offered here under those names.
            for n in "bool_ pi e inf nan newaxis".split()
        }
    )
    return ns
