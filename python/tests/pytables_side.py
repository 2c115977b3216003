"""PyTables' side of the table tests, run as a script in its own process (PyTables bundles its
own HDF5: it never shares a process with h5py).

``python pytables_side.py write FILE`` writes every case with PyTables and prints
``{"chunkshapes": {...}, "rules": [...]}``; ``python pytables_side.py check FILE`` opens a file
oxblosc wrote, compares every table with the rows regenerated here, runs in-kernel queries,
appends ``APPENDED`` rows to each table and prints ``{"bad": [...], "queried": n}``.
"""

from __future__ import annotations

import json
import os
import sys
import zlib

import numpy as np

# Many column types, as PyTables maps them: bools are bitfields, complex a {r, i} compound,
# a (3,) column an HDF5 array type; 75 bytes per row.
DTYPE = np.dtype(
    [
        ("i1", "i1"),
        ("u2", "<u2"),
        ("i4", "<i4"),
        ("i8", "<i8"),
        ("u8", "<u8"),
        ("f4", "<f4"),
        ("f8", "<f8"),
        ("b", "?"),
        ("s", "S7"),
        ("c", "<c16"),
        ("v", "<f4", (3,)),
        ("t", "<i4"),
    ]
)
ERA5 = np.dtype(
    [("lat", "<i4"), ("lon", "<i4"), ("time", "<i4")] + [(k, "<f4") for k in ("precip", "solar", "air", "snow", "wind")]
)
NESTED = np.dtype([("a", "<i4"), ("n", [("x", "<f4"), ("y", "S3")])])
APPENDED = 250
# (name, nrows, chunk rows, PyTables filter, written through the plain filter) for `write`.
PT_CASES = [
    ("b2_opt", 1037, 100, ("blosc2:zstd", 5, True), False),
    ("b2_plain", 1037, 100, ("blosc2:lz4", 5, False), True),
    ("b2_blosclz", 640, 64, ("blosc2", 3, True), False),
    ("b1_lz4", 1037, 128, ("blosc:lz4", 5, True), False),
    ("b1_zstd", 333, 1000, ("blosc:zstd", 9, True), False),
    ("zlib", 1037, 100, ("zlib", 5, True), False),
    ("none", 500, 64, None, False),
    ("empty", 0, 100, ("blosc2:zstd", 5, True), False),
    ("grp/sub/deep", 300, 70, ("blosc2:zstd", 5, True), False),
]
# In-kernel conditions and the same test on the NumPy rows.
QUERIES = [
    ("(i4 > 100) & (f8 < 400.5)", lambda a: (a["i4"] > 100) & (a["f8"] < 400.5)),
    ("b & (u2 % 7 == 3)", lambda a: a["b"] & (a["u2"] % 7 == 3)),
    ("s == b'r00042'", lambda a: a["s"] == b"r00042"),
    ("(t < 10) | (f4 > 900)", lambda a: (a["t"] < 10) | (a["f4"] > 900)),
]


def rows_for(name: str, n: int, start: int = 0, dtype: np.dtype = DTYPE) -> np.ndarray:
    """Rows ``start:start+n`` of table ``name``: the same in every process, compressible."""
    i = np.arange(start, start + n, dtype=np.int64)
    # Pseudo-random per row (not per call): appends in pieces give the same rows as one read.
    noise = ((i + zlib.crc32(name.encode())) * 2654435761 % 2**32 >> 13) % 5
    out = np.zeros(n, dtype)
    if dtype.names == ERA5.names:
        out["time"], out["lat"], out["lon"] = i // 1000, (i // 40) % 25, i % 40
        for k, f in enumerate(("precip", "solar", "air", "snow", "wind")):
            out[f] = np.sin(i / (500.0 + 90 * k)) * 100 + noise / 10
        return out
    out["i1"], out["u2"], out["i4"] = (i % 200 - 100), i % 65000, i // 2 + noise
    out["i8"], out["u8"] = i * 3_000_000_007, i.astype(np.uint64) * 11 + np.uint64(2**63)
    out["f4"], out["f8"] = np.sin(i / 50.0) * 1000, i / 2.5 + noise
    out["b"] = (i % 3 == 0) ^ (noise == 4)
    out["s"] = [b"r%05d" % (v % 100000) for v in i]
    out["c"] = i + 1j * noise
    out["v"] = np.stack([i, -i, noise], axis=1)
    out["t"] = i % 97
    return out


