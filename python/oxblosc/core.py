"""Chunk compression with python-blosc2's names, defaults and semantics.

Everything that touches bytes happens in Rust (``oxblosc._native``); this module converts
arguments, applies python-blosc2's conventions and picks the right native call.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from . import _native

MAX_TYPESIZE = 536_866_816
MAX_BUFFERSIZE = 2_147_483_615
MAX_OVERHEAD = 32
MIN_HEADER_LENGTH = 16
EXTENDED_HEADER_LENGTH = 32
MAX_BLOCKSIZE = 536_866_816
MAX_DIM = 16

ncores: int = _native.default_nthreads()
#: Default number of threads, from ``BLOSC_NTHREADS`` or the number of cores.
nthreads: int = ncores


class Codec(enum.IntEnum):
    """Codecs, numbered as in Blosc2."""

    BLOSCLZ = 0
    LZ4 = 1
    LZ4HC = 2
    ZLIB = 4
    ZSTD = 5
    NDLZ = 32
    ZFP_ACC = 33
    ZFP_PREC = 34
    ZFP_RATE = 35


class Filter(enum.IntEnum):
    """Filters, numbered as in Blosc2."""

    NOFILTER = 0
    SHUFFLE = 1
    BITSHUFFLE = 2
    DELTA = 3
    TRUNC_PREC = 4
    NDCELL = 32
    NDMEAN = 33
    BYTEDELTA = 35
    INT_TRUNC = 36


class SplitMode(enum.IntEnum):
    """Whether blocks are split into one stream per byte of the type."""

    ALWAYS_SPLIT = 1
    NEVER_SPLIT = 2
    AUTO_SPLIT = 3
    FORWARD_COMPAT_SPLIT = 4


class SpecialValue(enum.IntEnum):
    """Values a special chunk stands for without storing data."""

    NOT_SPECIAL = 0
    ZERO = 1
    NAN = 2
    VALUE = 3
    UNINIT = 4


class Tuner(enum.IntEnum):
    """Tuners, numbered as in Blosc2. STUNE: fixed parameters (oxblosc's automatic block
    rule). BTUNE: oxblosc's per-chunk tuner picks codec, clevel, filters and split mode for
    the chunks an SChunk or NDArray writes (settings: ``oxblosc.set_chunk_tuner``); the
    choices are recorded in the chunk headers only, so any Blosc2 reader decodes them."""

    STUNE = 0
    BTUNE = 32


def _default_filters() -> list:
    return [Filter.NOFILTER] * 5 + [Filter.SHUFFLE]


def _default_nthreads() -> int:
    return nthreads


@dataclass
class CParams:
    """Compression parameters (same fields and defaults as ``blosc2.CParams``)."""

    codec: Codec | int = Codec.ZSTD
    codec_meta: int = 0
    clevel: int = 5
    use_dict: bool = False
    typesize: int = 8
    nthreads: int = field(default_factory=_default_nthreads)
    blocksize: int = 0
    splitmode: SplitMode = SplitMode.AUTO_SPLIT
    filters: list = field(default_factory=_default_filters)
    filters_meta: list = field(default_factory=lambda: [0] * 6)
    tuner: Tuner = Tuner.STUNE

    def __post_init__(self):
        self.tuner = Tuner(getattr(self.tuner, "value", self.tuner))
        # As python-blosc2's CParams: the lists keep the user's length (filters_meta cut to
        # the filters'; here a shorter one is padded with zeros instead of refused), and a
        # BYTEDELTA without meta gets the typesize as its stream count.
        if len(self.filters) > 6:
            raise ValueError("filters and filters_meta hold at most 6 entries")
        self.filters = list(self.filters)
        self.filters_meta = list(self.filters_meta)[: len(self.filters)]
        self.filters_meta += [0] * (len(self.filters) - len(self.filters_meta))
        for i, f in enumerate(self.filters):
            if f == Filter.BYTEDELTA and self.filters_meta[i] == 0:
                self.filters_meta[i] = self.typesize


@dataclass
class DParams:
    """Decompression parameters (same fields and defaults as ``blosc2.DParams``)."""

    nthreads: int = field(default_factory=_default_nthreads)


def _checked(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, enum.Enum):
        # python-blosc2's Codec/Filter/SplitMode are plain Enums: take their number.
        value = value.value
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {v}")
    return v


def _make_params(cls, given: dict, key: str):
    if key in given:
        p = given.pop(key)
        if given:
            raise ValueError(f"pass either {key} or individual parameters, not both: {sorted(given)}")
        if isinstance(p, dict):
            unknown = set(p) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise ValueError(f"unknown parameter(s) {sorted(unknown)} for {cls.__name__}")
            return cls(**p)
        if isinstance(p, cls):
            return dataclasses.replace(p)
        # Accept python-blosc2's own CParams/DParams too.
        return cls(**{f.name: getattr(p, f.name) for f in dataclasses.fields(cls) if hasattr(p, f.name)})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(given) - names
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)} for {cls.__name__}")
    return cls(**given)


def _native_cparams(cp: CParams, tuned: bool = False) -> tuple:
    """The native form of ``cp``; ``tuned``: the caller applies a BTUNE tuner itself (the
    SChunk and NDArray writers, through ``tuning.tuner_arg``)."""
    if cp.tuner != Tuner.STUNE and not tuned:
        raise ValueError(f"tuner {cp.tuner.name} applies to SChunk and NDArray writes, not here")
    typesize = _checked("typesize", cp.typesize, 1, MAX_TYPESIZE)
    filters = [_checked("filter", f, 0, 255) for f in cp.filters]
    meta = [_checked("filters_meta", m, -128, 255) & 0xFF for m in cp.filters_meta]
    for slot, f in enumerate(filters):
        if f == Filter.BYTEDELTA and typesize == 1:
            # As python-blosc2 does: bytedelta over one stream is dropped.
            filters[slot], meta[slot] = Filter.NOFILTER, 0
        # python-blosc2 records BYTEDELTA's stream count explicitly.
        elif f == Filter.BYTEDELTA and meta[slot] == 0:
            if typesize > 255:
                raise ValueError(f"BYTEDELTA needs typesize <= 255, got {typesize}")
            meta[slot] = typesize
    return (
        _checked("codec", cp.codec, 0, 255),
        _checked("codec_meta", cp.codec_meta, 0, 255),
        _checked("clevel", cp.clevel, 0, 9),
        bool(cp.use_dict),
        typesize,
        _checked("nthreads", cp.nthreads, 1, 1 << 16),
        _checked("blocksize", cp.blocksize, 0, MAX_TYPESIZE),
        _checked("splitmode", cp.splitmode, 1, 4),
        filters,
        meta,
    )


_ARGS_CACHE: dict = {}


def _cached_native_args(kwargs: dict) -> tuple:
    """Validated native arguments for keyword parameters, memoized: building and checking a
    CParams costs more than compressing a small buffer."""
    try:
        key = (nthreads, *((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))
        hash(key)
    except TypeError:  # unhashable values (e.g. a CParams object): no caching
        return _native_cparams(_make_params(CParams, dict(kwargs), "cparams"))
    args = _ARGS_CACHE.get(key)
    if args is None:
        args = _native_cparams(_make_params(CParams, dict(kwargs), "cparams"))
        if len(_ARGS_CACHE) > 256:
            _ARGS_CACHE.clear()
        _ARGS_CACHE[key] = args
    return args


def compress2(src: Any, **kwargs) -> bytes:
    """Compress ``src`` (any buffer) into a Blosc2 chunk.

    Takes ``cparams=CParams(...)`` (or a dict) or the fields of :class:`CParams` as keywords.
    """
    args = _cached_native_args(kwargs)
    # Cached lists are only read: the native side converts them to its own arrays.
    return _native.compress2(src, args)


def compress_vlblocks(blocks: Any, **kwargs) -> bytes:
    """Compress a sequence of buffers (each non-empty) into one chunk with variable-length
    blocks (format version 6), as python-blosc2's BatchArray stores batches. Takes the same
    keywords as :func:`compress2`."""
    return _native.compress_vlblocks(list(blocks), _cached_native_args(kwargs))


def decompress_vlblocks(src: Any, **kwargs) -> list[bytes]:
    """Decode each block of a variable-length-block chunk into its own ``bytes``."""
    if not kwargs:
        n = nthreads
    else:
        n = _checked("nthreads", _make_params(DParams, dict(kwargs), "dparams").nthreads, 1, 1 << 16)
    return _native.decompress_vlblocks(src, n)


def decompress2(src: Any, dst: Any = None, **kwargs) -> bytes | None:
    """Decompress a chunk; into ``dst`` (returning None) when given, else into new bytes."""
    if not kwargs:
        n = nthreads
    else:
        dp = _make_params(DParams, dict(kwargs), "dparams")
        n = _checked("nthreads", dp.nthreads, 1, 1 << 16)
    if dst is None:
        return _native.decompress2(src, n)
    if memoryview(dst).nbytes == 0:
        raise ValueError("dst must not be empty")
    _native.decompress2_into(src, dst, n)
    return None


#: Block size forced on :func:`compress` by :func:`set_blocksize` (0: automatic).
_blosc1_blocksize = 0

#: The library behind each codec, as python-blosc2's ``get_clib`` names it.
_CODEC_LIBRARY = {0: "BloscLZ", 1: "LZ4", 2: "LZ4", 4: "Zlib", 5: "Zstd"}


def compressor_list(plugins: bool = False) -> list[Codec]:
    """The codecs this build compresses with; the registered Blosc2 plugin codecs (ids 32 and
    up, such as NDLZ) only with ``plugins=True``, as in python-blosc2."""
    return [c for c in Codec if plugins or c < 32]


def get_clib(bytesobj: Any) -> str:
    """The name of the library that compressed chunk ``bytesobj`` ("BloscLZ", "LZ4", "Zlib",
    "Zstd")."""
    codec = chunk_info(bytesobj)["codec"]
    if codec not in _CODEC_LIBRARY:
        raise ValueError(f"chunk compressed with codec {codec}, which has no library here")
    return _CODEC_LIBRARY[codec]


def free_resources() -> None:
    """python-blosc2 frees its C contexts here; oxblosc keeps only small per-thread scratch
    buffers, reused between calls, so there is nothing to release."""


def set_blocksize(blocksize: int = 0) -> None:
    """Force the block size :func:`compress` uses (0: automatic, the default)."""
    global _blosc1_blocksize
    _blosc1_blocksize = _checked("blocksize", blocksize, 0, MAX_BLOCKSIZE)


def get_blocksize() -> int:
    """The block size set with :func:`set_blocksize` (0: automatic)."""
    return _blosc1_blocksize


def compress(
    src: Any,
    typesize: int | None = 8,
    clevel: int = 1,
    filter: Filter = Filter.SHUFFLE,
    codec: Codec = Codec.ZSTD,
    _ignore_multiple_size: bool = False,
) -> bytes:
    """Blosc1-style call (python-blosc2's ``compress``); writes a Blosc2 chunk.
    ``typesize=None`` takes the item size of ``src`` (1 for objects without ``itemsize``)."""
    if typesize is None:
        typesize = getattr(src, "itemsize", 1)
    size = memoryview(src).nbytes
    if not _ignore_multiple_size and typesize > 0 and size % typesize != 0:
        raise ValueError(f"len(src) can only be a multiple of typesize ({typesize}).")
    # Like C-Blosc2's Blosc1 API: only a real shuffle or a bitshuffle lands in the pipeline.
    f = _checked("filter", filter, 0, 255)
    if f == Filter.BITSHUFFLE or (f == Filter.SHUFFLE and typesize > 1):
        filters = [Filter.NOFILTER] * 5 + [f]
    else:
        filters = [Filter.NOFILTER] * 6
    return compress2(src, typesize=typesize, clevel=clevel, filters=filters, codec=codec, blocksize=_blosc1_blocksize)


def decompress(src: Any, dst: Any = None, as_bytearray: bool = False) -> bytes | bytearray | None:
    """Blosc1-style call (python-blosc2's ``decompress``)."""
    if dst is not None:
        return decompress2(src, dst)
    out = decompress2(src)
    return bytearray(out) if as_bytearray else out


def compress_blosc1(
    src: Any,
    typesize: int = 8,
    clevel: int = 5,
    shuffle: Filter = Filter.SHUFFLE,
    codec: Codec = Codec.LZ4,
    blocksize: int = 0,
    nthreads: int | None = None,
) -> bytes:
    """Write a Blosc1 (format version 2) chunk, for readers that only know Blosc1:
    c-blosc 1.x, numcodecs/zarr ``Blosc``, HDF5 filter 32001."""
    if shuffle not in (Filter.NOFILTER, Filter.SHUFFLE, Filter.BITSHUFFLE):
        raise ValueError("Blosc1 chunks support only NOFILTER, SHUFFLE or BITSHUFFLE")
    return _native.compress_blosc1(
        src,
        _checked("codec", codec, 0, 255),
        _checked("clevel", clevel, 0, 9),
        _checked("typesize", typesize, 1, MAX_TYPESIZE),
        _checked("nthreads", nthreads or globals()["nthreads"], 1, 1 << 16),
        _checked("blocksize", blocksize, 0, MAX_TYPESIZE),
        int(shuffle),
    )


def get_cbuffer_sizes(src: Any) -> tuple[int, int, int]:
    """``(nbytes, cbytes, blocksize)`` of a chunk."""
    return _native.get_cbuffer_sizes(src)


def getitem(src: Any, start: int, nitems: int) -> bytes:
    """Items ``[start, start + nitems)`` of a chunk, decoding only the blocks involved."""
    return _native.getitem(
        src, _checked("start", start, 0, MAX_BUFFERSIZE), _checked("nitems", nitems, 0, MAX_BUFFERSIZE)
    )


def special_chunk(kind: SpecialValue, nbytes: int, typesize: int, value: Any = None) -> bytes:
    """A chunk of ``nbytes`` standing for zeros, NaNs, uninitialized data or a repeated value."""
    raw = None if value is None else bytes(memoryview(value).cast("B"))
    return _native.special_chunk(int(kind), nbytes, typesize, raw)


def chunk_info(src: Any) -> dict:
    """The decoded header of a chunk."""
    return _native.chunk_info(src)


def call_nthreads(nthreads: int | None) -> int:
    """The threads one call uses: ``nthreads`` when given, else ``oxblosc.nthreads`` on the
    main thread and 1 elsewhere (a ``distributed`` worker, Dask's or Zarr's thread pools:
    they already run one task per thread, and more threads per call only multiply). Costs
    one thread-identity check (plus a thread-local lookup when ``distributed`` is loaded)."""
    if nthreads:
        return nthreads
    if threading.current_thread() is not threading.main_thread():
        return 1
    dist = sys.modules.get("distributed")
    if dist is not None:
        try:
            dist.get_worker()
            return 1
        except ValueError:
            pass
    return _default_nthreads()


def set_nthreads(n: int) -> int:
    """Set the default number of threads; returns the previous value."""
    global nthreads
    old = nthreads
    nthreads = _checked("nthreads", n, 1, 1 << 16)
    return old
