"""``Streamer``: read a big frame file, or an HDF5 dataset stored with a Blosc filter, block
by block with Rust threads decompressing ahead (multitables' idea, in threads instead of
processes).

Reader threads (``nthreads``) each open the file, read and decompress consecutive blocks of
``block_rows`` rows (axis 0 of an array, items of a plain super-chunk) without the GIL into
a ring of ``nslots`` reusable NumPy buffers; memory stays at the ring whatever the file size.
When the block the consumer asks for has not been started by a reader yet, the consumer's own
thread reads it (GIL released) instead of waiting for a reader thread to be scheduled.

Two ways to consume:

* iterate: ``for start, block in Streamer(path, block_rows=4096): ...`` yields
  ``(start_row, block)``; ``block`` is a view into a ring buffer, valid until the next step
  (``copy=True`` yields owned arrays instead);
* queue: ``slot = s.acquire()`` (None at the end), use ``slot.start``/``slot.block``, then
  ``slot.release()`` (or ``with s.acquire() as slot:``); several slots may be held at once
  (at most ``nslots``).

``ordered=True`` delivers blocks in row order; ``ordered=False`` as they finish (every block
still exactly once). ``cyclic=True`` starts again at row 0 after the last block, until
closed. Leaving a loop early, an exception in the consumer, ``close()``, ``with`` and garbage
collection all stop the readers and free the ring. A block that fails to read (a corrupt
chunk, a failing disk) raises at its place in the stream, naming the rows and the file; the
stream ends there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _native
from . import core as _core
from .ndarray import NDArray
from .schunk import SChunk, _fspath


def _hdf5_dataset(source: Any) -> Any:
    """The h5py dataset behind ``source`` (an h5py or ``oxblosc.hdf5`` dataset), else None."""
    d = source._d if type(source).__module__ == "oxblosc.hdf5.dataset" else source
    if type(d).__module__.startswith("h5py.") and hasattr(getattr(d, "id", None), "get_chunk_info"):
        return d
    return None


class Slot:
    """One filled ring buffer: ``start`` (first row), ``block`` (the rows, a view of the ring
    buffer) and ``seq`` (position in the stream). Give it back with :meth:`release`."""

    __slots__ = ("start", "block", "seq", "_index", "_owner")

    def __init__(self, owner: Streamer, index: int, seq: int, start: int, block: np.ndarray) -> None:
        self._owner, self._index, self.seq, self.start, self.block = owner, index, seq, start, block

    def release(self) -> None:
        """Hand the buffer back to the readers (the view must not be used afterwards)."""
        if self._owner is not None:
            self._owner._release(self._index)
            self._owner = None

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


class Streamer:
    """Stream the rows of an array or super-chunk file (see the module docs).

    ``source``: a path, or an ``NDArray``/``SChunk`` opened from a file (its file is read
    again by the readers), or an h5py dataset (or ``oxblosc.hdf5.Dataset``) chunked with one
    Blosc filter (32026 or 32001) in a plain file: h5py lists its chunks once, then the
    readers read and decode them from the file in Rust (chunks never written read as zeros,
    chunks HDF5 stored unfiltered are copied; a non-zero fill value or another pipeline raise
    ``ValueError``). ``block_rows`` defaults to the array's chunk length along axis 0
    (a super-chunk's items per chunk). ``nthreads`` defaults to ``oxblosc.nthreads``;
    ``nslots`` (ring buffers) to twice that."""

    def __init__(
        self,
        source: Any,
        block_rows: int | None = None,
        ordered: bool = True,
        cyclic: bool = False,
        nthreads: int | None = None,
        copy: bool = False,
        nslots: int | None = None,
    ) -> None:
        self._native = None
        h5 = _hdf5_dataset(source)
        if h5 is not None:
            self._init_hdf5(h5, block_rows, ordered, cyclic, nthreads, copy, nslots)
            return
        if isinstance(source, NDArray | SChunk):
            path = source.urlpath
            if path is None:
                raise ValueError("Streamer reads files: this object lives in memory (save it first)")
            obj = source
        else:
            path = _fspath(source)
            from .opening import open as _open  # noqa: PLC0415 - opening sits above this module

            obj = _open(path)
        self.path = os.fspath(path)
        if isinstance(obj, NDArray):
            self.dtype, self.row_shape, nrows = obj.dtype, obj.shape[1:], (obj.shape[0] if obj.ndim else 1)
            default_rows = obj.chunks[0] if obj.ndim else 1
        else:
            self.dtype, self.row_shape = np.dtype(f"V{obj.typesize}") if obj.typesize > 1 else np.dtype("u1"), ()
            nrows = obj.nbytes // obj.typesize
            default_rows = max(1, obj.chunksize // obj.typesize)
        args = self._setup(nrows, default_rows, block_rows, ordered, cyclic, nthreads, copy, nslots)
        self._native = _native.NativeStreamer(self.path, *args)

    def _setup(self, nrows, default_rows, block_rows, ordered, cyclic, nthreads, copy, nslots) -> tuple:
        """Check the options and allocate the ring; the native stream's last arguments."""
        self.nrows = nrows
        self.block_rows = _core._checked("block_rows", block_rows or default_rows, 1, 2**62)
        nthreads = _core._checked("nthreads", nthreads or _core.nthreads, 1, 1024)
        nslots = _core._checked("nslots", nslots or 2 * nthreads, 1, 4096)
        self.ordered, self.cyclic, self.copy = bool(ordered), bool(cyclic), bool(copy)
        rows = min(self.block_rows, max(nrows, 1))
        self._buffers = [np.empty((rows, *self.row_shape), self.dtype) for _ in range(nslots)]
        byte_views = [b.reshape(-1).view(np.uint8) if b.size else bytearray(0) for b in self._buffers]
        return rows, self.ordered, self.cyclic, nthreads, byte_views

    def _init_hdf5(self, d: Any, block_rows, ordered, cyclic, nthreads, copy, nslots) -> None:
        """Rows of an h5py dataset whose chunks one Blosc filter stored: the chunk index comes
        from h5py once; the readers then read and decode the chunks from the file in Rust."""
        from .hdf5.dataset import Dataset as _H5  # noqa: PLC0415 - h5py is optional

        h = _H5(d, nthreads=1)
        where = f"{d.file.filename}: dataset {d.name}"
        if h.filter_id is None or h._path is None:
            raise ValueError(
                f"Streamer reads HDF5 datasets chunked with one Blosc filter (32001 or 32026) in a "
                f"plain file; {where} is not (read it with h5py)"
            )
        if d.ndim == 0 or np.asarray(d.fillvalue, d.dtype).tobytes().strip(b"\0"):
            raise ValueError(f"{where}: Streamer needs rows and a zero fill value")
        if d.file.mode != "r":
            d.file.flush()  # the readers read the file, not HDF5's caches
        stored = []

        def keep(si: Any) -> None:
            if si.byte_offset is None:
                return
            # A set mask bit: the (one, optional) filter refused the chunk, stored as it is.
            stored.append((list(si.chunk_offset), si.byte_offset, si.size, si.filter_mask != 0))

        if hasattr(d.id, "chunk_iter"):
            d.id.chunk_iter(keep)
        else:
            for i in range(d.id.get_num_chunks()):
                keep(d.id.get_chunk_info(i))
        self.path = os.fspath(h._path)
        self.dtype, self.row_shape = d.dtype, d.shape[1:]
        st = os.stat(self.path)
        args = self._setup(d.shape[0], d.chunks[0], block_rows, ordered, cyclic, nthreads, copy, nslots)
        self._native = _native.NativeStreamer.hdf5(
            self.path, (st.st_dev, st.st_ino), h.filter_id, list(d.shape), list(d.chunks),
            d.dtype.itemsize, stored, *args,
        )  # fmt: skip
        h.close()

    def acquire(self) -> Slot | None:
        """The next filled block (waits for it), None once the stream is over or closed."""
        got = self._native.next() if self._native is not None else None
        if got is None:
            return None
        index, seq, start, nrows = got
        return Slot(self, index, seq, start, self._buffers[index][:nrows])

    def _release(self, index: int) -> None:
        if self._native is not None:
            self._native.release(index)

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        try:
            while (slot := self.acquire()) is not None:
                if self.copy:
                    block = slot.block.copy()
                    slot.release()
                    yield slot.start, block
                else:
                    try:
                        yield slot.start, slot.block
                    finally:
                        slot.release()
        finally:
            self.close()

    def close(self) -> None:
        """Stop the readers and free the ring (blocks handed out must not be used after)."""
        native, self._native = self._native, None
        if native is not None:
            native.close()

    def __enter__(self) -> Streamer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


__all__ = ["Slot", "Streamer"]
