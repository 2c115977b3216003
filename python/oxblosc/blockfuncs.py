"""python-blosc2's Python block callbacks on a super-chunk: ``prefilter`` (runs on each block's
data before it is compressed), ``postfilter`` (on each block after it is decompressed) and
``filler`` (computes the data of new chunks block by block from input arrays).

Callbacks get ``(input, output, offset)`` as python-blosc2 gives them: NumPy arrays of one
block, and ``offset``, the index of the block's first item in the super-chunk. Blocks are
the chunk's real blocks (read from the chunk header, or for a new chunk the block size the
engine picks for it), so a callback that uses ``offset`` gives the same data as in
python-blosc2. They run in the calling thread, in Python, block after block; the engine's
own threads never call into Python here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import core as _core


@dataclass(frozen=True)
class BlockFunc:
    """A callback with the item types it reads and writes (same item size)."""

    func: Callable | None
    input_dtype: np.dtype
    output_dtype: np.dtype

    @classmethod
    def make(cls, func: Callable | None, input_dtype: Any, output_dtype: Any) -> BlockFunc:
        i = np.dtype(input_dtype)
        o = np.dtype(output_dtype) if output_dtype is not None else i
        if i.itemsize != o.itemsize:
            raise ValueError(f"input_dtype {i} and output_dtype {o} must have the same item size")
        return cls(func, i, o)

    def run(self, raw: Any, first_item: int, blocksize: int, what: str) -> bytes:
        """The callback's output for the bytes ``raw`` of one chunk starting at item
        ``first_item``, block by block."""
        src = np.frombuffer(raw, dtype=self.input_dtype)
        out = np.empty(src.size, dtype=self.output_dtype)
        for i0, i1 in _blocks(src.size, blocksize // self.input_dtype.itemsize):
            _call(self.func, what, src[i0:i1], out[i0:i1], first_item + i0)  # type: ignore[arg-type]
        return out.tobytes()


def _blocks(nitems: int, block_items: int) -> Iterator[tuple[int, int]]:
    step = max(1, block_items)
    for i0 in range(0, nitems, step):
        yield i0, min(i0 + step, nitems)


def _call(func: Callable, what: str, *args: Any) -> None:
    try:
        func(*args)
    except Exception as e:  # the user's code: say where it failed, keep the cause
        raise RuntimeError(
            f"the {what} {getattr(func, '__name__', func)!r} raised at item offset {args[-1]}: {e}"
        ) from e


def _fixed(cparams: _core.CParams) -> _core.CParams:
    """``cparams`` without the per-chunk tuner: chunks built from Python callbacks are compressed
    here with the super-chunk's own parameters (the tuner runs in the engine's write path)."""
    return dataclasses.replace(cparams, tuner=_core.Tuner.STUNE)


def new_chunk_blocksize(nbytes: int, cparams: _core.CParams) -> int:
    """The block size the engine gives a new chunk of ``nbytes`` with ``cparams`` (it depends
    on the sizes and parameters, not on the data)."""
    chunk = _core.compress2(bytes(nbytes), cparams=_fixed(cparams))
    return _core.chunk_info(chunk)["blocksize"]


def compress_with(pre: BlockFunc, data: Any, first_item: int, cparams: _core.CParams) -> bytes:
    """A chunk of ``data`` with the prefilter's output compressed in place of ``data``."""
    raw = memoryview(data).cast("B")
    if raw.nbytes % pre.input_dtype.itemsize:
        raise ValueError(f"data of {raw.nbytes} bytes is not a whole number of {pre.input_dtype} items")
    blocksize = new_chunk_blocksize(raw.nbytes, cparams)
    chunk = _core.compress2(pre.run(raw, first_item, blocksize, "prefilter"), cparams=_fixed(cparams))
    # The blocks the callback saw must be the chunk's blocks, or offsets would be wrong.
    if _core.chunk_info(chunk)["blocksize"] != blocksize:
        raise RuntimeError("the engine chose another block size for the prefilter's output than for its input")
    return chunk


def nelem_of(inputs: tuple, nelem: int | None) -> int:
    """How many items a filler writes: ``nelem``, or the operands' common length."""
    sizes = {len(x) if not isinstance(x, np.ndarray) else x.size for x, _ in inputs if not np.isscalar(x)}
    if len(sizes) > 1:
        raise ValueError(f"operands must have the same number of items, they have {sorted(sizes)}")
    if nelem is None:
        if not sizes:
            raise ValueError("nelem is needed when every operand is a scalar")
        return sizes.pop()
    if sizes and nelem > min(sizes):
        raise ValueError(f"nelem={nelem} is more than the operands' {min(sizes)} items")
    return int(nelem)


def operand_items(x: Any, dtype: np.dtype, start: int, stop: int) -> np.ndarray:
    """Items ``[start, stop)`` of one filler operand (SChunk, array or scalar) as ``dtype``."""
    if np.isscalar(x):
        return np.full(stop - start, x, dtype=dtype)
    if isinstance(x, np.ndarray):
        return np.asarray(x.reshape(-1)[start:stop], dtype=dtype)
    return np.frombuffer(x.get_slice(start, stop), dtype=dtype)  # an SChunk of those items


def fill(append: Callable[[bytes], Any], func: Callable, inputs: tuple, dtype: np.dtype, chunk_items: int,
         first_item: int, nelem: int, cparams: _core.CParams) -> None:  # fmt: skip
    """Append ``nelem`` items computed by ``func(inputs, output, offset)`` block by block,
    ``chunk_items`` per chunk, each chunk compressed with ``cparams``. ``append`` returns the
    number of chunks; the caller removes what was appended when this raises."""
    inputs = tuple((x, np.dtype(dt)) for x, dt in inputs)
    blocksizes: dict[int, int] = {}
    for c0 in range(0, nelem, chunk_items):
        c1 = min(c0 + chunk_items, nelem)
        ops = [operand_items(x, dt, c0, c1) for x, dt in inputs]
        out = np.empty(c1 - c0, dtype=dtype)
        if out.nbytes not in blocksizes:  # every chunk but the last has the same size
            blocksizes[out.nbytes] = new_chunk_blocksize(out.nbytes, cparams)
        blocksize = blocksizes[out.nbytes]
        for i0, i1 in _blocks(out.size, blocksize // dtype.itemsize):
            _call(func, "filler", tuple(o[i0:i1] for o in ops), out[i0:i1], first_item + c0 + i0)
        append(_core.compress2(out, cparams=_fixed(cparams)))
