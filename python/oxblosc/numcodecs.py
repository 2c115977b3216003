"""numcodecs codecs backed by oxblosc: ``Blosc`` (a drop-in for ``numcodecs.Blosc``) and
``Blosc2`` (whole Blosc2 chunks, every codec, filter and split option).

``Blosc`` writes Blosc1 chunks (format version 2, what c-blosc 1.x, ``numcodecs.Blosc`` and
Zarr v2's ``blosc`` compressor read) with numcodecs' configuration keys and defaults
(``cname="lz4", clevel=5, shuffle=SHUFFLE, blocksize=0``; ``typesize`` is a constructor
argument that, as in numcodecs, is not part of the configuration). It reads every Blosc
chunk, numcodecs' included. To make Zarr v2 and ``numcodecs.get_codec({"id": "blosc"})``
use it instead of numcodecs' own class: ``numcodecs.register_codec(oxblosc.numcodecs.Blosc)``.

``Blosc2`` (``codec_id = "blosc2"``) is registered through numcodecs' entry point group
(``numcodecs.codecs``), so ``numcodecs.get_codec({"id": "blosc2", ...})`` finds it once
oxblosc is installed. Its chunks are plain Blosc2 chunks (python-blosc2's ``decompress2``
reads them); they are not readable by Blosc1-only readers, hence the separate id.

Threads: ``nthreads`` is per codec object and per call, never process-wide. Left at None,
a call uses ``oxblosc.nthreads`` on the main thread and one thread anywhere else (a Dask or
``distributed`` worker, Zarr's codec threads, any thread pool): those already run one
chunk per thread, and more threads per call only multiply (:func:`call_nthreads`). Nothing
here keeps state across ``fork``: a forked child compresses with fresh thread pools.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numcodecs.abc import Codec as _NumcodecsCodec
from numcodecs.compat import ensure_contiguous_ndarray

from . import core as _core
from .core import MAX_BUFFERSIZE, Codec, Filter, SplitMode, _checked, call_nthreads

_CNAMES = {"blosclz": Codec.BLOSCLZ, "lz4": Codec.LZ4, "lz4hc": Codec.LZ4HC, "zlib": Codec.ZLIB, "zstd": Codec.ZSTD}
_SHUFFLE_NAMES = {-1: "AUTOSHUFFLE", 0: "NOSHUFFLE", 1: "SHUFFLE", 2: "BITSHUFFLE"}
_FILTER_NAMES = {f.name.lower(): f for f in Filter}
_SPLIT_NAMES = {"always": SplitMode.ALWAYS_SPLIT, "never": SplitMode.NEVER_SPLIT, "auto": SplitMode.AUTO_SPLIT}
_SPLIT_NAMES["forward_compat"] = SplitMode.FORWARD_COMPAT_SPLIT


def _codec_id(cname: str) -> Codec:
    if cname not in _CNAMES:
        raise ValueError(f"compressor not supported: {cname!r} (oxblosc has {', '.join(_CNAMES)})")
    return _CNAMES[cname]


def _input(buf: Any, max_size: int) -> np.ndarray:
    """The bytes to compress as a contiguous array (numcodecs' checks: no objects, size cap)."""
    return ensure_contiguous_ndarray(buf, max_size)


def _decode(buf: Any, out: Any, nthreads: int | None) -> Any:
    """Decompress any Blosc/Blosc2 chunk into new bytes or into ``out`` (returned). As
    numcodecs' Blosc, ``out`` may be larger than the chunk: its first bytes are filled."""
    src = ensure_contiguous_ndarray(buf)
    n = call_nthreads(nthreads)
    if out is None:
        return _core.decompress2(src, nthreads=n)
    dst = ensure_contiguous_ndarray(out)
    nbytes = _core.get_cbuffer_sizes(src)[0]
    if dst.nbytes < nbytes:
        raise ValueError(f"destination holds {dst.nbytes} bytes, the chunk decodes to {nbytes}")
    if not dst.flags.writeable:
        raise ValueError("destination is read-only")
    if nbytes:
        _core.decompress2(src, dst.reshape(-1).view(np.uint8)[:nbytes], nthreads=n)
    return out


class Blosc(_NumcodecsCodec):
    """Blosc1 chunks with numcodecs' ``Blosc`` parameters (see the module docs).

    ``shuffle``: NOSHUFFLE (0), SHUFFLE (1), BITSHUFFLE (2) or AUTOSHUFFLE (-1: bit-shuffle
    for 1-byte items, byte-shuffle otherwise, decided per buffer, the config keeps -1).
    ``typesize``: the item size shuffling uses (default: the buffer's item size).
    ``nthreads``: threads per call (default: :func:`call_nthreads`)."""

    codec_id = "blosc"
    NOSHUFFLE, SHUFFLE, BITSHUFFLE, AUTOSHUFFLE = 0, 1, 2, -1
    AUTOBLOCKS = 0
    max_buffer_size = 2**31 - 1

    def __init__(
        self,
        cname: str = "lz4",
        clevel: int = 5,
        shuffle: int = SHUFFLE,
        blocksize: int = AUTOBLOCKS,
        typesize: int | None = None,
        nthreads: int | None = None,
    ) -> None:
        if isinstance(cname, bytes):
            cname = cname.decode("ascii")
        self.cname = cname
        self.clevel = clevel
        self.shuffle = shuffle
        self.blocksize = blocksize
        if shuffle not in _SHUFFLE_NAMES:
            raise ValueError(f"shuffle must be -1, 0, 1 or 2, got {shuffle!r}")
        if typesize is not None and typesize < 1:
            raise ValueError(f"typesize must be positive, got {typesize}")
        self._typesize = typesize
        self._nthreads = nthreads

    def encode(self, buf: Any) -> bytes:
        arr = _input(buf, self.max_buffer_size)
        itemsize = self._typesize or arr.dtype.itemsize
        shuffle = self.shuffle
        if shuffle == self.AUTOSHUFFLE:
            shuffle = self.BITSHUFFLE if itemsize == 1 else self.SHUFFLE
        return _core.compress_blosc1(
            arr.view(np.uint8) if arr.dtype != np.uint8 else arr,
            typesize=itemsize,
            clevel=self.clevel,
            shuffle=Filter(shuffle),
            codec=_codec_id(self.cname),
            blocksize=self.blocksize,
            nthreads=call_nthreads(self._nthreads),
        )

    def decode(self, buf: Any, out: Any = None) -> Any:
        return _decode(buf, out, self._nthreads)

    def decode_partial(self, buf: Any, start: int, nitems: int, out: Any = None) -> Any:
        """Items ``[start, start + nitems)`` (in the chunk's typesize units), decoding only
        the blocks that hold them."""
        data = _core.getitem(ensure_contiguous_ndarray(buf), start, nitems)
        if out is None:
            return data
        dst = ensure_contiguous_ndarray(out).view(np.uint8)
        dst[: len(data)] = np.frombuffer(data, np.uint8)
        return out

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(cname={self.cname!r}, clevel={self.clevel!r}, "
            f"shuffle={_SHUFFLE_NAMES[self.shuffle]}, blocksize={self.blocksize})"
        )


def _names(values: Any, table: dict, what: str) -> list[str]:
    """Filter or codec entries given as names or numbers, as lower-case names (JSON-able)."""
    by_number = {int(v): k for k, v in table.items()}
    out = []
    for v in values:
        if isinstance(v, str) and v.lower() in table:
            out.append(v.lower())
        elif not isinstance(v, str) and int(v) in by_number:
            out.append(by_number[int(v)])
        else:
            raise ValueError(f"unknown {what} {v!r} (known: {', '.join(table)})")
    return out


class Blosc2(_NumcodecsCodec):
    """Whole Blosc2 chunks (``codec_id = "blosc2"``), python-blosc2's ``compress2`` options.

    ``cname``: blosclz, lz4, lz4hc, zlib or zstd; ``filters``: up to 6 names or numbers of
    :class:`oxblosc.Filter` (default ``["shuffle"]``), with ``filters_meta``; ``splitmode``:
    always, never, auto or forward_compat; ``typesize`` defaults to the buffer's item size;
    ``codec_meta`` and ``use_dict`` as in ``CParams``; ``nthreads`` per call (not in the
    config, default: :func:`call_nthreads`)."""

    codec_id = "blosc2"
    max_buffer_size = MAX_BUFFERSIZE

    def __init__(
        self,
        cname: str = "zstd",
        clevel: int = 5,
        filters: Any = ("shuffle",),
        filters_meta: Any = None,
        blocksize: int = 0,
        splitmode: str = "auto",
        typesize: int | None = None,
        codec_meta: int = 0,
        use_dict: bool = False,
        nthreads: int | None = None,
    ) -> None:
        self.cname = _names([cname], _CNAMES, "codec")[0]
        self.clevel = _checked("clevel", clevel, 0, 9)
        self.filters = _names(filters, _FILTER_NAMES, "filter")
        if len(self.filters) > 6:
            raise ValueError("filters hold at most 6 entries")
        meta = [0] * len(self.filters) if filters_meta is None else [int(m) for m in filters_meta]
        if len(meta) != len(self.filters):
            raise ValueError(f"{len(meta)} filters_meta entries for {len(self.filters)} filters")
        self.filters_meta = meta
        self.blocksize = _checked("blocksize", blocksize, 0, _core.MAX_BLOCKSIZE)
        self.splitmode = _names([splitmode], _SPLIT_NAMES, "splitmode")[0]
        self.typesize = None if typesize is None else _checked("typesize", typesize, 1, _core.MAX_TYPESIZE)
        self.codec_meta = _checked("codec_meta", codec_meta, 0, 255)
        self.use_dict = bool(use_dict)
        self._nthreads = nthreads

    def encode(self, buf: Any) -> bytes:
        arr = _input(buf, self.max_buffer_size)
        return _core.compress2(
            arr.view(np.uint8) if arr.dtype != np.uint8 else arr,
            codec=_CNAMES[self.cname],
            clevel=self.clevel,
            filters=[_FILTER_NAMES[f] for f in self.filters],
            filters_meta=list(self.filters_meta),
            blocksize=self.blocksize,
            splitmode=_SPLIT_NAMES[self.splitmode],
            typesize=self.typesize or arr.dtype.itemsize,
            codec_meta=self.codec_meta,
            use_dict=self.use_dict,
            nthreads=call_nthreads(self._nthreads),
        )

    def decode(self, buf: Any, out: Any = None) -> Any:
        return _decode(buf, out, self._nthreads)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "id")
        return f"{type(self).__name__}({args})"


__all__ = ["Blosc", "Blosc2", "call_nthreads"]
