"""Whole objects as one compressed buffer or file, with python-blosc2's names and formats.

* ``pack``/``unpack`` (and ``pack_array``/``unpack_array``): the object pickled, then
  compressed into one chunk with the item size as typesize. ``unpack`` runs ``pickle.loads``:
  only unpack data you trust, as with python-blosc2.
* ``pack_tensor``/``unpack_tensor`` (``pack_array2``/``unpack_array2``), ``save_tensor``/
  ``load_tensor`` (``save_array``/``load_array``): the array's bytes in a super-chunk whose
  ``__pack_tensor__`` vlmeta holds ``(kind, shape, dtype)``, kind being "numpy", "torch"
  or "tensorflow" so the same kind comes back. In memory the result is the frame
  (``to_cframe``); on disk, the frame file.

Both directions are the formats python-blosc2 4.x writes and reads (tested with the wheel).
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np

from .core import Codec, Filter, compress, decompress
from .opening import open as _open
from .schunk import SChunk, schunk_from_cframe

_TENSOR_META = "__pack_tensor__"


def pack(obj: Any, clevel: int = 9, filter: Filter = Filter.SHUFFLE, codec: Codec = Codec.BLOSCLZ) -> bytes:  # noqa: A002
    """Pickle ``obj`` (which needs ``itemsize`` and ``size``, like a NumPy array) and compress
    the pickle into one chunk."""
    for attr in ("itemsize", "size"):
        if not hasattr(obj, attr):
            raise AttributeError(f"The object must have an {attr} attribute.")
    data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    return compress(data, typesize=obj.itemsize, clevel=clevel, filter=filter, codec=codec, _ignore_multiple_size=True)


def unpack(packed_object: Any, **kwargs: Any) -> Any:
    """The object ``pack`` packed (``kwargs`` go to ``pickle.loads``)."""
    return pickle.loads(decompress(packed_object), **kwargs)  # noqa: S301 - the documented contract


def pack_array(
    arr: np.ndarray,
    clevel: int = 9,
    filter: Filter = Filter.SHUFFLE,  # noqa: A002
    codec: Codec = Codec.BLOSCLZ,
) -> bytes:
    """Same as :func:`pack`, for a NumPy array."""
    return pack(arr, clevel, filter, codec)


def unpack_array(packed_array: Any, **kwargs: Any) -> np.ndarray:
    """The array ``pack_array`` packed (``kwargs`` go to ``pickle.loads``; with them, an
    array of byte strings, e.g. from ``encoding="bytes"``, comes back decoded as str)."""
    arr = unpack(packed_array, **kwargs)
    if kwargs and isinstance(arr, np.ndarray) and arr.size and all(isinstance(x, bytes) for x in arr.flat):
        arr = np.array([x.decode("utf-8") for x in arr.flat]).reshape(arr.shape)
    return arr


def _tensor_kind(tensor: Any) -> str:
    module = type(tensor).__module__.split(".")[0]
    if module == "torch":
        return "torch"
    if module in ("tensorflow", "tf"):
        return "tensorflow"
    if isinstance(tensor, np.ndarray | np.generic):
        return "numpy"
    raise TypeError(f"Unrecognized tensor/array: {type(tensor).__name__}")


def pack_tensor(tensor: Any, chunksize: int | None = None, **kwargs: Any) -> bytes | int:
    """Compress a NumPy array, PyTorch or TensorFlow tensor into a super-chunk; returns its
    frame, or with ``urlpath=`` the size of the file written. ``kwargs`` as for ``SChunk``."""
    kind = _tensor_kind(tensor)
    arr = np.asarray(tensor)
    dtype = arr.dtype.descr if arr.dtype.kind == "V" else arr.dtype.str
    # As raw bytes (any dtype), with the item size as typesize unless cparams say otherwise.
    data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    cparams = kwargs.get("cparams")
    if cparams is None:
        kwargs["cparams"] = {"typesize": arr.dtype.itemsize}
    elif isinstance(cparams, dict) and "typesize" not in cparams:
        kwargs["cparams"] = {**cparams, "typesize": arr.dtype.itemsize}
    schunk = SChunk(chunksize=chunksize, data=data if data.nbytes else None, **kwargs)
    schunk.vlmeta[_TENSOR_META] = (kind, arr.shape, dtype)
    if schunk.urlpath is None:
        return schunk.to_cframe()
    path = schunk.urlpath
    del schunk
    return os.stat(path).st_size if os.path.isfile(path) else _dir_size(path)


def _dir_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def _unpack_tensor(schunk: SChunk) -> Any:
    if _TENSOR_META not in schunk.vlmeta:
        raise TypeError("not a packed tensor or array (no __pack_tensor__ vlmeta)")
    kind, shape, dtype = schunk.vlmeta[_TENSOR_META]
    dtype = np.lib.format.descr_to_dtype(dtype)
    out = np.empty(tuple(shape), dtype=dtype)
    if out.nbytes:
        schunk.get_slice(0, out.nbytes // schunk.typesize, out=out.reshape(-1).view(np.uint8))
    if kind == "numpy":
        return out
    if kind == "torch":
        import torch

        return torch.from_numpy(out)
    if kind == "tensorflow":
        import tensorflow as tf

        return tf.constant(out)
    raise TypeError(f"Unrecognized tensor kind: {kind}")


def unpack_tensor(cframe: Any) -> Any:
    """The array or tensor ``pack_tensor`` packed into ``cframe``."""
    return _unpack_tensor(schunk_from_cframe(cframe))


def save_tensor(tensor: Any, urlpath: str | os.PathLike, chunksize: int | None = None, **kwargs: Any) -> int:
    """:func:`pack_tensor` into the file ``urlpath``; returns its size in bytes."""
    return pack_tensor(tensor, chunksize=chunksize, urlpath=urlpath, **kwargs)


def load_tensor(urlpath: str | os.PathLike, dparams: Any = None) -> Any:
    """The array or tensor :func:`save_tensor` wrote to ``urlpath``."""
    obj = _open(urlpath, mode="r", dparams=dparams)
    return _unpack_tensor(obj if isinstance(obj, SChunk) else obj.schunk)


def pack_array2(arr: np.ndarray, chunksize: int | None = None, **kwargs: Any) -> bytes | int:
    """Same as :func:`pack_tensor` (no 2 GB limit, unlike :func:`pack_array`)."""
    return pack_tensor(arr, chunksize, **kwargs)


def unpack_array2(cframe: Any) -> np.ndarray:
    """Same as :func:`unpack_tensor`."""
    return unpack_tensor(cframe)


def save_array(arr: np.ndarray, urlpath: str | os.PathLike, chunksize: int | None = None, **kwargs: Any) -> int:
    """Same as :func:`save_tensor`."""
    return save_tensor(arr, urlpath, chunksize, **kwargs)


def load_array(urlpath: str | os.PathLike, dparams: Any = None) -> np.ndarray:
    """Same as :func:`load_tensor`."""
    return load_tensor(urlpath, dparams)


__all__ = [
    "load_array",
    "load_tensor",
    "pack",
    "pack_array",
    "pack_array2",
    "pack_tensor",
    "save_array",
    "save_tensor",
    "unpack",
    "unpack_array",
    "unpack_array2",
    "unpack_tensor",
]
