"""Views and copies of a table (python-blosc2's ``CTable`` names): ``select``, ``take``,
``slice``, ``sample``, ``copy``, ``sort_by``, and ``build``, which writes chosen rows of a
table into a new one column by column.

``build`` holds one column at a time: rows in storage order are read a destination chunk at
a time; rows in any other order (``take``, sorts) read the source column once and gather
from it. Sorting reads only the key columns to find the order.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import ctable_layout as L


def build(
    src: Any,
    pos: np.ndarray,
    names: list[str],
    urlpath: str | None,
    *,
    ordered: bool,
    chunks: int | None = None,
    blocks: int | None = None,
    cparams: Any = None,
) -> Any:
    """A new table (``type(src)``) of ``src``'s columns ``names`` at physical positions
    ``pos`` (ascending when ``ordered``), in memory or at ``urlpath`` (replaced)."""
    r = src._root
    c = r._cols[r._names[0]]
    crow = int(chunks or c.chunks[0])
    brow = int(blocks or min(c.blocks[0], crow))
    if not blocks and crow % brow:  # the source's blocks do not fit the chunks asked for
        brow = crow
    out = type(r)(
        {n: np.empty(0, r._dtypes[n]) for n in names},
        urlpath,
        mode="w",
        cparams=c.cparams if cparams is None else cparams,
        chunks=crow,
        blocks=brow,
    )
    n = len(pos)
    for name in names:
        arr, st = out._cols[name], L.stored_dtype(r._dtypes[name])
        whole = None if ordered else r._read(name, slice(0, r._phys))
        for lo in range(0, n, crow):
            part = pos[lo : lo + crow]
            v = r._read(name, part) if whole is None else whole[part]
            arr.append(np.ascontiguousarray(v).view(st))
        del whole
    for lo in range(0, n, crow):
        out._valid.append(np.ones(min(crow, n - lo), bool))
    out._phys = out._nrows = out._epoch = n
    out._stats = dict.fromkeys(names)
    out._rebuild_stats()
    out._live, out._all_valid = None, True
    out._persist(force_zip=True)
    if out.urlpath is not None and os.path.isdir(out.urlpath):
        out._stamp = L.stamp(out.urlpath)
    return out


def select(t: Any, cols: list[str]) -> Any:
    """A view of the columns ``cols`` (in that order), sharing the rows and the data."""
    cols = [cols] if isinstance(cols, str) else list(cols)
    if not cols:
        raise ValueError("select needs at least one column")
    have = t._out_names()
    for c in cols:
        if c not in have:
            raise KeyError(f"no column {c!r} (columns: {have})")
    v = object.__new__(type(t))
    v.__dict__.update(
        _base=t._root,
        _cond=t._cond,
        _pos=t._pos,
        urlpath=None,
        mode="r",
        nthreads=t._root.nthreads,
        _columns=cols,
    )
    return v


def take(t: Any, indices: Any) -> Any:
    """A new in-memory table of the rows at ``indices`` (order and repeats kept)."""
    idx = np.asarray(indices)
    if idx.dtype == bool:
        raise TypeError("take wants row numbers, not a mask (use t[mask])")
    if idx.dtype.kind not in "iu" and idx.size:
        raise TypeError(f"row numbers must be integers, got {idx.dtype}")
    pos = t._positions()[idx.astype(np.int64).reshape(-1)]
    return build(t, pos, t._out_names(), None, ordered=bool(np.all(np.diff(pos) > 0)))


def slice_rows(t: Any, start: Any, stop: Any = None, copy: bool = True) -> Any:
    """Rows ``start:stop`` (``slice(stop)``, ``slice(start, stop)`` or a ``slice``), a
    compact in-memory copy or (``copy=False``) a view."""
    if isinstance(start, slice):
        if stop is not None:
            raise TypeError("pass either a slice or start/stop, not both")
        if start.step not in (None, 1):
            raise ValueError("slice does not take a step")
        key = start
    else:
        key = slice(None, start) if stop is None else slice(start, stop)
    pos = t._positions()[key]
    if not copy:
        return t._rows_view(pos)
    return build(t, pos, t._out_names(), None, ordered=True)


def sample(t: Any, n: int, seed: int | None = None) -> Any:
    """A view of ``n`` rows chosen at random without repeats (storage order). The same
    rows as python-blosc2 picks for the same table and seed."""
    pos = t._positions()
    if n <= 0:
        pos = pos[:0]
    elif n < len(pos):
        pos = np.sort(np.random.default_rng(seed).choice(pos, size=n, replace=False))
    return t._rows_view(pos)


def copy(
    t: Any,
    compact: bool = True,
    urlpath: Any = None,
    overwrite: bool = False,
    chunks: Any = None,
    blocks: Any = None,
    cparams: Any = None,
) -> Any:
    """A standalone copy (in memory, or at ``urlpath``); ``compact=False`` keeps the
    deleted rows' slots and tombstones (root tables only)."""
    path = None if urlpath is None else os.fspath(urlpath)
    if path is not None and os.path.exists(path):
        if not overwrite:
            raise FileExistsError(f"{path} exists (pass overwrite=True)")
        return _copy_over(t, compact, path, chunks, blocks, cparams)
    chunks, blocks = (x[0] if isinstance(x, tuple | list) else x for x in (chunks, blocks))
    r = t._root
    if compact or r is not t:
        pos = t._positions()
    else:
        pos = np.arange(r._phys, dtype=np.int64)
    out = build(t, pos, t._out_names(), path, ordered=True, chunks=chunks, blocks=blocks, cparams=cparams)
    if not compact and r is t and not r._all_valid:
        L.clear_rows(out._valid, np.setdiff1d(pos, r._live_positions()))
        out._nrows, out._all_valid, out._live = len(r), False, None
        out._persist(force_zip=True)
    _copy_attrs(r, out)
    return out


