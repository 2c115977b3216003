"""How a table is stored: python-blosc2 4.14's ``CTable`` layout, read and written.

A stored table is a directory (``.b2d``) or a zip file of the same members stored without
compression (``.b2z``)::

    _meta.b2f                         super-chunk; vlmeta kind="ctable", version, schema (JSON
                                      text: columns with their kinds, n_rows), index_catalog
    embed.b2e                         empty embedded store (python-blosc2's TreeStore needs it)
    _valid_rows.b2nd                  bool per row: rows marked False are deleted
    _cols/<name>.b2nd                 one 1-d array per column, all on one chunk/block grid
    _indexes/<name>/summary.block.b2nd  per-block min/max/flags (python-blosc2's SUMMARY index,
                                      ``oxblosc_table::stats``), listed in index_catalog

Only the column kinds both libraries have are accepted (ints, floats, bool, fixed-width
strings/bytes, timestamps). Computed, materialized, DSL or source-bound columns, nullable
columns and nested schemas are refused with a ``ValueError`` naming what was found; their
code is never run. Statistics are used only when the catalog says they are current and
their shape matches the column; see ``CTable`` for what is (not) verified.

Appends to a directory go through ``uncommitted``/``replace_valid``/``write_meta`` so that a
failure at any point leaves a table both libraries read with the old or the new rows (order
and limits: docs/architecture.md, tables).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ndarray import NDArray
from .opening import from_cframe
from .opening import open as _open
from .schunk import SChunk

META, EMBED, VALID = "_meta.b2f", "embed.b2e", "_valid_rows.b2nd"
VLMETA = "_vlmeta.b2f"  # user metadata (``CTable.vlmeta``), optional
_INT_KINDS = {f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)}
_REFUSED_KEYS = ("computed_columns", "materialized_columns", "source_bindings_version", "source_columns")


def col_path(name: str) -> str:
    return f"_cols/{name}.b2nd"


def stats_path(name: str) -> str:
    return f"_indexes/{name}/summary.block.b2nd"


def check_name(name: Any) -> str:
    """Column names are identifiers: they are file names and expression names."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"column name {name!r} is not an identifier (letters, digits, underscore)")
    return name


