"""PyTables tables (``CLASS="TABLE"`` compound datasets) read and written through h5py.

A PyTables Table is a 1-D, chunked, extendible HDF5 dataset of one compound type (one element
per row) with attributes naming its columns. Reading goes through :class:`~.dataset.Dataset`,
so a row range decodes only the Blosc blocks it touches inside each (often L3-sized) chunk;
zlib and unfiltered tables are read by h5py. Writing creates the dataset and attributes as
PyTables does (its chunk-shape rule unless told otherwise) and appends whole chunks with direct
chunk writes of exactly the bytes the Blosc2 filter stores (encoded in parallel, GIL released),
the partial first and last chunks through HDF5's filter pipeline: PyTables opens, queries and
appends to the result, and any Blosc2 filter (hdf5plugin, PyTables, ours) reads it.
"""

from __future__ import annotations

import math
import operator
import os
from collections import deque
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import _native
from .dataset import Dataset

__all__ = ["Table", "create_table", "is_table", "pytables_chunkrows"]

_BLOSC2_ID, _BLOSC_ID = 32026, 32001
_TABLE_VERSION = "2.7"  # what PyTables 3.x writes for tables
_GROUP_VERSION = "1.0"
_FORMAT_VERSION = "2.1"  # PYTABLES_FORMAT_VERSION of the root group
_DEFAULT_EXPECTED = 10_000  # PyTables' default expectedrows


def is_table(node) -> bool:
    """Whether an h5py object is a PyTables Table (a 1-D compound dataset with CLASS=TABLE)."""
    import h5py

    if not isinstance(node, h5py.Dataset) or node.dtype.names is None or len(node.shape) != 1:
        return False
    cls = node.attrs.get("CLASS")
    return _text(cls) == "TABLE"


def _text(v) -> str | None:
    if isinstance(v, bytes | np.bytes_):
        return bytes(v).decode("utf-8", "replace")
    return str(v) if isinstance(v, str) else None


