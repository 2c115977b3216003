"""Super-chunks with python-blosc2's names, defaults and semantics.

``SChunk`` wraps the native super-chunk (``oxblosc._native.NativeSChunk``): chunks, frames,
files and the msgpack encoding of ``meta``/``vlmeta`` values all live in Rust. This module
applies python-blosc2's conventions (keyword arguments, modes, slicing rules, the mapping
objects) so code written for ``blosc2.SChunk`` keeps working.

What differs from python-blosc2 4.14 (on purpose or not yet done):

* ``mmap_mode="r"`` maps a contiguous frame file read-only (chunks are read from the map,
  opening touches only header, trailer and index). "r+" (append), "w+" (create) and "c"
  (copy-on-write in memory) select the access mode and keep positioned reads, which our
  writer's append-only write order needs anyway; ``initial_mapping_size`` is accepted and
  ignored. A mapped file must not be truncated or rewritten by another process meanwhile
  (SIGBUS); our own writers replace files by rename when compacting.
* ``locking=True`` uses python-blosc2's lock file (``<file>.b2lock`` or ``<dir>/.b2lock``,
  flock, generation counter in bytes 8..16), so oxblosc and python-blosc2 handles exclude
  each other: reads hold the shared lock, each committed change the exclusive one. A locked
  reader re-syncs (re-reads header, trailer and index) on every data access after another
  handle committed, and never returns bytes of a newer state mixed with its view. Writers
  take turns: each change waits for the exclusive lock (up to 120 s, ``OXBLOSC_LOCK_TIMEOUT``
  seconds; then ``TimeoutError``, an ``OSError``), catches up with what other writers committed, then commits.
  Calls on one locked handle are serialised (open one handle per thread to read in
  parallel). Not safe on NFS, not with ``mmap_mode`` (refused) and not with unlocked handles
  writing concurrently. ``holding_lock()`` works on writable handles (read-only locked
  handles raise ValueError); ``change_tick`` is not implemented.
* Pre/postfilters, ``reorder_offsets``, ``update_special``, ``get_vlblock`` and the
  ``deserialize`` policy are not implemented; embedded super-chunks in ``vlmeta`` (msgpack
  extension 42) are always decoded.
* Before the first chunk, ``chunksize`` reports the requested size (as python-blosc2 does);
  from the first chunk on it is the engine's: a first chunk shorter than the requested size
  sets the chunk size (python-blosc2 keeps the requested one and turns variable on the next).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
import threading
from collections import namedtuple
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import numpy as np

from . import _native, blockfuncs
from . import core as _core
from ._errors import FrameChangedError
from .core import CParams, DParams, SpecialValue, _checked, _make_params, _native_cparams
from .info import InfoTable, cparams_summary, human_bytes
from .tuning import tuner_arg

#: A msgpack extension value that oxblosc does not interpret (code, data).
ExtType = namedtuple("ExtType", ["code", "data"])

#: What ``iterchunks_info`` yields (the fields python-blosc2 yields).
ChunkInfo = namedtuple("ChunkInfo", ["nchunk", "cratio", "special", "repeated_value", "lazychunk"])

_EXT_SCHUNK = 42
_EXT_NDARRAY = 46
_MAX_CHUNKSIZE = 2**31 - 1
_ALLOWED_KWARGS = {
    "urlpath",
    "contiguous",
    "cparams",
    "dparams",
    "meta",
    "mode",
    "mmap_mode",
    "initial_mapping_size",
    "locking",
    "storage",
    "_native",
}
_MMAP_MODES = {"r": "r", "r+": "a", "w+": "w", "c": "a"}
#: The keywords ``storage=`` stands for (``oxblosc.Storage``'s fields).
_STORAGE_FIELDS = {"contiguous", "urlpath", "mode", "mmap_mode", "initial_mapping_size", "locking", "meta"}


class _Locked:
    """A locked native super-chunk: every call is serialised per handle; before each call the
    handle re-syncs if another handle committed, and a call that meets a newer state
    (``FrameChangedError``) is retried on the refreshed view, reader or writer, so callers
    only see whole committed states."""

    _RETRIES = 1000

    def __init__(self, native: Any) -> None:
        self._native = native
        self._mutex = threading.RLock()

    def refresh(self) -> bool:
        with self._mutex:
            return bool(self._native.refresh())

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            with self._mutex:
                setattr(self._native, name, value)

    #: Changes made of several commits (an array's append, resize or slice write): the
    #: exclusive lock is held across them, so other locked handles see all or none of them.
    _MULTI_COMMIT = frozenset({"set_slice", "resize", "append", "extend"})

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._native, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._mutex:
                for _ in range(self._RETRIES):
                    self._native.refresh()
                    held = name in self._MULTI_COMMIT and self._native.writable
                    if held:
                        self._native.hold_lock()
                    try:
                        return getattr(self._native, name)(*args, **kwargs)
                    except FrameChangedError:
                        # Another handle committed between the catch-up and this call: try
                        # again on the new state, writers too (a stale view is refused before
                        # anything is read or written, and writes catch up under the lock).
                        pass
                    finally:
                        if held:
                            self._native.release_lock()
                raise FrameChangedError(f"{name}: the frame kept changing during {self._RETRIES} attempts")

        return call


def _open_native(path: str, offset: int, writable: bool, locking: bool, mmap: bool) -> Any:
    native = _native.NativeSChunk.open(path, offset, writable, locking, mmap)
    return _Locked(native) if locking else native


# ---------------------------------------------------------------------------------------------
# msgpack values (python-blosc2's conventions; the bytes are written and read in Rust)


def _dtype_value(dtype: np.dtype) -> dict:
    return {"descr": dtype.descr} if dtype.fields is not None else {"str": dtype.str}


def _dtype_from_value(value: dict) -> np.dtype:
    if "str" in value:
        return np.dtype(value["str"])

    def field(f):
        name, spec, *shape = f
        if isinstance(name, list):
            name = tuple(name)
        if isinstance(spec, list):
            spec = [field(x) for x in spec]
        return (name, spec, tuple(shape[0])) if shape else (name, spec)

    return np.dtype([field(f) for f in value["descr"]])


def _default(obj: Any) -> Any:
    """Objects msgpack has no type for, converted as python-blosc2 does."""
    if isinstance(obj, np.generic):
        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return float(obj)
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.complexfloating):
            return complex(obj)
        if isinstance(obj, np.bytes_):
            return bytes(obj)
        if isinstance(obj, np.str_):
            return str(obj)
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            payload = {"values": obj.ravel().tolist(), "shape": list(obj.shape)}
        else:
            payload = {"dtype": _dtype_value(obj.dtype), "shape": list(obj.shape), "data": obj.tobytes()}
        return ExtType(_EXT_NDARRAY, packb(payload))
    if isinstance(obj, SChunk):
        return ExtType(_EXT_SCHUNK, obj.to_cframe())
    # Exact-type checks in Rust: subclasses of the builtins (str/int/float enums, ...) are
    # refused like msgpack-python's strict_types does, except these plain conversions.
    for base in (bool, int, float, str, bytes, list, dict, tuple):
        if isinstance(obj, base) and not isinstance(obj, enum.Enum):
            return base(obj)
    return obj


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _EXT_NDARRAY:
        payload = unpackb(data)
        shape = payload["shape"]
        if "values" in payload:
            out = np.empty(shape, dtype=object)
            out.reshape(-1)[:] = payload["values"]
            return out
        return np.frombuffer(payload["data"], dtype=_dtype_from_value(payload["dtype"])).reshape(shape)
    if code == _EXT_SCHUNK:
        return schunk_from_cframe(data, copy=True)
    return ExtType(code, data)


def packb(value: Any) -> bytes:
    """Encode ``value`` as python-blosc2 encodes ``meta``/``vlmeta`` values."""
    return _native.packb(value, _default, ExtType)


def unpackb(data: Any) -> Any:
    """Decode a ``meta``/``vlmeta`` value written by python-blosc2 or oxblosc."""
    return _native.unpackb(data, _ext_hook)


# ---------------------------------------------------------------------------------------------
# meta and vlmeta


class Meta(Mapping):
    """Fixed-length metalayers of a super-chunk (python-blosc2's ``SChunk.meta``).

    Values are msgpack-encoded; they can be replaced by values encoding to the same length.
    """

    def __init__(self, schunk: SChunk):
        self.schunk = schunk

    def __getitem__(self, key: str | slice) -> Any:
        if isinstance(key, slice):
            if key.start is None and key.stop is None and key.step is None:
                return self.getall()
            raise NotImplementedError("Slicing is not supported, unless [:]")
        if key not in self:
            raise KeyError(f"{key} not found")
        return unpackb(self.schunk._n.meta_get(key))

    def __setitem__(self, key: str, value: Any) -> None:
        content = packb(value)
        if key not in self:
            raise KeyError(f"{key} not found")
        old = self.schunk._n.meta_get(key)
        if len(old) != len(content):
            raise ValueError("The length of the content in a metalayer cannot change.")
        self.schunk._n.meta_update(key, content)

    def __delitem__(self, key: str) -> None:
        raise NotImplementedError("Cannot remove a metalayer")

    def __contains__(self, key: object) -> bool:
        return key in self.schunk._n.meta_names()

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> list[str]:  # python-blosc2 returns a list
        return self.schunk._n.meta_names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def getall(self) -> dict:
        return {k: self[k] for k in self.keys()}

    def __repr__(self) -> str:
        return repr(self.getall())


class vlmeta(MutableMapping):  # noqa: N801 - python-blosc2's name
    """Variable-length metalayers of a super-chunk (python-blosc2's ``SChunk.vlmeta``).

    Values are any msgpack-able Python objects, encoded like python-blosc2 does (tuples,
    complex, sets, NumPy scalars and arrays included), so both read each other's values.
    """

    def __init__(self, schunk: SChunk):
        self.schunk = schunk

    @property
    def mode(self) -> str:
        """The mode of the super-chunk holding these entries."""
        return self.schunk.mode

    def __setitem__(self, name: str | slice, content: Any) -> None:
        if isinstance(name, slice):
            if name.start is None and name.stop is None:
                for k, v in content.items():
                    self[k] = v
                return
            raise NotImplementedError("Slicing is not supported, unless [:]")
        self.schunk._n.vlmeta_set(name, packb(content))

    def __getitem__(self, name: str | slice) -> Any:
        if isinstance(name, slice):
            if name.start is None and name.stop is None and name.step is None:
                return self.getall()
            raise NotImplementedError("Slicing is not supported, unless [:]")
        return unpackb(self.schunk._n.vlmeta_get(name))

    def __delitem__(self, name: str) -> None:
        self.schunk._n.vlmeta_del(name)

    def __contains__(self, name: object) -> bool:
        return name in self.schunk._n.vlmeta_names()

    def __len__(self) -> int:
        return len(self.schunk._n.vlmeta_names())

    def __iter__(self) -> Iterator[str]:
        return iter(self.schunk._n.vlmeta_names())

    def getall(self) -> dict:
        return {name: self[name] for name in self}

    def to_dict(self) -> dict:
        """Every entry as a dict keyed by the names as bytes (python-blosc2's ``to_dict``;
        :meth:`getall` gives str keys)."""
        return {name.encode(): value for name, value in self.getall().items()}

    def __repr__(self) -> str:
        return repr(self.getall())


# ---------------------------------------------------------------------------------------------
# SChunk


class _MissingFile(FileNotFoundError, ValueError):
    """A file to read is missing: python-blosc2 raises ValueError there, Python code
    expects FileNotFoundError; this is both."""


def _fspath(urlpath: Any) -> str | None:
    if urlpath is None:
        return None
    if isinstance(urlpath, bytes):
        return urlpath.decode()
    return os.fspath(urlpath)


def _fill_bytes(value: Any, typesize: int) -> bytes:
    """The item a VALUE fill repeats: bytes as given, a NumPy scalar of that size as is, a
    bool or int as a signed integer and a float as a float of ``typesize`` bytes."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
    elif isinstance(value, np.generic) and value.dtype.itemsize == typesize:
        raw = value.tobytes()
    else:
        kind = "f" if isinstance(value, float | np.floating) else "i"
        if not isinstance(value, int | float | np.number | np.bool_):
            raise TypeError(f"value must be bytes, int, float or bool, got {type(value).__name__}")
        try:
            raw = np.array(value, dtype=f"{kind}{typesize}").tobytes()
        except TypeError:  # no such NumPy type (e.g. a 3-byte int)
            raw = b""
    if len(raw) != typesize:
        raise ValueError("value size in bytes must match with typesize")
    return raw


def _cparams_from_native(t: tuple) -> CParams:
    codec, codec_meta, clevel, use_dict, typesize, nthreads, blocksize, splitmode, filters, meta = t
    try:
        codec = _core.Codec(codec)
    except ValueError:
        pass

    def f(x):
        try:
            return _core.Filter(x)
        except ValueError:
            return x

    return CParams(
        codec=codec,
        codec_meta=codec_meta,
        clevel=clevel,
        use_dict=use_dict,
        typesize=typesize,
        nthreads=nthreads,
        blocksize=blocksize,
        splitmode=_core.SplitMode(splitmode),
        filters=[f(x) for x in filters],
        filters_meta=[m - 256 if m > 127 else m for m in meta],
    )


def _to_cparams(value: Any) -> CParams:
    return _make_params(CParams, {"cparams": value}, "cparams")


def _to_dparams(value: Any) -> DParams:
    return _make_params(DParams, {"dparams": value}, "dparams")


class SChunk:
    """An ordered list of compressed chunks sharing compression parameters, metalayers
    (``meta``) and variable-length metalayers (``vlmeta``), in memory or in a frame file
    (``contiguous=True``) or sparse directory (``contiguous=False``).

    Same constructor as ``blosc2.SChunk``: ``SChunk(chunksize=None, data=None, **kwargs)``
    with ``cparams``, ``dparams``, ``urlpath``, ``contiguous``, ``mode`` ("r", "a", "w"),
    ``mmap_mode``, ``meta`` (or ``storage`` holding the storage ones).
    """

    def __init__(self, chunksize: int | None = None, data: Any = None, **kwargs: Any) -> None:
        # Serialises this handle's changes made of several native calls (the native object
        # itself is safe to share: parallel reads, one change at a time).
        self._wlock = threading.RLock()
        # python-blosc2's Python block callbacks (``prefilter``/``postfilter``), none by default.
        self._prefilter: blockfuncs.BlockFunc | None = None
        self._postfilter: blockfuncs.BlockFunc | None = None
        for k in kwargs:
            if k not in _ALLOWED_KWARGS:
                raise ValueError(f"{k} is not supported as keyword argument")
        storage = kwargs.pop("storage", None)
        if storage is not None:
            if _STORAGE_FIELDS & set(kwargs):
                raise AttributeError("Cannot pass both `storage` and other kwargs already included in Storage")
            if dataclasses.is_dataclass(storage):
                storage = dataclasses.asdict(storage)
            kwargs.update({k: v for k, v in storage.items() if v is not None})
        locking = bool(kwargs.get("locking")) or _env_locking(kwargs.get("mmap_mode"))
        if kwargs.get("locking") and kwargs.get("mmap_mode") is not None:
            raise ValueError("locking is not supported together with mmap_mode")
        native = kwargs.pop("_native", None)
        urlpath = _fspath(kwargs.get("urlpath"))
        mode = kwargs.get("mode") or "a"
        mmap_mode = kwargs.get("mmap_mode")
        if mmap_mode is not None:
            if mmap_mode not in _MMAP_MODES:
                raise ValueError(f"Invalid mmap_mode: {mmap_mode}")
            mode = _MMAP_MODES[mmap_mode]
        elif kwargs.get("initial_mapping_size") is not None:
            raise ValueError("initial_mapping_size can only be used with mmap_mode")
        if mode not in ("r", "a", "w"):
            raise ValueError(f"mode must be 'r', 'a' or 'w', got {mode!r}")
        self._mode = mode
        self._mmap_mode = mmap_mode
        self._urlpath = urlpath
        self._contiguous = bool(kwargs.get("contiguous", urlpath is not None))

        if native is not None:  # from open() / schunk_from_cframe()
            self._n = native
            self._chunksize_hint = None
            self._dparams = DParams(nthreads=native.dthreads)
            return

        if mode == "r":
            if urlpath is None:
                raise ValueError(
                    "Cannot open the SChunk in reading mode (mode or mmap_mode is 'r') because you "
                    "did not specify a urlpath pointing to an existing file on-disk"
                )
            if not os.path.exists(urlpath):
                raise _MissingFile(2, f"the SChunk cannot be opened in reading mode: {urlpath} does not exist", urlpath)
            self._n = _open_native(urlpath, 0, False, locking and urlpath is not None, mmap_mode == "r")
            if {"b2nd", "caterva"} & set(self._n.meta_names()):
                raise ValueError(f"Cannot open an NDArray as a SChunk ({urlpath}): use oxblosc.open()")
            self._contiguous = not os.path.isdir(urlpath)
            self._chunksize_hint = None
            self._dparams = DParams(nthreads=self._n.dthreads)
            if "dparams" in kwargs:
                self.dparams = kwargs["dparams"]
            return

        itemsize = getattr(data, "itemsize", 1) if data is not None else 1
        cp = kwargs.get("cparams")
        if cp is None:
            cp = CParams(typesize=itemsize)
        elif isinstance(cp, dict) and "typesize" not in cp:
            cp = {**cp, "typesize": itemsize}
        cparams = _to_cparams(cp)
        dparams = _to_dparams(kwargs.get("dparams") or DParams())
        if chunksize is None:
            chunksize = 2**24
            if data is not None:
                chunksize = memoryview(data).nbytes
            chunksize = min(chunksize, 2**28)
        chunksize = int(chunksize)
        if chunksize > _MAX_CHUNKSIZE:
            raise ValueError("Maximum chunksize allowed is 2^31 - 1")
        meta = [(str(k), packb(v)) for k, v in (kwargs.get("meta") or {}).items()]
        if urlpath is not None:
            # (mode "w": the native constructor renames the new frame over the old one.)
            if mode != "w" and os.path.exists(urlpath):
                raise FileExistsError(f"{urlpath} exists: open it with oxblosc.open(), or pass mode='w' to replace it")
        dthreads = _checked("nthreads", dparams.nthreads, 1, 1 << 16)
        filled = data is not None and memoryview(data).nbytes > 0
        if filled and chunksize <= 0:
            raise ValueError("chunksize must be positive to split data into chunks")
        # With data, a file is named only once the data is in (a failure leaves what was there).
        staged = filled and urlpath is not None
        locked = locking and urlpath is not None
        cp = _native_cparams(cparams, tuned=True)
        self._n = _native.NativeSChunk.create(
            cp, dthreads, urlpath, self._contiguous, meta, locked and not staged, staged
        )
        self._chunksize_hint = chunksize
        self._dparams = dparams
        try:
            if tuner_arg(cparams) is not None:
                self._n.set_tuner(tuner_arg(cparams))
            if filled:
                self._n.extend(data, chunksize)
            if staged:
                self._n.publish(locked)
        except BaseException:
            if staged:  # (a failed publish leaves its temporary too)
                self._n.discard()
            raise
        if locked:
            self._n = _Locked(self._n)

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> SChunk:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> bool:
        return False

    # ------------------------------------------------------------------ properties

    @property
    def cparams(self) -> CParams:
        """Compression parameters of new chunks (settable with a CParams or a dict)."""
        cp = _cparams_from_native(self._n.cparams)
        return dataclasses.replace(cp, tuner=_core.Tuner.BTUNE) if self._n.tuned else cp

    @cparams.setter
    def cparams(self, value: Any) -> None:
        cp = _to_cparams(value)
        self._n.set_cparams(_native_cparams(cp, tuned=True))
        self._n.set_tuner(tuner_arg(cp))

    @property
    def dparams(self) -> DParams:
        """Decompression parameters (settable with a DParams or a dict)."""
        return dataclasses.replace(self._dparams)

    @dparams.setter
    def dparams(self, value: Any) -> None:
        dp = _to_dparams(value)
        self._n.set_dthreads(_checked("nthreads", dp.nthreads, 1, 1 << 16))
        self._dparams = dp

    @property
    def meta(self) -> Meta:
        """Fixed-length metalayers (set at creation with ``meta={...}``)."""
        return Meta(self)

    @property
    def vlmeta(self) -> vlmeta:
        """Variable-length metalayers."""
        return vlmeta(self)

    @property
    def attrs(self) -> vlmeta:
        """Alias of :attr:`vlmeta`."""
        return self.vlmeta

    @property
    def chunksize(self) -> int:
        """Bytes per chunk (0 when chunk sizes vary; the last chunk may be shorter)."""
        if self._n.nchunks == 0:
            return self._chunksize_hint if self._chunksize_hint is not None else max(self._n.chunksize, 0)
        return self._n.chunksize

    @property
    def chunkshape(self) -> int:
        """Items per chunk."""
        return self.chunksize // self.typesize

    @property
    def blocksize(self) -> int:
        """The requested block size in bytes, 0 for automatic (as python-blosc2 reports it;
        each chunk's actual block size is in its header)."""
        return self._n.cparams[6]

    @property
    def nchunks(self) -> int:
        return self._n.nchunks

    @property
    def nbytes(self) -> int:
        return self._n.nbytes

    @property
    def cbytes(self) -> int:
        return self._n.cbytes

    @property
    def cratio(self) -> float:
        cb = self.cbytes
        return 0.0 if cb == 0 else self.nbytes / cb

    @property
    def typesize(self) -> int:
        return self._n.typesize

    @property
    def urlpath(self) -> str | None:
        return self._urlpath

    @property
    def contiguous(self) -> bool:
        return self._contiguous

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def mmap_mode(self) -> str | None:
        return self._mmap_mode

    @property
    def locking(self) -> bool:
        """Whether this handle uses the advisory ``.b2lock`` lock."""
        return bool(self._n.locking)

    @contextlib.contextmanager
    def holding_lock(self) -> Iterator[SChunk]:
        """Hold the exclusive lock across several changes, so other locked handles (ours or
        python-blosc2's) see all of them or none. A no-op without ``locking``; needs a
        writable handle."""
        if not self.locking:
            yield self
            return
        self._n.hold_lock()
        try:
            yield self
        finally:
            self._n.release_lock()

    def lock(self) -> None:
        """Take the exclusive lock until ``unlock()`` (``holding_lock`` as two calls, as in
        python-blosc2). A no-op without ``locking``."""
        if self.locking:
            self._n.hold_lock()

    def unlock(self) -> None:
        """Release the lock taken with ``lock()``."""
        if self.locking:
            self._n.release_lock()

    def get_cparams(self) -> CParams:
        return self.cparams

    def get_dparams(self) -> DParams:
        return self.dparams

    def update_cparams(self, new_cparams: Any) -> None:
        """Set the compression parameters of new chunks (a CParams or a dict)."""
        self.cparams = new_cparams

    def update_dparams(self, new_dparams: Any) -> None:
        self.dparams = new_dparams

    def refresh(self) -> bool:
        """Locked handles: re-read the frame if another handle changed it (python-blosc2's
        ``SChunk.refresh``); returns whether it did. Data accesses do this by themselves."""
        return bool(self._n.refresh())

    # ---------------------------------------------------------------- checksums (oxblosc only)

    @property
    def checksums(self) -> str | None:
        """``"xxh3-64"`` when the super-chunk keeps per-chunk checksums (the ``_oxblosc_checksums``
        vlmetalayer, see docs/format-notes.md), ``None`` when it does not."""
        kind, detail = self._n.checksum_status()
        if kind == "unreadable":
            raise ValueError(f"checksum vlmetalayer unreadable: {detail}")
        return "xxh3-64" if kind == "on" else None

    def enable_checksums(self) -> None:
        """Start keeping a checksum per chunk (hashes the existing chunks); kept through appends,
        updates and deletes and written to the file with every change."""
        self._n.enable_checksums()

    def disable_checksums(self) -> None:
        self._n.disable_checksums()

    @property
    def verify_checksums(self) -> bool:
        """Whether every chunk read is checked against its checksum (a mismatch raises). On by
        default for frames that carry checksums; set False to skip the check."""
        return self._n.verify_checksums

    @verify_checksums.setter
    def verify_checksums(self, on: bool) -> None:
        self._n.set_verify_checksums(bool(on))

    def verify(self) -> int:
        """Check every chunk's checksum and decode it; returns how many chunks had a checksum.
        Raises ``oxblosc.ChunkError`` naming the first damaged chunk."""
        return sum(self._n.verify_chunk(i) for i in range(self.nchunks))

    @property
    def info_items(self) -> list[tuple[str, Any]]:
        """The ``(name, value)`` rows of :attr:`info`."""
        return [
            ("type", "SChunk"),
            ("chunksize", self.chunksize),
            ("blocksize", self.blocksize),
            ("typesize", self.typesize),
            ("nchunks", self.nchunks),
            ("nbytes", human_bytes(self.nbytes)),
            ("cbytes", human_bytes(self.cbytes)),
            ("cratio", f"{self.cratio:.2f}"),
            ("cparams", cparams_summary(self.cparams)),
            ("urlpath", self.urlpath),
            ("contiguous", self.contiguous),
            ("vlmeta", list(self.vlmeta)),
        ]

    @property
    def info(self) -> InfoTable:
        """A readable summary (a ``str`` that a REPL or notebook shows as a table)."""
        return InfoTable(self.info_items)

    def __len__(self) -> int:
        """Number of items."""
        return self.nbytes // self.typesize

    def __repr__(self) -> str:
        where = f"urlpath={self._urlpath!r}" if self._urlpath else "in memory"
        return f"<oxblosc.SChunk {where}, {self.nchunks} chunks, {self.nbytes} bytes, cratio {self.cratio:.2f}>"

    # ------------------------------------------------------------------ chunks

    def _writable(self) -> None:
        if self._urlpath is not None and self._mode == "r":
            raise ValueError("Cannot do this action with reading mode")

    def _index(self, nchunk: int, end: bool = False) -> int:
        if isinstance(self._n, _Locked):
            self._n.refresh()  # follow chunks another handle appended
        n = self._n.nchunks
        i = int(nchunk)
        if i < 0 or i > n or (i == n and not end):
            raise IndexError(f"chunk {nchunk} is out of range (super-chunk has {n})")
        return i

    def append_data(self, data: Any) -> int:
        """Compress ``data`` and append it as a chunk; returns the number of chunks."""
        self._writable()
        if self._prefilter is not None:
            with self._wlock:
                return self._n.append_chunk(self._prefiltered(data, len(self)))
        return self._n.append_data(data)

    def insert_data(self, nchunk: int, data: Any, copy: bool = True) -> int:
        """Compress ``data`` and insert it as chunk ``nchunk``."""
        self._writable()
        i = self._index(nchunk, end=True)
        if self._prefilter is not None:
            return self._n.insert_chunk(i, self._prefiltered(data, self._first_item(i)))
        return self._n.insert_data(i, data)

    def update_data(self, nchunk: int, data: Any, copy: bool = True) -> int:
        """Compress ``data`` and replace chunk ``nchunk`` with it."""
        self._writable()
        if self._n.nchunks == 0:
            return 0
        i = self._index(nchunk)
        if self._prefilter is not None:
            return self._n.update_chunk(i, self._prefiltered(data, self._first_item(i)))
        return self._n.update_data(i, data)

    # ------------------------------------------------------------------ Python block callbacks

    def prefilter(self, input_dtype: Any, output_dtype: Any = None) -> Any:
        """Decorator: ``func(input, output, offset)`` fills each block's data before it is
        compressed (``offset``: the block's first item in the super-chunk). Data written
        from then on goes through it (``append_data``, ``insert_data``, ``update_data``,
        appending with ``schunk[n:m] = ...``)."""

        types = blockfuncs.BlockFunc.make(None, input_dtype, output_dtype)  # checked before decorating

        def register(func: Any) -> Any:
            self._prefilter = dataclasses.replace(types, func=func)
            return func

        return register

    def postfilter(self, input_dtype: Any, output_dtype: Any = None) -> Any:
        """Decorator: ``func(input, output, offset)`` turns each decompressed block into what
        reads return (``decompress_chunk``, ``get_slice``, ``schunk[...]``, ``iterchunks``)."""

        types = blockfuncs.BlockFunc.make(None, input_dtype, output_dtype)  # checked before decorating

        def register(func: Any) -> Any:
            self._postfilter = dataclasses.replace(types, func=func)
            return func

        return register

    def remove_prefilter(self, func_name: str | None = None) -> None:
        self._prefilter = None

    def remove_postfilter(self, func_name: str | None = None) -> None:
        self._postfilter = None

    def filler(self, inputs_tuple: tuple, schunk_dtype: Any, nelem: int | None = None) -> Any:
        """Decorator: append ``nelem`` items (default: the operands' length) computed block by
        block by ``func(inputs, output, offset)``; ``inputs_tuple`` holds ``(operand, dtype)``
        pairs (SChunk, NumPy array or scalar), and ``inputs`` the operands' items of the
        block. Runs once, when decorating."""
        dtype = np.dtype(schunk_dtype)
        if dtype.itemsize != self.typesize:
            raise ValueError(f"schunk_dtype {dtype} does not match the super-chunk's typesize {self.typesize}")
        n = blockfuncs.nelem_of(tuple(inputs_tuple), nelem)

        def run(func: Any) -> Any:
            self._writable()
            cs = self.chunksize if self.chunksize > 0 else self._chunksize_hint
            if not cs:
                raise ValueError("filler needs the super-chunk's chunksize")
            with self._wlock:
                if self.nchunks and len(self) % (cs // dtype.itemsize):
                    raise ValueError("filler appends whole chunks: the last chunk is not full")
                before = self.nchunks
                try:
                    blockfuncs.fill(self._n.append_chunk, func, tuple(inputs_tuple), dtype, cs // dtype.itemsize,
                                    len(self), n, self.cparams)  # fmt: skip
                except BaseException:
                    while self._n.nchunks > before:  # a failed filler leaves the super-chunk as it was
                        self._n.delete_chunk(self._n.nchunks - 1)
                    raise
            return func

        return run

    def _first_item(self, nchunk: int) -> int:
        """Index of chunk ``nchunk``'s first item (all chunks but the last are full)."""
        if nchunk == 0:
            return 0
        cs = self.chunksize
        if cs > 0:
            return nchunk * (cs // self.typesize)
        return sum(self._n.chunk_summary(j)[0] for j in range(nchunk)) // self.typesize

    def _prefiltered(self, data: Any, first_item: int) -> bytes:
        pre = self._prefilter
        assert pre is not None
        return blockfuncs.compress_with(pre, data, first_item, self.cparams)

    def _postfiltered(self, nchunk: int, raw: bytes, first_item: int | None = None) -> bytes:
        post = self._postfilter
        assert post is not None
        first = self._first_item(nchunk) if first_item is None else first_item
        nbytes, _, special, _, head = self._n.chunk_summary(nchunk)
        if special:  # one nominal block (all zeros, NaN...): use the blocks data would get
            blocksize = blockfuncs.new_chunk_blocksize(nbytes, self.cparams)
        else:
            blocksize = int.from_bytes(head[8:12], "little")  # the header's blocksize field
        return post.run(raw, first, blocksize, "postfilter")

    def append_chunk(self, chunk: Any) -> int:
        """Append an already compressed chunk."""
        self._writable()
        return self._n.append_chunk(chunk)

    def insert_chunk(self, nchunk: int, chunk: Any) -> int:
        """Insert an already compressed chunk at ``nchunk``."""
        self._writable()
        return self._n.insert_chunk(self._index(nchunk, end=True), chunk)

    def update_chunk(self, nchunk: int, chunk: Any) -> int:
        """Replace chunk ``nchunk`` with an already compressed chunk."""
        self._writable()
        return self._n.update_chunk(self._index(nchunk), chunk)

    def delete_chunk(self, nchunk: int) -> int:
        """Remove chunk ``nchunk``; returns the number of chunks left."""
        self._writable()
        return self._n.delete_chunk(self._index(nchunk))

    def get_chunk(self, nchunk: int) -> bytes:
        """Chunk ``nchunk`` as stored (compressed)."""
        return self._n.get_chunk(self._index(nchunk))

    def get_lazychunk(self, nchunk: int) -> bytes:
        """The header of chunk ``nchunk`` (whole for special chunks), as python-blosc2 gives it."""
        return self._n.chunk_summary(self._index(nchunk))[4]

    def decompress_chunk(self, nchunk: int, dst: Any = None) -> bytes | None:
        """Decompress chunk ``nchunk``; into ``dst`` (returning None) when given."""
        i = self._index(nchunk)
        if self._postfilter is not None:
            raw = self._postfiltered(i, self._n.decompress_chunk(i))
            if dst is None:
                return raw
            view = memoryview(dst).cast("B")
            if view.nbytes < len(raw):
                raise ValueError(f"dst holds {view.nbytes} bytes, chunk {nchunk} needs {len(raw)}")
            view[: len(raw)] = raw
            return None
        if dst is None:
            return self._n.decompress_chunk(i)
        if memoryview(dst).nbytes == 0:
            raise ValueError("dst must not be empty")
        self._n.decompress_chunk_into(i, dst)
        return None

    def fill_special(self, nitems: int, special_value: Any, value: Any = None) -> int:
        """Append ``nitems`` items of a special value without compressing data:
        ``SpecialValue.ZERO``, ``NAN``, ``UNINIT`` or ``VALUE`` (repeating ``value``)."""
        self._writable()
        if not isinstance(special_value, enum.Enum) or type(special_value).__name__ != "SpecialValue":
            raise TypeError("special_value must be a SpecialValue instance other than NOT_SPECIAL")
        kind = SpecialValue(special_value.value)
        if kind == SpecialValue.NOT_SPECIAL:
            raise TypeError("special_value must be a SpecialValue instance other than NOT_SPECIAL")
        nitems = _checked("nitems", nitems, 0, 2**62)
        raw = None
        if kind == SpecialValue.VALUE:
            if value is None:
                raise ValueError("value cannot be None when special_value is VALUE")
            if nitems == 0:
                return 0
            if self.nbytes > 0:
                raise RuntimeError("Filling with special values only works on empty SChunks")
            raw = _fill_bytes(value, self.typesize)
        cs = self.chunksize if self.chunksize > 0 else self._chunksize_hint
        return self._n.fill_special(nitems, int(kind), raw, cs)

    # ------------------------------------------------------------------ items

    def get_slice(self, start: int | None = 0, stop: int | None = None, out: Any = None) -> bytes | None:
        """Items ``[start, stop)`` as bytes, or into ``out`` (returning None)."""
        start, stop, _ = slice(start, stop, 1).indices(len(self))
        if start >= stop:
            return b""
        if self._postfilter is not None:
            raw = self._postfiltered_slice(start, stop)
            if out is None:
                return raw
            view = memoryview(out).cast("B")
            if view.nbytes < len(raw):
                raise ValueError("Not enough space for writing the slice in out")
            view[: len(raw)] = raw
            return None
        if out is None:
            return self._n.get_slice(start, stop)
        if memoryview(out).nbytes < (stop - start) * self.typesize:
            raise ValueError("Not enough space for writing the slice in out")
        self._n.get_slice_into(start, stop, out)
        return None

    def _postfiltered_slice(self, start: int, stop: int) -> bytes:
        """Items ``[start, stop)`` through the postfilter: the chunks they touch, whole."""
        ts, parts, first = self.typesize, [], 0
        for i in range(self.nchunks):
            n = self._n.chunk_summary(i)[0] // ts
            if start < first + n and first < stop:
                raw = self._postfiltered(i, self._n.decompress_chunk(i), first)
                parts.append(raw[max(start - first, 0) * ts : (min(stop, first + n) - first) * ts])
            first += n
            if first >= stop:
                break
        return b"".join(parts)

    def __getitem__(self, item: int | slice) -> bytes:
        if isinstance(item, slice):
            if item.step is not None and item.step != 1:
                raise IndexError("`step` must be 1")
            return self.get_slice(item.start, item.stop)
        item = int(item)
        if item == -1:
            return self.get_slice(item)
        return self.get_slice(item, item + 1)

    def __setitem__(self, key: int | slice, value: Any) -> None:
        """Overwrite items ``key`` with the bytes of ``value``; a slice ending past the last
        item appends (filling a short last chunk first, then chunks of ``chunksize``)."""
        if not isinstance(key, slice):
            key = slice(int(key), int(key) + 1)
        if key.step is not None and key.step != 1:
            raise IndexError("`step` must be 1")
        self._writable()
        with self._wlock:  # the item count read here must hold until written
            self._setitems(key, value)

    def _setitems(self, key: slice, value: Any) -> None:
        n = len(self)
        start = 0 if key.start is None else key.start + n if key.start < 0 else key.start
        stop = n if key.stop is None else key.stop + n if key.stop < 0 else key.stop
        if stop - start <= 0:
            raise ValueError("`stop` mut be greater than `start`")
        if start > n:
            raise ValueError("`start` cannot be greater than the SChunk nitems")
        ts = self.typesize
        mv = memoryview(value)
        if not mv.c_contiguous:
            raise ValueError("value must be C-contiguous")
        mv = mv.cast("B")
        nbytes = (stop - start) * ts
        if mv.nbytes < nbytes:
            raise ValueError("Not enough data for writing the slice")
        mv = mv[:nbytes]
        if self._prefilter is not None:
            self._append_prefiltered(start, mv)
            return
        if stop <= n:
            self._n.set_slice(start, mv)
            return
        inside = (n - start) * ts
        if inside > 0:
            self._n.set_slice(start, mv[:inside])
        cs = self.chunksize if self.chunksize > 0 else self._chunksize_hint or nbytes - inside
        self._n.extend(mv[inside:], cs)

    def _append_prefiltered(self, start: int, data: memoryview) -> None:
        """``schunk[start:...] = data`` with a prefilter: only appending whole chunks (an
        overwrite would run the prefilter again over data it already changed)."""
        n, ts = len(self), self.typesize
        cs = self.chunksize if self.chunksize > 0 else self._chunksize_hint or data.nbytes
        if start != n or n % (cs // ts):
            raise NotImplementedError("with a prefilter, items can only be appended after the last full chunk")
        for b0 in range(0, data.nbytes, cs):
            self._n.append_chunk(self._prefiltered(data[b0 : b0 + cs], (n * ts + b0) // ts))

    def iterchunks(self, dtype: Any) -> Iterator[np.ndarray]:
        """Decompressed chunks as NumPy arrays of ``dtype`` (one new array per chunk, sized
        to the chunk: the last may be shorter)."""
        dtype = np.dtype(dtype)
        for i in range(self.nchunks):
            yield np.frombuffer(self.decompress_chunk(i), dtype=dtype)

    def iterchunks_info(self) -> Iterator[ChunkInfo]:
        """Per chunk: ``ChunkInfo(nchunk, cratio, special, repeated_value, lazychunk)``."""
        for i in range(self.nchunks):
            nbytes, cbytes, special, value, lazy = self._n.chunk_summary(i)
            yield ChunkInfo(i, nbytes / cbytes if cbytes else 0.0, SpecialValue(special), value, lazy)

    def to_cframe(self) -> bytes:
        """The super-chunk as an in-memory contiguous frame (what python-blosc2 reads with
        ``blosc2.schunk_from_cframe``)."""
        return self._n.to_cframe()


# ---------------------------------------------------------------------------------------------
# module functions


def _env_locking(mmap_mode: str | None) -> bool:
    """``BLOSC_LOCKING`` (set and not "0") turns locking on, except for mapped files."""
    return os.environ.get("BLOSC_LOCKING", "") not in ("", "0") and mmap_mode is None


def schunk_from_cframe(cframe: Any, copy: bool = False) -> SChunk:
    """A super-chunk from an in-memory contiguous frame (``SChunk.to_cframe`` or
    ``blosc2.SChunk.to_cframe`` output). The bytes are copied once whatever ``copy`` says."""
    native = _native.NativeSChunk.from_cframe(cframe)
    s = SChunk(_native=native, contiguous=True, mode="a")
    s.cparams = dataclasses.replace(s.cparams, nthreads=_core.nthreads)
    return s


def remove_urlpath(path: str | os.PathLike | None) -> None:
    """Remove a frame file or a sparse frame directory; nothing happens if it does not exist.

    Unlike python-blosc2, a directory is only removed when it is a sparse frame (holds
    ``chunks.b2frame``)."""
    if path is None:
        return
    _native.remove_urlpath(_fspath(path))


__all__ = ["ChunkInfo", "ExtType", "Meta", "SChunk", "packb", "remove_urlpath", "schunk_from_cframe", "unpackb"]
