"""Dask and oxblosc arrays.

Reading: an ``oxblosc.NDArray`` is a Dask source as it is: ``dask.array.from_array(a,
chunks=a.chunks)`` reads one chunk per task, in parallel (reads of one handle run side by
side, the GIL released). An array opened from a file pickles as a reference to that file
(path, mode, locking), so ``distributed`` workers in other processes reopen it instead of
receiving its data; an in-memory array pickles as its frame bytes.

Writing: :func:`to_oxblosc` creates the file, then stores every Dask chunk into its own
oxblosc chunk (the Dask array is rechunked to the oxblosc chunk shape first, so no two tasks
ever write the same chunk) through a handle opened with ``locking=True``: each chunk write
takes the frame's exclusive lock, catches up with what other writers committed, and
commits. So tasks in many threads and many processes (a ``distributed`` cluster) write one
file without losing a chunk. ``dask.array.store(x, target)`` works the same way with a
target opened with ``locking=True`` whose chunks match ``x``'s. Each chunk write is one
commit: a task that fails (or a worker that dies) leaves the chunks written so far and
zeros elsewhere, never a torn chunk or a broken file; write again to finish.
"""

from __future__ import annotations

import os
from typing import Any

import dask.array as da

from .ndarray import NDArray, zeros
from .opening import open as _open


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
    del target
    writer = _open(path, mode="a", locking=True)
    stored = da.store(x.rechunk(chunks), writer, lock=False, compute=False)
    if not compute:
        return stored
    stored.compute(**({} if scheduler is None else {"scheduler": scheduler}))
    return _open(path, mode="r")


__all__ = ["to_oxblosc"]
