"""``cond.where(x)`` (python-blosc2's one-argument ``where`` of a boolean expression): the
items of ``x`` where ``cond`` holds, in C order, as NumPy's ``x[cond]`` gives them.

The result is 1-D and its length is only known after reading ``cond``, so it is computed
when read (``[...]``, ``compute()``, ``np.asarray``), slab by slab (``masks.masked``).
Reductions do not build it: they reduce ``x`` chunk by chunk with ``cond`` as the mask.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .lazyexpr import LazyArray
from .ndarray import NDArray, asarray

_MASKED_REDUCTIONS = ("sum", "prod", "mean", "std", "var", "any", "all")


class Filtered(LazyArray):
    """Items of ``values`` where ``cond`` holds (1-D, C order), computed on demand."""

    def __init__(self, cond: Any, values: Any) -> None:
        from .lazyexpr import LazyExpr, combine

        if not isinstance(cond, NDArray | LazyExpr) or cond.dtype != bool:
            raise TypeError(f"where(x) filters by a boolean expression, not one of dtype {cond.dtype}")
        same = isinstance(values, NDArray | LazyExpr) and tuple(values.shape) == tuple(cond.shape)
        target = values if same else combine("where({0}, {1}, {1})", cond, values)
        if target is NotImplemented or tuple(target.shape) != tuple(cond.shape):
            raise ValueError(
                f"where(x): x of shape {np.shape(values)} does not have the condition's shape {tuple(cond.shape)}"
            )
        self.cond, self.values = cond, target
        self.dtype = np.dtype(target.dtype)
        self.ndim = 1
        self._count: int | None = None

    @property
    def shape(self) -> tuple[int]:
        """``(n,)``: n items pass the condition (the condition is read once to count them)."""
        if self._count is None:
            from .functions import count_nonzero

            self._count = int(count_nonzero(self.cond))
        return (self._count,)

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<oxblosc where(x) filter: items of {self.values!r} where {self.cond!r}>"

    def _all(self) -> np.ndarray:
        from .masks import masked

        out = masked(self.values, self.cond)
        self._count = len(out)
        return out

    def __getitem__(self, key: Any) -> np.ndarray:
        return self._all()[key]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self._all()
        return a if dtype is None else a.astype(dtype, copy=False)

    def compute(self, item: Any = (), **kwargs: Any) -> NDArray:
        """The filtered items as a new ``NDArray`` (``kwargs`` as for ``oxblosc.asarray``)."""
        return asarray(self._all()[item], **kwargs)

    def _reduce(self, op: str, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        from .lazyexpr import combine
        from .reductions import reduce

        if axis not in (None, 0, -1, (0,), (-1,)):
            raise np.exceptions.AxisError(axis, 1)
        if op in _MASKED_REDUCTIONS:
            res = reduce(self.values, op, where=self.cond, **kwargs)
        elif op in ("min", "max") and "initial" not in kwargs and self.dtype.kind in "biuf":
            if self.shape[0] == 0:  # NumPy's error for an empty min/max
                return getattr(np, op)(np.empty(0, self.dtype))
            # Items outside the condition become the identity of min/max (NaN still wins).
            if self.dtype.kind == "b":
                fill: Any = op == "min"
            elif self.dtype.kind == "f":
                fill = np.inf if op == "min" else -np.inf
            else:
                ii = np.iinfo(self.dtype)
                fill = ii.max if op == "min" else ii.min
            sentinel = np.array(fill, self.dtype)
            res = reduce(combine("where({0}, {1}, {2})", self.cond, self.values, sentinel), op, **kwargs)
        else:
            res = getattr(np, op)(self._all(), **kwargs)
        return np.reshape(res, (1,)) if keepdims else res


def _method(op: str) -> Any:
    def f(self: Filtered, axis: Any = None, **kwargs: Any) -> Any:
        return self._reduce(op, axis, **kwargs)

    f.__name__ = f.__qualname__ = op
    f.__doc__ = f"``{op}`` of the filtered items (NumPy's keywords)."
    return f


for _op in ("sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax"):
    setattr(Filtered, _op, _method(_op))