def spec_of(name: str, dtype: np.dtype) -> dict:
    """python-blosc2's schema entry for a NumPy dtype."""
    if dtype.kind == "b":
        kind: dict = {"kind": "bool"}
    elif dtype.kind in "iuf" and dtype.byteorder != ">":
        kind = {"kind": dtype.name}
    elif dtype.kind == "U":
        kind = {"kind": "string", "max_length": dtype.itemsize // 4}
    elif dtype.kind == "S":
        kind = {"kind": "bytes", "max_length": dtype.itemsize}
    elif dtype.kind == "M":
        kind = {"kind": "timestamp", "unit": np.datetime_data(dtype)[0]}
    else:
        raise TypeError(f"column {name!r}: dtype {dtype} is not supported (ints, floats, bool, S, U, datetime64)")
    return {"name": name, **kind}


def dtype_of(spec: dict) -> np.dtype:
    """The NumPy dtype users see for a schema entry (refusing what we do not support)."""
    name, kind = spec.get("name"), spec.get("kind")
    extra = set(spec) - {"name", "kind", "max_length", "unit", "min_length", "ge", "le", "gt", "lt", "default"}
    if spec.get("nullable") or "null_value" in spec or "null_storage" in spec:
        raise ValueError(f"column {name!r}: nullable columns are not supported")
    if extra - {"nullable"}:
        raise ValueError(f"column {name!r}: schema entries {sorted(extra)} are not supported")
    if kind == "bool":
        return np.dtype("?")
    if kind in _INT_KINDS or kind in ("float32", "float64"):
        return np.dtype(kind)
    if kind == "string":
        return np.dtype(f"<U{int(spec['max_length'])}")
    if kind == "bytes":
        return np.dtype(f"S{int(spec['max_length'])}")
    if kind == "timestamp" and not spec.get("timezone"):
        return np.dtype(f"M8[{spec.get('unit', 'us')}]")
    raise ValueError(f"column {name!r}: kind {kind!r} is not supported by oxblosc (refused, never evaluated)")


def stored_dtype(dtype: np.dtype) -> np.dtype:
    """What the column file holds: timestamps as int64, as python-blosc2 stores them."""
    return np.dtype("<i8") if dtype.kind == "M" else dtype


@dataclass
class Stored:
    """A table's parts: schema entries, one array per column, the validity column,
    statistics records per column (bytes or None) and the number of live rows."""

    specs: list
    cols: dict
    valid: NDArray
    stats: dict = field(default_factory=dict)
    n_rows: int = 0
    phys: int = -1  # rows of the columns that are in the table (-1: the validity column's length)
    visibility: int = 0  # python-blosc2's count of deletions (``visibility_epoch``)


# ------------------------------------------------------------------------- reading


def is_table(path: str) -> bool:
    """Whether ``path`` holds a table (ours or python-blosc2's)."""
    try:
        if os.path.isdir(path):
            return os.path.exists(os.path.join(path, META)) and os.path.exists(os.path.join(path, VALID))
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                return META in z.namelist()
    except OSError:
        return False
    return False


def _members(path: str, mode: str, mmap_mode: str | None = None):
    """A function opening member ``rel`` of the directory or zip at ``path``."""
    if os.path.isdir(path):
        # Mapped files let a query borrow chunks instead of reading them (faster; the mapped
        # pages count in the resident set).
        extra = {"mmap_mode": mmap_mode} if mmap_mode else {}

        def member_file(rel: str):
            full = os.path.join(path, rel)
            return _open(full, mode=mode, **extra) if os.path.exists(full) else None

        return member_file
    if mode != "r" or mmap_mode:
        raise ValueError(f"{path}: a .b2z table opens read-only (mode='r', no mmap_mode); save() writes a new one")
    with zipfile.ZipFile(path) as z:
        infos = {i.filename: i for i in z.infolist()}

    def member(rel: str):
        info = infos.get(rel)
        if info is None:
            return None
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{path}: member {rel} is compressed by zip; only stored members are read")
        with open(path, "rb") as f:  # the member's data starts after its local header
            f.seek(info.header_offset + 26)
            lens = np.frombuffer(f.read(4), "<u2")
        return _open(path, mode="r", offset=info.header_offset + 30 + int(lens[0]) + int(lens[1]))

    return member


def read(path: str, mode: str = "r", mmap_mode: str | None = None) -> Stored:
    """Open the table stored at ``path`` (directory or zip), checking what it holds."""
    member = _members(path, mode, mmap_mode)
    meta = member(META)
    if meta is None:
        raise ValueError(f"{path}: not a table ({META} is missing)")
    vl = meta.vlmeta
    if vl.get("kind") != "ctable":
        raise ValueError(f"{path}: {META} does not describe a CTable (vlmeta kind is not 'ctable')")
    schema = json.loads(vl["schema"])
    for key in _REFUSED_KEYS:
        if schema.get(key):
            raise ValueError(
                f"{path}: the table has {key} (python-blosc2 computed or bound columns): "
                "not supported, refused without evaluating anything"
            )
    if schema.get("version") != 1 or schema.get("metadata", {}).get("nested"):
        raise ValueError(
            f"{path}: schema version {schema.get('version')} (nested or null-mask columns) is not supported"
        )
    specs = list(schema["columns"])
    if not specs:
        raise ValueError(f"{path}: the table has no columns")
    valid = member(VALID)
    if valid is None:
        raise ValueError(f"{path}: {VALID} is missing")
    cols = {}
    for spec in specs:
        name = check_name(spec.get("name"))
        want = stored_dtype(dtype_of(spec))
        arr = member(col_path(name))
        if arr is None:
            raise ValueError(f"{path}: column {name!r} has no file {col_path(name)}")
        if not isinstance(arr, NDArray) or arr.ndim != 1 or arr.dtype != want:
            raise ValueError(
                f"{path}: column {name!r} holds {getattr(arr, 'dtype', 'no array')} "
                f"{getattr(arr, 'shape', '')}, the schema says 1-d {want}"
            )
        cols[name] = arr
    _align_grids(path, cols, mode)
    if mode != "r" and os.path.isdir(path):  # temporary files of a killed writer
        for f in glob.glob(glob.escape(_tmp_prefix(path)) + "*"):
            shutil.rmtree(f) if os.path.isdir(f) else os.remove(f)
    # An unfinished append leaves rows in `_valid_rows` marked False and columns between
    # the old and the new length: the table is the rows all columns hold.
    n = min(valid.shape[0], *(a.shape[0] for a in cols.values()))
    if n < valid.shape[0] and valid[n:].any():
        name = min(cols, key=lambda c: cols[c].shape[0])
        raise ValueError(
            f"{path}: column {name!r} holds {n} rows, {VALID} marks rows after them live: the table is damaged"
        )
    if mode != "r" and (n != valid.shape[0] or "n_rows" not in schema or any(a.shape[0] != n for a in cols.values())):
        n = _last_live(valid, n)  # writable: drop what an unfinished append left
        for arr in cols.values():
            if arr.shape[0] != n:
                arr.resize((n,))
        if valid.shape[0] != n:
            valid = replace_valid(path, valid, n)
    vis = int(vl["visibility_epoch"] or 0) if "visibility_epoch" in vl else 0
    stored = Stored(specs, cols, valid, dict.fromkeys(cols), int(schema.get("n_rows", -1)), n, vis)
    catalog = vl["index_catalog"] if "index_catalog" in vl else {}
    epoch = vl["value_epoch"] if "value_epoch" in vl else None
    for name, entry in (catalog or {}).items():
        if name in cols:
            stored.stats[name] = _read_stats(member, name, entry, epoch, cols[name])
    return stored


def _align_grids(path: str, cols: dict, mode: str) -> None:
    """Put every column on the grid most columns share (python-blosc2's ``add_column`` picks
    the new column's blocks by its item size, and our scan needs one grid): in memory for a
    read-only table, else the column file is rewritten beside the table and renamed in
    (either file reads the same in both libraries). Chunk by chunk."""
    from .ndarray import empty

    grids = [(a.chunks, a.blocks) for a in cols.values()]
    chunks, blocks = max(grids, key=grids.count)
    for name, arr in cols.items():
        if (arr.chunks, arr.blocks) == (chunks, blocks):
            continue
        writable = mode != "r" and os.path.isdir(path)
        tmp = f"{_tmp_prefix(path)}{os.getpid()}-grid"
        kw = dict(urlpath=tmp, mode="w") if writable else {}
        try:
            new = empty((0,), arr.dtype, chunks=chunks, blocks=blocks, cparams=arr.cparams, **kw)
            for lo in range(0, arr.shape[0], chunks[0]):
                new.append(arr[lo : lo + chunks[0]])
            if writable:
                del new
                os.replace(tmp, os.path.join(path, col_path(name)))
                new = _open(os.path.join(path, col_path(name)), mode=mode)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        cols[name] = new


def _read_stats(member, name: str, entry: Any, epoch: Any, arr: NDArray | None) -> bytes | None:
    """A catalog entry's summary records when current and shaped like the column, else None."""
    try:
        level = entry["levels"]["block"]
        ok = (
            entry.get("kind") == "summary"
            and not entry.get("stale")
            and arr is not None
            and entry.get("built_value_epoch") == epoch
            and int(level["segment_len"]) == arr.blocks[0]
            and arr.chunks[0] % arr.blocks[0] == 0
            and not entry.get("null_aware")
        )
        if not ok:
            return None
        recs = member(level["path"])
        need = -(-arr.shape[0] // arr.blocks[0])
        if recs is None or recs.ndim != 1 or recs.shape[0] < need or recs.dtype.names != ("min", "max", "flags"):
            return None
        if recs.dtype["min"] != arr.dtype or recs.dtype.itemsize != 2 * arr.dtype.itemsize + 1:
            return None
        return recs[:need].tobytes()
    except (KeyError, TypeError, ValueError):
        return None


# ------------------------------------------------------------------------- writing


def _meta_vlmeta(stored: Stored, epoch: int) -> dict:
    schema = {
        "version": 1,
        "columns": stored.specs,
        "n_rows": stored.n_rows,
        "create_summary_index": True,
        "summary_indexes_built": bool(stored.stats),
    }
    catalog = {}
    for name, recs in stored.stats.items():
        arr = stored.cols[name]
        if recs is None:
            continue
        t = arr.dtype.str if arr.dtype.itemsize > 1 else arr.dtype.str.replace("<", "|")
        catalog[name] = {
            "name": "__self__",
            "token": name,
            "target": {"source": "field", "field": None},
            "field": None,
            "kind": "summary",
            "version": 1,
            "optlevel": 5,
            "persistent": True,
            "ooc": True,
            "stale": False,
            "dtype": arr.dtype.str,
            "shape": [arr.shape[0]],
            "chunks": list(arr.chunks),
            "blocks": list(arr.blocks),
            "levels": {
                "block": {
                    "segment_len": arr.blocks[0],
                    "nsegments": len(recs) // (2 * arr.dtype.itemsize + 1),
                    "path": stats_path(name),
                    "dtype": [["min", t], ["max", t], ["flags", "|u1"]],
                }
            },
            "bucket": None,
            "partial": None,
            "full": None,
            "opsi": None,
            "cparams": None,
            "null_aware": False,
            "built_value_epoch": epoch,
        }
    out = {
        "kind": "ctable",
        "version": 1,
        "schema": json.dumps(schema),
        "value_epoch": epoch,
        "index_catalog": catalog,
    }
    if stored.visibility:
        out["visibility_epoch"] = stored.visibility
    return out


def _stats_array(arr: NDArray, recs: bytes, **kwargs: Any) -> NDArray:
    from .ndarray import asarray

    dt = np.dtype([("min", arr.dtype), ("max", arr.dtype), ("flags", "u1")])
    a = np.frombuffer(recs, dt)
    return asarray(a, chunks=(max(len(a), 1),), blocks=(max(len(a), 1),), **kwargs)


def _embed_schunk(**kwargs: Any) -> SChunk:
    s = SChunk(meta={"b2tree": {"version": 1}}, **kwargs)
    s.vlmeta["estore_metadata"] = {"embed_map": {}, "current_offset": 0}
    return s


def _tmp_prefix(path: str) -> str:
    """Temporary members live beside the table directory (python-blosc2 lists every file
    inside it), on the same file system (so a rename moves them in)."""
    return os.path.normpath(path) + ".tmp-"


def _replace_meta(path: str, vlmeta: dict) -> None:
    """Write ``_meta.b2f`` beside itself and rename it in place: readers see the old or the
    new metadata, never a torn file."""
    tmp = f"{_tmp_prefix(path)}{os.getpid()}-meta"
    try:
        meta = SChunk(urlpath=tmp, mode="w", contiguous=True)
        for k, v in vlmeta.items():
            meta.vlmeta[k] = v
        del meta
        os.replace(tmp, os.path.join(path, META))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_meta(path: str, stored: Stored, epoch: int, listed_none: bool = False) -> None:
    """(Re)write the metadata and statistics members of the table directory ``path``.
    The statistics files are written while the metadata lists none (``listed_none``: the
    caller already wrote such metadata), so a crash in between leaves a table without
    statistics, never with statistics of other rows."""
    vlmeta = _meta_vlmeta(stored, epoch)
    if not os.path.exists(os.path.join(path, EMBED)):
        _embed_schunk(urlpath=os.path.join(path, EMBED), mode="w", contiguous=True)
    if any(r is not None for r in stored.stats.values()):
        if not listed_none:
            uncommitted(path, stored, epoch)
        shutil.rmtree(os.path.join(path, "_indexes"), ignore_errors=True)
        for name, recs in stored.stats.items():
            if recs is not None:
                os.makedirs(os.path.dirname(os.path.join(path, stats_path(name))), exist_ok=True)
                _stats_array(stored.cols[name], recs, urlpath=os.path.join(path, stats_path(name)), mode="w")
    _replace_meta(path, vlmeta)


def write_meta_only(path: str, stored: Stored, epoch: int) -> None:
    """Rename in new metadata, leaving the statistics files as they are (they still
    describe the columns: a deletion or a schema edit does not change stored values)."""
    _replace_meta(path, _meta_vlmeta(stored, epoch))


def uncommitted(path: str, stored: Stored, epoch: int) -> None:
    """Metadata for a table about to change its rows: no cached row count (python-blosc2
    then counts ``_valid_rows``) and no statistics (nobody skips blocks on stale ones)."""
    vlmeta = _meta_vlmeta(Stored(stored.specs, stored.cols, stored.valid, {}, -1, visibility=stored.visibility), epoch)
    schema = json.loads(vlmeta["schema"])
    del schema["n_rows"]
    vlmeta["schema"] = json.dumps(schema)
    _replace_meta(path, vlmeta)


def replace_valid(
    path: str, valid: NDArray, keep: int, add: int = 0, live: slice | None = None, dead: np.ndarray | None = None
) -> NDArray:
    """The validity column cut to ``keep`` rows, ``add`` rows marked False appended, rows
    ``live`` marked True, rows at positions ``dead`` marked False: changed in a copy renamed
    over the old file, so a crash leaves it whole, before or after. Returns the new handle."""
    tmp = f"{_tmp_prefix(path)}{os.getpid()}-valid"
    try:
        valid.save(tmp)
        new = _open(tmp, mode="a")
        if new.shape[0] != keep:
            new.resize((keep,))
        if add:
            new.append(np.zeros(add, bool))
        if live is not None:
            new[live] = True
        if dead is not None:
            clear_rows(new, dead)
        del new
        os.replace(tmp, os.path.join(path, VALID))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return _open(os.path.join(path, VALID), mode="a")


def clear_rows(valid: NDArray, dead: np.ndarray) -> None:
    """Mark the (sorted, unique) positions ``dead`` False, one chunk of ``valid`` at a time."""
    step = valid.chunks[0]
    lo_idx = 0
    while lo_idx < len(dead):
        lo = int(dead[lo_idx]) // step * step
        hi = min(lo + step, valid.shape[0])
        end = int(np.searchsorted(dead, hi))
        part = valid[lo:hi]
        part[dead[lo_idx:end] - lo] = False
        valid[lo:hi] = part
        lo_idx = end


def stamp(path: str) -> tuple | None:
    """What identifies the validity column file of the table directory ``path`` now (inode,
    size, modification time): every append replaces or rewrites it, so a writer that finds
    another stamp than its own knows another handle changed the table since."""
    try:
        st = os.stat(os.path.join(path, VALID))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _last_live(valid: NDArray, n: int) -> int:
    """One past the last row marked live among the first ``n`` (read a chunk at a time,
    from the end)."""
    step = valid.chunks[0]
    for lo in range((max(n, 1) - 1) // step * step, -1, -step):
        hits = np.flatnonzero(valid[lo : min(lo + step, n)])
        if len(hits):
            return lo + int(hits[-1]) + 1
    return 0


def write_zip(path: str, stored: Stored, epoch: int, extra: dict | None = None) -> None:
    """Write the whole table as a zip of stored (uncompressed) members, atomically;
    ``extra`` adds members (user metadata)."""
    members = {META: _members_meta(stored, epoch), EMBED: _embed_schunk().to_cframe(), VALID: stored.valid.to_cframe()}
    members.update(extra or {})
    for name, arr in stored.cols.items():
        members[col_path(name)] = arr.to_cframe()
    for name, recs in stored.stats.items():
        if recs is not None:
            members[stats_path(name)] = _stats_array(stored.cols[name], recs).to_cframe()
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as z:
            for rel, data in members.items():
                z.writestr(rel, data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)  # (a full disk: no half-written zip left beside the table)
        raise
    os.replace(tmp, path)


def _members_meta(stored: Stored, epoch: int) -> bytes:
    meta = SChunk()
    for k, v in _meta_vlmeta(stored, epoch).items():
        meta.vlmeta[k] = v
    return meta.to_cframe()


def load_member_copy(arr: NDArray) -> NDArray:
    """An in-memory copy of a stored array (for tables opened from a zip and then changed)."""
    return from_cframe(arr.to_cframe())
