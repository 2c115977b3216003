"""Opening stored objects as what they hold: a frame file, sparse directory or in-memory
frame becomes an ``NDArray`` when it carries the b2nd metalayer, an ``SChunk`` otherwise.

This module sits above ``schunk`` and ``ndarray`` (it needs both), so neither of them knows
the other's callers.
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
import urllib.request
from typing import Any

from . import _native
from . import core as _core
from .core import DParams, _checked
from .ndarray import NDArray, _from_schunk
from .schunk import (
    _MMAP_MODES,
    SChunk,
    _env_locking,
    _fspath,
    _Locked,
    _open_native,
    schunk_from_cframe,
)


def open(urlpath: str | os.PathLike, mode: str = "r", offset: int = 0, **kwargs: Any) -> Any:  # noqa: A001
    """Open a frame file or sparse frame directory written by oxblosc or python-blosc2
    (a table directory or ``.b2z`` file opens as a ``CTable``).

    ``mode`` is "r" (read-only, the default as in python-blosc2 4.x), "a" (every change is
    written back) or "w": as in python-blosc2, an array (b2nd frame) is opened writable with
    its data, while a plain super-chunk is replaced by an empty one with the same compression
    parameters (metalayers and vlmeta dropped).
    ``offset`` opens a frame embedded in a larger file (read-only). ``mmap_mode="r"`` maps
    the file read-only; "r+" or "c" select the access mode. ``locking=True`` takes
    python-blosc2's advisory ``.b2lock`` lock (see the module docs); ``cparams``/``dparams``
    apply to the opened super-chunk. Chunks are checked against the checksums oxblosc stores
    on every read whenever the frame carries them; ``verify_checksums=False`` skips that for
    speed, and ``verify_checksums=True`` additionally insists on them (``ValueError`` for a
    frame without checksums, such as one python-blosc2 wrote).
    """
    path = _local_path(urlpath)
    unknown = set(kwargs) - {
        "cparams",
        "dparams",
        "mmap_mode",
        "initial_mapping_size",
        "locking",
        "deserialize",
        "verify_checksums",
    }
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]} is not supported as keyword argument")
    mmap_mode = kwargs.get("mmap_mode")
    if kwargs.get("locking") and mmap_mode is not None:
        raise ValueError("locking is not supported together with mmap_mode")
    locking = bool(kwargs.get("locking")) or _env_locking(mmap_mode)
    if mmap_mode is not None:
        if mmap_mode == "w+":
            raise ValueError("w+ mmap_mode cannot be used to open an existing file")
        if mmap_mode not in _MMAP_MODES:
            raise ValueError(f"Invalid mmap_mode: {mmap_mode}")
        mode = _MMAP_MODES[mmap_mode]
    if mode not in ("r", "a", "w"):
        raise ValueError(f"mode must be 'r', 'a' or 'w', got {mode!r}")
    offset = _checked("offset", offset, 0, 2**63 - 1)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    from . import ctable_layout  # tables (directory or .b2z, ours or python-blosc2's)

    if offset == 0 and not kwargs and ctable_layout.is_table(path):
        from .ctable import CTable

        return CTable.open(path, mode="a" if mode == "a" else "r")
    contiguous = not os.path.isdir(path)
    copy_on_write = mmap_mode == "c"
    native = _open_native(path, offset, mode != "r" and not copy_on_write, locking, mmap_mode == "r")
    if copy_on_write:
        native = native.copy()
    is_array = bool({"b2nd", "caterva"} & set(native.meta_names()))
    if mode == "w" and not is_array:
        cp = native.cparams
        native = _native.NativeSChunk.create(cp, native.dthreads, path, contiguous, [], locking)
        native = _Locked(native) if locking else native
    s = SChunk(_native=native, urlpath=path, mode=mode, mmap_mode=mmap_mode, contiguous=contiguous)
    cp = kwargs.get("cparams")
    if cp is not None:
        s.cparams = cp
    else:
        try:
            s.cparams = dataclasses.replace(s.cparams, nthreads=_core.nthreads)
        except ValueError:
            # The file's codec or filter is not registered here: it still opens, and reading
            # a chunk says which id is missing and who provides it.
            pass
    s.dparams = kwargs.get("dparams") or DParams()
    verify = kwargs.get("verify_checksums")
    if verify is not None:
        if verify:
            native.require_checksums()
        s.verify_checksums = bool(verify)
    if is_array and {"b2o", "LazyArray"} & set(native.meta_names()):
        from .saved import open_saved  # a saved lazy expression (python-blosc2's layout)

        return open_saved(_from_schunk(s))
    if is_array:
        return _from_schunk(s)  # b2nd frames open as arrays, as in python-blosc2
    return s


def _local_path(urlpath: Any) -> str:
    """The file a path or ``file://`` URI names (python-blosc2's ``open`` takes both)."""
    path = _fspath(urlpath)
    if path.startswith("file://"):
        return urllib.request.url2pathname(urllib.parse.urlparse(path).path)
    return path


def from_cframe(cframe: Any, copy: bool = True) -> SChunk | NDArray:
    """The super-chunk or array (b2nd metalayer) held by an in-memory frame, from
    ``to_cframe`` here or in python-blosc2. The bytes are copied once whatever ``copy`` says."""
    s = schunk_from_cframe(cframe, copy)
    return _from_schunk(s) if {"b2nd", "caterva"} & set(s.meta.keys()) else s


def load(urlpath: str | os.PathLike, offset: int = 0, **kwargs: Any) -> SChunk | NDArray:
    """The object stored at ``urlpath`` as a standalone in-memory copy (``kwargs`` as for
    :func:`open`, which reads the file)."""
    with open(urlpath, "r", offset, **kwargs) as stored:
        return from_cframe(stored.to_cframe())


def save(array: NDArray, urlpath: str | os.PathLike, contiguous: bool = True, **kwargs: Any) -> None:
    """Write ``array`` to ``urlpath`` (:meth:`NDArray.save`)."""
    array.save(urlpath, contiguous, **kwargs)


__all__ = ["from_cframe", "load", "open", "save"]
