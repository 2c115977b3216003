"""Summaries, CSV export and user metadata of a table (python-blosc2's ``CTable`` names):
``describe``, ``cov``, ``to_csv``, ``cratio`` and ``vlmeta``/``attrs``.

User metadata lives where python-blosc2 keeps it: the vlmeta of a separate super-chunk,
``_vlmeta.b2f`` in the table directory (or zip), so each library sees the other's keys.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

import numpy as np

from . import ctable_layout as L
from .schunk import SChunk

VLMETA = L.VLMETA


def _label(dt: np.dtype) -> str:
    if dt.kind == "U":
        return f"U{dt.itemsize // 4} (Unicode)"
    if dt.kind == "S":
        return f"S{dt.itemsize}"
    if dt.kind == "M":
        return f"timestamp[{np.datetime_data(dt)[0]}]"
    return str(dt)


def describe(t: Any) -> str:
    """The text python-blosc2's ``describe`` prints, for the column kinds we store."""
    n = len(t)
    lines = [f"CTable  {n:,} rows × {t.ncols} cols", ""]
    for name in t.col_names:
        dt = t._root._dtypes[name]
        lines.append(f"  {name}  [{_label(dt)}]")
        if n == 0:
            lines += ["    (empty)", ""]
            continue
        v = t._values(name)
        if dt.kind == "M":  # python-blosc2 summarizes the stored int64 values
            v, dt = _number(v), np.dtype(np.int64)
        if dt.kind == "b":
            k = int(v.sum())
            lines.append(f"    count : {n:,}")
            lines.append(f"    true  : {k:,}  ({k / n * 100:.1f} %)")
            lines.append(f"    false : {n - k:,}  ({(n - k) / n * 100:.1f} %)")
        elif dt.kind in "iuf":
            lines.append(f"    count : {n:,}")
            for what, x in (("mean", v.mean()), ("std", v.std()), ("min", v.min()), ("max", v.max())):
                lines.append(f"    {what:<5} : {x:.4g}")
        elif dt.kind in "US":
            u = np.unique(v)  # sorted: its ends are the min and max
            lines.append(f"    count   : {n:,}")
            lines.append(f"    unique  : {len(u):,}")
            lines.append(f"    min     : {str(u[0])!r}")
            lines.append(f"    max     : {str(u[-1])!r}")
        else:
            lines.append(f"    count : {n:,}")
            lines.append(f"    (stats not available for dtype {dt})")
        lines.append("")
    return "\n".join(lines)


def _number(v: np.ndarray) -> np.ndarray:
    return v.view(np.int64) if v.dtype.kind == "M" else v


def cov(t: Any) -> np.ndarray:
    """``np.cov`` of the columns (rows are observations; bools as 0/1)."""
    for name in t.col_names:
        dt = t._root._dtypes[name]
        if dt.kind not in "biufM":  # timestamps count as their stored int64, as in python-blosc2
            raise TypeError(
                f"Column {name!r} has dtype {dt} which is not supported by cov(). "
                "Only int, float, and bool columns are allowed."
            )
    if len(t) < 2:
        raise ValueError(f"cov() requires at least 2 live rows, got {len(t)}.")
    m = np.stack([_number(t._values(n)).astype(np.float64) for n in t.col_names])
    return np.atleast_2d(np.cov(m))


def to_csv(t: Any, path: Any, header: bool, sep: str, encoding: str) -> str | None:
    """The live rows as CSV (Python's ``csv`` writer, values as NumPy prints them), a chunk of
    rows at a time."""

    def write(f: Any) -> None:
        w = csv.writer(f, delimiter=sep)
        if header:
            w.writerow(t.col_names)
        pos = t._positions()
        step = t._root._cols[t._root._names[0]].chunks[0]
        for lo in range(0, len(pos), step):
            part = t._rows_view(pos[lo : lo + step])
            cols = [part._values(n) for n in t.col_names]
            w.writerows(zip(*cols, strict=True))

    if path is None:
        buf = io.StringIO(newline="")
        write(buf)
        return buf.getvalue()
    with open(os.fspath(path), "w", newline="", encoding=encoding) as f:
        write(f)
    return None


def cratio(t: Any) -> float:
    """Stored bytes over compressed bytes, columns and validity column (python-blosc2's)."""
    r = t._root
    arrays = [*r._cols.values(), r._valid]
    c = sum(a.cbytes for a in arrays)
    return float("inf") if c == 0 else sum(a.nbytes for a in arrays) / c


class _NoMeta:
    """The user metadata of a read-only table that has none: empty, refusing writes."""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return {}
        raise KeyError(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise ValueError("the table is read-only (opened with mode='r')")

    __delitem__ = __setitem__

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __contains__(self, key: Any) -> bool:
        return False

    def keys(self) -> list:
        return []


def user_meta(r: Any) -> Any:
    """The table's user metadata (``vlmeta``): a directory's ``_vlmeta.b2f`` (made on first
    use by a writable handle), a zip's member, or an in-memory super-chunk (written into the
    zip with the table)."""
    s = r.__dict__.get("_user_meta")
    if s is None:
        s = r._user_meta = _load_meta(r)
    return _NoMeta() if s is False else s.vlmeta


def _load_meta(r: Any) -> Any:
    from .opening import open as _open

    path, writable = r.urlpath, r.mode != "r"
    if path is None or (path.endswith(".b2z") and writable):
        return SChunk()
    if path.endswith(".b2z"):
        s = L._members(path, "r")(VLMETA)
        return False if s is None else s
    f = os.path.join(path, VLMETA)
    if os.path.exists(f):
        return _open(f, mode="a" if writable else "r")
    return SChunk(urlpath=f, mode="w", contiguous=True) if writable else False


def meta_items(r: Any) -> dict:
    """The user metadata of ``r`` as a dict, without creating a metadata file."""
    s = r.__dict__.get("_user_meta")
    if s is None and r.urlpath is not None and os.path.isdir(r.urlpath):
        if not os.path.exists(os.path.join(r.urlpath, VLMETA)):
            return {}
        from .opening import open as _open

        s = _open(os.path.join(r.urlpath, VLMETA), mode="r")
    elif s is None and r.urlpath is not None and r.mode == "r":
        s = _load_meta(r)
    if s is None or s is False:
        return {}
    return dict(s.vlmeta[:])


def _schunk_with(items: dict, **kwargs: Any) -> SChunk:
    out = SChunk(**kwargs)
    for k, v in items.items():
        out.vlmeta[k] = v
    return out


def zip_members(r: Any) -> dict:
    """The user metadata member for a ``.b2z`` written from ``r`` (none when empty)."""
    items = meta_items(r)
    return {VLMETA: _schunk_with(items).to_cframe()} if items else {}


def write_meta_file(r: Any, path: str) -> None:
    """Copy ``r``'s user metadata into the table directory ``path`` (when it has any)."""
    items = meta_items(r)
    if items:
        _schunk_with(items, urlpath=os.path.join(path, VLMETA), mode="w", contiguous=True)