def _copy_over(t: Any, compact: bool, path: str, chunks: Any, blocks: Any, cparams: Any) -> Any:
    """``copy`` over an existing table: built under a temporary name beside ``path`` and
    renamed over it only when complete (as ``CTable.save``), so a failure (a full disk) or a
    kill leaves the old table as it was. Returns the copy at ``path``: a ``.b2z`` copy holds
    its columns in memory (only its name changes), a directory is opened again there."""
    from .ctable import _remove_tree_or_file, _replace_path, _temp_name

    tmp = _temp_name(path)
    try:
        out = copy(t, compact, tmp, False, chunks, blocks, cparams)
        out.close()
    except BaseException:
        _remove_tree_or_file(tmp)
        raise
    _replace_path(tmp, path)
    if not path.endswith(".b2z"):
        return type(t._root).open(path, mode="a")
    out.urlpath = path
    return out


def _copy_attrs(src: Any, out: Any) -> None:
    from .ctable_summary import meta_items

    items = meta_items(src)
    if items:
        for k, v in items.items():
            out.attrs[k] = v
        out._persist(force_zip=True)


def _key(v: np.ndarray, ascending: bool) -> np.ndarray:
    """One column's sort key, as python-blosc2 builds it: descending numbers by complement
    (integers, bools, timestamps: exact for every width) or negation (floats: NaN stays
    last), descending strings by reversed stable rank (equal strings then come out in
    reverse table order, as in python-blosc2)."""
    if ascending:
        return v
    if v.dtype.kind in "US":
        rank = np.argsort(np.argsort(v, kind="stable"), kind="stable")
        return len(v) - 1 - rank
    if v.dtype.kind in "buiM":
        return np.bitwise_not(v.view(np.int64) if v.dtype.kind == "M" else v)
    return -v


def sort_order(t: Any, cols: Any, ascending: Any) -> np.ndarray:
    """Physical positions of ``t``'s rows sorted by ``cols`` (first key first, stable)."""
    cols = [cols] if isinstance(cols, str) else list(cols)
    if not cols:
        raise ValueError("sort_by needs at least one column")
    asc = [ascending] * len(cols) if isinstance(ascending, bool) else list(ascending)
    if len(asc) != len(cols):
        raise ValueError(f"ascending has {len(asc)} entries for {len(cols)} columns")
    keys = []
    for c, a in zip(cols, asc, strict=True):
        if c not in t._root._dtypes:
            raise KeyError(f"no column {c!r}")
        v = t._values(c)
        if v.dtype.kind == "c":
            raise TypeError(f"column {c!r} ({v.dtype}) cannot be ordered")
        keys.append(_key(v, a))
    order = np.lexsort(keys[::-1]) if keys else None
    return t._positions()[order]


def sort_by(t: Any, cols: Any, ascending: Any = True, inplace: bool = False, view: bool = False) -> Any:
    """The rows sorted by ``cols``: a new in-memory table, a view (``view=True``), or the
    table itself rewritten (``inplace=True``)."""
    if inplace and view:
        raise ValueError("inplace and view cannot both be True")
    if inplace:
        from .ctable_edit import _writable, rewrite

        _writable(t, "sort")
        rewrite(t, sort_order(t, cols, ascending), ordered=False)
        return t
    pos = sort_order(t, cols, ascending)
    if view:
        return t._rows_view(pos)
    return build(t, pos, t._out_names(), None, ordered=False)
