"""N-dimensional compressed arrays (b2nd) with python-blosc2's names and semantics.

``NDArray`` wraps the native array (``oxblosc._native.NativeNDArray``): geometry, slicing,
block-level reads, writes, resize and frames all live in Rust. This module turns NumPy
indexing into hyperslabs, converts dtypes to and from the b2nd dtype string (exactly what
python-blosc2 writes: ``dtype.str`` for plain dtypes, ``str(dtype)`` for structured ones) and
provides the constructors (``zeros``, ``full``, ``asarray``, ...).

Indexing: integers, slices with any step, ``...``, ``None`` and negative indices map to one
hyperslab read that decodes only the blocks it touches. Integer arrays and boolean masks (any
number of axes, NumPy's own rules) read the bounding box of the selection once and let NumPy
finish on it; ``oindex`` applies the index arrays orthogonally.

What differs from python-blosc2 4.14: automatic chunks/blocks follow our cache-size rule
(documented in ``oxblosc-nd/src/auto.rs``); ``mmap_mode`` selects the
access mode only. Operators and ufuncs return lazy expressions (``lazyexpr.py``),
reductions run chunk by chunk (``reductions.py``). A dtype string that does not match the stored typesize (old C files
write ``|u1`` for any type) is read as raw ``V<typesize>`` items.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import itertools
import math
import os
import sys
from collections import namedtuple
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _native, chunkwise
from .core import CParams, DParams, _checked, _native_cparams, call_nthreads
from .info import InfoTable, cparams_summary, human_bytes
from .operators import Operators
from .schunk import _STORAGE_FIELDS, SChunk, _fspath, _Locked, _to_cparams, _to_dparams, packb
from .tuning import tuner_arg

_FILL_ZEROS, _FILL_UNINIT, _FILL_NAN, _FILL_VALUE = 0, 1, 2, 3
#: What ``NDArray.iterchunks_info`` yields (python-blosc2's fields).
NDChunkInfo = namedtuple("NDChunkInfo", ["nchunk", "coords", "cratio", "special", "repeated_value", "lazychunk"])
#: An index-array read decodes its whole bounding box up to this size (or 4x what it picks).
_BOX_BYTES = 64 << 20
_KWARGS = {"chunks", "blocks", "cparams", "dparams", "urlpath", "contiguous", "mode", "mmap_mode", "meta", "storage"}
_KWARGS |= {"locking"}
_MMAP_MODES = {"r": "r", "r+": "a", "w+": "w", "c": "a"}


# ---------------------------------------------------------------------------------------------
# dtypes


def dtype_to_str(dtype: np.dtype) -> str:
    """The b2nd dtype string python-blosc2 writes for ``dtype`` (``str(dtype)`` for structured
    and subarray dtypes such as ``("<f8", (10,))``, ``dtype.str`` otherwise)."""
    dtype = np.dtype(dtype)
    return str(dtype) if dtype.fields is not None or dtype.subdtype is not None else dtype.str


def dtype_from_str(s: str | None, typesize: int) -> np.dtype:
    """The NumPy dtype of a b2nd dtype string (raw ``V<typesize>`` when it does not fit)."""
    if s is None:
        return np.dtype(f"V{typesize}") if typesize != 1 else np.dtype("u1")
    try:
        dt = np.dtype(ast.literal_eval(s)) if s[:1] in "[({" else np.dtype(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise ValueError(f"b2nd dtype string {s[:80]!r} is not a NumPy dtype: {e}") from None
    if dt.itemsize != typesize:
        return np.dtype(f"V{typesize}")
    return dt


# ---------------------------------------------------------------------------------------------
# indexing helpers


def _expand(key: Any, ndim: int) -> list:
    """The key as a list with the ellipsis expanded (``None`` entries kept)."""
    if not isinstance(key, tuple):
        key = (key,)
    # Lists are index arrays (an empty list indexes nothing, as in NumPy).
    key = [(np.asarray(k) if k else np.zeros(0, np.intp)) if isinstance(k, list) else k for k in key]
    counted = sum(
        (k.ndim if isinstance(k, np.ndarray) and k.dtype == bool else 1)
        for k in key
        if k is not None and k is not Ellipsis
    )
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if counted > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {counted} were indexed")
    if n_ell:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + [slice(None)] * (ndim - counted) + key[i + 1 :]
    else:
        key = key + [slice(None)] * (ndim - counted)
    return key


def _is_fancy(k: Any) -> bool:
    return isinstance(k, np.ndarray) and k.ndim > 0 or isinstance(k, np.ndarray) and k.dtype == bool


def _is_bool_scalar(k: Any) -> bool:
    return isinstance(k, bool | np.bool_) or (isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype == bool)


def _scalar_bools(key: Any) -> tuple[Any, bool | None]:
    """NumPy's reading of boolean scalars in a key (``a[True]``, ``a[1, False]``): together
    they add one axis at the first one's place, of length 1 when all are True, else 0.
    Returns the key with that axis as ``None``, and whether it is empty (None: no boolean
    scalar in the key)."""
    items = list(key) if isinstance(key, tuple) else [key]
    flags = [_is_bool_scalar(k) for k in items]
    if not any(flags):
        return key, None
    if any(isinstance(k, list | np.ndarray) and not f for k, f in zip(items, flags, strict=True)):
        raise IndexError("boolean scalar indices together with index arrays are not supported")
    first = flags.index(True)
    empty = not all(bool(k) for k, f in zip(items, flags, strict=True) if f)
    return tuple(None if i == first else k for i, k in enumerate(items) if i == first or not flags[i]), empty


def _as_int(k: Any, n: int, axis: int) -> int:
    if _is_bool_scalar(k):  # True is not row 1 (_scalar_bools turns these into an axis)
        raise IndexError("boolean scalar indices are not supported here")
    try:
        i = int(k.__index__())
    except (AttributeError, TypeError):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays "
            f"are valid indices, got {type(k).__name__}"
        ) from None
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
    return i


def _slice_sel(s: slice, n: int) -> tuple[tuple[int, int, int], bool]:
    """A slice as a positive-step (start, stop, step) and whether the result is reversed."""
    start, stop, step = s.indices(n)
    if step > 0:
        return (start, max(start, stop), step), False
    count = len(range(start, stop, step))
    if count == 0:
        return (0, 0, 1), False
    first = start + (count - 1) * step
    return (first, start + 1, -step), True


# ---------------------------------------------------------------------------------------------
# the array


class NDArray(Operators):
    """An n-dimensional compressed array (b2nd), in memory or in a frame file
    (``contiguous=True``) or sparse directory. Create one with :func:`zeros`, :func:`asarray`,
    ... or open one with :func:`oxblosc.open`."""

    def __init__(self, _native_array: Any, urlpath: str | None = None, mode: str = "a", **kwargs: Any) -> None:
        self._n = _native_array
        self._dtype = dtype_from_str(self._n.dtype, self._n.typesize)
        # The super-chunk view shares the native object: meta, vlmeta, cparams, storage.
        self._schunk = SChunk(
            _native=self._n, urlpath=urlpath, mode=mode, mmap_mode=kwargs.get("mmap_mode"),
            contiguous=kwargs.get("contiguous", True),
        )  # fmt: skip

    # Context manager (``with oxblosc.open(p) as a:``), as python-blosc2's: every change is
    # already written, so leaving the block has nothing to do.
    def __enter__(self) -> NDArray:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> bool:
        return False

    # ------------------------------------------------------------------ properties

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._n.shape)

    @property
    def chunks(self) -> tuple[int, ...]:
        return tuple(self._n.chunks)

    @property
    def blocks(self) -> tuple[int, ...]:
        return tuple(self._n.blocks)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._n.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes of the items (without chunk padding)."""
        return self.size * self._dtype.itemsize

    @property
    def blocksize(self) -> int:
        """Bytes of one block (``blocks`` items)."""
        return math.prod(self.blocks) * self._dtype.itemsize

    @property
    def chunksize(self) -> int:
        """Bytes of the data of one chunk (``chunks`` items; the stored chunk may be larger
        when blocks do not divide the chunk: ``schunk.chunksize``)."""
        return math.prod(self.chunks) * self._dtype.itemsize

    # The Array API's device: arrays live in host memory.
    device = property(lambda self: "cpu", doc="Always 'cpu'.")

    def to_device(self, device: str) -> NDArray:
        """This array, for ``device="cpu"`` (the only device)."""
        if device != "cpu":
            raise ValueError(f"Unsupported device: {device}. Only 'cpu' is accepted.")
        return self

    def cumulative_sum(self, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> NDArray:
        """``oxblosc.cumulative_sum(self, ...)``: running sums, chunk by chunk."""
        from .functions import cumulative_sum

        return cumulative_sum(self, axis, dtype, include_initial)

    def cumulative_prod(self, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> NDArray:
        """``oxblosc.cumulative_prod(self, ...)``: running products, chunk by chunk."""
        from .functions import cumulative_prod

        return cumulative_prod(self, axis, dtype, include_initial)

    def item(self) -> Any:
        """The one item of a size-1 array as a Python scalar."""
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self[(0,) * self.ndim].item()

    @property
    def cratio(self) -> float:
        return self.nbytes / self.cbytes if self.cbytes else math.inf

    @property
    def schunk(self) -> SChunk:
        """The super-chunk holding the array (shares its storage: meta, vlmeta, chunks)."""
        return self._schunk

    # Storage facts and parameters come from the super-chunk.
    cbytes = property(lambda self: self._schunk.cbytes, doc="Compressed bytes of the chunks.")
    meta = property(lambda self: self._schunk.meta, doc="Fixed-length metalayers (b2nd included).")
    vlmeta = property(lambda self: self._schunk.vlmeta, doc="Variable-length metalayers.")
    # The super-chunk's lock and refresh, as python-blosc2's NDArray offers them.
    locking = property(lambda self: self._schunk.locking, doc="Whether the advisory ``.b2lock`` lock is used.")
    holding_lock = property(lambda self: self._schunk.holding_lock, doc="See ``SChunk.holding_lock``.")
    lock = property(lambda self: self._schunk.lock, doc="See ``SChunk.lock``.")
    unlock = property(lambda self: self._schunk.unlock, doc="See ``SChunk.unlock``.")
    refresh = property(lambda self: self._schunk.refresh, doc="See ``SChunk.refresh``.")
    attrs = property(lambda self: self._schunk.vlmeta, doc="User attributes: python-blosc2's alias of ``vlmeta``.")
    cparams = property(lambda self: self._schunk.cparams, doc="Compression parameters of new chunks.")
    dparams = property(lambda self: self._schunk.dparams, doc="Decompression parameters.")
    urlpath = property(lambda self: self._schunk.urlpath, doc="The file or directory, None in memory.")
    contiguous = property(lambda self: self._schunk.contiguous, doc="A frame file (True) or sparse directory.")
    mode = property(lambda self: self._schunk.mode, doc="'r', 'a' or 'w'.")
    mmap_mode = property(lambda self: self._schunk.mmap_mode, doc="The mmap_mode it was opened with.")

    @property
    def fields(self) -> dict:
        """For structured dtypes: a view per field (``arr.fields["x"][...]`` reads that field)."""
        if self._dtype.fields is None:
            return {}
        return {name: NDField(self, name) for name in self._dtype.names}

    def _field(self, name: str) -> NDField:
        if self._dtype.fields is None or name not in self._dtype.fields:
            raise ValueError(f"no field of name {name!r} in dtype {self._dtype}")
        return NDField(self, name)

    @property
    def blocks_decoded(self) -> int:
        """Blocks decompressed by reads of this array object so far (special chunks cost none)."""
        return self._n.blocks_decoded

    @property
    def info_items(self) -> list[tuple[str, Any]]:
        """The ``(name, value)`` rows of :attr:`info`."""
        return [
            ("type", "NDArray"),
            ("shape", self.shape),
            ("chunks", self.chunks),
            ("blocks", self.blocks),
            ("dtype", self.dtype),
            ("cparams", cparams_summary(self.cparams)),
            ("nbytes", human_bytes(self.nbytes)),
            ("cbytes", human_bytes(self.cbytes)),
            ("cratio", f"{self.cratio:.2f}"),
            ("urlpath", self.urlpath),
            ("vlmeta", dict(self.vlmeta.getall()) if len(self.vlmeta) else {}),
        ]

    @property
    def info(self) -> InfoTable:
        """A readable summary: shape, chunks, blocks, dtype, codec, filters, sizes and ratio
        (a ``str`` that a REPL or notebook shows as a table)."""
        return InfoTable(self.info_items)

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # Pickling (Dask/distributed ship arrays to worker processes): an array opened from a
    # file travels as a reference to it (path, mode, locking), the worker reopens it; an
    # in-memory array travels as its frame bytes.
    def __reduce__(self) -> tuple:
        if self.urlpath is not None and self.mmap_mode in (None, "r"):
            mode = "r" if self.mode == "r" else "a"
            return _reopen, (self.urlpath, mode, self._schunk.locking, self.mmap_mode)
        origin = getattr(self, "_origin", None)
        if origin is not None and origin[2] == self._n._writes and origin[1] == _file_token(origin[0][0]):
            return _reopen_copy, origin[0]
        return ndarray_from_cframe, (self.to_cframe(),)

    def __dask_tokenize__(self) -> tuple:
        """Dask's name for this array's contents: the file and its size/modification time
        (cheap, changes on every write), or a per-object id in memory."""
        if self.urlpath is not None:
            path = self.urlpath if self.contiguous else os.path.join(self.urlpath, "chunks.b2frame")
            st = os.stat(path)
            return ("oxblosc.NDArray", self.urlpath, st.st_size, st.st_mtime_ns, self.shape, self.dtype.str)
        if not hasattr(self, "_token"):
            self._token = os.urandom(16).hex()
        return ("oxblosc.NDArray", self._token)

    def __repr__(self) -> str:
        return f"<oxblosc.NDArray shape={self.shape} dtype={self.dtype} chunks={self.chunks} blocks={self.blocks}>"

    # ------------------------------------------------------------------ reading

    def _read(self, sel: list[tuple[int, int, int]]) -> np.ndarray:
        counts = tuple(len(range(a, b, s)) for a, b, s in sel)
        out = np.empty(counts, dtype=self._dtype)
        self._n.get_slice_into(sel, out.reshape(-1).view(np.uint8) if out.size else bytearray(0))
        return out

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self._field(key)
        if isinstance(key, Operators) and (
            not isinstance(key, NDArray) or (key.dtype == bool and key.shape == self.shape and key.ndim)
        ):
            from .masks import masked  # a boolean expression or array mask, slab by slab

            return masked(self, key)
        if isinstance(key, NDArray):
            key = key[()]
        if isinstance(self._n, _Locked):
            self._n.refresh()  # a data access follows another handle's changes (shape too)
        key, empty = _scalar_bools(original := key)
        if empty:  # nothing selected: NumPy's result shape, from a zero-strided stand-in
            stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), self.shape, (0,) * self.ndim)
            return np.empty(stand_in[original].shape, self._dtype)
        key = _expand(key, self.ndim)
        if any(_is_fancy(k) for k in key):
            return self._fancy_get(key)
        sel, post, axis = [], [], 0
        for k in key:
            if k is None:
                post.append(None)
                continue
            n = self.shape[axis]
            if isinstance(k, slice):
                s, rev = _slice_sel(k, n)
                sel.append(s)
                post.append(slice(None, None, -1) if rev else slice(None))
            else:
                i = _as_int(k, n, axis)
                sel.append((i, i + 1, 1))
                post.append(0)
            axis += 1
        out = self._read(sel)
        if all(p == slice(None) for p in post):
            return out
        return out[tuple(post)]

    def _box(self, key: list) -> tuple[list, list]:
        """Bounding-box hyperslab of a key with index arrays, and the key relative to it."""
        sel, rel, axis = [], [], 0
        for k in key:
            if k is None:
                rel.append(None)
                continue
            if isinstance(k, np.ndarray) and k.dtype == bool:
                dims = self.shape[axis : axis + max(k.ndim, 1)]
                if k.shape != dims:
                    raise IndexError(f"boolean index of shape {k.shape} does not match the array's {dims}")
                nz = np.nonzero(k)
                for d, idx in enumerate(nz):
                    lo, hi = (int(idx.min()), int(idx.max()) + 1) if idx.size else (0, 0)
                    sel.append((lo, hi, 1))
                    k = k[(slice(None),) * d + (slice(lo, hi),)]
                rel.append(k)
                axis += len(dims)
                continue
            n = self.shape[axis]
            if isinstance(k, np.ndarray):
                if k.dtype.kind not in "iu":
                    raise IndexError("arrays used as indices must be of integer (or boolean) type")
                k = np.where(k < 0, k + n, k)
                if k.size and (k.min() < 0 or k.max() >= n):
                    raise IndexError(f"index out of bounds for axis {axis} with size {n}")
                lo, hi = (int(k.min()), int(k.max()) + 1) if k.size else (0, 0)
                sel.append((lo, hi, 1))
                rel.append(k - lo)
            elif isinstance(k, slice):
                s, rev = _slice_sel(k, n)
                sel.append(s)
                rel.append(slice(None, None, -1) if rev else slice(None))
            else:
                i = _as_int(k, n, axis)
                sel.append((i, i + 1, 1))
                rel.append(0)
            axis += 1
        return sel, rel

    def _fancy_get(self, key: list) -> np.ndarray:
        sel, rel = self._box(key)
        box, rel = self._read_box(sel, rel)
        return box[tuple(rel)]

    def _read_box(self, sel: list, rel: list) -> tuple[np.ndarray, list]:
        """The bounding box of an index-array selection, and ``rel`` (the key relative to
        it). When the box is much larger than what the indices pick (``[[0, n-1], [0, m-1]]``
        spans the whole array), only the index positions used are read, in runs of nearby
        positions, into a compact box, and ``rel`` is renumbered to match."""
        axes_rel = [r for r in rel if r is not None]
        compactable = len(axes_rel) == len(sel) and not any(
            isinstance(r, np.ndarray) and r.dtype == bool for r in axes_rel
        )
        counts = [len(range(*s)) for s in sel]
        used = [len(np.unique(r)) if isinstance(r, np.ndarray) else c for r, c in zip(axes_rel, counts, strict=False)]
        itemsize = self._dtype.itemsize
        if not compactable or math.prod(counts) * itemsize <= max(_BOX_BYTES, 4 * math.prod(used) * itemsize):
            return self._read(sel), rel
        uniq, new_rel = [], []
        for r in axes_rel:
            if isinstance(r, np.ndarray):
                u, inverse = np.unique(r, return_inverse=True)
                uniq.append(u)
                new_rel.append(inverse.reshape(r.shape))
            else:
                uniq.append(None)
                new_rel.append(r)
        out = np.empty([len(u) if u is not None else c for u, c in zip(uniq, counts, strict=True)], self._dtype)
        groups = [[None] if u is None else _nearby_groups(u) for u in uniq]
        for combo in itertools.product(*groups):
            sub, dst, picks = [], [], []
            for (lo, hi, step), u, g in zip(sel, uniq, combo, strict=True):
                if u is None:
                    sub.append((lo, hi, step))
                    dst.append(slice(None))
                    picks.append(None)
                else:
                    a, b = g
                    sub.append((lo + int(u[a]), lo + int(u[b - 1]) + 1, 1))
                    dst.append(slice(a, b))
                    picks.append(u[a:b] - u[a])
            part = self._read(sub)
            for axis, pick in enumerate(picks):
                if pick is not None and len(pick) != part.shape[axis]:
                    part = np.take(part, pick, axis=axis)
            out[tuple(dst)] = part
        it = iter(new_rel)
        return out, [None if r is None else next(it) for r in rel]

    def take(self, indices: Any, axis: int | None = None) -> NDArray:
        """A new array of the items at integer ``indices`` (any shape, negative counted from
        the end) along ``axis``, or of the flattened array when ``axis`` is None (NumPy's
        ``take``: that axis is replaced by ``indices.shape``)."""
        idx = np.asarray(indices[()] if isinstance(indices, NDArray) else indices)
        if idx.dtype.kind not in "iu" and idx.size:
            raise IndexError("take needs integer indices")
        idx = idx.astype(np.intp)
        if axis is not None:
            (axis,) = _axes(axis, self.ndim)
            return asarray(self[(slice(None),) * axis + (idx,)])
        n = self.size
        flat = np.where(idx < 0, idx + n, idx).ravel()
        if flat.size and (flat.min() < 0 or flat.max() >= n):
            raise IndexError(f"index out of bounds for a flattened array of size {n}")
        picked = self[np.unravel_index(flat, self.shape)] if self.ndim else np.asarray(self[()]).reshape(1)[flat]
        return asarray(np.asarray(picked).reshape(idx.shape))

    @property
    def oindex(self) -> _OIndex:
        """Orthogonal indexing: each index array selects along its own axis."""
        return _OIndex(self)

    def get_chunk(self, nchunk: int) -> bytes:
        return self.schunk.get_chunk(nchunk)

    def tobytes(self) -> bytes:
        return self[()].tobytes() if self.ndim == 0 else self[...].tobytes()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self[...]
        return a if dtype is None else a.astype(dtype, copy=False)

    def iterchunks(self) -> Iterator[np.ndarray]:
        """Each chunk's part of the array (storage order), as a NumPy array."""
        for n in range(self._n.nchunks):
            start, stop = self._n.chunk_region(n)
            yield self._read([(a, b, 1) for a, b in zip(start, stop, strict=False)])

    def iterchunks_info(self) -> Iterator[NDChunkInfo]:
        """Per chunk, as python-blosc2: ``(nchunk, coords, cratio, special, repeated_value,
        lazychunk)``, ``coords`` being the chunk's position in chunk units."""
        for info in self.schunk.iterchunks_info():
            start, _ = self._n.chunk_region(info.nchunk)
            coords = tuple(a // c for a, c in zip(start, self.chunks, strict=True))
            yield NDChunkInfo(info.nchunk, coords, *info[1:])

    def chunk_slices(self) -> Iterator[tuple[slice, ...]]:
        """The region of the array each chunk holds (storage order)."""
        for n in range(self._n.nchunks):
            start, stop = self._n.chunk_region(n)
            yield tuple(slice(a, b) for a, b in zip(start, stop, strict=False))

    # ------------------------------------------------------------------ writing

    def _writable(self) -> None:
        if self.mode == "r":
            raise ValueError("the array was opened read-only (mode 'r')")

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, str):
            self._field(key)[...] = value
            return
        self._writable()
        if self._schunk.locking and self._write_whole_chunk(key, value):
            return
        with self._schunk._wlock:  # shape and read-modify-write stay one change
            self._setitem(key, value)

    def _write_whole_chunk(self, key: Any, value: Any) -> bool:
        """A locked handle's write of exactly one whole chunk (Dask's ``store`` and
        ``to_oxblosc`` tasks): compressed outside every lock, so writer threads and processes
        compress side by side; only the commit takes the frame's exclusive lock. False when
        the write is not of that kind (or the array's geometry changed meanwhile): nothing
        was written, the usual path follows."""
        if not isinstance(value, np.ndarray) or value.dtype != self._dtype or self._dtype.shape:
            return False
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != self.ndim or not all(isinstance(k, slice) and k.step in (None, 1) for k in key):
            return False
        sel = [_slice_sel(k, n)[0] for k, n in zip(key, self.shape, strict=True)]
        if value.shape != tuple(b - a for a, b, _ in sel):
            return False
        enc = self._n.encode_chunk(sel, np.ascontiguousarray(value))
        if enc is None:
            return False
        with self._schunk._wlock:
            return self._n.commit_encoded(enc)

    def _setitem(self, key: Any, value: Any) -> None:
        key, empty = _scalar_bools(key)
        if empty:  # a False selects nothing
            return
        key = _expand(key, self.ndim)
        if any(_is_fancy(k) for k in key):
            sel, rel = self._box(key)
            box = self._read(sel)
            box[tuple(rel)] = value
            self._n.set_slice(sel, np.ascontiguousarray(box))
            return
        sel, flip, axis = [], [], 0
        for k in key:
            if k is None:
                continue
            n = self.shape[axis]
            if isinstance(k, slice):
                s, rev = _slice_sel(k, n)
                sel.append(s)
                if rev:
                    flip.append(len(sel) - 1)
            else:
                i = _as_int(k, n, axis)
                sel.append((i, i + 1, 1))
            axis += 1
        counts = tuple(len(range(a, b, s)) for a, b, s in sel)
        if isinstance(value, NDArray):
            value = value[...]
        # A subarray dtype (``("<f8", (10,))``) adds its shape after the array's, as in NumPy.
        sub, base = self._dtype.shape, self._dtype.base
        v = np.broadcast_to(np.asarray(value, dtype=base), _squeezed_shape(key, counts) + sub).reshape(counts + sub)
        if flip:
            v = np.flip(v, axis=flip)
        self._n.set_slice(sel, v.copy(order="C") if v.ndim == 0 else np.ascontiguousarray(v))

    def resize(self, newshape: tuple[int, ...] | list[int]) -> None:
        """Change the shape (same ndim); new items are zeros."""
        self._writable()
        newshape = tuple(int(s) for s in newshape)
        if any(s < 0 for s in newshape):
            raise ValueError(f"negative dimensions are not allowed: {newshape}")
        with self._schunk._wlock:
            self._n.resize(list(newshape))

    def append(self, values: Any) -> int:
        """Append along axis 0 and return the new length (``shape[0]``), as python-blosc2's
        ``append`` on 1-D arrays: there a scalar appends one item and any array-like is
        flattened. Beyond python-blosc2 (1-D only), an n-d array takes rows: ``values`` of
        shape ``(k, *shape[1:])``, or one such row."""
        self._writable()
        if self.ndim == 0:
            raise ValueError("cannot append to a 0-d array")
        v = np.asarray(values[...] if isinstance(values, NDArray) else values, dtype=self._dtype)
        if self.ndim == 1:
            v = v.reshape(-1)
        elif v.shape == self.shape[1:]:
            v = v[np.newaxis]
        if v.shape[1:] != self.shape[1:]:
            raise ValueError(f"appended values have shape {v.shape}, rows of this array are {self.shape[1:]}")
        with self._schunk._wlock:
            return int(self._n.append(np.ascontiguousarray(v))[0])

    # ------------------------------------------------------------------ new shapes
    # New arrays written chunk by chunk (``chunkwise``). python-blosc2 returns views for
    # ``squeeze``; here every one is a copy.

    def reshape(self, shape: Any, c_order: bool = True, **kwargs: Any) -> NDArray:
        """A new array with the items of this one (read in C order) and shape ``shape`` (one
        axis may be -1). ``c_order=False`` stores them chunk after chunk instead (python-
        blosc2's insertion order). ``kwargs`` as for :func:`empty`."""
        shape = tuple(int(s) for s in ((shape,) if isinstance(shape, int | np.integer) else shape))
        if shape.count(-1) == 1 and self.size:
            rest = math.prod(s for s in shape if s != -1)
            shape = tuple(self.size // rest if s == -1 and rest else s for s in shape)
        if math.prod(shape) != self.size or any(s < 0 for s in shape):
            raise ValueError(f"cannot reshape an array of size {self.size} into shape {shape}")
        with _filling(shape, self.dtype, kwargs) as out:
            return chunkwise.fill_flat(out, chunkwise.flat_reader(self), c_order)

    def squeeze(self, axis: int | tuple[int, ...] | None = None) -> NDArray:
        """A new array without the axes of length 1 (``axis``: only those)."""
        if axis is None:
            drop = {i for i, n in enumerate(self.shape) if n == 1}
        else:
            drop = _axes(axis, self.ndim)
            if any(self.shape[a] != 1 for a in drop):
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
        keep = [i for i in range(self.ndim) if i not in drop]
        return self._rearranged(keep, lambda r: tuple(r[i] for i in keep))

    def _permuted(self, axes: list[int], **kwargs: Any) -> NDArray:
        return self._rearranged(axes, lambda r: tuple(r[a] for a in axes), lambda v: v.transpose(axes), **kwargs)

    def _rearranged(self, axes: list[int], target: Any, transform: Any = None, **kwargs: Any) -> NDArray:
        """A copy whose axis ``i`` is this array's axis ``axes[i]`` (by default the same
        chunks, blocks and cparams, permuted; ``kwargs`` as for ``empty``)."""
        kwargs.setdefault("chunks", tuple(self.chunks[a] for a in axes))
        kwargs.setdefault("blocks", tuple(self.blocks[a] for a in axes))
        kwargs.setdefault("cparams", self.cparams)
        with _filling(tuple(self.shape[a] for a in axes), self.dtype, kwargs) as out:
            chunkwise.copy_regions(self, out, target, transform)
        return out

    @property
    def T(self) -> NDArray:  # noqa: N802 - NumPy's name
        """The transpose of a 2-d array (a new array)."""
        if self.ndim != 2:
            raise ValueError("This property only works for 2-dimensional arrays.")
        return self._permuted([1, 0])

    @property
    def mT(self) -> NDArray:  # noqa: N802 - NumPy's name
        """The last two axes swapped (a new array)."""
        if self.ndim < 2:
            raise ValueError("This property only works for N-dimensional arrays with N>=2.")
        return self._permuted([*range(self.ndim - 2), self.ndim - 1, self.ndim - 2])

    # ------------------------------------------------------------------ copies and persistence

    def slice(self, key: Any, **kwargs: Any) -> NDArray:
        """A new compressed array holding ``self[key]`` (chunks/blocks/cparams may change)."""
        data = self[key]
        kwargs.setdefault("cparams", self.cparams)
        return asarray(np.asarray(data), **kwargs)

    def copy(self, dtype: Any = None, **kwargs: Any) -> NDArray:
        """A copy, optionally with another dtype, chunks, blocks, cparams or storage."""
        if dtype is None and not kwargs:
            out = NDArray(self._n.copy(), urlpath=None, mode="a")
            # ``dask.array.from_array`` copies the arrays it is given: while such a copy of a
            # file's array and the file stay unchanged, it pickles as a reference to the file
            # (reopened and copied again), not as gigabytes of frame.
            reduced = self.__reduce__()
            if reduced[0] is _reopen:
                out._origin = (reduced[1], _file_token(self.urlpath), out._n._writes)
            return out
        target = np.dtype(dtype) if dtype is not None else self.dtype
        kwargs = _storage_kwargs(dict(kwargs))  # a ``storage`` first: the defaults below fill its gaps
        kwargs.setdefault("chunks", self.chunks)
        kwargs.setdefault("blocks", self.blocks)
        kwargs.setdefault("cparams", dataclasses.replace(self.cparams, typesize=target.itemsize))
        meta = {k: self.meta[k] for k in self.meta.keys() if k not in ("b2nd", "caterva")}
        kwargs.setdefault("meta", meta or None)
        # Chunk by chunk, so a copy of an array larger than memory fits in memory.
        cast = (lambda v: v.astype(target)) if dtype is not None else None
        with _filling(self.shape, target, kwargs) as out:
            chunkwise.copy_regions(self, out, lambda r: r, cast)
            for k, v in self.vlmeta.getall().items():
                out.vlmeta[k] = v
        return out

    def to_cframe(self) -> bytes:
        return self._n.to_cframe()

    def save(self, urlpath: str | os.PathLike, contiguous: bool = True, **kwargs: Any) -> None:
        # (The native save writes a temporary and renames it over ``urlpath``: a failure
        # leaves what was there.)
        self._n.save(_fspath(urlpath), contiguous)


class NDField:
    """One field of a structured array (``arr["x"]``, ``arr.fields["x"]`` or
    ``NDField(arr, "x")``): reads and writes go to that field of the array."""

    def __init__(self, arr: NDArray, name: str) -> None:
        self._arr, self._name = arr, name
        self.dtype = arr.dtype.fields[name][0]
        self.shape = arr.shape

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.ascontiguousarray(self._arr[key][self._name])

    def __setitem__(self, key: Any, value: Any) -> None:
        with self._arr._schunk._wlock:
            part = self._arr[key]
            part[self._name] = value
            self._arr[key] = part

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self[...]
        return a if dtype is None else a.astype(dtype)


class _OIndex:
    def __init__(self, arr: NDArray) -> None:
        self._arr = arr

    def _parts(self, key: Any) -> tuple[list, list]:
        if isinstance(key, list) and any(isinstance(k, list | np.ndarray | slice) for k in key):
            key = tuple(key)  # python-blosc2: a list holding one selection per axis
        key = [k for k in _expand(key, self._arr.ndim) if k is not None]
        sel, steps = self._arr._box(
            [np.nonzero(k)[0] if isinstance(k, np.ndarray) and k.dtype == bool else k for k in key]
        )
        return sel, steps

    def __getitem__(self, key: Any) -> np.ndarray:
        sel, rel = self._parts(key)
        box, rel = self._arr._read_box(sel, rel)
        drop = []
        for axis, r in enumerate(rel):
            if isinstance(r, np.ndarray):
                box = np.take(box, r.ravel(), axis=axis)
            elif isinstance(r, slice):
                box = box[(slice(None),) * axis + (r,)]
            else:
                drop.append(axis)
        return box.reshape([n for a, n in enumerate(box.shape) if a not in drop]) if drop else box

    def __setitem__(self, key: Any, value: Any) -> None:
        self._arr._writable()
        with self._arr._schunk._wlock:
            self._set(key, value)

    def _set(self, key: Any, value: Any) -> None:
        sel, rel = self._parts(key)
        box = self._arr._read(sel)
        idx = []
        for r, n in zip(rel, box.shape, strict=False):
            if isinstance(r, np.ndarray):
                idx.append(r.ravel())
            elif isinstance(r, slice):
                idx.append(np.arange(n)[r])
            else:
                idx.append(np.array([r]))
        shape = [len(i) for i in idx]
        keep = [n for n, r in zip(shape, rel, strict=False) if isinstance(r, np.ndarray | slice)]
        box[np.ix_(*idx)] = np.broadcast_to(np.asarray(value, dtype=box.dtype), keep).reshape(shape)
        self._arr._n.set_slice(sel, np.ascontiguousarray(box))


def _nearby_groups(u: np.ndarray) -> list[tuple[int, int]]:
    """``[a, b)`` ranges of the sorted unique positions ``u`` whose gaps are small enough
    (< 32) that reading the rows in between beats another read."""
    breaks = np.flatnonzero(np.diff(u) >= 32) + 1
    starts = [0, *breaks.tolist()]
    return list(zip(starts, [*breaks.tolist(), len(u)], strict=True))


def _axes(axis: int | tuple[int, ...] | list[int], ndim: int) -> set[int]:
    """Axis numbers (negative ones counted from the end), checked and unique."""
    axes = [axis] if isinstance(axis, int | np.integer) else list(axis)
    out = set()
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        if a % ndim in out:
            raise ValueError("Axis values must be unique.")
        out.add(a % ndim)
    return out


def _squeezed_shape(key: list, counts: tuple[int, ...]) -> tuple[int, ...]:
    """The shape ``arr[key]`` has (ints drop their axis, ``None`` adds one): what a value
    assigned to it broadcasts to."""
    out, axis = [], 0
    for k in key:
        if k is None:
            out.append(1)
            continue
        if isinstance(k, slice):
            out.append(counts[axis])
        axis += 1
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# constructors


def _storage_kwargs(kwargs: dict) -> dict:
    if kwargs.get("storage") is not None and _STORAGE_FIELDS & set(kwargs):
        raise AttributeError("Cannot pass both `storage` and other kwargs already included in Storage")
    for k in kwargs:
        if k not in _KWARGS:
            raise ValueError(f"{k} is not supported as keyword argument")
    storage = kwargs.pop("storage", None)
    if storage is not None:
        if dataclasses.is_dataclass(storage):
            storage = dataclasses.asdict(storage)
        kwargs.update({k: v for k, v in storage.items() if v is not None})
    return kwargs


def _shape_tuple(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int | np.integer):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimensions are not allowed: {shape}")
    if len(shape) > 16:
        raise ValueError(f"at most 16 dimensions are supported, got {len(shape)}")
    return shape


def _create(
    shape: Any, dtype: Any, fill: int, value: bytes | None, data: Any, kwargs: dict, staged: bool = False
) -> NDArray:
    """A new array; in a file, built under a temporary name and renamed to ``urlpath`` when
    complete (``mode="w"`` replaces what is there only then). ``staged``: the caller fills
    it first and publishes it (:func:`_filling`)."""
    kwargs = _storage_kwargs(dict(kwargs))
    shape = _shape_tuple(shape)
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise TypeError(f"dtype {dtype} holds Python objects, which cannot be stored")
    if dtype.itemsize == 0:
        raise ValueError(f"dtype {dtype} has no bytes per item")
    chunks = kwargs.get("chunks")
    blocks = kwargs.get("blocks")
    if chunks is not None:
        chunks = [int(c) for c in chunks]
        if len(chunks) != len(shape):
            raise ValueError(f"chunks {tuple(chunks)} must have the {len(shape)} dimensions of shape {shape}")
    if blocks is not None:
        blocks = [int(b) for b in blocks]
        if len(blocks) != len(shape):
            raise ValueError(f"blocks {tuple(blocks)} must have the {len(shape)} dimensions of shape {shape}")
        if chunks is not None and any(b > c for b, c in zip(blocks, chunks, strict=False)):
            raise ValueError("blocks cannot be greater than chunks")
    cp = kwargs.get("cparams")
    if cp is None:
        cp = CParams(typesize=dtype.itemsize)
    else:
        if isinstance(cp, dict):  # the dtype's typesize from the start (BYTEDELTA's meta follows it)
            cp = {**cp, "typesize": dtype.itemsize}
        cp = dataclasses.replace(_to_cparams(cp), typesize=dtype.itemsize)
    dp = _to_dparams(kwargs.get("dparams") or DParams())
    urlpath = _fspath(kwargs.get("urlpath"))
    mode = kwargs.get("mode") or "a"
    mmap_mode = kwargs.get("mmap_mode")
    if mmap_mode is not None:
        if mmap_mode not in _MMAP_MODES:
            raise ValueError(f"Invalid mmap_mode: {mmap_mode}")
        mode = _MMAP_MODES[mmap_mode]
    contiguous = bool(kwargs.get("contiguous", True))
    if urlpath is not None:
        if mode == "r":
            raise ValueError("cannot create an array in read-only mode 'r'")
        if mode != "w" and os.path.exists(urlpath):
            raise FileExistsError(f"{urlpath} exists: open it with oxblosc.open(), or pass mode='w' to replace it")
    meta = [(str(k), packb(v)) for k, v in (kwargs.get("meta") or {}).items()]
    locking = bool(kwargs.get("locking")) and urlpath is not None
    if locking and mmap_mode is not None:
        raise ValueError("locking is not supported together with mmap_mode")
    native = _native.NativeNDArray.create(
        _native_cparams(cp, tuned=True),
        _checked("nthreads", dp.nthreads, 1, 1 << 16),
        urlpath,
        contiguous,
        meta,
        list(shape),
        chunks,
        blocks,
        dtype_to_str(dtype),
        fill,
        value,
        data,
        locking=locking and not staged,
        tuner=tuner_arg(cp),
        staged=staged and urlpath is not None,
    )
    if locking and not staged:
        native = _Locked(native)
    return NDArray(native, urlpath=urlpath, mode=mode if urlpath else "a", mmap_mode=mmap_mode, contiguous=contiguous)


def empty(shape: Any, dtype: Any = np.float64, **kwargs: Any) -> NDArray:
    """An array whose items are not initialised (read as zeros; no data written)."""
    return _create(shape, dtype, _FILL_UNINIT, None, None, kwargs)


def uninit(shape: Any, dtype: Any = np.float64, **kwargs: Any) -> NDArray:
    """Same as :func:`empty`."""
    return _create(shape, dtype, _FILL_UNINIT, None, None, kwargs)


def zeros(shape: Any, dtype: Any = np.float64, **kwargs: Any) -> NDArray:
    """An array of zeros (special chunks: no data written)."""
    return _create(shape, dtype, _FILL_ZEROS, None, None, kwargs)


def full(shape: Any, fill_value: Any, dtype: Any = None, **kwargs: Any) -> NDArray:
    """An array with every item ``fill_value`` (repeated-value chunks: no data written)."""
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    dtype = np.dtype(dtype)
    value = (
        np.asarray(fill_value, dtype=dtype).tobytes() if dtype.fields is None else np.array(fill_value, dtype).tobytes()
    )
    if not any(value):
        return _create(shape, dtype, _FILL_ZEROS, None, None, kwargs)
    return _create(shape, dtype, _FILL_VALUE, value, None, kwargs)


def ones(shape: Any, dtype: Any = np.float64, **kwargs: Any) -> NDArray:
    return full(shape, 1, dtype, **kwargs)


def nans(shape: Any, dtype: Any = np.float64, **kwargs: Any) -> NDArray:
    """An array of NaNs (NaN special chunks for float32/float64)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"nans needs a floating dtype, got {dtype}")
    if dtype in (np.dtype("<f4"), np.dtype("<f8")):
        return _create(shape, dtype, _FILL_NAN, None, None, kwargs)
    return full(shape, np.nan, dtype, **kwargs)


def asarray(array: Any, copy: bool | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """A compressed copy of any array-like (NumPy arrays keep their dtype, byte order
    included, unless ``dtype`` says otherwise). An ``NDArray`` comes back as is when neither
    ``dtype`` nor storage or parameters ask for a change, unless ``copy=True``; with
    ``copy=False`` a needed copy is an error (python-blosc2's rules). Arrays written to a
    file (a ``np.memmap`` too) go there a few chunks at a time, never whole in memory; a
    failed write removes the new file."""
    if isinstance(array, NDArray):
        changes = bool(kwargs) or (dtype is not None and np.dtype(dtype) != array.dtype)
        if not changes and not copy:
            return array
        if copy is False:
            raise ValueError("asarray(copy=False): a copy is needed (another dtype, storage or parameters)")
        return array.copy(dtype, **kwargs)
    a = np.asarray(array, dtype=dtype)
    if a.dtype.hasobject:
        raise TypeError("arrays of Python objects cannot be stored")
    if a.nbytes > _STREAM_BYTES and kwargs.get("urlpath") is not None and not a.flags.c_contiguous:
        return _stream(a, kwargs)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")  # (np.ascontiguousarray would turn a 0-d array into 1-d)
    return _create(a.shape, a.dtype, _FILL_UNINIT, None, a.reshape(-1).view(np.uint8) if a.size else b"", kwargs)


#: Non-contiguous arrays larger than this written to a file are streamed: written a row of
#: chunks (or, when that is larger than this, a chunk) at a time into the new file instead of
#: being copied whole first. (Contiguous data goes to the native constructor, which writes
#: each chunk to the file as it is compressed.)
_STREAM_BYTES = 32 << 20


def _stream(a: np.ndarray, kwargs: dict) -> NDArray:
    with _filling(a.shape, a.dtype, kwargs) as out:
        c0 = max(out.chunks[0], 1)
        chunk_row = c0 * (a.nbytes // a.shape[0])  # a.nbytes > 0: no empty axis
        if chunk_row <= _STREAM_BYTES:  # a row of chunks at a time
            for i in range(0, a.shape[0], c0):
                out[i : i + c0] = a[i : i + c0]
        else:  # a row of chunks is large: one chunk at a time
            for region in out.chunk_slices():
                out[region] = a[region]
    return out


@contextlib.contextmanager
def _filling(shape: Any, dtype: Any, kwargs: dict) -> Iterator[NDArray]:
    """A new array as :func:`empty` makes it, for the block to fill. In a file it is written
    under a temporary name and renamed to ``urlpath`` only when the block succeeds: an error
    (a failing expression or callback, a full disk) or a kill leaves ``urlpath`` exactly as
    it was (a file ``mode="w"`` would replace stays), and the error goes on."""
    out = _create(shape, dtype, _FILL_UNINIT, None, None, kwargs, staged=True)
    locking = bool(_storage_kwargs(dict(kwargs)).get("locking"))
    try:
        yield out
        if out.urlpath is not None:
            out._n.publish(locking)
    except BaseException:
        if out.urlpath is not None:  # (a failed publish leaves its temporary too)
            out._n.discard()
        raise
    if out.urlpath is not None and locking:
        out._n = out._schunk._n = _Locked(out._n)


def frombuffer(buffer: Any, shape: Any, dtype: Any = np.uint8, **kwargs: Any) -> NDArray:
    """An array from the raw C-order bytes of ``buffer``."""
    a = np.frombuffer(buffer, dtype=dtype)
    shape = _shape_tuple(shape)
    if a.size != math.prod(shape):
        raise ValueError(f"buffer holds {a.size} items, shape {shape} needs {math.prod(shape)}")
    return asarray(a.reshape(shape), **kwargs)


def copy(array: NDArray, dtype: Any = None, **kwargs: Any) -> NDArray:
    return array.copy(dtype, **kwargs)


def _like(a: Any, dtype: Any, kwargs: dict) -> tuple[tuple[int, ...], np.dtype, dict]:
    dtype = np.dtype(dtype) if dtype is not None else np.dtype(a.dtype)
    if isinstance(a, NDArray):
        kwargs.setdefault("chunks", a.chunks)
        kwargs.setdefault("blocks", a.blocks)
    return tuple(a.shape), dtype, kwargs


def empty_like(a: Any, dtype: Any = None, **kwargs: Any) -> NDArray:
    shape, dtype, kwargs = _like(a, dtype, kwargs)
    return empty(shape, dtype, **kwargs)


def uninit_like(a: Any, dtype: Any = None, **kwargs: Any) -> NDArray:
    return empty_like(a, dtype, **kwargs)


def zeros_like(a: Any, dtype: Any = None, **kwargs: Any) -> NDArray:
    shape, dtype, kwargs = _like(a, dtype, kwargs)
    return zeros(shape, dtype, **kwargs)


def ones_like(a: Any, dtype: Any = None, **kwargs: Any) -> NDArray:
    shape, dtype, kwargs = _like(a, dtype, kwargs)
    return ones(shape, dtype, **kwargs)


def full_like(a: Any, fill_value: Any, dtype: Any = None, **kwargs: Any) -> NDArray:
    shape, dtype, kwargs = _like(a, dtype, kwargs)
    return full(shape, fill_value, dtype, **kwargs)


def nans_like(a: Any, dtype: Any = None, **kwargs: Any) -> NDArray:
    shape, dtype, kwargs = _like(a, dtype, kwargs)
    return nans(shape, dtype, **kwargs)


def ndarray_from_cframe(cframe: Any, copy: bool = False) -> NDArray:
    """An array from an in-memory contiguous frame (``NDArray.to_cframe`` or python-blosc2's)."""
    return NDArray(_native.NativeNDArray.from_cframe(cframe), urlpath=None, mode="a")


def _reopen(urlpath: str, mode: str, locking: bool, mmap_mode: str | None = None) -> NDArray:
    """Unpickle a file-backed array: open its file again (see ``NDArray.__reduce__``)."""
    from .opening import open as _open  # noqa: PLC0415 - opening sits above this module

    if mmap_mode is not None:
        a = _open(urlpath, mmap_mode=mmap_mode)
    else:
        a = _open(urlpath, mode=mode, locking=locking) if locking else _open(urlpath, mode=mode)
    # Reopened in a ``distributed`` worker process (or a pool thread): its tasks already run
    # one chunk per thread, so this array's own reads and writes use one thread, as the codecs
    # do. Workers unpickle task arguments outside the task (no worker context yet), so the
    # process is recognised by the workers it hosts.
    worker = sys.modules.get("distributed.worker")
    hosts_workers = bool(getattr(getattr(worker, "Worker", None), "_instances", None))
    n = 1 if hosts_workers else call_nthreads(None)
    if n != a.dparams.nthreads:
        a.schunk.dparams = dataclasses.replace(a.dparams, nthreads=n)
        a.schunk.cparams = dataclasses.replace(a.cparams, nthreads=n)
    return a


def _file_token(urlpath: str) -> tuple | None:
    """Size and modification time of an array's file (a sparse frame's index file)."""
    path = os.path.join(urlpath, "chunks.b2frame") if os.path.isdir(urlpath) else urlpath
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _reopen_copy(urlpath: str, mode: str, locking: bool, mmap_mode: str | None = None) -> NDArray:
    """Unpickle an unchanged in-memory copy of a file's array: the file reopened, copied."""
    return _reopen(urlpath, "r", locking, mmap_mode).copy()


def _from_schunk(s: SChunk) -> NDArray:
    """The array held by a super-chunk just opened (``oxblosc.open`` of a b2nd frame)."""
    if isinstance(s._n, _Locked):  # locking=True: the array's handle locks the same way
        native = _Locked(_native.NativeNDArray.from_schunk(s._n._native))
    else:
        native = _native.NativeNDArray.from_schunk(s._n)
    a = NDArray(native, urlpath=s.urlpath, mode=s.mode, mmap_mode=s.mmap_mode, contiguous=s.contiguous)
    a.schunk.dparams = s.dparams
    return a


__all__ = [
    "NDArray",
    "asarray",
    "copy",
    "dtype_from_str",
    "dtype_to_str",
    "empty",
    "empty_like",
    "frombuffer",
    "full",
    "full_like",
    "nans",
    "nans_like",
    "ndarray_from_cframe",
    "ones",
    "ones_like",
    "uninit",
    "uninit_like",
    "zeros",
    "zeros_like",
]
