"""Changes to a table's rows and schema in place (python-blosc2's ``CTable`` names):
``delete``/``compact`` and ``drop_column``/``rename_column``/``add_column``.

Every change to a table directory has one commit point, so an exception (or a killed
process) leaves the table as it was or as changed, for both libraries:

- ``delete``: the validity column is replaced by a renamed copy with the rows marked False
  (as an append commits). Before that, the metadata drops its cached row count (python-blosc2
  then counts ``_valid_rows``); after it, the metadata gets the new count. Statistics stay:
  they describe the stored values, which a deletion does not change (python-blosc2 keeps
  them too).
- ``compact`` (and ``sort_by(inplace=True)``): a compacted copy is written beside the
  directory and the two directories swap names (two renames; a crash between them leaves
  the table under ``<table>.tmp-<pid>-old``, named in the error).
- schema edits: the column file is written (added) or linked (renamed) first, then the
  metadata is renamed in (the commit), then the file no longer listed is removed. A crash
  leaves at most an unlisted file, which neither library reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import ctable_layout as L
from ._errors import FrameChangedError
from .opening import open as _open


def _writable(t: Any, what: str) -> None:
    if t._root is not t:
        raise ValueError(f"cannot {what} a view")
    if t.mode == "r":
        raise ValueError("the table is read-only (opened with mode='r')")
    if _directory(t) and L.stamp(t.urlpath) != t._stamp:
        raise FrameChangedError(
            f"{t.urlpath}: the table was changed by another handle since this one opened it; reopen it"
        )


def _directory(t: Any) -> bool:
    return t.urlpath is not None and not t.urlpath.endswith(".b2z")


# ------------------------------------------------------------------ rows


def delete(t: Any, ind: Any) -> None:
    """Mark rows deleted: ``ind`` is a row number, a slice, or an iterable of row numbers or
    of bools (a mask over the live rows), as python-blosc2 takes them."""
    _writable(t, "delete rows from")
    if isinstance(ind, np.integer):
        ind = int(ind)
    if isinstance(ind, Iterable) and not isinstance(ind, str | bytes):
        ind = ind if isinstance(ind, np.ndarray) else np.asarray(list(ind))
        if ind.size == 0:
            return
        if ind.dtype != bool and ind.dtype.kind not in "iu":
            raise TypeError(f"rows to delete must be integers or bools, got {ind.dtype}")
    elif not isinstance(ind, int | slice):
        raise TypeError(f"Invalid type '{type(ind)}' for rows to delete (int, slice, list of ints or bools)")
    gone = np.sort(np.atleast_1d(t._live_positions()[ind]))  # (np.unique hashes: slow on millions)
    gone = gone[np.r_[True, gone[1:] != gone[:-1]]] if len(gone) else gone
    if not len(gone):
        return
    if not _directory(t):
        L.clear_rows(t._valid, gone)
        _deleted(t, len(gone))
        t._persist()
        return
    try:
        L.uncommitted(t.urlpath, t._stored(), t._epoch)
        t._valid = L.replace_valid(t.urlpath, t._valid, t._phys, dead=gone)  # the commit point
    except BaseException:
        if L.stamp(t.urlpath) == t._stamp:  # not committed: the metadata back as it was
            with contextlib.suppress(Exception):
                L.write_meta_only(t.urlpath, t._stored(), t._epoch)
            raise
        # committed (reopening the new validity column failed): the rows are deleted
        with contextlib.suppress(Exception):
            t._valid = _open(os.path.join(t.urlpath, L.VALID), mode="a")
        _deleted(t, len(gone))
        with contextlib.suppress(Exception):
            L.write_meta_only(t.urlpath, t._stored(), t._epoch)
        raise
    _deleted(t, len(gone))
    L.write_meta_only(t.urlpath, t._stored(), t._epoch)


def _deleted(t: Any, k: int) -> None:
    """The handle's counts after ``k`` rows were marked deleted."""
    t._nrows -= k
    t._all_valid = False
    t._live = None
    t._visibility += 1
    if _directory(t):
        t._stamp = L.stamp(t.urlpath)


