"""oxblosc: fast, memory-safe, Blosc2-compatible compression for numerical data.

The chunk and super-chunk APIs mirror python-blosc2 (``compress2``, ``decompress2``, ``CParams``, ...), so
code can switch by changing the import.
"""

from . import core as _core
from ._errors import ChunkError, FrameChangedError
from ._native import __version__
from .construct import arange, concat, expand_dims, eye, fromiter, linspace, meshgrid, reshape, squeeze, stack
from .core import (
    EXTENDED_HEADER_LENGTH,
    MAX_BUFFERSIZE,
    MAX_OVERHEAD,
    MAX_TYPESIZE,
    MIN_HEADER_LENGTH,
    Codec,
    CParams,
    DParams,
    Filter,
    SpecialValue,
    SplitMode,
    chunk_info,
    compress,
    compress2,
    compress_blosc1,
    compress_vlblocks,
    decompress,
    decompress2,
    decompress_vlblocks,
    get_cbuffer_sizes,
    getitem,
    ncores,
    set_nthreads,
    special_chunk,
)
from .defaults import Storage, cparams_dflts, dparams_dflts, storage_dflts
from .ndarray import (
    NDArray,
    NDField,
    asarray,
    copy,
    empty,
    empty_like,
    frombuffer,
    full,
    full_like,
    nans,
    nans_like,
    ndarray_from_cframe,
    ones,
    ones_like,
    uninit,
    uninit_like,
    zeros,
    zeros_like,
)
from .opening import open
from .runtime import IS_WASM, print_versions, set_releasegil
from .schunk import SChunk, remove_urlpath, schunk_from_cframe


def __getattr__(name):
    # `oxblosc.nthreads` follows set_nthreads().
    if name == "nthreads":
        return _core.nthreads
    raise AttributeError(f"module 'oxblosc' has no attribute {name!r}")


__all__ = [
    "IS_WASM",
    "NDField",
    "Storage",
    "concat",
    "cparams_dflts",
    "dparams_dflts",
    "expand_dims",
    "eye",
    "fromiter",
    "meshgrid",
    "print_versions",
    "reshape",
    "set_releasegil",
    "squeeze",
    "stack",
    "storage_dflts",
    "EXTENDED_HEADER_LENGTH",
    "MAX_BUFFERSIZE",
    "MAX_OVERHEAD",
    "MAX_TYPESIZE",
    "MIN_HEADER_LENGTH",
    "ChunkError",
    "FrameChangedError",
    "CParams",
    "Codec",
    "DParams",
    "Filter",
    "NDArray",
    "SChunk",
    "SpecialValue",
    "SplitMode",
    "__version__",
    "arange",
    "asarray",
    "copy",
    "empty",
    "empty_like",
    "frombuffer",
    "full",
    "full_like",
    "linspace",
    "nans",
    "nans_like",
    "ndarray_from_cframe",
    "ones",
    "ones_like",
    "uninit",
    "uninit_like",
    "zeros",
    "zeros_like",
    "chunk_info",
    "compress",
    "compress2",
    "compress_blosc1",
    "compress_vlblocks",
    "decompress",
    "decompress2",
    "decompress_vlblocks",
    "get_cbuffer_sizes",
    "getitem",
    "open",
    "remove_urlpath",
    "schunk_from_cframe",
    "ncores",
    "set_nthreads",
    "special_chunk",
]
