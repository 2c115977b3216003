"""``lazyudf(func, inputs, dtype)``: python-blosc2's lazy array computed by the caller's own
Python function, chunk by chunk.

``func(inputs_tuple, output, offset)`` fills ``output`` (one chunk of the result) from
``inputs_tuple`` (the same chunk of each array input of the result's shape; other inputs
as given) and ``offset`` (the chunk's first index per axis). Only the chunks a selection
touches are computed; ``compute()`` writes them one by one into a new ``NDArray``.

This runs a function the caller passes in this process. It is never stored: saving a
``LazyUDF`` is refused, and stored code in files is never run (see ``saved``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ._native import auto_chunks_blocks
from .lazyexpr import LazyArray, _check_dtype, _grid
from .ndarray import NDArray, _expand, _filling
from .operators import Operators


def _array_like(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__") and not np.isscalar(x)


class LazyUDF(Operators, LazyArray):
    """A lazy array whose chunks a Python function computes (see the module docs)."""

    def __init__(
        self, func: Callable, inputs: Sequence[Any] | None, dtype: Any, shape: Any = None, **kwargs: Any
    ) -> None:
        if not callable(func):
            raise TypeError(f"lazyudf needs a function, not {type(func).__name__}")
        if dtype is None:
            raise TypeError("lazyudf needs dtype= for a Python function")
        self.func, self.inputs = func, tuple(inputs or ())
        self._dtype = _check_dtype(np.dtype(dtype), "the result of lazyudf")
        arrays = [x for x in self.inputs if _array_like(x)]
        if shape is None:
            if not arrays:
                raise ValueError("lazyudf without array inputs needs shape=")
            shape = np.broadcast_shapes(*(tuple(x.shape) for x in arrays))
        self._shape = tuple(int(n) for n in (shape if isinstance(shape, tuple | list) else (shape,)))
        self._storage = {k: v for k, v in kwargs.items() if k not in ("chunked_eval", "jit", "jit_backend")}
        base = next((x for x in arrays if isinstance(x, NDArray) and x.shape == self._shape and x.ndim), None)
        chunks, blocks = self._storage.pop("chunks", None), self._storage.pop("blocks", None)
        if chunks is None and base is not None:
            chunks, blocks = base.chunks, base.blocks if blocks is None else blocks
        if self._shape:
            c, b = auto_chunks_blocks(
                list(self._shape),
                self._dtype.itemsize,
                None if chunks is None else list(chunks),
                None if blocks is None else list(blocks),
            )
            self._chunks, self._blocks = tuple(c), tuple(b)
        else:
            self._chunks = self._blocks = ()

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: math.prod(self._shape))
    chunks = property(lambda self: self._chunks)
    blocks = property(lambda self: self._blocks)

    def __repr__(self) -> str:
        name = getattr(self.func, "__name__", "udf")
        return f"<oxblosc.LazyUDF {name} shape={self._shape} dtype={self._dtype}>"

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def _chunk(self, region: tuple[slice, ...]) -> np.ndarray:
        """One chunk of the result, from the user's function."""
        args = tuple(x[region] if _array_like(x) and tuple(x.shape) == self._shape else x for x in self.inputs)
        out = np.empty(tuple(s.stop - s.start for s in region), self._dtype)
        self.func(args, out, tuple(s.start for s in region))
        return out

    def _regions(self, lo: Sequence[int], hi: Sequence[int]) -> Iterator[tuple[slice, ...]]:
        """The chunk regions overlapping the box ``[lo, hi)``."""
        ranges = [range(a // c, -(-b // c)) for a, b, c in zip(lo, hi, self._chunks, strict=True)]
        for idx in np.ndindex(*(len(r) for r in ranges)):
            yield tuple(
                slice(r[i] * c, min((r[i] + 1) * c, n))
                for r, i, c, n in zip(ranges, idx, self._chunks, self._shape, strict=True)
            )

    def __getitem__(self, key: Any) -> np.ndarray:
        if not self._shape:
            return self._chunk(())[key]
        lo, hi, local = [], [], []
        axis = 0
        for k in _expand(key, self.ndim):
            if k is None:
                local.append(None)
                continue
            n = self._shape[axis]
            if isinstance(k, slice):
                r = range(*k.indices(n))
                a, b = (min(r[0], r[-1]), max(r[0], r[-1]) + 1) if len(r) else (0, 0)
                stop = r.stop - a if r.stop - a >= 0 else None
                local.append(slice(r.start - a, stop, r.step) if len(r) else slice(0, 0))
            elif isinstance(k, np.ndarray) or isinstance(k, bool | np.bool_):
                raise IndexError("a LazyUDF takes integers, slices, ... and None as indices")
            else:
                i = int(k.__index__())
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                a, b = i % n, i % n + 1
                local.append(0)
            lo.append(a)
            hi.append(b)
            axis += 1
        box = np.empty(tuple(b - a for a, b in zip(lo, hi, strict=True)), self._dtype)
        if box.size:
            for region in self._regions(lo, hi):
                vals = self._chunk(region)
                inner = tuple(slice(max(s.start, a), min(s.stop, b)) for s, a, b in zip(region, lo, hi, strict=True))
                box[tuple(slice(s.start - a, s.stop - a) for s, a in zip(inner, lo, strict=True))] = vals[
                    tuple(slice(s.start - r.start, s.stop - r.start) for s, r in zip(inner, region, strict=True))
                ]
        return box[tuple(local)]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = np.asarray(self[()])
        return a if dtype is None else a.astype(dtype, copy=False)

    def compute(self, item: Any = (), **kwargs: Any) -> NDArray:
        """The result as a new ``NDArray``, one chunk at a time (``kwargs`` as for
        :func:`oxblosc.empty`, defaulting to those given to ``lazyudf``)."""
        storage = {**self._storage, **{k: v for k, v in kwargs.items() if k not in ("jit", "jit_backend")}}
        if not (item is None or item is Ellipsis or (isinstance(item, tuple) and not item)):
            from .ndarray import asarray

            return asarray(np.asarray(self[item]), **storage)
        storage.setdefault("chunks", self._chunks or None)
        storage.setdefault("blocks", self._blocks or None)
        # A file gets its name only once complete: a raising function leaves it as it was.
        with _filling(self._shape, self._dtype, storage) as out:
            for region in _grid(self._shape, self._chunks) if self._shape else [()]:
                out[region] = self._chunk(region)
        return out

    def save(self, urlpath: Any = None, **kwargs: Any) -> None:
        raise ValueError(
            "a LazyUDF is Python code: oxblosc neither stores code in files nor runs stored code "
            "(compute() it, or save an expression instead)"
        )


def lazyudf(
    func: Callable,
    inputs: Sequence[Any] | None,
    dtype: Any = None,
    shape: Any = None,
    chunked_eval: bool = True,
    jit: Any = None,
    jit_backend: Any = None,
    **kwargs: Any,
) -> LazyUDF:
    """A lazy array computed chunk by chunk by ``func(inputs_tuple, output, offset)``
    (python-blosc2's ``lazyudf``; ``chunked_eval``, ``jit`` and ``jit_backend`` are
    accepted, evaluation is always per chunk, in Python)."""
    return LazyUDF(func, inputs, dtype, shape, **kwargs)
