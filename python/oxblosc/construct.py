"""Arrays computed from values or from other arrays, with python-blosc2's names and
semantics: ``arange``, ``linspace``, ``eye``, ``fromiter``, ``meshgrid``, ``broadcast_to``, ``concat``,
``stack``, ``expand_dims``, ``squeeze`` and ``reshape``.

Every result is written chunk by chunk (``chunkwise``), so memory stays about one chunk row
(``arange``/``linspace`` excepted: NumPy computes their values in one go, so that they
equal NumPy's to the last bit). ``c_order=False`` stores the values chunk after chunk, each
chunk's part of the array in C order (python-blosc2's "insertion order"). Where
python-blosc2 returns a view (``expand_dims``, ``squeeze``) these return copies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from . import chunkwise
from .ndarray import NDArray, _axes, _filling, _shape_tuple, asarray, empty


def _from_values(values: np.ndarray, shape: Any, c_order: bool, kwargs: dict) -> NDArray:
    values = values.reshape(-1)
    shape = values.shape if shape is None else _shape_tuple(shape)
    if math.prod(shape) != values.size:
        raise ValueError(f"The shape {shape} is not consistent with the {values.size} values")
    with _filling(shape, values.dtype, kwargs) as out:
        return chunkwise.fill_flat(out, chunkwise.flat_reader(values), c_order)


def arange(
    start: Any = 0,
    stop: Any = None,
    step: Any = 1,
    dtype: Any = None,
    shape: Any = None,
    c_order: bool = True,
    **kwargs: Any,
) -> NDArray:
    """``numpy.arange(start, stop, step)`` as an array of ``shape`` (default: 1-d)."""
    if stop is None:
        start, stop = 0, start
    return _from_values(np.arange(start, stop, 1 if step is None else step, dtype=dtype), shape, c_order, kwargs)


def linspace(
    start: Any,
    stop: Any,
    num: int | None = None,
    endpoint: bool = True,
    dtype: Any = None,
    shape: Any = None,
    c_order: bool = True,
    **kwargs: Any,
) -> NDArray:
    """``numpy.linspace(start, stop, num, endpoint)`` as an array of ``shape``; ``num``
    defaults to the size of ``shape`` (one of them is needed)."""
    if num is None:
        if shape is None:
            raise ValueError("linspace needs num or shape")
        num = math.prod(_shape_tuple(shape))
    values = np.linspace(start, stop, num=num, endpoint=endpoint, dtype=dtype)
    return _from_values(values, shape, c_order, kwargs)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = np.float64, **kwargs: Any) -> NDArray:  # noqa: N803
    """A 2-d array of ``N`` rows and ``M`` (default ``N``) columns with ones on diagonal
    ``k`` (0 the main one, > 0 above it, < 0 below) and zeros elsewhere."""
    M = N if M is None else M  # noqa: N806
    with _filling((N, M), dtype, kwargs) as out:
        rows = out.chunks[0] if N else 1
        for r0 in range(0, N, rows):
            r1 = min(r0 + rows, N)
            out[r0:r1] = np.eye(r1 - r0, M, k + r0, dtype=out.dtype)
    return out


def fromiter(iterable: Iterable, shape: Any, dtype: Any, c_order: bool = True, **kwargs: Any) -> NDArray:
    """An array of ``shape`` from the first ``prod(shape)`` values of ``iterable`` (consumed
    once, in order; too few values raise ValueError). ``c_order=False``: chunk by chunk."""
    shape = _shape_tuple(shape)
    dtype = np.dtype(dtype)
    with _filling(shape, dtype, kwargs) as out:
        if isinstance(iterable, np.ndarray):
            take = chunkwise.flat_reader(np.asarray(iterable, dtype=dtype).reshape(shape))
            return chunkwise.fill_flat(out, take, True)
        return chunkwise.fill_flat(out, chunkwise.iter_reader(iterable, dtype), c_order)


def meshgrid(*arrays: Any, indexing: str = "xy") -> tuple[NDArray, ...]:
    """Coordinate arrays from 1-d coordinate vectors, as ``numpy.meshgrid`` (``indexing``
    "xy" Cartesian, "ij" matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    vectors = [np.asarray(a[...] if isinstance(a, NDArray) else a).reshape(-1) for a in arrays]
    n = len(vectors)
    shape = [v.size for v in vectors]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, v in enumerate(vectors):
        axis = (1 if i == 0 else 0 if i == 1 else i) if indexing == "xy" and n > 1 else i
        view = v.reshape([-1 if d == axis else 1 for d in range(n)])
        dst = empty(tuple(shape), v.dtype)
        rows = dst.chunks[0]
        for r0 in range(0, shape[0], rows):
            r1 = min(r0 + rows, shape[0])
            part = view[r0:r1] if axis == 0 else view
            dst[r0:r1] = np.broadcast_to(part, (r1 - r0, *shape[1:]))
        out.append(dst)
    return tuple(out)


def array(obj: Any, copy: bool | None = True, **kwargs: Any) -> NDArray:
    """NumPy's ``array`` for compressed arrays: :func:`asarray` copying by default (an
    ``NDArray`` given comes back as is only with ``copy=False`` or ``None``)."""
    return asarray(obj, copy=copy, **kwargs)


def take(x: Any, indices: Any, axis: int | None = None) -> NDArray:
    """The items of ``x`` at integer ``indices`` along ``axis`` (flattened when None), as a
    new array: :meth:`NDArray.take`, or ``numpy.take`` for other array-likes."""
    if isinstance(x, NDArray):
        return x.take(indices, axis)
    return asarray(np.take(np.asarray(x), np.asarray(indices), axis=axis))


def broadcast_to(arr: Any, shape: Any) -> NDArray:
    """A new array of ``shape`` holding ``arr`` broadcast by NumPy's rules (ValueError when
    the shapes are not compatible)."""
    shape = _shape_tuple(shape)
    src_shape = tuple(arr.shape)
    if len(src_shape) > len(shape) or np.broadcast_shapes(src_shape, shape) != shape:
        raise ValueError(f"operands could not be broadcast from shape {src_shape} to {shape}")
    out = empty(shape, arr.dtype)
    whole = None if len(src_shape) == len(shape) and src_shape and src_shape[0] != 1 else np.asarray(arr[...])
    if not shape:
        out[()] = whole
        return out
    rows = out.chunks[0]
    for r0 in range(0, shape[0], rows):
        r1 = min(r0 + rows, shape[0])
        part = whole if whole is not None else np.asarray(arr[r0:r1])
        out[r0:r1] = np.broadcast_to(part, (r1 - r0, *shape[1:]))
    return out


def concat(arrays: Sequence[NDArray], /, axis: int = 0, **kwargs: Any) -> NDArray:
    """The arrays joined along ``axis`` (same ndim and dtype, same shape elsewhere) in a new
    array with the first one's chunks and blocks (unless given in ``kwargs``)."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if not all(isinstance(a, NDArray) for a in arrays):
        raise TypeError("All inputs must be instances of NDArray")
    if len(arrays) == 1:
        return arrays[0]
    first = arrays[0]
    (axis,) = _axes(axis, first.ndim) if first.ndim else (None,)
    if axis is None:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for a in arrays[1:]:
        if a.ndim != first.ndim or a.dtype != first.dtype:
            raise ValueError("the arrays must have the same number of dimensions and dtype to be concatenated")
        if a.shape[:axis] != first.shape[:axis] or a.shape[axis + 1 :] != first.shape[axis + 1 :]:
            raise ValueError(f"shapes {first.shape} and {a.shape} differ outside the concatenation axis {axis}")
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    kwargs.setdefault("chunks", first.chunks)
    kwargs.setdefault("blocks", first.blocks)
    offset = 0
    with _filling(tuple(shape), first.dtype, kwargs) as out:
        for a in arrays:

            def moved(r: tuple[slice, ...], at: int = offset) -> tuple[slice, ...]:
                return r[:axis] + (slice(r[axis].start + at, r[axis].stop + at),) + r[axis + 1 :]

            chunkwise.copy_regions(a, out, moved)
            offset += a.shape[axis]
    return out


def expand_dims(array: Any, axis: int | Sequence[int] = 0) -> NDArray:
    """A new array with axes of length 1 inserted at the ``axis`` positions (counted in the
    result), with the same chunks, blocks and cparams along the other axes."""
    array = asarray(array)
    ndim = array.ndim + (1 if isinstance(axis, int | np.integer) else len(axis))
    new = _axes(axis, ndim)
    old = iter(range(array.ndim))
    src_axis = [None if d in new else next(old) for d in range(ndim)]

    def pick(values: tuple, one: Any) -> tuple:
        return tuple(one if a is None else values[a] for a in src_axis)

    out = empty(
        pick(array.shape, 1), array.dtype, chunks=pick(array.chunks, 1), blocks=pick(array.blocks, 1),
        cparams=array.cparams,
    )  # fmt: skip
    chunkwise.copy_regions(array, out, lambda r: pick(r, slice(0, 1)))
    return out


def stack(arrays: Sequence[NDArray], axis: int = 0, **kwargs: Any) -> NDArray:
    """The arrays (same shape and dtype) stacked along a new axis ``axis``."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    if axis < 0:
        axis += arrays[0].ndim + 1
    return concat([expand_dims(a, axis) for a in arrays], axis, **kwargs)


def squeeze(x: Any, axis: int | Sequence[int] | None = None) -> NDArray:
    """``x`` without its axes of length 1 (``axis``: only those); a new array."""
    return asarray(x).squeeze(axis)


def reshape(src: Any, shape: Any, c_order: bool = True, **kwargs: Any) -> NDArray:
    """A new array with the items of ``src`` (read in C order) and shape ``shape``;
    ``c_order=False`` stores them chunk after chunk. ``kwargs`` as for ``empty``."""
    if isinstance(src, NDArray):
        return src.reshape(shape, c_order=c_order, **kwargs)
    src = np.asarray(src)
    return _from_values(src, np.reshape(src, shape).shape, c_order, kwargs)


__all__ = [
    "arange",
    "array",
    "broadcast_to",
    "concat",
    "expand_dims",
    "eye",
    "fromiter",
    "linspace",
    "meshgrid",
    "reshape",
    "squeeze",
    "stack",
    "take",
]
