"""Element-wise selection: ``where(cond, x, y)``, ``clip``, ``isnan``/``isinf``/``isfinite``
(lazy expressions), and boolean masks as indices (``a[a > 5]``), read slab by slab.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .lazyexpr import _PIECE_ITEMS, LazyExpr, combine
from .ndarray import NDArray

__all__ = ["where", "clip", "isnan", "isinf", "isfinite", "masked"]


def _lazy(template: str, *args: Any) -> LazyExpr:
    e = combine(template, *args)
    if e is NotImplemented:
        raise TypeError(f"unsupported operand types for {template.split('(')[0]}: {[type(a).__name__ for a in args]}")
    return e


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Items of ``x`` where ``condition`` holds, else of ``y`` (broadcast, NumPy's types),
    as a lazy expression; without ``y``, python-blosc2's filter: the items of ``x`` where
    ``condition`` holds (1-D, C order)."""
    if x is not None and y is None:
        from .lazyfilter import Filtered

        return Filtered(condition, x)
    if x is None or y is None:
        raise TypeError("where(condition, x, y) needs both x and y (np.nonzero gives positions)")
    return _lazy("where({0}, {1}, {2})", condition, x, y)


def clip(x: Any, a_min: Any = None, a_max: Any = None) -> LazyExpr:
    """``x`` limited to ``[a_min, a_max]`` (either may be None), as a lazy expression; NaN
    stays NaN as in NumPy."""
    if a_min is None and a_max is None:
        raise ValueError("One of max or min must be given")
    if a_max is None:
        return _lazy("maximum({0}, {1})", x, a_min)
    if a_min is None:
        return _lazy("minimum({0}, {1})", x, a_max)
    return _lazy("minimum(maximum({0}, {1}), {2})", x, a_min, a_max)


def round_(x: Any, decimals: int = 0) -> LazyExpr:
    """``np.round(x, decimals)`` as a lazy expression, as NumPy computes it: floats scaled by
    ``10**decimals`` (in their own type), rounded half to even and scaled back; integers
    unchanged (booleans as floats) for ``decimals >= 0``."""
    decimals = operator.index(decimals)
    kind = np.dtype(getattr(x, "dtype", np.asarray(x).dtype)).kind
    if kind not in "biuf":
        raise TypeError(f"round() takes numeric values, not {np.dtype(x.dtype)}")
    if kind == "b" and decimals != 0:
        # (Not a TypeError: np.round would catch it and load the whole array to fail there.)
        raise ValueError("round() of booleans takes only decimals=0 (NumPy cannot cast the scaled values back)")
    if kind != "f":
        if decimals < 0:
            raise NotImplementedError("round() of integers to negative decimals is not evaluated lazily; use NumPy")
        # NumPy rounds booleans into floats (float16; float32 here, as for every float function).
        return _lazy("rint({0})" if kind == "b" else "real({0})", x)
    if decimals == 0:
        return _lazy("rint({0})", x)
    scale = 10.0 ** abs(decimals)
    return _lazy("rint({0} * {1}) / {1}" if decimals > 0 else "rint({0} / {1}) * {1}", x, scale)


def isnan(x: Any) -> LazyExpr:
    return _lazy("isnan({0})", x)


def isinf(x: Any) -> LazyExpr:
    return _lazy("isinf({0})", x)


def isfinite(x: Any) -> LazyExpr:
    return _lazy("isfinite({0})", x)


def masked(target: NDArray | LazyExpr, mask: Any) -> np.ndarray:
    """``target[mask]`` for a boolean mask (expression, NDArray or NumPy array) of the
    target's shape: the selected items in C order, read in slabs along the first axis so
    only one slab of the target and of the mask is in memory besides the result."""
    if mask.dtype != bool:
        raise IndexError(f"an expression used as an index must be boolean, not {mask.dtype}")
    shape = tuple(target.shape)
    if tuple(mask.shape) != shape:
        if tuple(mask.shape) != shape[: len(mask.shape)]:
            raise IndexError(f"boolean index of shape {tuple(mask.shape)} does not match the array's {shape}")
        m = np.asarray(mask)
        return np.asarray(target)[m] if isinstance(target, LazyExpr) else target[m]
    if not shape:
        return np.asarray(target[()]).reshape(1)[np.asarray(mask[()]).reshape(1)]
    rows = max(1, _PIECE_ITEMS // max(1, int(np.prod(shape[1:]))))
    if isinstance(target, NDArray | LazyExpr) and target.ndim:
        rows = max(rows, target.chunks[0]) if isinstance(target, NDArray) else rows
    parts = []
    for r0 in range(0, shape[0], rows):
        sl = slice(r0, min(shape[0], r0 + rows))
        m = np.asarray(mask[sl])
        if m.any():
            parts.append(np.asarray(target[sl])[m])
    return np.concatenate(parts) if parts else np.empty(0, target.dtype)
