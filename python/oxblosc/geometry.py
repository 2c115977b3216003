"""Chunk geometry questions with python-blosc2's names: which chunk and block shapes an
array would get (``compute_chunks_blocks``) and which chunks a slice touches
(``get_slice_nchunks``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _native
from .ndarray import NDArray, _expand, _shape_tuple
from .schunk import SChunk


def compute_chunks_blocks(
    shape: Any, chunks: Any = None, blocks: Any = None, dtype: Any = np.uint8, **kwargs: Any
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ``(chunks, blocks)`` an array of ``shape`` and ``dtype`` gets when ``chunks``
    and/or ``blocks`` are left out (given ones are checked and kept).

    The automatic shapes are oxblosc's (see ``oxblosc-nd/src/auto.rs``), so they can differ
    from python-blosc2's; ``kwargs`` (``cparams``, storage, ...) are accepted and, as the
    rule does not depend on them, ignored."""
    shape = _shape_tuple(shape)
    given = []
    for name, value in (("chunks", chunks), ("blocks", blocks)):
        if value is not None:
            value = [int(v) for v in (value if isinstance(value, tuple | list) else [value])]
            if len(value) != len(shape):
                raise ValueError(f"{name} should have the same length than shape")
            if any(v == 0 and n != 0 for v, n in zip(value, shape, strict=True)):
                raise ValueError(f"{name} cannot contain 0 dimension if shape is not zero")
        given.append(value)
    chunks, blocks = given
    if chunks is not None and blocks is not None and any(b > c for b, c in zip(blocks, chunks, strict=True)):
        raise ValueError("blocks cannot be greater than chunks")
    c, b = _native.auto_chunks_blocks(list(shape), np.dtype(dtype).itemsize, chunks, blocks)
    return tuple(c), tuple(b)


def get_slice_nchunks(container: SChunk | NDArray, key: Any) -> np.ndarray:
    """The (flat, storage-order) numbers of the chunks holding ``container[key]``, as int64.

    For a super-chunk ``key`` is an item index, a ``slice`` (step 1) or a ``(start, stop)``
    pair; for an array, integers and slices (step 1) per axis."""
    if isinstance(container, NDArray):
        return _array_slice_nchunks(container, key)
    if isinstance(key, int | np.integer):
        key = slice(int(key), int(key) + 1)
    elif isinstance(key, tuple):
        key = slice(*key)
    if key.step not in (None, 1):
        raise IndexError("Only step=1 is supported")
    start, stop, _ = key.indices(len(container))
    if start >= stop:
        return np.zeros(0, np.int64)
    ts = container.typesize
    # Items before each chunk (chunks may differ in size when written so).
    sizes = [container._n.chunk_summary(i)[0] // ts for i in range(container.nchunks)]
    ends = np.cumsum(sizes)
    first = int(np.searchsorted(ends, start, side="right"))
    last = int(np.searchsorted(ends, stop - 1, side="right"))
    return np.arange(first, last + 1, dtype=np.int64)


def _array_slice_nchunks(a: NDArray, key: Any) -> np.ndarray:
    ranges = []
    for axis, (k, n, c) in enumerate(zip(_expand(key, a.ndim), a.shape, a.chunks, strict=True)):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step != 1:
                raise IndexError("Step parameter is not supported yet")
        elif isinstance(k, int | np.integer):
            start = int(k) + n if k < 0 else int(k)
            if not 0 <= start < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            stop = start + 1
        else:
            raise IndexError("only integers and slices are supported")
        if start >= stop:
            return np.zeros(0, np.int64)
        ranges.append(np.arange(start // c, -(-stop // c)))
    grid = tuple(-(-n // c) for n, c in zip(a.shape, a.chunks, strict=True))
    if not ranges:
        return np.zeros(1 if math.prod(grid) else 0, np.int64)
    coords = np.meshgrid(*ranges, indexing="ij")
    return np.ravel_multi_index(tuple(x.ravel() for x in coords), grid).astype(np.int64)


__all__ = ["compute_chunks_blocks", "get_slice_nchunks"]
