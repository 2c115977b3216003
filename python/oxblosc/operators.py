"""Python operators and NumPy ufuncs on arrays and expressions: each returns a lazy
expression (``oxblosc.LazyExpr``), nothing is computed until it is indexed or computed.

A mixin shared by ``NDArray`` and ``LazyExpr``; it knows neither (the expression module is
imported when an operator runs), so ``ndarray`` does not depend on ``lazyexpr``.
"""

from __future__ import annotations

from typing import Any

# ufunc name -> expression template over its inputs ({0}, {1}, ...).
UFUNCS = {
    "add": "{0} + {1}",
    "subtract": "{0} - {1}",
    "multiply": "{0} * {1}",
    "divide": "{0} / {1}",
    "true_divide": "{0} / {1}",
    "floor_divide": "{0} // {1}",
    "remainder": "{0} % {1}",
    "mod": "{0} % {1}",
    "power": "{0} ** {1}",
    "bitwise_and": "{0} & {1}",
    "bitwise_or": "{0} | {1}",
    "bitwise_xor": "{0} ^ {1}",
    "invert": "~{0}",
    "bitwise_not": "~{0}",
    "negative": "-{0}",
    "positive": "+{0}",
    "absolute": "abs({0})",
    "less": "{0} < {1}",
    "less_equal": "{0} <= {1}",
    "greater": "{0} > {1}",
    "greater_equal": "{0} >= {1}",
    "equal": "{0} == {1}",
    "not_equal": "{0} != {1}",
    "logical_and": "({0} != 0) & ({1} != 0)",
    "logical_or": "({0} != 0) | ({1} != 0)",
    "logical_xor": "({0} != 0) ^ ({1} != 0)",
    "logical_not": "{0} == 0",
    **{
        f: f + "({0})"
        for f in (
            "sqrt exp expm1 log log10 log1p log2 sin cos tan arcsin arccos arctan sinh cosh tanh "
            "arcsinh arccosh arctanh floor ceil trunc isnan isinf isfinite exp2 cbrt rint deg2rad rad2deg "
            "degrees radians conjugate signbit"
        ).split()
    },
    **{
        f: f + "({0}, {1})"
        for f in "arctan2 fmod minimum maximum hypot logaddexp logaddexp2 copysign fmin fmax".split()
    },
    "real": "real({0})",  # not a ufunc: for oxblosc.real (real types: the operand itself)
    "square": "{0} * {0}",
    "sign": "where({0} > 0, 1, where({0} < 0, -1, {0} - {0}))",
}


def lazy_ufunc(name: str, *args: Any) -> Any:
    """The lazy expression of the ufunc ``name`` (a key of ``UFUNCS``) over ``args``, or
    NotImplemented for operand types the engine does not take."""
    if name == "square" and len(args) == 1 and str(getattr(args[0], "dtype", "")) == "bool":
        import numpy as np

        # NumPy squares booleans into int8 (x * x would stay bool)
        return _lazy("where({0}, {1}, {2})", args[0], np.int8(1), np.int8(0))
    return _lazy(UFUNCS[name], *args)


def _lazy(template: str, *args: Any) -> Any:
    from .lazyexpr import combine

    return combine(template, *args)


def _binary(template: str) -> Any:
    def op(self: Any, other: Any) -> Any:
        return _lazy(template, self, other)

    return op


def _reflected(template: str) -> Any:
    def op(self: Any, other: Any) -> Any:
        return _lazy(template, other, self)

    return op