def rewrite(t: Any, pos: np.ndarray, ordered: bool) -> None:
    """Replace the table's rows by its rows at physical positions ``pos`` (compact, sort)."""
    from .ctable_views import build

    _writable(t, "rewrite")
    c = t._cols[t._names[0]]
    grid = dict(chunks=c.chunks[0], blocks=c.blocks[0], cparams=c.cparams)
    if not _directory(t):
        new = build(t, pos, t._names, None, ordered=ordered, **grid)
        t._cols, t._valid, t._stats = new._cols, new._valid, new._stats
        t._phys = t._nrows = len(pos)
        t._all_valid, t._live = True, None
        t._epoch += 1
        t._persist()
        return
    path = os.path.normpath(t.urlpath)
    tmp, old = f"{L._tmp_prefix(path)}{os.getpid()}-new", f"{L._tmp_prefix(path)}{os.getpid()}-old"
    try:
        new = build(t, pos, t._names, tmp, ordered=ordered, **grid)
        new._epoch = t._epoch + 1  # a new value epoch: caches keyed on the old one are stale
        new._visibility = t._visibility
        L.write_meta(tmp, new._stored(), new._epoch)
        user = os.path.join(path, L.VLMETA)
        if os.path.exists(user):
            shutil.copyfile(user, os.path.join(tmp, L.VLMETA))
        del new
        os.rename(path, old)
        try:
            os.rename(tmp, path)
        except BaseException:
            os.rename(old, path)
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    t.__dict__.pop("_user_meta", None)
    t._adopt(L.read(path, "a"))


def recover(path: str) -> None:
    """Put back a table directory a killed ``compact``/``sort_by(inplace=True)`` left moved
    aside (between its two renames): the old table, whole, returns under its name."""
    import glob

    prefix = glob.escape(L._tmp_prefix(path))
    olds = glob.glob(prefix + "*-old")
    if len(olds) == 1 and L.is_table(olds[0]):
        os.rename(olds[0], os.path.normpath(path))
        for new in glob.glob(prefix + "*-new"):
            shutil.rmtree(new, ignore_errors=True)


def compact(t: Any) -> None:
    """Drop the deleted rows from storage (the live rows move up; statistics rebuilt)."""
    _writable(t, "compact")
    if not t._all_valid or any(a.shape[0] != t._phys for a in t._arrays()):
        rewrite(t, t._live_positions(), ordered=True)


# ------------------------------------------------------------------ schema


def _commit_schema(t: Any, specs: list, cols: dict, stats: dict) -> None:
    """Make ``specs``/``cols``/``stats`` the table's schema: the metadata renamed in (directory)
    or the zip marked to be written; the handle follows only once that succeeded."""
    stored = L.Stored(specs, cols, t._valid, stats, t._nrows, t._phys, t._visibility)
    if _directory(t):
        L.write_meta(t.urlpath, stored, t._epoch)
        # A new modification time on `_valid_rows` tells other writable handles (whose
        # schema is now stale) to refuse to write, as after another handle's append.
        os.utime(os.path.join(t.urlpath, L.VALID))
        t._stamp = L.stamp(t.urlpath)
    t._specs, t._cols, t._stats = specs, cols, stats
    t._names = [s["name"] for s in specs]
    t._dtypes = {s["name"]: L.dtype_of(s) for s in specs}
    if not _directory(t):
        t._persist()


def _column(t: Any, name: str) -> None:
    if name not in t._dtypes:
        raise KeyError(f"no column {name!r} (columns: {t._names})")


def drop_column(t: Any, name: str) -> None:
    """Remove column ``name`` (not the last one)."""
    _writable(t, "drop a column of")
    _column(t, name)
    if len(t._names) == 1:
        raise ValueError(f"cannot drop {name!r}, the table's last column")
    specs = [s for s in t._specs if s["name"] != name]
    cols = {n: a for n, a in t._cols.items() if n != name}
    stats = {n: s for n, s in t._stats.items() if n != name}
    _commit_schema(t, specs, cols, stats)
    if _directory(t):
        with contextlib.suppress(OSError):
            os.remove(os.path.join(t.urlpath, L.col_path(name)))
        shutil.rmtree(os.path.dirname(os.path.join(t.urlpath, L.stats_path(name))), ignore_errors=True)


