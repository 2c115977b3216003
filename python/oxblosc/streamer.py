"""``Streamer``: read a big frame file, or an HDF5 dataset or PyTables table stored with a
Blosc filter, block by block with Rust threads decompressing ahead (multitables' idea, in threads instead of
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
collection all stop the readers and free the ring. A ``for`` loop over a Streamer whose
stream has ended or was closed reads the source again from its first row with new readers
(epochs: ``for epoch in range(3): for start, block in s: ...``); ``acquire()`` on it returns
None. Holding every slot and asking for one more raises ``RuntimeError`` (it would wait
forever: the readers have no buffer left to fill). In a process forked from the one that
started the stream, the readers are not there: a ``for`` loop starts new ones (from the first
row), ``acquire()`` raises ``RuntimeError``. A block that fails to read (a corrupt
chunk, a failing disk) raises at its place in the stream, naming the rows and the file; the
stream ends there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np

from . import _native
from . import core as _core
from .ndarray import NDArray
from .schunk import SChunk, _fspath


def _hdf5_dataset(source: Any) -> tuple[Any, np.dtype] | None:
    """The h5py dataset behind ``source`` (an h5py dataset, an ``oxblosc.hdf5.Dataset`` or
    ``oxblosc.hdf5.Table``) and the dtype of its rows (a Table's: PyTables' bools as NumPy
    bools, same bytes), else None."""
    mod = type(source).__module__
    d = source._d if mod in ("oxblosc.hdf5.dataset", "oxblosc.hdf5.table") else source
    if type(d).__module__.startswith("h5py.") and hasattr(getattr(d, "id", None), "get_chunk_info"):
        return d, (source.dtype if mod == "oxblosc.hdf5.table" else d.dtype)
    return None


def _pytables_leaf(source: Any) -> Any:
    """``source`` if it is a PyTables node with chunks (``tables.Table``, ``CArray``,
    ``EArray``), else None. Recognised by name: PyTables is never imported here (it bundles
    its own HDF5, which must not share a process with h5py's)."""
    if type(source).__module__.startswith("tables.") and hasattr(source, "chunk_info"):
        return source
    return None


# HDF5 filter names (their first word: PyTables', hdf5plugin's and ours) and ids.
_BLOSC_FILTERS = {"blosc2": 32026, "blosc": 32001}


def _pytables_filter(node: Any) -> int | None:
    """The Blosc filter (32001 or 32026) of a PyTables node whose pipeline is that one filter,
    else None. PyTables names filters by the name stored in the file: its ``Filters`` shows no
    compression for Blosc filters other writers stored, so the pipeline is read here."""
    try:
        from tables.utilsextension import get_filters  # noqa: PLC0415 - PyTables is loaded (node)

        pipeline = get_filters(node._v_parent._v_objectid, node._v_name) or {}
    except (ImportError, AttributeError):  # another PyTables: its own view of the filters
        fl = node.filters
        pipeline = {fl.complib.split(":")[0]: ()} if fl.complevel and not fl.fletcher32 else {}
    names = [str(n).split()[0].lower() if str(n).split() else "" for n in pipeline]
    return _BLOSC_FILTERS.get(names[0]) if len(names) == 1 else None


# Streams inherited through fork (their reader threads live in the parent), never touched.
_FORKED_AWAY: list = []


class Slot:
    """One filled ring buffer: ``start`` (first row), ``block`` (the rows, a view of the ring
    buffer) and ``seq`` (position in the stream). Give it back with :meth:`release`."""

    __slots__ = ("start", "block", "seq", "_index", "_owner", "_stream")

    def __init__(self, owner: Streamer, stream: Any, index: int, seq: int, start: int, block: np.ndarray) -> None:
        self._owner, self._stream, self._index = owner, stream, index
        self.seq, self.start, self.block = seq, start, block

    def release(self) -> None:
        """Hand the buffer back to the readers (the view must not be used afterwards)."""
        if self._owner is not None:
            self._owner._release(self._stream, self._index)
            self._owner = self._stream = None

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _file_state(st: os.stat_result) -> tuple:
    """What tells that a file was written (HDF5 sources): device, inode, size, mtime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _is_open(source: Any) -> bool:
    """Whether an h5py dataset / ``oxblosc.hdf5`` dataset / PyTables node is still usable."""
    if hasattr(source, "_v_isopen"):
        return bool(source._v_isopen)
    ident = getattr(source, "id", None)
    return bool(ident.valid) if hasattr(ident, "valid") else True


class Streamer:
    """Stream the rows of an array or super-chunk file (see the module docs).

    ``source``: a path, or an ``NDArray``/``SChunk`` opened from a file (its file is read
    again by the readers), or an h5py dataset (or ``oxblosc.hdf5.Dataset``) chunked with one
    Blosc filter (32026 or 32001) in a plain file: h5py lists its chunks once, then the
    readers read and decode them from the file in Rust (chunks never written read as zeros,
    chunks HDF5 stored unfiltered are copied; a non-zero fill value or another pipeline raise
    ``ValueError``); a table (an ``oxblosc.hdf5.Table``, whose bools it keeps, or a PyTables
    ``tables.Table``/``CArray``/``EArray`` node, whose chunk index PyTables gives) the same
    way: blocks of a table are structured arrays. The HDF5 file must stay as it is while
    streaming: its chunk addresses are listed once, and HDF5 moves the chunks a writer changes
    (appended rows, a rewritten chunk) and reuses their old space for other chunks, so a block
    read after any write to the file raises ``OSError`` (start a new stream). A new ``for``
    loop lists the chunks again when the file changed since the last listing (the Streamer
    holds the dataset or node for that; once its file was closed, a changed file raises
    ``OSError``: make a new Streamer). ``block_rows``
    defaults to the array's chunk length along axis 0 (a super-chunk's items per chunk).
    ``nthreads`` defaults to ``oxblosc.nthreads``; ``nslots`` (ring buffers) to twice that."""

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
        self._native = self._start = None
        # HDF5 sources: how to list the chunks again (function, the dataset or node, options)
        # and the file state the current listing belongs to.
        self._relist: tuple | None = None
        self._listed_state: tuple | None = None
        self._held: set[int] = set()  # slots the consumer holds (acquired, not released)
        self._pid = os.getpid()  # the process whose threads read for `_native`
        h5 = _hdf5_dataset(source)
        if h5 is not None:
            self._init_hdf5(*h5, (block_rows, ordered, cyclic, nthreads, copy, nslots))
            return
        leaf = _pytables_leaf(source)
        if leaf is not None:
            self._init_pytables(leaf, (block_rows, ordered, cyclic, nthreads, copy, nslots))
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
        # (a partial, not a lambda over self: no reference cycle, so dropping the Streamer stops
        # its readers at once)
        self._start = partial(_native.NativeStreamer, self.path, *args)
        self._native = self._start()

    def _setup(self, nrows, default_rows, block_rows, ordered, cyclic, nthreads, copy, nslots) -> tuple:
        """Check the options and allocate the ring; the native stream's last arguments."""
        self.nrows = nrows
        # (None takes the default; 0 is refused, not taken for "the default")
        self.block_rows = _core._checked("block_rows", default_rows if block_rows is None else block_rows, 1, 2**62)
        nthreads = _core._checked("nthreads", _core.nthreads if nthreads is None else nthreads, 1, 1024)
        nslots = _core._checked("nslots", 2 * nthreads if nslots is None else nslots, 1, 4096)
        self.ordered, self.cyclic, self.copy = bool(ordered), bool(cyclic), bool(copy)
        rows = min(self.block_rows, max(nrows, 1))
        self._buffers = [np.empty((rows, *self.row_shape), self.dtype) for _ in range(nslots)]
        byte_views = [b.reshape(-1).view(np.uint8) if b.size else bytearray(0) for b in self._buffers]
        return rows, self.ordered, self.cyclic, nthreads, byte_views

    def _init_hdf5(self, d: Any, dtype: np.dtype, options: tuple) -> None:
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
        st = os.stat(h._path)  # before listing: a write after it fails the stream's reads
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
        self._start_hdf5(h._path, st, h.filter_id, d.shape, d.chunks, dtype, stored, options)
        h.close()
        self._relist = (Streamer._init_hdf5, d, (dtype, options))

    def _init_pytables(self, node: Any, options: tuple) -> None:
        """Rows of a PyTables table or chunked array stored with its Blosc or Blosc2 filter:
        PyTables gives each chunk's address once (``chunk_info``); the readers then read and
        decode the chunks from the file in Rust, as for h5py datasets."""
        f = node._v_file
        where = f"{f.filename}: node {node._v_pathname}"
        chunks, filter_id = node.chunkshape, _pytables_filter(node)
        if chunks is None or filter_id is None or not os.path.isfile(f.filename):
            raise ValueError(
                f"Streamer reads PyTables nodes chunked with PyTables' Blosc or Blosc2 filter (and no "
                f"other) in a plain file; {where} is not (read it with PyTables)"
            )
        if f.mode != "r":
            f.flush()  # rows PyTables still buffers and HDF5's dirty metadata: nothing left to write later
        st = os.stat(f.filename)  # before listing: a write after it fails the stream's reads
        shape = tuple(node.shape)
        # Never-written chunks read as zeros: only right when zeros are the node's fill value.
        atom = getattr(node, "atom", None)
        zero_fill = atom is not None and not np.asarray(atom.dflt, atom.dtype).tobytes().strip(b"\0")
        stored = []
        grid = [range(0, n, c) for n, c in zip(shape, chunks, strict=True)]
        for start in np.ndindex(*(len(g) for g in grid)) if all(shape) else ():
            info = node.chunk_info(tuple(int(g[i]) for g, i in zip(grid, start, strict=True)))
            if info.offset is None:
                if not zero_fill:
                    raise ValueError(f"{where}: chunk at {info.start} was never written (Streamer needs every chunk)")
                continue
            stored.append(([int(x) for x in info.start], info.offset, info.size, bool(info.filter_mask)))
        # The rows as stored (PyTables converts big-endian tables to native order when it reads).
        dtype = node.dtype.newbyteorder(">") if node.byteorder == "big" else node.dtype
        self._start_hdf5(f.filename, st, filter_id, shape, chunks, dtype, stored, options)
        self._relist = (Streamer._init_pytables, node, (options,))

    def _start_hdf5(
        self, path, st: os.stat_result, filter_id: int, shape, chunks, dtype: np.dtype, stored: list, options: tuple
    ) -> None:
        """Start the native stream over HDF5 chunks (``stored``: offset, address, size and
        whether stored unfiltered, per written chunk, listed while the file was as ``st``
        says: the readers refuse to read once it changed, since HDF5 moves the chunks a
        writer changes and reuses their old space for other chunks)."""
        if not shape:
            raise ValueError(f"{path}: Streamer needs rows (a dataset of rank >= 1)")
        self.path = os.fspath(path)
        self.dtype, self.row_shape = np.dtype(dtype), tuple(shape[1:])
        args = self._setup(shape[0], chunks[0], *options)
        self._listed_state = _file_state(st)
        self._start = partial(
            _native.NativeStreamer.hdf5, self.path, self._listed_state, filter_id,
            list(shape), list(chunks),
            self.dtype.itemsize, stored, *args,
        )  # fmt: skip
        self._native = self._start()

    def acquire(self) -> Slot | None:
        """The next filled block (waits for it), None once the stream is over or closed.
        Raises ``RuntimeError`` if every slot is held already (that wait would never end)."""
        native = self._native
        if native is None:
            return None
        if self._pid != os.getpid():
            raise RuntimeError(
                f"this Streamer's readers run in process {self._pid}, not in this one (forked from it): "
                "make a new Streamer here, or start a new for loop over this one"
            )
        if len(self._held) >= len(self._buffers):
            raise RuntimeError(
                f"all {len(self._buffers)} slots of the ring are held: release one before acquiring "
                "another (or make the Streamer with more nslots)"
            )
        got = native.next()
        if got is None:
            self.close()  # (over: a later for loop starts the stream again)
            return None
        index, seq, start, nrows = got
        self._held.add(index)
        return Slot(self, native, index, seq, start, self._buffers[index][:nrows])

    def _release(self, stream: Any, index: int) -> None:
        # A slot of an earlier run of the stream (closed since) is not this run's to free; in
        # a forked process the stream's state may be locked by a thread that is not there.
        if stream is self._native and stream is not None and self._pid == os.getpid():
            self._held.discard(index)
            stream.release(index)

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        if self._native is not None and self._pid != os.getpid():
            self.close()  # inherited through fork: its readers are not in this process
        if self._native is None and self._start is not None:  # ended or closed: read again
            self._held, self._pid = set(), os.getpid()
            if self._relist is not None and self._hdf5_file_changed():
                self._list_again()
            else:
                self._native = self._start()
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

    def _hdf5_file_changed(self) -> bool:
        try:
            return _file_state(os.stat(self.path)) != self._listed_state
        except OSError:
            return True

    def _list_again(self) -> None:
        """List an HDF5 source's chunks again (the file changed since the last listing: its
        chunks may have moved) and start the stream over the new listing."""
        init, source, extra = self._relist
        if not _is_open(source):
            raise OSError(
                f"{self.path} was written since this Streamer listed its chunks, and the dataset or node "
                "it streams was closed: make a new Streamer from the reopened file"
            )
        init(self, source, *extra)

    def close(self) -> None:
        """Stop the readers and free the ring (blocks handed out must not be used after)."""
        native, self._native = self._native, None
        if native is None:
            return
        if self._pid != os.getpid():
            # Forked: the readers are threads of the parent; stopping them here would wait for
            # threads this process does not have (or on a lock one of them held). Kept, unused.
            _FORKED_AWAY.append(native)
            return
        native.close()

    def __enter__(self) -> Streamer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


__all__ = ["Slot", "Streamer"]
