"""xarray and oxblosc: the ``oxblosc`` backend engine and :func:`to_oxblosc`.

``xarray.open_dataset(path, engine="oxblosc", chunks={})`` opens a b2nd file as a Dataset
with one variable, lazily: nothing is read until values are asked for, and ``chunks={}``
gives Dask chunks equal to the file's chunks (the variable's ``preferred_chunks``). The
variable's name, dimension names and attributes come from three vlmeta entries, which
:func:`to_oxblosc` writes:

* ``_xarray_name``: the variable name (default: the file name without its extension);
* ``_xarray_dims``: the list of dimension names (default: ``dim_0``, ``dim_1``, ...);
* ``_xarray_attrs``: a dict of attributes (msgpack values: numbers, strings, lists, dicts).

The variable is CF-decoded as xarray's other engines decode theirs (``scale_factor``,
``add_offset``, ``_FillValue``, time ``units``; ``mask_and_scale``, ``decode_times``,
``decode_cf``, ... switch it off); attributes without CF keys pass unchanged.
Coordinates are not stored (only the data variable). Registered as an xarray backend entry
point, so ``engine="oxblosc"`` works once oxblosc is installed; files ending in ``.b2nd``
are also recognised by ``guess_can_open``.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
from xarray import Dataset, Variable
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.conventions import decode_cf_variables
from xarray.core import indexing

from .ndarray import NDArray, asarray
from .opening import open as _open

NAME_KEY, DIMS_KEY, ATTRS_KEY = "_xarray_name", "_xarray_dims", "_xarray_attrs"


class OxbloscArray(BackendArray):
    """A b2nd file seen by xarray: basic indexing reads only the blocks it needs. Pickles as
    its path (Dask workers in other processes reopen the file)."""

    def __init__(self, path: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.path, self.shape, self.dtype = path, shape, dtype
        self._array: NDArray | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {"path": self.path, "shape": self.shape, "dtype": self.dtype}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], state["shape"], state["dtype"])

    def _get(self) -> NDArray:
        with self._lock:
            if self._array is None:
                self._array = _open(self.path, mode="r")
            return self._array

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC, self._raw)

    def _raw(self, key: tuple) -> np.ndarray:
        return np.asarray(self._get()[key])


class OxbloscBackendEntrypoint(BackendEntrypoint):
    """``engine="oxblosc"``: b2nd files (oxblosc or python-blosc2) as xarray Datasets."""

    description = "Open b2nd (Blosc2 n-dimensional) files written by oxblosc or python-blosc2"
    open_dataset_parameters = (
        "filename_or_obj", "drop_variables", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "use_cftime", "decode_timedelta",
    )  # fmt: skip

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Any = None,
        mask_and_scale: Any = True,
        decode_times: Any = True,
        concat_characters: Any = True,
        decode_coords: Any = True,
        use_cftime: Any = None,
        decode_timedelta: Any = None,
    ) -> Dataset:
        path = os.fspath(filename_or_obj)
        a = _open(path, mode="r")
        if not isinstance(a, NDArray):
            raise ValueError(f"{path} holds a plain super-chunk, not an n-dimensional (b2nd) array")
        meta = a.vlmeta
        name = meta[NAME_KEY] if NAME_KEY in meta else os.path.splitext(os.path.basename(path.rstrip("/")))[0]
        dims = _dims(meta[DIMS_KEY], path) if DIMS_KEY in meta else tuple(f"dim_{i}" for i in range(a.ndim))
        attrs = meta[ATTRS_KEY] if ATTRS_KEY in meta else {}
        if not isinstance(attrs, dict):
            raise ValueError(f"{path}: vlmeta {ATTRS_KEY} must be a dict, got {type(attrs).__name__}")
        if len(dims) != a.ndim:
            raise ValueError(f"{path}: vlmeta {DIMS_KEY} names {len(dims)} dimensions {dims}, the array has {a.ndim}")
        data = indexing.LazilyIndexedArray(OxbloscArray(path, a.shape, a.dtype))
        var = Variable(dims, data, attrs=dict(attrs))
        var.encoding = {"preferred_chunks": dict(zip(dims, a.chunks, strict=True)), "chunks": a.chunks}
        # CF decoding as xarray's other engines do it (scale_factor/add_offset/_FillValue,
        # time units, ...), with the same switches; attributes without CF keys pass unchanged.
        variables, _, _ = decode_cf_variables(
            {name: var}, {}, concat_characters=concat_characters, mask_and_scale=mask_and_scale,
            decode_times=decode_times, decode_coords=decode_coords, drop_variables=drop_variables,
            use_cftime=use_cftime, decode_timedelta=decode_timedelta,
        )  # fmt: skip
        return Dataset(variables)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        try:
            return os.fspath(filename_or_obj).endswith(".b2nd")
        except TypeError:
            return False


def _dims(value: Any, path: str) -> tuple[str, ...]:
    """Dimension names from vlmeta: a list of names, or one name as a string (xarray's rule
    for ``dims="x"``; never its characters, which a 4-D array would take silently)."""
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple) or not all(isinstance(d, str) for d in value):
        raise ValueError(f"{path}: vlmeta {DIMS_KEY} must be a list of names, got {value!r}")
    return tuple(value)


def _plain(value: Any) -> Any:
    """Attribute values as msgpack can hold them (NumPy scalars and arrays to Python)."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def to_oxblosc(dataarray: Any, urlpath: str | os.PathLike, **kwargs: Any) -> NDArray:
    """Write a ``DataArray`` to a b2nd file with its name, dims and attrs in vlmeta (readable
    by ``engine="oxblosc"``). Dask-backed arrays are written chunk by chunk in parallel
    (:func:`oxblosc.dask.to_oxblosc`); ``kwargs`` as for :func:`oxblosc.asarray`."""
    data = dataarray.data
    if hasattr(data, "dask"):
        from .dask import to_oxblosc as _dask_to_oxblosc  # noqa: PLC0415 - Dask is optional here

        _dask_to_oxblosc(data, urlpath, **kwargs)
        out = _open(urlpath, mode="a")
    else:
        out = asarray(np.asarray(data), urlpath=urlpath, mode="w", **kwargs)
    out.vlmeta[NAME_KEY] = str(dataarray.name if dataarray.name is not None else "data")
    out.vlmeta[DIMS_KEY] = [str(d) for d in dataarray.dims]
    out.vlmeta[ATTRS_KEY] = _plain(dict(dataarray.attrs))
    return out


__all__ = ["OxbloscArray", "OxbloscBackendEntrypoint", "to_oxblosc"]