def rename_column(t: Any, old: str, new: str) -> None:
    """Rename column ``old`` to ``new`` (an identifier not in use)."""
    _writable(t, "rename a column of")
    _column(t, old)
    L.check_name(new)
    if new in t._dtypes:
        raise ValueError(f"column {new!r} already exists")
    specs = [{**s, "name": new} if s["name"] == old else s for s in t._specs]
    cols = {(new if n == old else n): a for n, a in t._cols.items()}
    stats = {(new if n == old else n): s for n, s in t._stats.items()}
    if not _directory(t):
        _commit_schema(t, specs, cols, stats)
        return
    src, dst = (os.path.join(t.urlpath, L.col_path(n)) for n in (old, new))
    if os.path.exists(dst):  # left by an interrupted edit: not listed, not read
        os.remove(dst)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
    try:
        cols[new] = _open(dst, mode="a")
        _commit_schema(t, specs, cols, stats)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(dst)
        raise
    with contextlib.suppress(OSError):
        os.remove(src)


def _spec_and_default(name: str, spec: Any) -> tuple[dict, Any]:
    """Our schema entry and default from python-blosc2's spec (``blosc2.int64(ge=0)``), a
    ``blosc2.field(spec, default=...)``, a schema dict (``{"kind": "int64"}``) or a NumPy dtype."""
    default = None
    if isinstance(spec, dataclasses.Field):
        if spec.default is not dataclasses.MISSING:
            default = spec.default
        spec = (spec.metadata.get("blosc2") or {}).get("spec")
        if spec is None:
            raise TypeError(f"column {name!r}: the field carries no python-blosc2 spec")
    if hasattr(spec, "to_metadata_dict"):
        spec = spec.to_metadata_dict()
    if isinstance(spec, dict):
        entry = {**spec, "name": name}
        if "default" in entry:
            default = entry["default"]
    else:
        entry = L.spec_of(name, np.dtype(spec))
    if default is not None:
        entry["default"] = default.item() if isinstance(default, np.generic) else default
        json.dumps(entry)  # the schema is JSON text: refuse what it cannot hold now
    L.dtype_of(entry)  # refuse kinds we do not store
    return entry, default


def _check_bounds(name: str, entry: dict, v: np.ndarray) -> None:
    for key, bad in (("ge", np.less), ("gt", np.less_equal), ("le", np.greater), ("lt", np.greater_equal)):
        if key in entry and len(v) and bad(v, entry[key]).any():
            raise ValueError(f"column {name!r}: values break the constraint {key}={entry[key]}")


def add_column(t: Any, name: str, spec: Any, values: Any = None) -> None:
    """Add column ``name`` of type ``spec``, filled from ``values`` (one per live row) or
    from the default the spec declares."""
    _writable(t, "add a column to")
    L.check_name(name)
    if name in t._dtypes:
        raise ValueError(f"column {name!r} already exists")
    entry, default = _spec_and_default(name, spec)
    dt = L.dtype_of(entry)
    if values is None:
        if t._nrows and default is None:
            raise ValueError(f"column {name!r}: the table has {t._nrows} rows; pass values or declare a default")
        live = np.full(t._nrows, default if default is not None else 0).astype(dt)
    else:
        try:
            live = np.asarray(values).astype(dt)  # python-blosc2 casts as NumPy does (0.5 -> 0)
        except (TypeError, ValueError) as e:
            raise TypeError(f"column {name!r}: {e}") from None
        if live.shape != (t._nrows,):
            raise ValueError(f"column {name!r}: {live.shape[0] if live.ndim else 1} values for {t._nrows} rows")
    _check_bounds(name, entry, live)
    full = live
    if not t._all_valid or t._phys != t._nrows:  # deleted rows keep a filler value
        full = np.zeros(t._phys, dt)
        full[t._live_positions()] = live
    sv = np.ascontiguousarray(full.view(L.stored_dtype(dt)) if dt.kind == "M" else full)
    c = t._cols[t._names[0]]
    from .ndarray import asarray, empty

    kw = dict(chunks=c.chunks, blocks=c.blocks, cparams=c.cparams)
    path = os.path.join(t.urlpath, L.col_path(name)) if _directory(t) else None
    if path is not None:
        kw.update(urlpath=path, mode="w")
    try:
        arr = asarray(sv, **kw) if len(sv) else empty((0,), sv.dtype, **kw)
        stats = {**t._stats, name: t._summarize(sv, c.blocks[0])}
        _commit_schema(t, [*t._specs, entry], {**t._cols, name: arr}, stats)
    except BaseException:
        if path is not None:
            with contextlib.suppress(OSError):
                os.remove(path)
        raise
