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

:func:`to_oxblosc` writes all or nothing: the new array is built under a temporary name
beside ``urlpath`` (``<urlpath>.oxtmp-<pid>-<n>``, the name the frame layer gives its own
temporaries, so a killed run's leftover is swept by a later creation at ``urlpath``); the
workers write it with locking (the lock file is named after that temporary), and only once
every chunk is stored an unlocked handle renames it over ``urlpath`` (what was there stays,
byte for byte, until then). A failing graph removes the temporary and leaves ``urlpath`` as
it was.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import time
from typing import Any

import dask
import dask.array as da

from . import _native
from .ndarray import NDArray, zeros
from .opening import open as _open
from .schunk import remove_urlpath


def to_oxblosc(
    x: da.Array,
    urlpath: str | os.PathLike,
    chunks: tuple[int, ...] | None = None,
    blocks: tuple[int, ...] | None = None,
    compute: bool = True,
    scheduler: Any = None,
    **kwargs: Any,
) -> NDArray | Any:
    """Write the Dask array ``x`` to a new b2nd file at ``urlpath``, replacing what is there
    once every chunk is written (a failing graph leaves it as it was).

    ``chunks`` default to ``x``'s largest chunk per axis (``x`` is rechunked to them);
    ``blocks``, ``cparams``, ``contiguous``, ... as for :func:`oxblosc.zeros`; ``scheduler``
    as for ``dask.compute`` (default: Dask's current one). Returns the array opened
    read-only, or with ``compute=False`` the Dask ``Delayed`` that writes and then publishes
    it (if that fails, its temporary stays until a later creation at ``urlpath`` sweeps it)."""
    if any(math.isnan(n) for n in x.shape) or any(math.isnan(c) for cs in x.chunks for c in cs):
        raise ValueError(
            "x has unknown chunk sizes (NaN, e.g. after boolean indexing): call x.compute_chunk_sizes() first"
        )
    chunks = tuple(int(c) for c in (chunks or x.chunksize))
    path = os.fspath(urlpath)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):  # (else the error would name a temporary's temporary)
        raise FileNotFoundError(errno.ENOENT, f"no directory {parent!r} to write {path!r} in", parent)
    _native.sweep_stale_temps(path)  # (creating at `tmp` sweeps only `tmp`'s own leftovers)
    tmp = _temporary_name(path)
    zeros(x.shape, x.dtype, chunks=chunks, blocks=blocks, urlpath=tmp, mode="w", **kwargs)
    writer = _open(tmp, mode="a", locking=True)
    stored = da.store(x.rechunk(chunks), writer, lock=False, compute=False)
    del writer
    if not compute:
        return dask.delayed(_publish, pure=False)(stored, tmp, path)
    try:
        stored.compute(**({} if scheduler is None else {"scheduler": scheduler}))
    except BaseException:
        _remove_temporary(tmp)
        raise
    finally:
        del stored  # (the driver's own locked handle closes before the rename)
    _publish(None, tmp, path)
    return _open(path, mode="r")


def _temporary_name(path: str) -> str:
    """A fresh ``<path>.oxtmp-<pid>-<n>`` (the frame layer's pattern: a number ``n`` it
    does not count up to in practice, this being nanoseconds since 1970)."""
    return f"{path}.oxtmp-{os.getpid()}-{time.time_ns()}"


def _publish(_stored: Any, tmp: str, path: str) -> None:
    """Rename the written temporary over ``path`` through an unlocked handle (a locked one
    cannot be renamed: its lock file is named after its path), then drop the temporary's
    lock file. ``_stored``: the store's result, so Dask runs this after it."""
    try:
        _rename_over(tmp, path)
    except BaseException:
        _remove_temporary(tmp)  # a whole array's worth that nothing would sweep (path refused)
        raise
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp + ".b2lock")


def _rename_over(tmp: str, path: str) -> None:
    done = _open(tmp, mode="a")
    try:
        if _bloated(done):
            done._n.compact()
        done._n.publish(False, to=path)
    finally:
        del done  # (the handle closes here, before a failed publish removes its file)


def _bloated(a: NDArray) -> bool:
    """Whether a contiguous file written by locked writers keeps dead bytes worth a rewrite
    (the rule a writer applies when it closes: any in a chunks section under 64 MiB, else
    more than 1/16 of the live bytes). Locked writers that took turns leave the last one's
    reserve (a hole before the index) when no writer closes with a current view (a worker
    process's handle dropped after another process committed skips its close): the file
    then looks up to twice its size (``cbytes`` too) although the hole takes no disk."""
    if not os.path.isfile(a.urlpath):
        return False
    s = a.schunk
    live = sum(s._n.chunk_summary(i)[1] for i in range(s.nchunks))
    dead = s.cbytes - live
    return dead > 0 and (s.cbytes < 64 << 20 or dead > live // 16)


def _remove_temporary(tmp: str) -> None:
    """Best effort: a task still running in another worker may keep writing for a moment."""
    with contextlib.suppress(OSError):
        remove_urlpath(tmp)
    with contextlib.suppress(OSError):
        os.remove(tmp + ".b2lock")


__all__ = ["to_oxblosc"]
