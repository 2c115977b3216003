"""Dask and oxblosc arrays.

Reading: an ``oxblosc.NDArray`` is a Dask source as it is: ``dask.array.from_array(a,
chunks=a.chunks)`` reads one chunk per task, in parallel (reads of one handle run side by
side, the GIL released). An array opened from a file pickles as a reference to that file
(path, mode, locking), so ``distributed`` workers in other processes reopen it instead of
receiving its data; an in-memory array pickles as its frame bytes.

Writing: :func:`to_oxblosc` creates the file, then stores every Dask chunk into its own
oxblosc chunk (the Dask array is rechunked to the oxblosc chunk shape first, so no two tasks
ever write the same chunk): each task compresses its chunk by itself, then replaces the
file's chunk through a handle opened with ``locking=True``, which takes the frame's
exclusive lock, catches up with what other writers committed, and commits. So tasks in many
threads and many processes (a ``distributed`` cluster) write one file without losing a
chunk, and only the commits take turns (writing through the array would hold the lock while
compressing, and writers in different processes would compress one at a time).
``dask.array.store(x, target)`` works with a target opened with ``locking=True`` whose
chunks match ``x``'s too, compressing under the lock. Each chunk write is one
commit: a task that fails (or a worker that dies) leaves the chunks written so far and
zeros elsewhere, never a torn chunk or a broken file; write again to finish.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import dask.array as da
import numpy as np

from .core import call_nthreads
from .ndarray import NDArray, asarray, zeros
from .opening import open as _open
from .schunk import _open_native


class _ChunkWriter:
    """A ``dask.array.store`` target whose regions are whole chunks of one b2nd file: the
    chunk is compressed outside the lock (an in-memory array of one chunk with the file's
    chunks, blocks and cparams makes the same chunk), then committed under it. Pickles as
    its parameters; each write opens the file (a fraction of a millisecond)."""

    def __init__(self, path: str, a: NDArray) -> None:
        self.path, self.shape, self.dtype, self.ndim = path, a.shape, a.dtype, a.ndim
        self.chunks, self.blocks, self.cparams = a.chunks, a.blocks, a.cparams

    def __reduce__(self) -> tuple:
        return _ChunkWriter._restore, ((self.path, self.shape, self.dtype, self.chunks, self.blocks, self.cparams),)

    @staticmethod
    def _restore(state: tuple) -> _ChunkWriter:
        w = _ChunkWriter.__new__(_ChunkWriter)
        w.path, w.shape, w.dtype, w.chunks, w.blocks, w.cparams = state
        w.ndim = len(w.shape)
        return w

    def __setitem__(self, key: tuple[slice, ...], value: Any) -> None:
        starts = [k.start or 0 for k in key]
        grid = [-(-n // c) for n, c in zip(self.shape, self.chunks, strict=True)]
        nchunk = int(np.ravel_multi_index([s // c for s, c in zip(starts, self.chunks, strict=True)], grid))
        block = np.asarray(value, dtype=self.dtype)
        if block.shape != tuple(self.chunks):  # an edge chunk: padded as the array pads it
            full = np.zeros(self.chunks, self.dtype)
            full[tuple(slice(0, n) for n in block.shape)] = block
            block = full
        cp = dataclasses.replace(self.cparams, nthreads=call_nthreads(None))
        chunk = asarray(block, chunks=self.chunks, blocks=self.blocks, cparams=cp).schunk.get_chunk(0)
        _open_native(self.path, 0, True, True, False).update_chunk(nchunk, chunk)


def to_oxblosc(
    x: da.Array,
    urlpath: str | os.PathLike,
    chunks: tuple[int, ...] | None = None,
    blocks: tuple[int, ...] | None = None,
    compute: bool = True,
    scheduler: Any = None,
    **kwargs: Any,
) -> NDArray | Any:
    """Write the Dask array ``x`` to a new b2nd file at ``urlpath`` (replaced if present).

    ``chunks`` default to ``x``'s largest chunk per axis (``x`` is rechunked to them);
    ``blocks``, ``cparams``, ``contiguous``, ... as for :func:`oxblosc.zeros`; ``scheduler``
    as for ``dask.compute`` (default: Dask's current one). Returns the array opened
    read-only, or with ``compute=False`` the Dask ``Delayed`` that writes it."""
    chunks = tuple(int(c) for c in (chunks or x.chunksize))
    target = zeros(x.shape, x.dtype, chunks=chunks, blocks=blocks, urlpath=urlpath, mode="w", **kwargs)
    path = target.urlpath
    writer = _ChunkWriter(path, target)
    del target
    stored = da.store(x.rechunk(chunks), writer, lock=False, compute=False)
    if not compute:
        return stored
    stored.compute(**({} if scheduler is None else {"scheduler": scheduler}))
    return _open(path, mode="r")


__all__ = ["to_oxblosc"]