class Operators:
    """Arithmetic, comparison and bitwise operators, and ``__array_ufunc__``, building lazy
    expressions (NumPy 2's broadcasting and type promotion)."""

    __add__, __radd__ = _binary("{0} + {1}"), _reflected("{0} + {1}")
    __sub__, __rsub__ = _binary("{0} - {1}"), _reflected("{0} - {1}")
    __mul__, __rmul__ = _binary("{0} * {1}"), _reflected("{0} * {1}")
    __truediv__, __rtruediv__ = _binary("{0} / {1}"), _reflected("{0} / {1}")
    __floordiv__, __rfloordiv__ = _binary("{0} // {1}"), _reflected("{0} // {1}")
    __mod__, __rmod__ = _binary("{0} % {1}"), _reflected("{0} % {1}")
    __pow__, __rpow__ = _binary("{0} ** {1}"), _reflected("{0} ** {1}")
    __and__, __rand__ = _binary("{0} & {1}"), _reflected("{0} & {1}")
    __or__, __ror__ = _binary("{0} | {1}"), _reflected("{0} | {1}")
    __xor__, __rxor__ = _binary("{0} ^ {1}"), _reflected("{0} ^ {1}")
    __lt__, __le__ = _binary("{0} < {1}"), _binary("{0} <= {1}")
    __gt__, __ge__ = _binary("{0} > {1}"), _binary("{0} >= {1}")
    __eq__, __ne__ = _binary("{0} == {1}"), _binary("{0} != {1}")  # type: ignore[assignment]
    # Comparisons return expressions, yet arrays stay usable as dict keys (by identity).
    __hash__ = object.__hash__

    def __neg__(self) -> Any:
        return _lazy("-{0}", self)

    def __pos__(self) -> Any:
        return _lazy("+{0}", self)

    def __invert__(self) -> Any:
        return _lazy("~{0}", self)

    def __abs__(self) -> Any:
        return _lazy("abs({0})", self)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """``np.sin(a)``, ``np.add(a, b)``, ``np_array * a``: a lazy expression. Other uses
        (``out=``, ``reduce``, ufuncs the engine lacks) run NumPy on the arrays' values."""
        template = UFUNCS.get(ufunc.__name__)
        if method == "__call__" and template is not None and not kwargs:
            e = lazy_ufunc(ufunc.__name__, *inputs)
            if e is not NotImplemented:
                return e
        from .lazyexpr import numpy_fallback

        return numpy_fallback(ufunc, method, inputs, kwargs)

    # ------------------------------------------------------------------ reductions
    # NumPy's functions (``np.sum(a)``, ``np.mean(a, axis=0)``...) call these methods, so
    # they never load the whole array either.

    def sum(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        where: Any = None,
        initial: Any = None,
        **kwargs: Any,
    ) -> Any:  # noqa: E501
        return _reduce(self, "sum", axis, dtype, out, keepdims, where, initial=initial, **kwargs)

    def prod(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        where: Any = None,
        initial: Any = None,
        **kwargs: Any,
    ) -> Any:  # noqa: E501
        return _reduce(self, "prod", axis, dtype, out, keepdims, where, initial=initial, **kwargs)

    def mean(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        where: Any = None,
        **kwargs: Any,
    ) -> Any:  # noqa: E501
        return _reduce(self, "mean", axis, dtype, out, keepdims, where, **kwargs)

    def std(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: int = 0,
        keepdims: bool = False,
        where: Any = None,
        **kwargs: Any,
    ) -> Any:  # noqa: E501
        return _reduce(self, "std", axis, dtype, out, keepdims, where, ddof=ddof, **kwargs)

    def var(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: int = 0,
        keepdims: bool = False,
        where: Any = None,
        **kwargs: Any,
    ) -> Any:  # noqa: E501
        return _reduce(self, "var", axis, dtype, out, keepdims, where, ddof=ddof, **kwargs)

    def min(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = None,
        **kwargs: Any,
    ) -> Any:  # noqa: E501
        return _reduce(self, "min", axis, None, out, keepdims, where, initial=initial, **kwargs)

    def max(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = None,
        where: Any = None,
        **kwargs: Any,
    ) -> Any:  # noqa: E501
        return _reduce(self, "max", axis, None, out, keepdims, where, initial=initial, **kwargs)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False, where: Any = None, **kwargs: Any) -> Any:
        return _reduce(self, "any", axis, None, out, keepdims, where, **kwargs)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False, where: Any = None, **kwargs: Any) -> Any:
        return _reduce(self, "all", axis, None, out, keepdims, where, **kwargs)

    def argmin(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        return _reduce(self, "argmin", axis, None, out, keepdims, None, **kwargs)

    def argmax(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        return _reduce(self, "argmax", axis, None, out, keepdims, None, **kwargs)

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """``np.clip(a, lo, hi)``: a lazy expression (``out=`` writes it there)."""
        from .masks import clip

        e = clip(self, kwargs.pop("a_min", min), kwargs.pop("a_max", max))
        if out is None:
            return e
        out[...] = e[()]
        return out

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        """``np.round(a, decimals)``: a lazy expression (``out=`` writes it there)."""
        from .masks import round_

        e = round_(self, decimals)
        if out is None:
            return e
        out[...] = e[()]
        return out


def _reduce(obj: Any, op: str, axis: Any, dtype: Any, out: Any, keepdims: bool, where: Any, **kw: Any) -> Any:
    from .reductions import reduce

    return reduce(obj, op, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where, **kw)