def nested_rows(n: int) -> np.ndarray:
    out = np.zeros(n, NESTED)
    out["a"], out["n"]["x"], out["n"]["y"] = np.arange(n), np.arange(n) / 4, [b"%03d" % i for i in range(n)]
    return out


def compare(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and all(np.array_equal(got[f], want[f]) for f in want.dtype.names)


def write(path: str) -> dict:
    import tables

    chunkshapes = {}
    with tables.open_file(path, "w") as f:
        for name, n, crows, filt, plain in PT_CASES:
            filters = tables.Filters(complib=filt[0], complevel=filt[1], shuffle=filt[2]) if filt else None
            where, leaf = ("/" + name).rsplit("/", 1)
            t = f.create_table(
                where or "/", leaf, DTYPE, f"title of {name}", filters, chunkshape=(crows,), createparents=True
            )
            if plain:
                os.environ["BLOSC2_FILTER"] = "1"  # PyTables checks it on every write
            # Appends of odd sizes: partial chunks and whole aligned ones.
            done = 0
            for size in (n // 3, n // 3 + 17, n):
                size = min(size, n - done)
                t.append(rows_for(name, size, done))
                done += size
            t.flush()
            os.environ.pop("BLOSC2_FILTER", None)
            chunkshapes[name] = int(t.chunkshape[0])
        # A nested column and a big-endian table (read by us, not written).
        t = f.create_table("/", "nested", NESTED, chunkshape=(30,))
        t.append(nested_rows(100))
        t = f.create_table("/", "big_endian", ERA5, chunkshape=(64,), byteorder="big")
        t.append(rows_for("big_endian", 150, 0, ERA5))
        # PyTables' automatic chunk shapes, to check our rule against.
        rules = []
        for dt, expected in ((DTYPE, 1000), (DTYPE, 10**6), (ERA5, 10**8), (ERA5, 3 * 10**9)):
            for complib in ("blosc2:zstd", "zlib"):
                t = f.create_table(
                    "/", f"rule_{len(rules)}", dt, filters=tables.Filters(5, complib), expectedrows=expected
                )
                rules.append([dt.itemsize, expected, complib.startswith("blosc2"), int(t.chunkshape[0])])
    from tables.leaf import get_cpu_info  # what PyTables' L3 rule saw (py-cpuinfo, cached)

    info = get_cpu_info()
    return {
        "chunkshapes": chunkshapes,
        "rules": rules,
        "caches": [info.get("l2_cache_size"), info.get("l3_cache_size")],
    }


def check(path: str) -> dict:
    import tables

    bad, queried = [], 0
    with tables.open_file(path, "a") as f:
        for t in f.walk_nodes("/", "Table"):
            name = t._v_pathname.lstrip("/")
            try:
                dt = ERA5 if t.colnames == list(ERA5.names) else DTYPE
                n = t.nrows
                want = rows_for(name, n, 0, dt)
                got = t.read()
                if not compare(got, want):
                    bad.append(f"{name}: data differ")
                    continue
                if t.attrs.NROWS != n or t.title != f"title of {name}":
                    bad.append(f"{name}: attributes NROWS={t.attrs.NROWS} TITLE={t.title!r}")
                if dt is DTYPE:
                    for cond, fn in QUERIES:
                        hits = [r.nrow for r in t.where(cond)]
                        if hits != list(np.flatnonzero(fn(want))):
                            bad.append(f"{name}: where({cond}) gave {len(hits)} rows")
                        queried += 1
                    col = t.read_where("(i4 > 100) & (f8 < 400.5)", field="f8")
                    if not np.array_equal(col, want["f8"][QUERIES[0][1](want)]):
                        bad.append(f"{name}: read_where differs")
                t.append(rows_for(name, APPENDED, n, dt))
                t.flush()
            except Exception as e:  # noqa: BLE001 - reported to the test
                bad.append(f"{name}: {type(e).__name__}: {e}")
    return {"bad": bad, "queried": queried}


def main() -> int:
    mode, path = sys.argv[1:3]
    print(json.dumps(write(path) if mode == "write" else check(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
