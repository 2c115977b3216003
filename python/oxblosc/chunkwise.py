"""Building one array from another (or from a stream of values) a chunk at a time, so the
shape-changing operations (``reshape``, ``squeeze``, ``concat``, ``fromiter``, ...) never
hold more than a chunk row of data in memory.

Works on anything with ``shape``, ``chunks``, ``chunk_slices()`` and NumPy-style slicing:
this module knows nothing of how arrays are stored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

Region = tuple[slice, ...]


def region_shape(region: Region) -> tuple[int, ...]:
    return tuple(s.stop - s.start for s in region)


def copy_regions(src: Any, dst: Any, target: Callable[[Region], Region], transform: Callable | None = None) -> None:
    """For each chunk region of ``src``: ``dst[target(region)] = transform(src[region])``,
    reshaped to the target region (which holds the same items, maybe with axes of length 1
    added or removed)."""
    for region in src.chunk_slices():
        values = src[region]
        if transform is not None:
            values = transform(values)
        where = target(region)
        dst[where] = values.reshape(region_shape(where))


def fill_flat(dst: Any, take: Callable[[int], np.ndarray], c_order: bool = True) -> Any:
    """Write a flat sequence of values into ``dst``; ``take(n)`` returns the next ``n``.

    ``c_order=True``: row-major order, one chunk row (``chunks[0]`` rows) at a time.
    ``c_order=False``: python-blosc2's insertion order: chunk after chunk in storage order,
    each chunk's part of the array (edge chunks: only the items inside the array) in C order.
    """
    if math.prod(dst.shape) == 0:
        return dst
    if len(dst.shape) == 0:
        dst[()] = take(1)[0]
        return dst
    if c_order or len(dst.shape) == 1:
        rows, tail = dst.chunks[0], dst.shape[1:]
        for r0 in range(0, dst.shape[0], rows):
            r1 = min(r0 + rows, dst.shape[0])
            dst[r0:r1] = take((r1 - r0) * math.prod(tail)).reshape((r1 - r0, *tail))
        return dst
    for region in dst.chunk_slices():
        shape = region_shape(region)
        dst[region] = take(math.prod(shape)).reshape(shape)
    return dst


def flat_reader(src: Any) -> Callable[[int], np.ndarray]:
    """``take(n)`` over the items of ``src`` in C order, reading whole rows of axis 0 (one
    row more than needed at most) so ``src`` can be any array with NumPy slicing."""
    shape = tuple(src.shape)
    if len(shape) == 0:
        items: Iterator[np.ndarray] = iter([np.asarray(src[()]).reshape(1)])
        return lambda n: next(items)
    row = math.prod(shape[1:])
    pos = 0

    def take(n: int) -> np.ndarray:
        nonlocal pos
        first, last = pos // row, -(-(pos + n) // row)
        part = np.asarray(src[first:last]).reshape(-1)
        skip = pos - first * row
        pos += n
        return part[skip : skip + n]

    return take


def iter_reader(iterable: Any, dtype: np.dtype) -> Callable[[int], np.ndarray]:
    """``take(n)`` over a one-pass iterable; running short raises ValueError."""
    it = iter(iterable)

    def take(n: int) -> np.ndarray:
        try:
            return np.fromiter(it, dtype=dtype, count=n)
        except ValueError as e:  # NumPy: "iterator too short"
            raise ValueError(f"the iterable ran out before the array was full ({e})") from None

    return take
