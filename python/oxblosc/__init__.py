"""oxblosc: fast, memory-safe, Blosc2-compatible compression for numerical data.

The chunk and super-chunk APIs mirror python-blosc2 (``compress2``, ``decompress2``, ``CParams``, ...), so
code can switch by changing the import.
"""

from . import core as _core
from ._errors import ChunkError, FrameChangedError
from ._native import __version__
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
from .ndarray import (
    NDArray,
    arange,
    asarray,
    copy,
    empty,
    empty_like,
    frombuffer,
    full,
    full_like,
    linspace,
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
from .schunk import SChunk, remove_urlpath, schunk_from_cframe


def __getattr__(name):
    # `oxblosc.nthreads` follows set_nthreads().
    if name == "nthreads":
        return _core.nthreads
    raise AttributeError(f"module 'oxblosc' has no attribute {name!r}")


__all__ = [
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
