"""python-blosc2's array manipulation functions that build a new array chunk by chunk:
``permute_dims`` (``transpose``, ``matrix_transpose``) and ``astype``.

The work is the NDArray's own chunk-wise copy (``NDArray.copy``, ``NDArray._permuted``); this
module adds the Array API signatures and checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ndarray import NDArray, asarray


def _as_ndarray(x: Any) -> NDArray:
    return x if isinstance(x, NDArray) else asarray(np.asarray(x))


def permute_dims(arr: Any, axes: tuple[int, ...] | list[int] | None = None, **kwargs: Any) -> NDArray:
    """A new array whose axis ``i`` is ``arr``'s axis ``axes[i]`` (default: reversed), copied
    chunk by chunk; ``kwargs`` (chunks, blocks, cparams, urlpath...) as for ``empty``."""
    a = _as_ndarray(arr)
    if axes is None:
        order = list(range(a.ndim))[::-1]
    else:
        order = [int(x) + a.ndim if int(x) < 0 else int(x) for x in axes]
        if sorted(order) != list(range(a.ndim)):
            raise ValueError(f"axes {tuple(axes)} are not a permutation of the {a.ndim} axes of the array")
    return a._permuted(order, **kwargs)


def transpose(x: Any, **kwargs: Any) -> NDArray:
    """``permute_dims(x)``: all axes reversed."""
    return permute_dims(x, **kwargs)


def matrix_transpose(arr: Any, **kwargs: Any) -> NDArray:
    """The last two axes swapped (a stack of matrices transposed)."""
    a = _as_ndarray(arr)
    if a.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, the array has {a.ndim}")
    return permute_dims(a, [*range(a.ndim - 2), a.ndim - 1, a.ndim - 2], **kwargs)


def astype(array: Any, dtype: Any, casting: str = "unsafe", copy: bool = True, **kwargs: Any) -> NDArray:
    """``array`` converted to ``dtype`` chunk by chunk (NumPy's ``casting`` rules; with
    ``copy=False`` an NDArray that already has ``dtype`` is returned as is)."""
    a = _as_ndarray(array)
    target = np.dtype(dtype)
    if not np.can_cast(a.dtype, target, casting=casting):
        raise TypeError(f"Cannot cast array data from {a.dtype!r} to {target!r} according to the rule {casting!r}")
    if not copy and target == a.dtype and not kwargs:
        return a
    return a.copy(target, **kwargs)