class Table:
    """A PyTables table over an h5py dataset: read anywhere, append when the file is writable.

    ``t[i]`` is one row (a NumPy void), ``t[a:b]`` / ``t[a:b:s]`` / ``t[[i, j]]`` structured
    arrays, ``t["col"]`` a column, ``t[["a", "b"]]`` a packed array of those columns;
    :meth:`read`, :meth:`col` and :meth:`iterchunks` as PyTables. Blosc-compressed rows are
    decoded from the file block by block (``blocks_decoded`` counts them).
    """

    def __init__(self, dataset, nthreads: int | None = None):
        if dataset.ndim != 1 or dataset.dtype.names is None:
            raise ValueError(f"{dataset.file.filename}: {dataset.name} is not a table (a 1-D compound dataset)")
        self._d = dataset
        self._nthreads = int(nthreads) if nthreads else _native.default_nthreads()
        self._dtype = _row_dtype(dataset.id.get_type(), dataset.dtype)
        self._ds = Dataset(dataset, nthreads=self._nthreads)
        self._decoded_before = 0
        self._owned_file = None

    # ------------------------------------------------------------------ properties

    @property
    def dtype(self) -> np.dtype:
        """The row type (PyTables' 1-bit bitfields are NumPy bools)."""
        return self._dtype

    @property
    def colnames(self) -> list[str]:
        return list(self._dtype.names)

    columns = colnames

    @property
    def coldtypes(self) -> dict[str, np.dtype]:
        return {n: self._dtype.fields[n][0] for n in self._dtype.names}

    @property
    def nrows(self) -> int:
        return self._d.shape[0]

    @property
    def shape(self) -> tuple[int]:
        return (self.nrows,)

    @property
    def rowsize(self) -> int:
        return self._dtype.itemsize

    @property
    def chunkshape(self) -> tuple[int]:
        return self._d.chunks

    @property
    def title(self) -> str:
        return _text(self._d.attrs.get("TITLE", "")) or ""

    @property
    def name(self) -> str:
        return self._d.name

    @property
    def filter_id(self) -> int | None:
        """The Blosc filter read block by block, or None when h5py reads the chunks."""
        return self._ds.filter_id

    @property
    def blocks_decoded(self) -> int:
        return self._decoded_before + self._ds.blocks_decoded

    @property
    def nthreads(self) -> int:
        return self._nthreads

    def __len__(self) -> int:
        return self.nrows

    def __repr__(self) -> str:
        return f"<oxblosc.hdf5.Table {self.name!r} nrows={self.nrows} columns={self.colnames}>"

    # ------------------------------------------------------------------ reading

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.read(field=key)
        if isinstance(key, list | tuple) and key and all(isinstance(k, str) for k in key):
            return self.read(field=list(key))
        if isinstance(key, slice):
            return self.read(key.start, key.stop, key.step)
        try:
            i = operator.index(key) if not isinstance(key, bool | np.bool_) else None
        except TypeError:
            i = None
        if i is not None:
            n = self.nrows
            if not -n <= i < n:
                raise IndexError(f"row {i} is out of range for a table of {n} rows")
            i %= n
            return self._rows(i, i + 1)[0]
        return self.read_coordinates(key)

    def read(self, start=None, stop=None, step=None, field=None) -> np.ndarray:
        """Rows ``start:stop:step`` as a structured array; ``field`` (a column name, or a list
        of them) keeps only those columns (one name: a plain array)."""
        r = range(*slice(start, stop, step).indices(self.nrows))
        if len(r) == 0:
            return np.empty(0, self._field_dtype(field))
        lo, hi = min(r[0], r[-1]), max(r[0], r[-1]) + 1
        if field is None and r.step == 1:
            return self._rows(lo, hi)
        out = np.empty(len(r), self._field_dtype(field))
        done = 0
        for first, rows in self._pieces(lo, hi):
            # The rows of the step in this piece, in file order (a negative step is reversed below).
            sel = rows[(r.start - first) % abs(r.step) :: abs(r.step)]
            part = _select(sel, field)
            out[done : done + len(part)] = part
            done += len(part)
        return out[::-1] if r.step < 0 else out

    def col(self, name: str) -> np.ndarray:
        """One whole column."""
        return self.read(field=name)

    def read_coordinates(self, coords, field=None) -> np.ndarray:
        """The rows at ``coords`` (ints or a boolean mask of every row), in that order."""
        idx = np.asarray(coords)
        if idx.dtype == bool:
            if idx.shape != (self.nrows,):
                raise IndexError(f"a boolean mask needs {self.nrows} values, got shape {idx.shape}")
            idx = np.flatnonzero(idx)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise IndexError("row coordinates are a 1-D list of integers or a boolean mask")
        idx = np.where(idx < 0, idx + self.nrows, idx).astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.nrows):
            raise IndexError(f"row coordinates out of range for a table of {self.nrows} rows")
        out = np.empty(len(idx), self._field_dtype(field))
        if not idx.size:
            return out
        order = np.argsort(idx, kind="stable")
        sorted_idx = idx[order]
        # Per chunk touched, only the rows from its first to its last coordinate.
        chunk_of = sorted_idx // self.chunkshape[0]
        bounds = np.flatnonzero(np.diff(chunk_of)) + 1
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(idx)], strict=True):
            first = int(sorted_idx[a])
            rows = self._rows(first, int(sorted_idx[b - 1]) + 1)
            out[order[a:b]] = _select(rows[sorted_idx[a:b] - first], field)
        return out

    def where(self, condition: str, columns=None, start=None, stop=None) -> np.ndarray:
        """The rows of ``start:stop`` where ``condition`` (numexpr syntax over column names, as
        PyTables' ``read_where``) holds, as a structured array (``columns``: only those). It is
        evaluated by ``oxblosc.evaluate`` a few chunks at a time (as many as threads), reading
        only those chunks' rows: never the whole table at once."""
        from .. import evaluate, expr_names

        names = expr_names(condition)
        for n in names:
            self._column(n)  # a KeyError naming the table's columns
        dt = self._field_dtype(columns)
        lo, hi, _ = slice(start, stop).indices(self.nrows)
        found = []
        for _, rows in self._pieces(lo, max(lo, hi)):
            mask = evaluate(condition, {n: np.ascontiguousarray(rows[n]) for n in names}, nthreads=self._nthreads)
            if mask.dtype != bool or mask.shape != rows.shape:
                raise TypeError(f"condition {condition!r} gives {mask.dtype} values of shape {mask.shape}, not a mask")
            found.append(_select(rows[mask], columns))
        out = np.empty(sum(len(f) for f in found), dt)
        done = 0
        for f in found:
            out[done : done + len(f)] = f
            done += len(f)
        return out

    def iterchunks(self, start=None, stop=None):
        """``(first_row, rows)`` for each HDF5 chunk of rows ``start:stop`` (cut to the range)."""
        lo, hi, _ = slice(start, stop).indices(self.nrows)
        yield from self._pieces(lo, max(lo, hi), batch=1)

    def __iter__(self):
        for _, rows in self._pieces(0, self.nrows, batch=1):
            yield from rows

    def _rows(self, lo: int, hi: int) -> np.ndarray:
        return self._ds[lo:hi].view(self._dtype)

    def _pieces(self, lo: int, hi: int, batch: int | None = None):
        """Rows ``lo:hi`` read a few whole chunks at a time (as many as threads), so a read of
        some columns never holds the whole table."""
        c = self.chunkshape[0]
        step = c * (batch or max(1, self._nthreads))
        a = lo
        while a < hi:
            b = min(hi, (a // c) * c + step)
            yield a, self._rows(a, b)
            a = b

    def _field_dtype(self, field) -> np.dtype:
        if field is None:
            return self._dtype
        if isinstance(field, str):
            return self._column(field)
        for f in field:
            self._column(f)
        return np.dtype([(f, self._dtype.fields[f][0]) for f in field])

    def _column(self, name: str) -> np.dtype:
        try:
            return self._dtype.fields[name][0]
        except KeyError:
            raise KeyError(f"table {self.name} has no column {name!r} (columns: {', '.join(self.colnames)})") from None

    # ------------------------------------------------------------------ writing

    def append(self, rows) -> None:
        """Append rows (a structured array, a dict of columns, or a list of tuples): whole
        chunks by direct chunk writes for Blosc filters, the rest through HDF5's pipeline."""
        data = _as_rows(rows, self._dtype)
        n = len(data)
        if n == 0:
            return
        d = self._d
        if d.file.mode != "r+":
            raise OSError(f"{d.file.filename}: the file is open read-only; cannot append to table {d.name}")
        n0 = self.nrows
        c = self.chunkshape[0]
        d.resize((n0 + n,))  # direct chunk writes must land inside the extent
        try:
            head = min(n, (-n0) % c)
            whole = (n - head) // c
            if head:
                self._write_rows(n0, data[:head])
            self._write_chunks(n0 + head, data[head : head + whole * c])
            if head + whole * c < n:
                self._write_rows(n0 + head + whole * c, data[head + whole * c :])
        except BaseException:
            d.resize((n0,))  # rows not written are not rows
            raise
        finally:
            d.attrs["NROWS"] = np.int64(d.shape[0])
            self._decoded_before += self._ds.blocks_decoded
            self._ds = Dataset(d, nthreads=self._nthreads)  # new extent and chunks

    def _write_rows(self, start: int, data: np.ndarray) -> None:
        """Rows through HDF5's filter pipeline, in the file's own type (no conversion)."""
        import h5py

        dsid = self._d.id
        fspace = dsid.get_space()
        fspace.select_hyperslab((start,), (len(data),))
        mspace = h5py.h5s.create_simple((len(data),))
        dsid.write(mspace, fspace, np.ascontiguousarray(data), mtype=dsid.get_type())

    def _write_chunks(self, start: int, data: np.ndarray) -> None:
        """Whole chunks from row ``start`` (chunk-aligned): encoded by the filter's own code,
        several at once, and written in order with ``write_direct_chunk``."""
        c = self.chunkshape[0]
        nchunks = len(data) // c
        if nchunks == 0:
            return
        plist = self._d.id.get_create_plist()
        fid = plist.get_filter(0)[0] if plist.get_nfilters() == 1 else None
        if fid not in (_BLOSC2_ID, _BLOSC_ID):
            self._write_rows(start, data)
            return
        cd = list(plist.get_filter(0)[2])
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(nchunks, -1)
        many = self._nthreads > 1 and nchunks > 1
        inner = 1 if many else self._nthreads

        def encode(k):
            (enc,) = _native.hdf5_encode_chunks(fid, cd, [raw[k]], inner)
            if not isinstance(enc, str):
                return 0, enc
            if fid != _BLOSC_ID:
                raise ValueError(f"{self._ds._where}, chunk at row {start + k * c}: {enc}")
            return 1, raw[k]  # Blosc could not shrink it: stored raw, filter skipped (mask bit 0)

        dsid = self._d.id
        width = max(1, self._nthreads) if many else 1
        pending: deque = deque()  # encoding ahead of the writes, at most 2 per thread (bounded memory)
        with ThreadPoolExecutor(width) as pool:
            for k in range(nchunks + 2 * width):
                if k < nchunks:
                    pending.append((k, pool.submit(encode, k)))
                if pending and (k >= nchunks or len(pending) > 2 * width):
                    done, fut = pending.popleft()
                    mask, enc = fut.result()
                    dsid.write_direct_chunk((start + done * c,), enc, mask)

    def flush(self) -> None:
        self._d.file.flush()

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the file `open`/`create_table` opened (a Table over an h5py dataset holds none)."""
        self._ds.close()
        if self._owned_file is not None:
            self._owned_file.close()
            self._owned_file = None

    def __enter__(self) -> Table:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _select(rows: np.ndarray, field):
    if field is None:
        return rows
    if isinstance(field, str):
        return rows[field]
    return rows[list(field)]


def _row_dtype(tid, dt: np.dtype) -> np.dtype:
    """h5py's dtype with PyTables' bools (8-bit bitfields) as NumPy bools, same layout."""
    import h5py

    cls = tid.get_class()
    if cls == h5py.h5t.BITFIELD and dt.itemsize == 1:
        return np.dtype("?")
    if cls == h5py.h5t.COMPOUND and dt.names:
        names, formats, offsets = [], [], []
        for i in range(tid.get_nmembers()):
            name = tid.get_member_name(i).decode()
            sub, off = dt.fields[name][:2]
            names.append(name), formats.append(_row_dtype(tid.get_member_type(i), sub)), offsets.append(off)
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": dt.itemsize})
    if cls == h5py.h5t.ARRAY and dt.subdtype is not None:
        base, shape = dt.subdtype
        return np.dtype((_row_dtype(tid.get_super(), base), shape))
    return dt


def _as_rows(rows, dtype: np.dtype) -> np.ndarray:
    """Rows of exactly ``dtype`` from a structured array, a dict of columns or a sequence."""
    if isinstance(rows, Mapping):
        n = {len(np.atleast_1d(v)) for v in rows.values()}
        if len(n) > 1:
            raise ValueError(f"the columns have different lengths: {sorted(n)}")
        out = np.zeros(n.pop() if n else 0, dtype)
        for name, v in rows.items():
            if name not in dtype.names:
                raise ValueError(f"no column {name!r} in the table (columns: {', '.join(dtype.names)})")
            out[name] = v
        return out
    arr = np.asarray(rows) if isinstance(rows, np.ndarray) else None
    if arr is not None and arr.dtype.names is not None:
        if arr.dtype == dtype:
            return np.ascontiguousarray(arr.reshape(-1))
        out = np.zeros(arr.size, dtype)
        for name in dtype.names:
            if name in arr.dtype.names:
                out[name] = arr[name].reshape(-1)
        return out
    return np.array(rows if isinstance(rows, list) else list(rows), dtype=dtype).reshape(-1)


# ---------------------------------------------------------------------- creating


def pytables_chunkrows(rowsize: int, expectedrows: int, blosc2: bool, caches: tuple | None = None) -> int:
    """Rows per chunk by PyTables' rule (``Leaf._calc_chunkshape``): 64 KiB times 2 per decade
    of expected megabytes; for Blosc2 16 times that, or the L3 size when the CPU has an L3
    larger than its L2 (capped at Blosc2's 2 GiB chunk limit).

    ``caches`` is ``(L2, L3)`` in bytes; by default the kernel's (sysfs). PyTables asks
    py-cpuinfo, which takes a second and on some machines (VMs) reports an L3 below the L2
    (then the L3 step is skipped) or a whole socket's L3: pass its values to match it exactly.
    """
    mb = min(max(expectedrows * rowsize // (1 << 20), 1), 10**7)
    chunksize = (64 << 10) * 2 ** int(math.log10(mb))
    if blosc2:
        chunksize *= 16
        l2, l3 = caches if caches is not None else (_sysfs_cache(2), _sysfs_cache(3))
        if isinstance(l3, int) and isinstance(l2, int) and l3 > l2:
            chunksize = l3
        chunksize = min(chunksize, 2**31 - 32)
    return max(1, chunksize // rowsize)


def _sysfs_cache(level: int) -> int | None:
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in os.listdir(base):
            with open(f"{base}/{idx}/level") as f:
                if int(f.read()) != level:
                    continue
            with open(f"{base}/{idx}/size") as f:
                s = f.read().strip()
            return int(s[:-1]) << 10 if s.endswith("K") else int(s[:-1]) << 20 if s.endswith("M") else int(s)
    except (OSError, ValueError):
        return None
    return None


def create_table(
    where,
    name: str,
    data=None,
    *,
    dtype=None,
    title: str = "",
    filters="blosc2",
    chunkshape=None,
    expectedrows: int | None = None,
    nthreads: int | None = None,
) -> Table:
    """Create a PyTables table ``name`` (e.g. ``"/group/table"``; missing groups are made) in
    ``where`` (an h5py File or Group open for writing, or a file path, opened in append mode
    and closed by :meth:`Table.close`), with the rows of ``data`` (a structured array or a
    dict of columns; or only ``dtype``).

    ``filters``: ``oxblosc.hdf5.Blosc2(...)`` / ``Blosc(...)`` or any h5py compression mapping,
    ``"blosc2"`` (Blosc2 zstd 5 + shuffle), ``"zlib"`` (gzip 5 + HDF5 shuffle) or None.
    ``chunkshape``: rows per chunk, else PyTables' rule for ``expectedrows`` (default: the
    larger of 10000 and the rows given).
    """
    import h5py

    from . import Blosc2, register

    if data is not None and not isinstance(data, np.ndarray | Mapping):
        data = np.asarray(data, dtype=dtype)
    if dtype is None:
        if data is None:
            raise ValueError("give the rows (data=) or their dtype (dtype=)")
        dtype = _dtype_of(data)
    dtype = np.dtype(dtype)
    if dtype.names is None:
        raise ValueError(f"a table row is a structured dtype with named columns, not {dtype}")
    nested = [n for n in dtype.names if (dtype.fields[n][0].subdtype or (dtype.fields[n][0],))[0].names]
    if nested:
        raise ValueError(f"nested columns ({', '.join(nested)}) are read but not written yet; flatten them")
    rows = _as_rows(data, dtype) if data is not None else np.empty(0, dtype)
    owned = None
    if isinstance(where, str | os.PathLike):
        owned = where = h5py.File(where, "a")
    try:
        if filters == "blosc2":
            filters = Blosc2()
        opts, is_blosc2 = _filter_options(filters)
        if is_blosc2 or (opts.get("compression") in (_BLOSC2_ID, _BLOSC_ID) and not h5py.h5z.filter_avail(_BLOSC2_ID)):
            register()
        if chunkshape is None:
            expected = max(expectedrows or _DEFAULT_EXPECTED, len(rows))
            crows = pytables_chunkrows(dtype.itemsize, expected, is_blosc2)
        else:
            crows = int(chunkshape[0] if isinstance(chunkshape, tuple | list) else chunkshape)
            if crows < 1:
                raise ValueError(f"chunkshape {chunkshape!r}: at least one row per chunk")
        group, leaf = _parent(where, name)
        dsid = _create_dataset(group, leaf, dtype, crows, opts)
        d = h5py.Dataset(dsid)
        _table_attrs(d, dtype, title)
        t = Table(d, nthreads=nthreads)
        t._owned_file = owned
        t.append(rows)
        return t
    except BaseException:
        if owned is not None:
            owned.close()
        raise


def _dtype_of(data) -> np.dtype:
    if isinstance(data, Mapping):
        return np.dtype([(k, np.asarray(v).dtype, np.asarray(v).shape[1:]) for k, v in data.items()])
    return np.asarray(data).dtype


def _filter_options(filters) -> tuple[dict, bool]:
    """h5py-style ``compression``/``compression_opts``/``shuffle`` and whether it is Blosc2."""
    if filters is None:
        return {}, False
    if filters in ("zlib", "gzip"):
        return {"compression": 1, "compression_opts": (5,), "shuffle": True}, False
    if isinstance(filters, Mapping):
        opts = dict(filters)
        comp = opts.get("compression")
        if comp == "gzip":
            opts["compression"], opts["compression_opts"] = 1, (opts.get("compression_opts") or 4,)
        return opts, opts.get("compression") == _BLOSC2_ID
    raise ValueError(f"filters {filters!r}: use Blosc2(...), Blosc(...), an h5py compression mapping, 'zlib' or None")


def _parent(where, name: str):
    """The group that will hold ``name`` (groups on the way are created as PyTables does)."""
    root = where.file["/"]
    _group_attrs(root, root=True)
    parts = [p for p in name.split("/") if p]
    if not parts:
        raise ValueError(f"table name {name!r} is empty")
    group = root if name.startswith("/") else where
    for p in parts[:-1]:
        if p not in group:
            _group_attrs(group.create_group(p))
        group = group[p]
    return group, parts[-1]


def _group_attrs(g, root: bool = False) -> None:
    if "CLASS" in g.attrs:
        return
    _set_str(g, "CLASS", "GROUP")
    _set_str(g, "TITLE", "")
    _set_str(g, "VERSION", _GROUP_VERSION)
    if root:
        _set_str(g, "PYTABLES_FORMAT_VERSION", _FORMAT_VERSION)


def _set_str(obj, key: str, value: str) -> None:
    """A fixed-length UTF-8 string attribute, as PyTables writes them."""
    import h5py

    b = value.encode()
    obj.attrs.create(key, np.array(b, dtype=h5py.string_dtype("utf-8", max(1, len(b)))))


def _hdf5_type(dt: np.dtype):
    """The HDF5 type PyTables uses for a NumPy dtype: bools as 8-bit bitfields."""
    import h5py

    if dt == np.dtype("?"):
        return h5py.h5t.STD_B8LE.copy()
    if dt.names:
        t = h5py.h5t.create(h5py.h5t.COMPOUND, dt.itemsize)
        for name in dt.names:
            sub, off = dt.fields[name][:2]
            t.insert(name.encode(), off, _hdf5_type(sub))
        return t
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return h5py.h5t.array_create(_hdf5_type(base), shape)
    return h5py.h5t.py_create(dt, logical=True)


def _create_dataset(group, name: str, dtype: np.dtype, crows: int, opts: dict):
    import h5py

    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((crows,))
    if opts.get("shuffle"):
        dcpl.set_shuffle()
    comp = opts.get("compression")
    if comp == 1:
        dcpl.set_deflate(int(opts.get("compression_opts", (5,))[0]))
    elif comp is not None:
        cd = tuple(int(v) for v in opts.get("compression_opts", ()))
        dcpl.set_filter(int(comp), h5py.h5z.FLAG_OPTIONAL, cd)
    dcpl.set_fill_value(np.zeros(1, dtype))
    space = h5py.h5s.create_simple((0,), (h5py.h5s.UNLIMITED,))
    if name in group:
        raise ValueError(f"{group.file.filename}: {group.name.rstrip('/')}/{name} already exists")
    return h5py.h5d.create(group.id, name.encode(), _hdf5_type(dtype), space, dcpl=dcpl)


def _table_attrs(d, dtype: np.dtype, title: str) -> None:
    _set_str(d, "CLASS", "TABLE")
    _set_str(d, "VERSION", _TABLE_VERSION)
    _set_str(d, "TITLE", title)
    for i, name in enumerate(dtype.names):
        _set_str(d, f"FIELD_{i}_NAME", name)
        sub = dtype.fields[name][0]
        base = sub.subdtype[0] if sub.subdtype is not None else sub
        if base.names is None:
            if base == np.dtype("?"):  # a bitfield attribute, written without conversion
                import h5py

                tid = _hdf5_type(base)
                aid = h5py.h5a.create(d.id, f"FIELD_{i}_FILL".encode(), tid, h5py.h5s.create(h5py.h5s.SCALAR))
                aid.write(np.zeros((), "u1"), mtype=tid)
            else:
                d.attrs.create(f"FIELD_{i}_FILL", np.zeros((), base))
    d.attrs.create("NROWS", np.int64(0))
