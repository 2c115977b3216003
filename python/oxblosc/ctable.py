"""``oxblosc.CTable``: a compressed columnar table queried in kernel (python-blosc2's names).

One compressed 1-d array per column on a shared chunk/block grid plus a row-validity
column, in memory, as a directory (``.b2d``) or as one zip file (``.b2z``), in the layout
python-blosc2 4.14's ``CTable`` reads and writes (``ctable_layout``).

Queries (``t.where("(temp > 280) & (lat < -60)")``, ``t["expr"]``, aggregations with
``where=``) are parsed and typed by the Rust expression engine (never Python's ``eval``) and
evaluated block by block in Rust: blocks whose per-block min/max statistics rule out a
match are skipped, only the columns the condition reads are decoded (per-thread scratch,
``nthreads`` threads, GIL released), and matching rows are gathered from the decoded
blocks. Memory stays a few blocks per thread whatever the table size.

Statistics are computed by us on every write (exact merge on appends) and stored as
python-blosc2's SUMMARY index. Statistics read from a file are trusted when their shape
matches the column (python-blosc2's trust model): a file whose statistics lie about the
values can make a query skip matching rows. ``t.skip_blocks = False`` ignores them and
``t.verify_stats()`` recomputes them and raises on the first block that disagrees.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from typing import Any

import numpy as np

from . import _native
from . import core as _core
from . import ctable_edit as _edit
from . import ctable_io as _io
from . import ctable_layout as L
from . import ctable_summary as _summary
from . import ctable_views as _views
from ._errors import FrameChangedError
from .info import InfoTable, human_bytes
from .ndarray import NDArray, asarray, empty

DEFAULT_CHUNK_ROWS = 1 << 20
DEFAULT_BLOCK_ROWS = 1 << 12  # fine statistics: skipping pays more than bigger blocks save


def _columns_of(data: Any) -> dict[str, np.ndarray]:
    """Column arrays from a structured array, a dict of arrays, a pandas DataFrame, a
    pyarrow Table, a CTable, or a list of row tuples (names then come from the caller)."""
    if isinstance(data, CTable):
        return {n: data._values(n) for n in data.col_names}
    if isinstance(data, np.ndarray) and data.dtype.names:
        return {n: np.ascontiguousarray(data[n]) for n in data.dtype.names}
    if isinstance(data, dict):
        return {n: _plain(np.asarray(v)) for n, v in data.items()}
    mod = type(data).__module__.split(".")[0]
    if mod == "pandas" and hasattr(data, "columns"):
        return {str(n): _plain(data[n].to_numpy()) for n in data.columns}
    if mod == "pyarrow" and hasattr(data, "column_names"):
        return {str(n): _plain(data.column(n).to_numpy(zero_copy_only=False)) for n in data.column_names}
    raise TypeError(
        f"cannot make table columns from {type(data).__name__} "
        "(structured array, dict of arrays, pandas DataFrame, pyarrow Table)"
    )


def _plain(v: np.ndarray) -> np.ndarray:
    """Object columns of str/bytes become fixed-width U/S columns."""
    if v.dtype == object:
        if len(v) and all(isinstance(x, bytes) for x in v):
            return v.astype(bytes)
        if all(isinstance(x, str) for x in v):
            return v.astype(str) if len(v) else np.empty(0, "U1")
        raise TypeError("object columns other than str/bytes are not supported")
    if v.ndim != 1:
        raise ValueError(f"a column must be 1-d, got shape {v.shape}")
    return v


class CTable:
    """A compressed columnar table (python-blosc2's ``CTable`` layout and names).

    ``CTable(data, urlpath=None, mode="w", cparams=None)``: ``data`` is a NumPy structured
    array, a dict of 1-d arrays, a pandas DataFrame or a pyarrow Table (or None with
    ``mode="r"``/``"a"`` to open ``urlpath``). ``urlpath`` ending in ``.b2z`` is one zip
    file (written now and on ``close``), any other path a directory; None keeps the table
    in memory. ``chunks``/``blocks`` set the rows per chunk/block of every column.
    """

    def __init__(
        self,
        data: Any = None,
        urlpath: str | os.PathLike | None = None,
        mode: str = "w",
        cparams: Any = None,
        dparams: Any = None,
        *,
        chunks: int | None = None,
        blocks: int | None = None,
        nthreads: int | None = None,
        _mmap_mode: str | None = None,
    ) -> None:
        self.urlpath = None if urlpath is None else os.fspath(urlpath)
        self.mode = mode
        self.nthreads = nthreads or _core.nthreads
        self.skip_blocks = True
        self.blocks_scanned = self.blocks_skipped = self.blocks_decoded = 0
        self.last_query: dict = {}
        self._cond, self._pos = None, None
        self._dirty = False
        if mode not in ("r", "a", "w"):
            raise ValueError(f"mode must be 'r', 'a' or 'w', got {mode!r}")
        if data is None and mode in ("r", "a"):
            if self.urlpath is not None and not os.path.exists(self.urlpath):
                _edit.recover(self.urlpath)
            if self.urlpath is None or not os.path.exists(self.urlpath):
                raise FileNotFoundError(f"no table at {self.urlpath!r}")
            self._adopt(L.read(self.urlpath, mode, _mmap_mode))
            if mode == "a" and self._rebuild_stats():
                self._persist()
            return
        if data is None:
            raise ValueError("data is needed to create a table (pass mode='r' to open one)")
        self._create(_columns_of(data), cparams, dparams, chunks, blocks)

    @property
    def _root(self) -> CTable:
        """The table a view reads, or the table itself. Not stored on a table: a table that
        referred to itself would be a reference cycle, kept (with its files open for writing)
        until the garbage collector ran, and a writable handle must close when dropped."""
        return self.__dict__.get("_base", self)

    # ------------------------------------------------------------------ creation

    def _adopt(self, stored: L.Stored) -> None:
        self._specs = stored.specs
        self._names = [s["name"] for s in stored.specs]
        self._dtypes = {s["name"]: L.dtype_of(s) for s in stored.specs}
        self._cols, self._valid, self._stats = stored.cols, stored.valid, stored.stats
        self._phys = self._valid.shape[0] if stored.phys < 0 else stored.phys
        live = int(np.count_nonzero(self._valid[: self._phys])) if self._phys else 0
        self._all_valid = live == self._phys
        self._nrows = live
        self._live = None
        self._epoch = self._phys
        self._visibility = stored.visibility
        self._stamp = L.stamp(self.urlpath) if self.urlpath and os.path.isdir(self.urlpath) else None

    def _create(self, cols: dict, cparams: Any, dparams: Any, chunks: int | None, blocks: int | None) -> None:
        if not cols:
            raise ValueError("a table needs at least one column")
        names = [L.check_name(n) for n in cols]
        lens = {n: len(v) for n, v in cols.items()}
        if len(set(lens.values())) > 1:
            raise ValueError(f"columns have different lengths: {lens}")
        n = next(iter(lens.values()))
        crow = int(chunks or min(DEFAULT_CHUNK_ROWS, max(1 << 12, 1 << max(n - 1, 1).bit_length())))
        brow = int(blocks or min(crow, DEFAULT_BLOCK_ROWS))
        if crow <= 0 or brow <= 0 or crow % brow:
            raise ValueError(f"chunks ({crow}) must be a positive multiple of blocks ({brow})")
        path, zipped = self.urlpath, self.urlpath is not None and self.urlpath.endswith(".b2z")
        if path is not None:
            if os.path.exists(path):
                if self.mode != "w":
                    raise FileExistsError(f"{path} exists: open it with CTable.open, or pass mode='w' to replace it")
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
            if not zipped:
                os.makedirs(os.path.join(path, "_cols"))
        where = None if path is None or zipped else path
        kw = dict(chunks=(crow,), blocks=(brow,), cparams=cparams, dparams=dparams)
        specs, arrays, stats = [], {}, {}
        for name in names:
            v = cols[name]
            specs.append(L.spec_of(name, v.dtype))
            sv = np.ascontiguousarray(v.view(L.stored_dtype(v.dtype)) if v.dtype.kind == "M" else v)
            file = {} if where is None else dict(urlpath=os.path.join(where, L.col_path(name)), mode="w")
            arrays[name] = asarray(sv, **kw, **file) if n else empty((0,), sv.dtype, **kw, **file)
            stats[name] = self._summarize(sv, brow)
        file = {} if where is None else dict(urlpath=os.path.join(where, L.VALID), mode="w")
        valid = asarray(np.ones(n, bool), **kw, **file) if n else empty((0,), bool, **kw, **file)
        self._adopt(L.Stored(specs, arrays, valid, stats, n))
        self._persist(force_zip=True)

    def _rebuild_stats(self) -> bool:
        """Compute the statistics a writable table lacks (lost in an interrupted append, or
        marked stale by python-blosc2), a chunk at a time. Whether any were rebuilt."""
        done = False
        for n in self._names:
            arr = self._cols[n]
            if self._stats.get(n) is not None or arr.dtype.kind not in "biuf" or not self._phys:
                continue
            step = arr.chunks[0]
            parts = [
                self._summarize(arr[i : min(i + step, self._phys)], arr.blocks[0]) for i in range(0, self._phys, step)
            ]
            self._stats[n] = b"".join(parts)
            done = True
        return done

    @staticmethod
    def _summarize(sv: np.ndarray, block_rows: int) -> bytes | None:
        if sv.dtype.kind not in "biuf":
            return None
        return _native.table_stats(sv.dtype.str, sv.dtype.itemsize, sv, block_rows)

    def _stored(self) -> L.Stored:
        return L.Stored(self._specs, self._cols, self._valid, self._stats, self._nrows, self._phys, self._visibility)

    def _arrays(self) -> list[NDArray]:
        return [*self._cols.values(), self._valid]

    def _persist(self, force_zip: bool = False) -> None:
        """Write the metadata (directory) or the whole zip (``.b2z``, on create and close)."""
        path = self.urlpath
        if path is None:
            return
        if path.endswith(".b2z"):
            if force_zip:
                L.write_zip(path, self._stored(), self._epoch, _summary.zip_members(self))
                self._dirty = False
            else:
                self._dirty = True
        else:
            L.write_meta(path, self._stored(), self._epoch)

    # ------------------------------------------------------------------ opening, saving

    @classmethod
    def open(cls, urlpath: str | os.PathLike, mode: str = "r", mmap_mode: str | None = None) -> CTable:
        """Open a table directory or ``.b2z`` file written by oxblosc or python-blosc2.
        ``mmap_mode="r"`` maps a read-only directory's files (queries borrow chunks from the
        map instead of reading them; the mapped pages count in the process's resident set)."""
        if mode not in ("r", "a"):
            raise ValueError(f"mode must be 'r' or 'a', got {mode!r}")
        if mmap_mode not in (None, "r") or (mmap_mode and mode != "r"):
            raise ValueError(f"mmap_mode must be None or 'r' (with mode='r'), got {mmap_mode!r}")
        return cls(None, urlpath, mode=mode, _mmap_mode=mmap_mode)

    def save(self, urlpath: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write the (live rows of the) table to ``urlpath``: a ``.b2z`` file or a directory."""
        path = os.fspath(urlpath)
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"{path} exists (pass overwrite=True)")
        fast = self._root is self and self._all_valid and all(a.shape[0] == self._phys for a in self._arrays())
        if fast and path.endswith(".b2z"):  # (written to a temporary file, renamed over path)
            L.write_zip(path, self._stored(), self._epoch, _summary.zip_members(self))
            return
        # Built under a temporary name beside ``path``, which it replaces only when complete:
        # a failure (a full disk) or a kill leaves the old table as it was.
        tmp = _temp_name(path)
        try:
            if fast:
                stored = self._stored()
                os.makedirs(os.path.join(tmp, "_cols"))
                for name, arr in self._cols.items():
                    arr.save(os.path.join(tmp, L.col_path(name)))
                self._valid.save(os.path.join(tmp, L.VALID))
                L.write_meta(tmp, stored, self._epoch)
                _summary.write_meta_file(self, tmp)
            else:
                self.copy(urlpath=tmp).close()  # column by column, user metadata too
        except BaseException:
            _remove_tree_or_file(tmp)
            raise
        _replace_path(tmp, path)

    def close(self) -> None:
        """Write a ``.b2z`` table changed since it was written (directories are always current)."""
        # (user metadata of a writable .b2z lives in memory until then, too)
        meta = self.mode != "r" and (self.urlpath or "").endswith(".b2z") and "_user_meta" in self.__dict__
        if self._root is self and (self._dirty or meta):
            self._persist(force_zip=True)

    def __enter__(self) -> CTable:
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    # ------------------------------------------------------------------ appending

    def append(self, row: Any) -> None:
        """Append one row (a tuple, a dict or a structured scalar)."""
        if isinstance(row, dict):
            self.extend({k: [v] for k, v in row.items()})
        elif isinstance(row, np.void):
            self.extend(np.array([row], dtype=row.dtype))
        else:
            self.extend([tuple(row)])

    def extend(self, data: Any) -> None:
        """Append rows: a list of tuples or anything the constructor takes."""
        if self._root is not self:
            raise ValueError("cannot append to a view")
        if self.mode == "r":
            raise ValueError("the table is read-only (opened with mode='r')")
        if isinstance(data, list):
            data = (
                {n: np.array([r[i] for r in data], dtype=self._dtypes[n]) for i, n in enumerate(self._names)}
                if data
                else {n: np.empty(0, self._dtypes[n]) for n in self._names}
            )
        cols = _columns_of(data)
        if set(cols) != set(self._names):
            raise ValueError(f"appended columns {sorted(cols)} differ from the table's {sorted(self._names)}")
        vals = {}
        for n in self._names:
            try:
                vals[n] = np.ascontiguousarray(np.asarray(cols[n]).astype(self._dtypes[n], casting="same_kind"))
            except TypeError as e:
                raise TypeError(f"column {n!r}: {e}") from None
        k = {len(v) for v in vals.values()}
        if len(k) != 1:
            raise ValueError(f"appended columns have different lengths: { {n: len(v) for n, v in vals.items()} }")
        k = k.pop()
        if k == 0:
            return
        old, brow = self._phys, self._cols[self._names[0]].blocks[0]
        directory = self.urlpath is not None and not self.urlpath.endswith(".b2z")
        if directory and L.stamp(self.urlpath) != self._stamp:
            # Its view of the rows is out of date: appending from it would drop what the other
            # handle appended (`_valid_rows` is rewritten from this handle's copy).
            raise FrameChangedError(
                f"{self.urlpath}: the table was changed by another handle since this one opened it; reopen it"
            )
        stats = {}
        try:
            # python-blosc2's own order: the validity column grows first with the new rows
            # marked False (unused capacity to both libraries), the columns follow, the rows
            # go live last. Each step on `_valid_rows` is a renamed copy; the metadata lists
            # no row count and no statistics meanwhile.
            for n in self._names:  # the tail of an earlier failed append
                if self._cols[n].shape[0] != old:
                    self._cols[n].resize((old,))
            if directory:
                L.uncommitted(self.urlpath, self._stored(), self._epoch)
                self._valid = L.replace_valid(self.urlpath, self._valid, old, add=k)
            for n in self._names:
                sv = vals[n].view(L.stored_dtype(vals[n].dtype)) if vals[n].dtype.kind == "M" else vals[n]
                self._cols[n].append(sv)
                stats[n] = self._extend_stats(n, sv, old, brow)
            if directory:  # the commit point
                self._valid = L.replace_valid(self.urlpath, self._valid, old + k, live=slice(old, old + k))
            else:
                self._valid.append(np.ones(k, bool))
        except BaseException:
            # Best effort: the columns back to the old length, then the validity column
            # (never before: a column longer than it would be read whole by python-blosc2).
            for n in self._names:
                with contextlib.suppress(Exception):
                    if self._cols[n].shape[0] != old:
                        self._cols[n].resize((old,))
            if directory and all(self._cols[n].shape[0] == old for n in self._names):
                with contextlib.suppress(Exception):
                    if self._valid.shape[0] != old:
                        self._valid = L.replace_valid(self.urlpath, self._valid, old)
                    self._persist()
            if directory:
                self._stamp = L.stamp(self.urlpath)
            raise
        self._stats.update(stats)
        self._phys += k
        self._nrows += k
        self._epoch += k
        self._live = None
        if directory:
            self._stamp = L.stamp(self.urlpath)
            L.write_meta(self.urlpath, self._stored(), self._epoch, listed_none=True)
        else:
            self._persist()

    def _extend_stats(self, name: str, sv: np.ndarray, old: int, brow: int) -> bytes | None:
        recs = self._stats.get(name)
        if sv.dtype.kind not in "biuf" or (recs is None and old):
            return None
        rl = 2 * sv.dtype.itemsize + 1
        head = (-old) % brow
        recs = bytes(recs or b"")
        if head:
            part = self._summarize(sv[:head], brow)
            recs = recs[:-rl] + _native.table_stats_merge(sv.dtype.str, sv.dtype.itemsize, recs[-rl:], part)
        return recs + self._summarize(sv[head:], brow)

    # ------------------------------------------------------------------ shape, schema

    def __len__(self) -> int:
        if self._root is self:
            return self._nrows
        return len(self._positions())

    @property
    def col_names(self) -> list[str]:
        return list(self._out_names())

    columns = col_names

    @property
    def ncols(self) -> int:
        return len(self._out_names())

    @property
    def nrows(self) -> int:
        return len(self)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy structured dtype of a row."""
        return np.dtype([(n, self._root._dtypes[n]) for n in self._out_names()])

    @property
    def schema(self) -> dict[str, np.dtype]:
        return {n: self._root._dtypes[n] for n in self._out_names()}

    @property
    def nbytes(self) -> int:
        return len(self) * self.dtype.itemsize

    @property
    def cbytes(self) -> int:
        r = self._root
        return sum(a.cbytes for a in r._cols.values()) + r._valid.cbytes

    @property
    def info(self) -> InfoTable:
        r = self._root
        c = r._cols[r._names[0]]
        cols = {n: f"{r._dtypes[n]} (cbytes: {human_bytes(r._cols[n].cbytes)})" for n in self.col_names}
        return InfoTable(
            [
                ("type", "CTable" if r is self else "CTable view"),
                ("urlpath", r.urlpath),
                ("nrows", len(self)),
                ("ncols", self.ncols),
                ("chunks", c.chunks),
                ("blocks", c.blocks),
                ("nbytes", human_bytes(self.nbytes)),
                ("cbytes", human_bytes(self.cbytes)),
                ("cratio", f"{self.nbytes / self.cbytes:.2f}" if self.cbytes else "inf"),
                ("columns", cols),
                ("statistics", sorted(n for n, s in r._stats.items() if s is not None)),
            ]
        )

    def __repr__(self) -> str:
        return f"<oxblosc.CTable nrows={len(self)} columns={self.col_names}>"

    # ------------------------------------------------------------------ rows

    def _live_positions(self) -> np.ndarray:
        """Physical positions of the live rows (computed once when some rows are deleted)."""
        r = self._root
        if r._all_valid:
            return np.arange(r._phys, dtype=np.int64)
        if r._live is None:
            r._live = np.flatnonzero(r._valid[: r._phys])
        return r._live

    def _positions(self) -> np.ndarray:
        """Physical positions of this table's (view's) rows, ascending."""
        if self._pos is None:
            if self._root is self or self._cond is None:
                return self._live_positions()
            self._pos = self._root._scan(self._cond, [], positions=True)[0]
        return self._pos

    def _read(self, name: str, pos: np.ndarray | slice) -> np.ndarray:
        r = self._root
        arr = r._cols[name]
        if isinstance(pos, slice):
            v = arr[pos]
        elif len(pos) and pos[-1] - pos[0] + 1 == len(pos) and (len(pos) < 3 or bool(np.all(np.diff(pos) == 1))):
            v = arr[int(pos[0]) : int(pos[-1]) + 1]
        elif len(pos) and bool(np.all(np.diff(pos) > 0)) and 8 * len(pos) >= pos[-1] - pos[0]:
            v = _gather_dense(arr, pos)
        else:
            v = arr[pos] if len(pos) else np.empty(0, arr.dtype)
        dt = r._dtypes[name]
        return v.view(dt) if dt.kind == "M" else v

    def _values(self, name: str) -> np.ndarray:
        """Every value of column ``name`` in this table (view)."""
        if self._root is self and self._all_valid:
            return self._read(name, slice(0, self._phys))
        if self._pos is None and self._cond is not None:
            return self._root._gather(self._cond, [name])[name]
        return self._read(name, self._positions())

    def _rows_view(self, pos: np.ndarray) -> CTable:
        v = object.__new__(CTable)
        v.__dict__.update(
            _base=self._root,
            _cond=None,
            _pos=np.asarray(pos, dtype=np.int64),
            urlpath=None,
            mode="r",
            nthreads=self._root.nthreads,
            _columns=self.__dict__.get("_columns"),  # a projection (select, where(columns=)) stays
        )
        return v

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if key in self._root._dtypes:
                if key not in self._out_names():
                    raise KeyError(f"column {key!r} is not in this view (columns: {self.col_names})")
                return Column(self, key)
            return self.where(key)
        if isinstance(key, int | np.integer):
            pos = self._positions()
            return self._rows_view(pos[[key]]).to_numpy()[0]
        if isinstance(key, slice):
            return self._rows_view(self._positions()[key])
        if isinstance(key, list | np.ndarray):
            key = np.asarray(key)
            if key.dtype == bool:
                return self._rows_view(self._positions()[key])
            return self._rows_view(np.sort(self._positions()[key]))
        raise TypeError(f"cannot index a CTable with {type(key).__name__}")

    # ------------------------------------------------------------------ python-blosc2's editing,
    # view and copy methods (ctable_edit, ctable_views)

    def delete(self, ind: Any) -> None:
        """Mark rows deleted (a row number, a slice, a list of row numbers or a bool mask over
        the live rows); they leave ``len``, reads and queries. ``compact`` reclaims the space."""
        _edit.delete(self, ind)

    def compact(self) -> None:
        """Rewrite the columns without the deleted rows."""
        _edit.compact(self)

    def drop_column(self, name: str) -> None:
        _edit.drop_column(self, name)

    def rename_column(self, old: str, new: str) -> None:
        _edit.rename_column(self, old, new)

    def add_column(self, name: str, spec: Any, values: Any = None) -> None:
        """Add a column: ``spec`` is python-blosc2's (``blosc2.int64()``, ``blosc2.field(spec,
        default=...)``), a schema dict (``{"kind": "int64"}``) or a NumPy dtype; ``values``
        one per live row, else the spec's default fills the existing rows."""
        _edit.add_column(self, name, spec, values)

    def select(self, cols: list[str]) -> CTable:
        """A view showing only the columns ``cols``."""
        return _views.select(self, cols)

    def take(self, indices: Any, /) -> CTable:
        """A new in-memory table of the rows at ``indices`` (order and repeats kept)."""
        return _views.take(self, indices)

    def slice(self, start: Any, stop: Any = None, /, *, copy: bool = True) -> CTable:
        """Rows ``start:stop`` as a compact copy (or a view with ``copy=False``)."""
        return _views.slice_rows(self, start, stop, copy)

    def sample(self, n: int, *, seed: int | None = None) -> CTable:
        """A view of ``n`` random rows (without repeats, in table order)."""
        return _views.sample(self, n, seed)

    def copy(
        self,
        compact: bool = True,
        *,
        urlpath: str | os.PathLike | None = None,
        overwrite: bool = False,
        chunks: Any = None,
        blocks: Any = None,
        cparams: Any = None,
    ) -> CTable:
        """A standalone copy in memory or at ``urlpath``; ``compact=False`` keeps deleted slots."""
        return _views.copy(self, compact, urlpath, overwrite, chunks, blocks, cparams)

    def sort_by(self, cols: Any, ascending: Any = True, *, inplace: bool = False, view: bool = False) -> CTable:
        """Rows sorted by ``cols`` (first key first): a new in-memory table, a view
        (``view=True``) or this table rewritten (``inplace=True``, returns it)."""
        return _views.sort_by(self, cols, ascending, inplace, view)

    # ------------------------------------------------------------------ importing (ctable_io)

    @classmethod
    def from_pandas(cls, df: Any, row_cls: Any = None, **kwargs: Any) -> CTable:
        """A table from a DataFrame; ``row_cls`` (python-blosc2's row dataclass, or a dict of
        dtypes) picks and types the columns, None takes them as they are. ``kwargs`` go to
        the constructor (``urlpath``, ``chunks``, ...)."""
        return _io.from_pandas(cls, df, row_cls, **kwargs)

    @classmethod
    def from_arrow(cls, schema: Any, batches: Any = None, **kwargs: Any) -> CTable:
        """A table from a pyarrow Table, or an Arrow schema and record batches."""
        return _io.from_arrow(cls, schema, batches, **kwargs)

    @classmethod
    def from_csv(
        cls, path: Any, row_cls: Any, *, header: bool = True, sep: str = ",", encoding: str = "utf-8-sig", **kwargs: Any
    ) -> CTable:
        """A table from a CSV file (fields in ``row_cls`` order: python-blosc2's row dataclass
        or a dict of dtypes); reads what ``to_csv`` writes, timestamps and bytes included."""
        return _io.from_csv(cls, path, row_cls, header=header, sep=sep, encoding=encoding, **kwargs)

    # ------------------------------------------------------------------ summaries (ctable_summary)

    def describe(self) -> None:
        """Print a per-column summary (python-blosc2's format)."""
        print(_summary.describe(self))

    def cov(self) -> np.ndarray:
        """The covariance matrix of the (int, float, bool) columns, as ``np.cov``."""
        return _summary.cov(self)

    def to_csv(self, path: Any = None, *, header: bool = True, sep: str = ",", encoding: str = "utf-8") -> str | None:
        """The rows as CSV text (``path`` None) or written to ``path``."""
        return _summary.to_csv(self, path, header, sep, encoding)

    @property
    def cratio(self) -> float:
        return _summary.cratio(self)

    @property
    def chunks(self) -> tuple[int, ...]:
        r = self._root
        return r._cols[r._names[0]].chunks

    @property
    def blocks(self) -> tuple[int, ...]:
        r = self._root
        return r._cols[r._names[0]].blocks

    @property
    def vlmeta(self) -> Any:
        """User metadata (python-blosc2's ``_vlmeta.b2f``): msgpack values by key, persisted."""
        return _summary.user_meta(self._root)

    attrs = vlmeta

    def head(self, N: int = 5) -> CTable:  # noqa: N803 (python-blosc2's name)
        return self[:N]

    def tail(self, N: int = 5) -> CTable:  # noqa: N803 (python-blosc2's name)
        return self[max(len(self) - N, 0) :]

    # ------------------------------------------------------------------ queries

    def _scan(self, cond: str, outputs: list[str], positions: bool) -> tuple:
        """Run ``cond`` over the root table: (positions or None, {name: values}, count)."""
        r = self._root
        names = r._names
        cols = [
            (n, _native_of(r._cols[n]), r._cols[n].dtype.str, r._stats.get(n) if r.skip_blocks else None) for n in names
        ]
        valid = None if r._all_valid else _native_of(r._valid)
        pos, vals, count, scanned, skipped, decoded = _native.table_query(
            cols,
            valid,
            r._phys,
            cond,
            [names.index(o) for o in outputs],
            int(self.nthreads),
            bool(r.skip_blocks),
            positions,
        )
        r.blocks_scanned += scanned
        r.blocks_skipped += skipped
        r.blocks_decoded += decoded
        r.last_query = dict(
            condition=cond, rows=count, blocks_scanned=scanned, blocks_skipped=skipped, column_blocks_decoded=decoded
        )
        out = {}
        for name, b in zip(outputs, vals, strict=False):
            v = np.frombuffer(b, dtype=r._cols[name].dtype)
            out[name] = v.view(r._dtypes[name]) if r._dtypes[name].kind == "M" else v
        return (np.frombuffer(pos, dtype=np.int64) if positions else None), out, count

    def _gather(self, cond: str, outputs: list[str]) -> dict:
        return self._scan(cond, outputs, positions=False)[1]

    def _combined(self, cond: str) -> str:
        if not isinstance(cond, str):
            raise TypeError(f"a condition is a string expression, got {type(cond).__name__}")
        return cond if self._cond is None else f"({self._cond}) & ({cond})"

    def where(self, expr: str, columns: list[str] | None = None) -> CTable:
        """The rows where ``expr`` holds, as a table view (``len``, ``to_numpy``,
        ``to_pandas``, further ``where``); ``columns`` limits what ``to_numpy`` returns."""
        if columns is not None:
            unknown = [c for c in columns if c not in self._root._dtypes]
            if unknown:
                raise KeyError(f"no column {unknown[0]!r}")
        v = object.__new__(CTable)
        v.__dict__.update(
            _base=self._root,
            urlpath=None,
            mode="r",
            nthreads=self._root.nthreads,
            _columns=list(columns) if columns is not None else self.__dict__.get("_columns"),
        )
        if self._pos is None:
            v._cond, v._pos = self._combined(expr), None
            r = self._root
            names = r._names
            _, kind = _native.table_compile(
                v._cond, [(n, r._cols[n].dtype.str, r._cols[n].dtype.itemsize) for n in names]
            )
            if kind != "|b1":
                raise ValueError(f"the condition {expr!r} gives {np.dtype(kind)} values, not booleans")
        else:
            hits = self._root._scan(expr, [], positions=True)[0]
            v._cond, v._pos = None, np.intersect1d(self._pos, hits, assume_unique=True)
        return v

    def count(self, expr: str | None = None) -> int:
        """Rows where ``expr`` holds (all rows when None)."""
        return len(self) if expr is None else len(self.where(expr))

    # ------------------------------------------------------------------ export

    def _out_names(self) -> list[str]:
        return self.__dict__.get("_columns") or self._root._names

    def to_numpy(self) -> np.ndarray:
        """The rows as a NumPy structured array."""
        names = self._out_names()
        dt = np.dtype([(n, self._root._dtypes[n]) for n in names])
        if self._pos is None and self._cond is not None:
            vals = self._root._gather(self._cond, names)
        else:
            vals = {n: self._values(n) for n in names}
        out = np.empty(len(next(iter(vals.values()))), dtype=dt)
        for n in names:
            out[n] = vals[n]
        return out

    def to_pandas(self):
        import pandas as pd

        a = self.to_numpy()
        return pd.DataFrame({n: a[n] for n in a.dtype.names})

    def to_arrow(self):
        import pyarrow as pa

        a = self.to_numpy()
        return pa.table({n: a[n] for n in a.dtype.names})

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.to_numpy()
        return a if dtype is None else a.astype(dtype)

    def verify_stats(self) -> None:
        """Recompute every column's statistics and raise ``ValueError`` naming the column and
        block where the stored ones disagree (a damaged or lying file)."""
        r = self._root
        for n in r._names:
            recs = r._stats.get(n)
            if recs is None:
                continue
            arr = r._cols[n]
            fresh = self._summarize(arr[: r._phys], arr.blocks[0])
            if fresh != recs[: len(fresh)]:
                rl = 2 * arr.dtype.itemsize + 1
                bad = next(
                    i for i in range(len(fresh) // rl) if fresh[i * rl : (i + 1) * rl] != recs[i * rl : (i + 1) * rl]
                )
                raise ValueError(
                    f"column {n!r}: stored statistics of block {bad} (rows {bad * arr.blocks[0]}...) "
                    "disagree with the data"
                )


def _gather_dense(arr: NDArray, pos: np.ndarray) -> np.ndarray:
    """``arr[pos]`` for ascending positions that pick a good share of the rows they span (the
    live rows of a table with deletions): each chunk they touch read once as a slice (an
    index-array read costs several times more there), one chunk in memory at a time."""
    step = arr.chunks[0]
    out = np.empty(len(pos), arr.dtype)
    cuts = np.flatnonzero(np.diff(pos // step)) + 1
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(pos)], strict=True):
        lo = int(pos[a])
        out[a:b] = arr[lo : int(pos[b - 1]) + 1][pos[a:b] - lo]
    return out


def _native_of(arr: NDArray) -> Any:
    n = arr._n
    if not isinstance(n, _native.NativeNDArray):
        raise ValueError("tables do not support locking=True columns")
    return n


class Column:
    """One column of a table (or view): sliceable, with ``sum/mean/min/max(where=...)``."""

    def __init__(self, table: CTable, name: str) -> None:
        self.table, self.name = table, name

    @property
    def dtype(self) -> np.dtype:
        return self.table._root._dtypes[self.name]

    def __len__(self) -> int:
        return len(self.table)

    def __repr__(self) -> str:
        return f"Column({self.name!r}, dtype={self.dtype}, len={len(self)})"

    def __getitem__(self, key: Any) -> Any:
        t = self.table
        if t._root is t and t._all_valid:  # physical rows are the rows: read only what is asked
            if isinstance(key, slice):
                return t._read(self.name, slice(*key.indices(t._phys)))
            if isinstance(key, int | np.integer):
                k = int(key) + (t._phys if key < 0 else 0)
                if not 0 <= k < t._phys:
                    raise IndexError(f"row {key} out of range for a column of {t._phys} rows")
                return t._read(self.name, slice(k, k + 1))[0]
        return self.to_numpy()[key]

    def to_numpy(self) -> np.ndarray:
        return self.table._values(self.name)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        v = self.to_numpy()
        return v if dtype is None else v.astype(dtype)

    def _vals(self, where: str | None) -> np.ndarray:
        return self.table.where(where)._values(self.name) if where is not None else self.to_numpy()

    def sum(self, where: str | None = None) -> Any:
        return self._vals(where).sum()

    def mean(self, where: str | None = None) -> Any:
        return self._vals(where).mean()

    def min(self, where: str | None = None) -> Any:
        return self._vals(where).min()

    def max(self, where: str | None = None) -> Any:
        return self._vals(where).max()


def open_table(urlpath: str, mode: str = "r") -> CTable:
    """``CTable.open`` for ``oxblosc.open``."""
    return CTable.open(urlpath, mode=mode)


__all__ = ["CTable", "Column"]


_TEMP_SEQ = itertools.count()


def _temp_name(path: str) -> str:
    """A fresh name beside ``path`` to build a table under (``.b2z`` kept: it selects the format)."""
    return f"{path}.oxtmp-{os.getpid()}-{next(_TEMP_SEQ)}" + (".b2z" if path.endswith(".b2z") else "")


def _remove_tree_or_file(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def _replace_path(tmp: str, path: str) -> None:
    """Move the table written at ``tmp`` to ``path``, replacing what is there. A file is
    replaced in one rename; a directory is first renamed away (a kill in between leaves the
    old table under ``<path>.oxold-<pid>-<n>``, the new one at ``tmp``), then removed."""
    if not os.path.lexists(path) or not (os.path.isdir(path) or os.path.isdir(tmp)):
        os.replace(tmp, path)
        return
    old = f"{path}.oxold-{os.getpid()}-{next(_TEMP_SEQ)}"
    os.rename(path, old)
    os.rename(tmp, path)
    _remove_tree_or_file(old)
