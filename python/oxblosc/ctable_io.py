"""Tables from pandas, Arrow and CSV (python-blosc2's ``CTable.from_pandas``/``from_arrow``/
``from_csv``). python-blosc2 types the columns with a dataclass (``row_cls``) whose fields
carry its schema specs; we accept that, a dict of NumPy dtypes, or (pandas, Arrow) None to
take the types from the data.
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import os
from typing import Any

import numpy as np

from . import ctable_layout as L

_PLAIN = {int: np.dtype(np.int64), float: np.dtype(np.float64), bool: np.dtype(np.bool_)}


def row_dtypes(row_cls: Any) -> dict[str, np.dtype]:
    """Column names and dtypes from a python-blosc2 row dataclass or a ``{name: dtype}`` dict."""
    from .ctable_edit import _spec_and_default

    if isinstance(row_cls, dict):
        return {L.check_name(n): np.dtype(d) for n, d in row_cls.items()}
    if not dataclasses.is_dataclass(row_cls):
        raise TypeError(f"row_cls must be a dataclass (python-blosc2's) or a dict of dtypes, got {row_cls!r}")
    out = {}
    for f in dataclasses.fields(row_cls):
        if "blosc2" in f.metadata:
            out[f.name] = L.dtype_of(_spec_and_default(f.name, f)[0])
        elif f.type in _PLAIN or f.type in ("int", "float", "bool"):
            out[f.name] = _PLAIN[f.type if f.type in _PLAIN else {"int": int, "float": float, "bool": bool}[f.type]]
        else:
            raise TypeError(f"field {f.name!r}: type {f.type!r} needs a python-blosc2 spec (blosc2.field(...))")
    return out


def from_pandas(cls: type, df: Any, row_cls: Any = None, **kwargs: Any) -> Any:
    """A table of the DataFrame's columns (those of ``row_cls``, in its order and types)."""
    if row_cls is None:
        return cls(df, **kwargs)
    types = row_dtypes(row_cls)
    missing = [n for n in types if n not in df.columns]
    if missing:
        raise ValueError(f"DataFrame columns {list(df.columns)} lack {missing} of the schema")
    return cls({n: np.asarray(df[n].to_numpy()).astype(dt) for n, dt in types.items()}, **kwargs)


def from_arrow(cls: type, schema: Any, batches: Any = None, **kwargs: Any) -> Any:
    """A table from a pyarrow Table, or from an Arrow schema and record batches."""
    import pyarrow as pa

    if batches is not None:
        data = pa.Table.from_batches(list(batches), schema=schema)
    elif isinstance(schema, pa.Schema):
        data = schema.empty_table()
    else:
        data = schema
    return cls(data, **kwargs)


def _parse(raw: list[str], dt: np.dtype) -> np.ndarray:
    if dt.kind == "b":
        return np.array([v.strip() in ("True", "true", "1") for v in raw], dtype=bool)
    if dt.kind == "S":  # to_csv writes bytes as Python literals (b'..'); plain text is encoded
        return np.array([_bytes(v) for v in raw], dtype=dt)
    return np.array(raw, dtype=dt)


def _bytes(v: str) -> bytes:
    if v[:2] in ("b'", 'b"') and v[-1:] == v[1]:
        try:
            out = ast.literal_eval(v)
            if isinstance(out, bytes):
                return out
        except (ValueError, SyntaxError):
            pass
    return v.encode()


def from_csv(
    cls: type,
    path: Any,
    row_cls: Any,
    *,
    header: bool = True,
    sep: str = ",",
    encoding: str = "utf-8-sig",
    **kwargs: Any,
) -> Any:
    """A table from a CSV file whose fields are in ``row_cls``'s order."""
    types = row_dtypes(row_cls)
    cols: list[list[str]] = [[] for _ in types]
    with open(os.fspath(path), newline="", encoding=encoding) as f:
        reader = csv.reader(f, delimiter=sep)
        if header:
            next(reader, None)
        for line, rec in enumerate(reader, start=2 if header else 1):
            if len(rec) != len(types):
                raise ValueError(f"{path}: line {line} has {len(rec)} fields, the schema {len(types)}")
            for c, v in zip(cols, rec, strict=True):
                c.append(v)
    out = {}
    for (name, dt), raw in zip(types.items(), cols, strict=True):
        try:
            out[name] = _parse(raw, dt)
        except ValueError as e:
            raise ValueError(f"{path}: column {name!r}: {e}") from None
    return cls(out, **kwargs)
