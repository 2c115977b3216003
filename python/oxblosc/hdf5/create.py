"""Creating Blosc-compressed HDF5 datasets shaped for the second partition: big chunks (about
the L3 cache) holding blocks sized for L2 (``suggest_chunks``), written with direct chunk
writes (``create_dataset``)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import _native

__all__ = ["ChunkSuggestion", "create_dataset", "suggest_chunks"]


class ChunkSuggestion(NamedTuple):
    """Shapes proposed by :func:`suggest_chunks`, their byte sizes and why."""

    chunks: tuple[int, ...]
    blocks: tuple[int, ...]
    chunk_bytes: int
    block_bytes: int
    reason: str


def suggest_chunks(shape, dtype, chunk_bytes: int | None = None, block_bytes: int | None = None) -> ChunkSuggestion:
    """HDF5 chunks of about ``chunk_bytes`` (default: this machine's L3 cache) and Blosc blocks
    of about ``block_bytes`` (default: half its L2 cache) for a dataset of ``shape`` (0 for an
    axis that will grow) and ``dtype``.

    Big chunks mean few HDF5 index entries and many blocks to compress in parallel; the blocks
    bound what a small read decodes (``Dataset`` reads only those). Chunks are filled in C
    order, so slabs along the first axis are whole chunks (direct writes); blocks are the
    shape the Blosc2 filter derives from ``prod(blocks) * itemsize``. Chunks stay under 2 GiB
    (Blosc's limit; HDF5's is 4 GiB) and chunk dims under 2**32.
    """
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"shape {shape} has a negative length")
    itemsize = np.dtype(dtype).itemsize
    c, b, cb, bb, why = _native.hdf5_suggest_chunks(list(shape), itemsize, chunk_bytes, block_bytes)
    return ChunkSuggestion(tuple(c), tuple(b), cb, bb, why)


def create_dataset(
    group,
    name: str,
    shape=None,
    dtype=None,
    data=None,
    chunks=None,
    blocks=None,
    *,
    codec="zstd",
    clevel: int = 5,
    filters="shuffle",
    filters_meta=None,
    splitmode="forward_compat_split",
    nthreads: int | None = None,
    **kwargs,
):
    """``group.create_dataset(name, ...)`` with the Blosc2 filter, returning an
    :class:`~oxblosc.hdf5.Dataset` (``data`` written with direct chunk writes, in parallel).

    ``chunks`` defaults to :func:`suggest_chunks`' (and then so do ``blocks``); ``blocks``
    sets the Blosc block shape inside each chunk, as one the Blosc2 filter makes (its size is
    recorded in the filter's cd_values, so chunks HDF5 writes through the filter get the same
    blocks). ``codec``, ``clevel``, ``filters``, ``filters_meta``, ``splitmode`` as in
    :class:`~oxblosc.hdf5.Blosc2`; other keywords (``maxshape``, ``fillvalue``, ...) go to h5py.
    """
    from . import Blosc2
    from .dataset import Dataset

    if data is not None:
        data = np.asarray(data, dtype=dtype)
        shape = data.shape if shape is None else tuple(shape)
        dtype = data.dtype
    if shape is None or dtype is None:
        raise TypeError("create_dataset needs data, or shape and dtype")
    shape, dtype = tuple(int(n) for n in shape), np.dtype(dtype)
    if chunks is None:
        grow = kwargs.get("maxshape") or shape
        s = suggest_chunks([0 if m is None else max(n, 1) for n, m in zip(shape, grow, strict=True)], dtype)
        chunks, blocks = s.chunks, s.blocks if blocks is None else blocks
    chunks = tuple(int(c) for c in chunks)
    blocksize = 0
    if blocks is not None:
        blocks = tuple(int(b) for b in blocks)
        blocksize = _blocksize(chunks, blocks, dtype)
    opts = Blosc2(
        codec=codec,
        clevel=clevel,
        filters=filters,
        filters_meta=filters_meta,
        blocksize=blocksize,
        splitmode=splitmode,
    )
    d = group.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, **opts, **kwargs)
    ds = Dataset(d, nthreads=nthreads)
    if data is not None and data.size:
        ds[...] = data
    return ds


def _blocksize(chunks: tuple[int, ...], blocks: tuple[int, ...], dtype: np.dtype) -> int:
    """The filter's block size for ``blocks``, refused when the filter would make another
    block shape from it."""
    if len(blocks) != len(chunks) or any(not 1 <= b <= c for b, c in zip(blocks, chunks, strict=True)):
        raise ValueError(f"blocks {blocks} do not fit in chunks {chunks}")
    if dtype.itemsize > 255:
        raise ValueError(f"blocks need items of at most 255 bytes (the filter records {dtype} as bytes)")
    n = math.prod(blocks)
    if 2 <= len(chunks) <= 8:
        made = tuple(_native.hdf5_block_shape(list(chunks), n))
        if made != blocks:
            raise ValueError(
                f"the Blosc2 filter makes blocks {made} (not {blocks}) in chunks {chunks} from "
                f"blocks of {n} items; use those, or suggest_chunks(...).blocks"
            )
    elif any(b != 1 for b in blocks[:-1]):
        raise ValueError(f"chunks of rank {len(chunks)} have flat blocks: give blocks as (1, ..., n)")
    return n * dtype.itemsize
