"""PyTables' side of the Streamer-over-tables tests, run as a script in its own process
(PyTables bundles its own HDF5 and never shares a process with h5py).

``python streamer_tables_side.py write FILE`` writes ``pytables_side.py``'s tables plus a
nested and a big-endian one with Blosc filters (``EXTRA``); ``stream FILE`` streams every
table of FILE with ``oxblosc.Streamer(node)`` and prints ``{name: status}``
(JSON): "ok" when every way of streaming equals PyTables' own reads, "refused" for a
ValueError, else what differed. ``corrupt FILE NAME`` streams one table that has a damaged
chunk and prints the rows delivered before the error and the error. ``append FILE`` appends
rows to a table while it is streamed and prints what the stream did. ``epochs FILE``
streams a table, appends rows, streams it again with the same Streamer (a new loop lists the
chunks again) and prints what each loop read.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from pytables_side import ERA5, nested_rows, rows_for  # noqa: E402
from pytables_side import write as _write_cases  # noqa: E402

# Tables written by `write` besides pytables_side's: (name, Blosc filter).
EXTRA = [("nested_b2", "blosc2:lz4"), ("big_endian_b1", "blosc:zstd")]


def write(path: str) -> dict:
    import tables

    _write_cases(path)
    with tables.open_file(path, "a") as f:
        t = f.create_table(
            "/", "nested_b2", nested_rows(0).dtype, filters=tables.Filters(5, EXTRA[0][1]), chunkshape=(30,)
        )
        t.append(nested_rows(100))
        t = f.create_table(
            "/", "big_endian_b1", ERA5, filters=tables.Filters(5, EXTRA[1][1]), chunkshape=(64,), byteorder="big"
        )
        t.append(rows_for("big_endian_b1", 150, 0, ERA5))
        # Chunked arrays with never-written chunks: a zero fill (streamed), a -1 fill (refused).
        for name, dflt in (("carray_b2", 0.0), ("carray_fill", -1.0)):
            a = f.create_carray(
                "/",
                name,
                tables.Float32Atom(dflt=dflt),
                (50, 7),
                filters=tables.Filters(5, "blosc2:zstd"),
                chunkshape=(8, 4),
            )
            a[3:29, 2:6] = np.arange(26 * 4, dtype="f4").reshape(26, 4)
        e = f.create_earray(
            "/", "earray_b1", tables.Int16Atom(), (0, 3), filters=tables.Filters(5, "blosc:lz4"), chunkshape=(16, 3)
        )
        e.append(np.arange(-300, 300, dtype="i2").reshape(200, 3))
    return {}


def _threads() -> int:
    n = 0
    for t in os.listdir("/proc/self/task"):
        try:
            n += Path(f"/proc/self/task/{t}/comm").read_text().startswith("oxblosc-stream")
        except OSError:
            pass
    return n


def _check(node) -> str:
    import oxblosc as ox

    want = node.read()
    n, crows = len(want), node.chunkshape[0]
    s = ox.Streamer(node)
    if s.block_rows != crows or s.dtype.itemsize * int(np.prod(s.row_shape)) != want.dtype.itemsize * int(
        np.prod(want.shape[1:])
    ):
        return f"block_rows {s.block_rows} (chunks {crows}), dtype {s.dtype} x {s.row_shape}"
    s.close()
    for ordered, nthreads, rows in [(True, 1, None), (True, 3, 97), (False, 2, 50)]:
        got = {}
        for start, block in ox.Streamer(node, block_rows=rows, ordered=ordered, nthreads=nthreads):
            if start in got or not np.array_equal(block, node[start : start + len(block)]):
                return f"block at {start} ({ordered=}, {nthreads=}, {rows=})"
            got[start] = block.copy()
        if ordered and list(got) != sorted(got):
            return f"order {list(got)[:5]}"
        whole = np.concatenate([got[k] for k in sorted(got)]) if got else want[:0]
        if not np.array_equal(whole, want) or whole.dtype.names != want.dtype.names:
            return f"rows differ ({ordered=}, {nthreads=}, {rows=})"
    if n:
        # Cyclic: past the end twice, wrapping to row 0; then a break stops the readers.
        nblocks, starts = -(-n // 50), []
        for start, block in ox.Streamer(node, block_rows=50, cyclic=True, nthreads=2):
            if not np.array_equal(block, want[start : start + 50]):
                return f"cyclic block at {start}"
            starts.append(start)
            if len(starts) == 2 * nblocks + 1:
                break
        if starts != [50 * (k % nblocks) for k in range(2 * nblocks + 1)]:
            return f"cyclic starts {starts[:8]}"
    if _threads():
        return "reader threads left after a break"
    return "ok"


def stream(path: str) -> dict:
    import tables

    out = {}
    with tables.open_file(path, "r") as f:
        for node in f.walk_nodes("/", classname="Leaf"):
            try:
                out[node._v_pathname.lstrip("/")] = _check(node)
            except ValueError as e:
                out[node._v_pathname.lstrip("/")] = f"refused: {e}"
    return out


def corrupt(path: str, name: str) -> dict:
    import oxblosc as ox
    import tables

    starts = []
    with tables.open_file(path, "r") as f:
        node = f.get_node("/" + name)
        try:
            for start, block in ox.Streamer(node, nthreads=2):
                if not np.array_equal(block, node.read(start, start + len(block))):
                    return {"error": f"block at {start} differs"}
                starts.append(start)
        except Exception as e:  # noqa: BLE001 - reported to the test process
            return {"starts": starts, "error": f"{type(e).__name__}: {e}", "threads": _threads()}
    return {"starts": starts, "error": None}


def append_while_streaming(path: str) -> dict:
    """A table open for appending streams its first block; then rows are appended (its last,
    partial chunk is rewritten, new chunks follow) and the stream goes on."""
    import oxblosc as ox
    import tables

    with tables.open_file(path, "w") as f:
        t = f.create_table("/", "t", ERA5, filters=tables.Filters(5, "blosc:zstd"), chunkshape=(100,))
        t.append(rows_for("t", 250, 0, ERA5))
        stream = iter(ox.Streamer(t, nthreads=1, nslots=1))
        first = next(stream)[1].copy()  # the one slot is held: nothing later was read yet
        t.append(rows_for("t", 700, 250, ERA5))
        t.flush()
        try:
            rest = [b.copy() for _, b in stream]
        except OSError as e:
            return {"first": bool(np.array_equal(first, t[:100])), "error": str(e)}
        got = np.concatenate([first, *rest])
        return {"rows": len(got), "same": bool(np.array_equal(got, t[: len(got)])), "error": None}


def epochs_across_a_write(path: str) -> dict:
    """Two loops over one Streamer with rows appended between them: the second loop must read
    the table as it is then (listed again), not fail on the first loop's chunk addresses."""
    import oxblosc as ox
    import tables

    with tables.open_file(path, "w") as f:
        t = f.create_table("/", "t", ERA5, filters=tables.Filters(5, "blosc2:zstd"), chunkshape=(100,))
        t.append(rows_for("t", 250, 0, ERA5))
        t.flush()
        s = ox.Streamer(t, nthreads=1)
        first = np.concatenate([b.copy() for _, b in s])
        t.append(rows_for("t", 700, 250, ERA5))
        t.flush()
        second = np.concatenate([b.copy() for _, b in s])
        return {
            "first": bool(np.array_equal(first, t[:250])),
            "second_rows": len(second),
            "second": bool(np.array_equal(second, t[:])),
        }


def main() -> int:
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "append":
        print(json.dumps(append_while_streaming(path)))
        return 0
    if mode == "epochs":
        print(json.dumps(epochs_across_a_write(path)))
        return 0
    out = write(path) if mode == "write" else stream(path) if mode == "stream" else corrupt(path, sys.argv[3])
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
