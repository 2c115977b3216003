"""Block-level reads and direct chunk writes of h5py datasets compressed with Blosc2 (32026)
or Blosc (32001): the "second partition" inside big HDF5 chunks.

Reads: a selection's HDF5 chunks are found with h5py's chunk-info API (address, size, filter
mask, cached per chunk), and only the headers, block-offset table and Blosc blocks the
selection touches are read from the file and decoded (``_native.hdf5_read_part_lazy``, GIL
released). Writes: whole chunks are compressed here, in parallel, to the bytes the filter would
write and stored with h5py's direct chunk write; partial chunks go through h5py (the filter).
Anything else is left to h5py: datasets with another pipeline, chunks HDF5 stored unfiltered,
chunks never written.
"""

from __future__ import annotations

import operator
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import product

import numpy as np

from .. import _native

__all__ = ["Dataset", "open"]

_BLOSC_IDS = (32026, 32001)  # BLOSC2_ID, BLOSC_ID (kept here to avoid a circular import)


class Dataset:
    """View of an h5py dataset that reads only the Blosc blocks a read needs and writes whole
    chunks directly.

    ``nthreads`` (default: the engine's default) decodes (or compresses) several chunks at
    once, or the blocks of one chunk in parallel. ``blocks_decoded`` counts the Blosc blocks
    decoded by reads through this object, ``bytes_read`` the stored bytes they read (reads
    left to h5py count neither). ``chunks_written_direct`` counts chunks written with direct
    chunk writes.

    Cached: the dataset's shape and, for files open read-only, per chunk its file address,
    stored size and filter mask, and the chunk's Blosc headers (writable files ask h5py for
    every chunk and read the headers again: writes through h5py move and rewrite chunks; HDF5
    flushes the dataset's chunk cache to the file before each read). Every read and write
    checks the dataset's extent (h5py ``id.shape``; not for read-only files without SWMR) and
    drops the cache when it changed (``resize``, SWMR ``refresh``); ``refresh()`` drops
    everything. Chunks read straight from the file are checked to come
    from the file opened (device and inode): a file replaced since raises ``OSError``.
    """

    def __init__(self, dataset, nthreads: int | None = None):
        self._d = dataset
        # Plain copies: decoding threads must never touch h5py, whose lock the caller may hold
        # (iterating a group holds it between items).
        self._shape, self._dtype, self._chunks = dataset.shape, dataset.dtype, dataset.chunks
        self._where = f"{dataset.file.filename}: dataset {dataset.name}"
        self.nthreads = int(nthreads) if nthreads else _native.default_nthreads()
        self.blocks_decoded = 0
        self.bytes_read = 0
        # Chunk parts decoded straight into the output array (no copy), for tests and tuning.
        self.parts_in_place = 0
        self.chunks_written_direct = 0
        self._info: dict[tuple[int, ...], tuple[int | None, int, int]] = {}
        self._all_info = False  # _info holds every allocated chunk (read-only files)
        self._typesize = dataset.dtype.itemsize
        self._filter = self._blosc_filter(dataset)
        if self._filter is not None:
            import h5py

            from . import register

            if not h5py.h5z.filter_avail(self._filter):
                register()  # reads left to h5py need a filter; keep one already there (hdf5plugin's)
        self._owned_file = None
        # The file chunks are read from directly (None: through h5py's read_direct_chunk).
        self._path = dataset.file.filename if self._filter is not None and self._can_pread(dataset.file) else None
        # Held open while this object lives, with each chunk's headers once read (a small read
        # then reads only its blocks).
        self._file = None
        if self._path is not None:
            st = os.stat(self._path)
            self._file = _native.Hdf5ChunkFile(self._path, (st.st_dev, st.st_ino))
        # A file open read-only without SWMR cannot change extent under h5py: no check per read.
        self._fixed_extent = dataset.file.mode == "r" and not dataset.file.swmr_mode
        self._writable = dataset.file.mode != "r"

    # ------------------------------------------------------------------ properties

    @property
    def shape(self) -> tuple[int, ...]:
        self._check_extent()
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def chunks(self) -> tuple[int, ...] | None:
        return self._chunks

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def filter_id(self) -> int | None:
        """The Blosc filter read at block level, or None when every read goes through h5py."""
        return self._filter

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        how = f"filter {self._filter}" if self._filter else "through h5py"
        return f"<oxblosc.hdf5.Dataset {self._d.name!r} shape={self.shape} dtype={self.dtype} ({how})>"

    def close(self) -> None:
        """Close the file `open` opened (a Dataset over an h5py dataset holds nothing)."""
        if self._owned_file is not None:
            self._owned_file.close()
            self._owned_file = None

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ reading

    def refresh(self) -> None:
        """Forget the cached shape and chunk addresses (read them again from h5py)."""
        self._shape = self._d.shape
        self._info.clear()
        self._all_info = False

    def _check_extent(self) -> None:
        if not self._fixed_extent and self._d.id.shape != self._shape:
            self.refresh()

    def __getitem__(self, key) -> np.ndarray:
        if self._filter is None:
            return self._d[key]
        self._check_extent()
        parsed = self._parse(key)
        if parsed is None:
            return self._d[key]
        lo, hi, post = parsed
        out = self._read_box(lo, hi)
        # Finish what the box read left (ints drop a dim, steps, index lists), last dim first
        # so that dropping a dim does not move the ones still to do.
        for d in reversed(range(len(post))):
            if post[d] is not None:
                out = out[(slice(None),) * d + (post[d],)]
        return out

    def _parse(self, key):
        """Per dim: the box ``[lo, hi)`` to read and what NumPy does after (None: nothing);
        or None when the key is left to h5py (new axes, field names, masks of the whole)."""
        shape = self.shape
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            i = next(i for i, k in enumerate(key) if k is Ellipsis)
            fill = len(shape) - (len(key) - 1)
            key = key[:i] + (slice(None),) * max(fill, 0) + key[i + 1 :]
        if len(key) > len(shape) or any(k is None or isinstance(k, str) for k in key):
            return None
        key = key + (slice(None),) * (len(shape) - len(key))
        lo, hi, post = [], [], []
        for k, n in zip(key, shape, strict=True):
            if isinstance(k, slice):
                r = range(*k.indices(n))
                if r.step == 1 or len(r) == 0:
                    a, b = r.start, max(r.start, r.stop)
                    lo.append(a), hi.append(b), post.append(None)
                else:
                    a = min(r[0], r[-1])
                    lo.append(a), hi.append(max(r[0], r[-1]) + 1), post.append(np.asarray(r) - a)
                continue
            i = _as_int(k)
            if i is None:
                idx = np.asarray(k)
                if idx.dtype == bool and idx.ndim == 1 and idx.shape[0] == n:
                    idx = np.flatnonzero(idx)
                if idx.ndim != 1 or idx.dtype.kind not in "iu":
                    return None
                idx = np.where(idx < 0, idx + n, idx)
                if idx.size and (idx.min() < 0 or idx.max() >= n):
                    raise IndexError(f"index out of range for a dimension of size {n}")
                a = int(idx.min()) if idx.size else 0
                b = int(idx.max()) + 1 if idx.size else 0
                lo.append(a), hi.append(b), post.append(idx - a)
                continue
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of range for a dimension of size {n}")
            i %= n
            lo.append(i), hi.append(i + 1), post.append(0)
        return lo, hi, post

    def _read_box(self, lo: list[int], hi: list[int]) -> np.ndarray:
        out = np.empty([b - a for a, b in zip(lo, hi, strict=True)], self.dtype)
        if out.size == 0:
            return out
        chunks = self.chunks
        ranges = [range(a // c, (b - 1) // c + 1) for a, b, c in zip(lo, hi, chunks, strict=True)]
        if self._file is not None and self._writable:
            # What h5py wrote may still sit in HDF5's chunk cache: to the file first (HDF5's
            # chunk-info calls flush too; 1 us when clean); and chunks rewritten in place keep
            # their address, maybe within one mtime tick, so their headers are read again.
            self._d.id.flush()
            self._file.forget()
        elif self._file is not None and not self._all_info and np.prod([len(r) for r in ranges]) > _ITER_ABOVE:
            self._load_all_info()
        jobs = []
        for coords in product(*ranges):
            start = [i * c for i, c in zip(coords, chunks, strict=True)]
            sel = [(max(a, s) - s, min(b, s + c) - s) for a, b, s, c in zip(lo, hi, start, chunks, strict=True)]
            addr, size, mask = self._chunk_info(tuple(start))
            if addr is None or mask != 0:
                # Never written (fill value) or stored unfiltered: HDF5 knows best.
                dest = tuple(slice(s + a - o, s + b - o) for (a, b), s, o in zip(sel, start, lo, strict=True))
                out[dest] = self._d[tuple(slice(s + a, s + b) for (a, b), s in zip(sel, start, strict=True))]
                continue
            jobs.append((addr, size, sel, start))
        if not jobs:
            return out
        # Rows of a compound type are copied as bytes (NumPy copies structured items field by field).
        raw = self._dtype if self._dtype.names is None else np.dtype((np.void, self._dtype.itemsize))
        out_raw = out.view(raw)
        if self._file is not None:
            parts = [
                (a, n, sel, [s + x - o for (x, _), s, o in zip(sel, st, lo, strict=True)]) for a, n, sel, st in jobs
            ]
            try:
                counts = [
                    self._file.read_box(
                        self._filter, list(chunks), self._typesize, parts, list(out.shape), out_raw, self.nthreads
                    )
                ]
            except (ValueError, OSError) as e:
                i = getattr(e, "part", None)
                if i is None:
                    raise
                addr, size, _, start = jobs[i]
                raise type(e)(
                    f"{self._where}, chunk at {tuple(start)} (stored at byte {addr}, {size} bytes): {e}"
                ) from None
        else:
            counts = self._read_direct(jobs, lo, out_raw, raw)
        self.blocks_decoded += sum(c[0] for c in counts)
        self.bytes_read += sum(c[1] for c in counts)
        self.parts_in_place += sum(c[2] for c in counts)
        return out

    def _read_direct(self, jobs, lo, out_raw, raw) -> list:
        """Chunk parts from h5py's ``read_direct_chunk`` (files we do not read ourselves)."""
        many = self.nthreads > 1 and len(jobs) > 1
        inner = 1 if many else self.nthreads
        fid, typesize, where, dims = self._filter, self._typesize, self._where, list(self.chunks)
        jobs = [(a, n, sel, st, self._d.id.read_direct_chunk(tuple(st))[1]) for a, n, sel, st in jobs]

        def run(job):
            addr, size, sel, start, stored = job
            target = out_raw[tuple(slice(s + a - o, s + b - o) for (a, b), s, o in zip(sel, start, lo, strict=True))]
            # A part that is C-contiguous in ``out`` (a whole chunk, whole rows, the leading-axis
            # slab) is decoded straight into it; the others into a per-thread scratch buffer.
            in_place = target.flags.c_contiguous
            buf = target if in_place else _scratch(target.nbytes)
            try:
                (_, n), nread = _native.hdf5_read_part(fid, stored, dims, typesize, sel, inner, buf), len(stored)
            except (ValueError, OSError) as e:
                raise type(e)(f"{where}, chunk at {tuple(start)} (stored at byte {addr}, {size} bytes): {e}") from None
            if not in_place:
                target[...] = buf.view(raw).reshape(target.shape)
            return n, nread, in_place

        if many:
            with ThreadPoolExecutor(min(self.nthreads, len(jobs))) as pool:
                return list(pool.map(run, jobs))
        return list(map(run, jobs))

    def _load_all_info(self) -> None:
        """Every allocated chunk's info in one pass over HDF5's chunk index (a lookup per chunk
        walks the index: quadratic over thousands of chunks)."""
        if not hasattr(self._d.id, "chunk_iter"):
            return
        info = self._info

        def keep(si):
            info[tuple(si.chunk_offset)] = (si.byte_offset, si.size, si.filter_mask)

        self._d.id.chunk_iter(keep)
        self._all_info = True

    def _chunk_info(self, start: tuple[int, ...]) -> tuple[int | None, int, int]:
        """(file address or None when not allocated, stored size, filter mask) of a chunk."""
        info = self._info.get(start)
        if info is None:
            if self._all_info:
                return (None, 0, 0)
            si = self._d.id.get_chunk_info_by_coord(start)
            info = (si.byte_offset, si.size, si.filter_mask)
            if self._path is not None and not self._writable:  # h5py cannot change it behind us
                self._info[start] = info
        return info

    # ------------------------------------------------------------------ writing

    def __setitem__(self, key, values) -> None:
        self.write(key, values)

    def write(self, key, values) -> None:
        """Write ``values`` at ``key`` (as ``h5py_dataset[key] = values``). Chunks the selection
        covers whole are compressed here (``nthreads`` at once, GIL released) to exactly the
        bytes the filter writes and stored with h5py's direct chunk write; the others, and keys
        other than ints and step-1 slices, go through h5py and the filter."""
        d = self._d
        if d.file.mode != "r+":
            raise OSError(f"{self._where}: the file is open read-only")
        if self._filter is None:
            d[key] = values
            return
        self._check_extent()
        parsed = self._parse(key)
        if parsed is None or any(p is not None and not isinstance(p, int) for p in parsed[2]):
            d[key] = values
            self._info.clear()
            self._all_info = False
            return
        lo, hi, post = parsed
        box = [b - a for a, b in zip(lo, hi, strict=True)]
        kept = [n for n, p in zip(box, post, strict=True) if p is None]
        vals = np.broadcast_to(np.asarray(values, dtype=self.dtype), kept).reshape(box)
        if vals.size == 0:
            return
        chunks, shape = self.chunks, self.shape
        ranges = [range(a // c, (b - 1) // c + 1) for a, b, c in zip(lo, hi, chunks, strict=True)]
        whole = []
        for coords in product(*ranges):
            start = tuple(i * c for i, c in zip(coords, chunks, strict=True))
            stop = [min(s + c, n) for s, c, n in zip(start, chunks, shape, strict=True)]
            a = [max(x, s) for x, s in zip(lo, start, strict=True)]
            b = [min(x, e) for x, e in zip(hi, stop, strict=True)]
            part = vals[tuple(slice(x - o, y - o) for x, y, o in zip(a, b, lo, strict=True))]
            self._info.pop(start, None)
            self._all_info = False
            if a == list(start) and b == stop:
                whole.append((start, part))
            else:
                d[tuple(slice(x, y) for x, y in zip(a, b, strict=True))] = part
        # Whole chunks in batches, so that memory stays a few chunks per thread.
        batch = max(1, 2 * self.nthreads)
        for i in range(0, len(whole), batch):
            self._write_whole(whole[i : i + batch])

    def _write_whole(self, items) -> None:
        """Compress full chunks (edge chunks padded with the fill value, as HDF5 pads them) and
        store each with a direct chunk write."""
        d = self._d
        fill = d.fillvalue
        bufs = []
        for _start, part in items:
            if part.shape == tuple(self.chunks):
                full = np.ascontiguousarray(part)
            else:
                full = np.full(self.chunks, fill, self.dtype)
                full[tuple(slice(0, n) for n in part.shape)] = part
            bufs.append(full)
        encoded = _native.hdf5_encode_chunks(self._filter, self._cd_values, bufs, self.nthreads)
        for (start, _), raw, enc in zip(items, bufs, encoded, strict=True):
            if isinstance(enc, str):  # the filter refuses the chunk
                if not self._optional:
                    raise ValueError(f"{self._where}, chunk at {start}: {enc}")
                # What HDF5 does with an optional filter that fails: the chunk stored as is.
                d.id.write_direct_chunk(start, raw.tobytes(), filter_mask=1)
            else:
                d.id.write_direct_chunk(start, enc, filter_mask=0)
            self.chunks_written_direct += 1

    # ------------------------------------------------------------------ setup

    def _blosc_filter(self, d) -> int | None:
        """The one Blosc filter of a chunked dataset whose items NumPy maps byte for byte."""
        if d.chunks is None or d.dtype.hasobject or not hasattr(d.id, "get_chunk_info_by_coord"):
            return None
        plist = d.id.get_create_plist()
        if plist.get_nfilters() != 1:
            return None
        fid, flags, cd_values = plist.get_filter(0)[:3]
        # What a direct chunk write needs: the final cd_values, and whether HDF5 may store a
        # chunk the filter refuses unfiltered (H5Z_FLAG_OPTIONAL).
        self._cd_values, self._optional = list(cd_values), bool(flags & 1)
        self._typesize = d.id.get_type().get_size()
        if fid not in _BLOSC_IDS or self._typesize != d.dtype.itemsize:
            return None
        return fid

    @staticmethod
    def _can_pread(f) -> bool:
        """Chunk bytes come from the file itself only when the file is one plain file on disk,
        file addresses are file offsets (no user block), and what HDF5 writes reaches the file
        when the dataset is flushed (writable: the sec2 driver, which writes through, and no
        page buffer); otherwise through h5py's ``read_direct_chunk``."""
        if f.userblock_size != 0 or not os.path.isfile(f.filename):
            return False
        if f.mode == "r":
            return f.driver in ("sec2", "stdio")
        try:
            paged = f.id.get_access_plist().get_page_buffer_size()[0] != 0
        except AttributeError:  # an h5py without page buffers
            paged = False
        return f.driver == "sec2" and not paged


_local = threading.local()


def _scratch(nbytes: int) -> np.ndarray:
    """``nbytes`` of this thread's reused buffer (a fresh multi-MiB array per chunk part costs
    page faults on every read)."""
    buf = getattr(_local, "buf", None)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(nbytes, np.uint8)
        if nbytes <= _KEEP_SCRATCH:
            _local.buf = buf
    return buf[:nbytes]


# Reads touching more chunks than this list them all first (``_load_all_info``).
_ITER_ABOVE = 16

# Scratch buffers larger than this are not kept between reads.
_KEEP_SCRATCH = 256 << 20


def _as_int(k) -> int | None:
    try:
        return operator.index(k)
    except TypeError:
        return None


def open(path, name: str, nthreads: int | None = None):  # noqa: A001 - mirrors oxblosc.open
    """Open dataset ``name`` of the HDF5 file ``path`` read-only (a :class:`Dataset`, or a
    :class:`~.table.Table` for a PyTables table); ``close()`` closes the file."""
    import h5py

    f = h5py.File(path, "r")
    try:
        from .table import Table, is_table  # a PyTables Table node: rows, columns, chunks of rows

        ds = Table(f[name], nthreads=nthreads) if is_table(f[name]) else Dataset(f[name], nthreads=nthreads)
    except BaseException:
        f.close()
        raise
    ds._owned_file = f
    return ds
