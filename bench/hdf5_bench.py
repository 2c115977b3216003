"""HDF5 with Blosc: the seed's scenario ("Blosc2 meets PyTables") side by side, and small slices
from big chunks.

Default: an ERA5-like 8-column table (lat/lon/time int32 + five float32 fields, 32 bytes per
row; 10 M rows, 100 M with ``--full``, 1 M with ``--quick``) and a 3-D float32 field, written
and read by: no compression, zlib+shuffle, hdf5plugin Blosc (32001) and Blosc2 (32026),
PyTables' optimized Blosc2, b2h5py (reads hdf5plugin's Blosc2 file), oxblosc's filter through
h5py, and oxblosc's optimized path (direct chunk writes, block-level reads); each tool's
automatic chunks and equal big (32 MiB) chunks; 1 and 2 threads. Every measurement runs in a
fresh subprocess (peak RSS is that process's; PyTables never shares a process with h5py);
rounds interleave the tools; medians.

    python bench/hdf5_bench.py [--quick | --full] [--reps N] [--write-docs] [--plot PNG]
    python bench/hdf5_bench.py --slices [--quick] [--reps N]   # the earlier small-slice table

Codec everywhere: zstd clevel 5 with byte shuffle (Blosc and Blosc2), gzip 5 + shuffle for zlib.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ERA5 = np.dtype(
    [("lat", "<i4"), ("lon", "<i4"), ("time", "<i4")] + [(k, "<f4") for k in ("precip", "solar", "air", "snow", "wind")]
)
BIG_ROWS = (32 << 20) // ERA5.itemsize  # 32 MiB chunks of rows
BIG_FIELD = (64, 512, 256)  # float32: 32 MiB
TOOLS = [
    "none",
    "zlib+shuffle",
    "hdf5plugin Blosc",
    "hdf5plugin Blosc2",
    "PyTables Blosc2 opt",
    "b2h5py",
    "oxblosc filter",
    "oxblosc optimized",
]
THREADED = {
    "hdf5plugin Blosc",
    "hdf5plugin Blosc2",
    "PyTables Blosc2 opt",
    "b2h5py",
    "oxblosc filter",
    "oxblosc optimized",
}
READS_FROM = {"b2h5py": "hdf5plugin Blosc2"}  # b2h5py only reads: hdf5plugin's file
NSMALL = 40  # small reads per measurement (median)


# ---------------------------------------------------------------------- data


def era5_rows(n: int) -> np.ndarray:
    """ERA5-like rows, time-major then lat then lon (a 100 x 200 grid per hour); smooth fields
    with a little noise, as real reanalysis data compresses (about 3-5x with shuffle)."""
    out = np.empty(n, ERA5)
    step = 1 << 22
    rng = np.random.default_rng(0)
    for a in range(0, n, step):
        i = np.arange(a, min(n, a + step), dtype=np.int64)
        t, lat, lon = i // 20000, (i // 200) % 100, i % 200
        la, lo, tt = np.radians(lat * 1.8 - 90), np.radians(lon * 1.8), t / 24 * 2 * np.pi
        noise = rng.standard_normal(len(i)).astype("f4")
        s = slice(a, a + len(i))
        out["time"][s], out["lat"][s], out["lon"][s] = t, lat, lon
        out["precip"][s] = np.maximum(0, 3 * np.sin(6 * la + tt) * np.cos(5 * lo) + noise - 1).round(2)
        out["solar"][s] = np.maximum(0, 800 * np.cos(la) * np.cos(tt + lo)).round(1)
        out["air"][s] = (101300 + 1200 * np.sin(3 * la) * np.cos(2 * lo - tt / 10) + 50 * noise).round(0)
        out["snow"][s] = np.where(np.abs(la) > 1.0, 100 + 20 * np.sin(lo), 0).round(1)
        out["wind"][s] = (7 + 4 * np.sin(4 * la) * np.cos(3 * lo - tt) + noise).round(2)
    return out


def field(shape) -> np.ndarray:
    """A smooth float32 field with a little noise (compresses ~3-5x, like real data)."""
    rng = np.random.default_rng(0)
    z, y, x = np.meshgrid(*(np.linspace(0, 6, n, dtype="f4") for n in shape), indexing="ij")
    return (np.sin(x + z) * np.cos(y) * 100 + rng.normal(0, 0.5, shape).astype("f4")).astype("f4")


def small_keys(kind: str, shape) -> list:
    rng = np.random.default_rng(1)
    if kind == "table":
        return [slice(int(a), int(a) + 10) for a in rng.integers(0, shape[0] - 10, NSMALL)]
    return [
        (int(z), slice(int(y), int(y) + 10), slice(int(x), int(x) + 10))
        for z, y, x in zip(*(rng.integers(0, n - 10, NSMALL) for n in shape), strict=True)
    ]


# ---------------------------------------------------------------------- one measurement (child)


def child(a) -> dict:
    """Run one operation of one tool in this fresh process; return its figures."""
    spec = json.loads(a.child)
    tool, kind, op, chunks, nthreads = spec["tool"], spec["kind"], spec["op"], spec["chunks"], spec["threads"]
    src = Path(spec["src"])
    path = Path(spec["file"])
    data = np.load(src) if op == "write" else None
    if op == "write":
        path.unlink(missing_ok=True)  # every round writes a new file
    shape = tuple(spec["shape"])
    res = {}
    if tool == "PyTables Blosc2 opt":
        res = pytables_op(op, kind, path, data, shape, chunks, nthreads)
    else:
        res = h5py_op(tool, op, kind, path, data, shape, chunks, nthreads)
    res["rss_mb"] = peak_rss_mb()
    if op == "write":
        res["size_mb"] = path.stat().st_size / 1e6
    return res


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM: unlike getrusage's maxrss, not inherited from
    the parent through fork + exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def small_reads(get, keys, want_shape) -> float:
    times = []
    for k in keys:
        dt, got = timed(lambda k=k: get(k))
        assert got.shape == want_shape, (got.shape, want_shape)
        times.append(dt)
    return statistics.median(times)


def pytables_op(op, kind, path, data, shape, chunks, nthreads) -> dict:
    import tables

    tables.parameters.MAX_BLOSC_THREADS = nthreads
    for setter in ("set_blosc_max_threads", "set_blosc2_max_threads"):
        if hasattr(tables, setter):
            getattr(tables, setter)(nthreads)
    filters = tables.Filters(complevel=5, complib="blosc2:zstd", shuffle=True)
    if op == "write":

        def write():
            with tables.open_file(path, "w") as f:
                if kind == "table":
                    cs = None if chunks == "auto" else (BIG_ROWS,)
                    t = f.create_table("/", "t", ERA5, filters=filters, expectedrows=len(data), chunkshape=cs)
                    t.append(data)
                else:
                    cs = None if chunks == "auto" else BIG_FIELD
                    a = f.create_carray("/", "t", tables.Float32Atom(), data.shape, filters=filters, chunkshape=cs)
                    a[...] = data
                return f.root.t.chunkshape

        dt, cs = timed(write)
        return {"time": dt, "chunkshape": [int(c) for c in cs]}
    with tables.open_file(path, "r") as f:
        node = f.root.t
        if op == "read":
            dt, out = timed(lambda: node[:])
            assert out.shape == shape
            return {"time": dt}
        return {"time": small_reads(node.__getitem__, small_keys(kind, shape), (10,) if kind == "table" else (10, 10))}


def h5py_opts(tool: str) -> dict:
    if tool == "zlib+shuffle":
        return {"compression": "gzip", "compression_opts": 5, "shuffle": True}
    if tool in ("hdf5plugin Blosc", "hdf5plugin Blosc2"):
        import hdf5plugin

        if tool.endswith("Blosc"):
            return dict(hdf5plugin.Blosc("zstd", 5, hdf5plugin.Blosc.SHUFFLE))
        return dict(hdf5plugin.Blosc2("zstd", 5, hdf5plugin.Blosc2.SHUFFLE))
    if tool in ("oxblosc filter", "oxblosc optimized"):
        import oxblosc.hdf5 as oh5

        return dict(oh5.Blosc2("zstd", 5, filters="shuffle"))
    return {}


def h5py_op(tool, op, kind, path, data, shape, chunks, nthreads) -> dict:
    if tool in ("hdf5plugin Blosc", "hdf5plugin Blosc2", "b2h5py"):
        import hdf5plugin  # noqa: F401 - registers its filters
    import h5py

    if tool.startswith("oxblosc"):
        import oxblosc.hdf5 as oh5

        oh5.register(force=True)
    if op == "write":
        opts = h5py_opts(tool)
        if tool == "oxblosc optimized":
            return ours_write(kind, path, data, chunks, nthreads)

        def write():
            with h5py.File(path, "w") as f:
                cs = True if chunks == "auto" else ((BIG_ROWS,) if kind == "table" else BIG_FIELD)
                maxshape = (None,) if kind == "table" else None
                d = f.create_dataset("t", data=data, chunks=cs, maxshape=maxshape, **opts)
                return d.chunks

        dt, cs = timed(write)
        return {"time": dt, "chunkshape": list(cs)}
    with h5py.File(path, "r") as f:
        d = f["t"]
        if tool == "oxblosc optimized":
            import oxblosc.hdf5 as oh5

            node = oh5.Table(d, nthreads=nthreads) if kind == "table" else oh5.Dataset(d, nthreads=nthreads)
        elif tool == "b2h5py":
            import b2h5py
            import blosc2

            blosc2.set_nthreads(nthreads)
            node = b2h5py.B2Dataset(d)
        else:
            node = d
        if op == "read":
            dt, out = timed(lambda: node[()] if kind == "field" else node[:])
            assert out.shape == shape
            return {"time": dt}
        return {"time": small_reads(node.__getitem__, small_keys(kind, shape), (10,) if kind == "table" else (10, 10))}


def ours_write(kind, path, data, chunks, nthreads) -> dict:
    """oxblosc's optimized write: create_table (PyTables' rule, direct chunk writes) for the
    table; for the field, direct chunk writes of the bytes our filter stores (edge chunks
    padded, as HDF5 pads them for the filter)."""
    import h5py
    import oxblosc.hdf5 as oh5

    if kind == "table":

        def write():
            with oh5.create_table(
                path, "/t", data, chunkshape=None if chunks == "auto" else BIG_ROWS, nthreads=nthreads
            ) as t:
                return t.chunkshape

        dt, cs = timed(write)
        return {"time": dt, "chunkshape": list(cs)}

    def write_field():
        from concurrent.futures import ThreadPoolExecutor
        from itertools import product

        from oxblosc import _native

        with h5py.File(path, "w") as f:
            cs = True if chunks == "auto" else BIG_FIELD
            d = f.create_dataset(
                "t", shape=data.shape, dtype=data.dtype, chunks=cs, **oh5.Blosc2("zstd", 5, filters="shuffle")
            )
            cd = list(d.id.get_create_plist().get_filter(0)[2])
            c = d.chunks
            starts = list(product(*(range(0, n, k) for n, k in zip(data.shape, c, strict=True))))

            def enc(s):
                block = data[tuple(slice(a, a + k) for a, k in zip(s, c, strict=True))]
                if block.shape != c:
                    full = np.zeros(c, data.dtype)
                    full[tuple(slice(0, n) for n in block.shape)] = block
                    block = full
                return _native.hdf5_encode_chunks(
                    32026, cd, [np.ascontiguousarray(block)], 1 if len(starts) > 1 else nthreads
                )[0]

            with ThreadPoolExecutor(nthreads) as pool:
                for s, b in zip(starts, pool.map(enc, starts), strict=True):
                    d.id.write_direct_chunk(s, b, 0)
            return c

    dt, cs = timed(write_field)
    return {"time": dt, "chunkshape": list(cs)}


# ---------------------------------------------------------------------- driver (parent)


def run_child(spec: dict) -> dict:
    env = dict(os.environ, BLOSC_NTHREADS=str(spec["threads"]), NUMEXPR_MAX_THREADS=str(spec["threads"]))
    env.pop("HDF5_PLUGIN_PATH", None)
    r = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True, env=env, check=False
    )
    if r.returncode != 0:
        raise RuntimeError(f"{spec}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def scenario(a) -> None:
    from _benchutil import log, machine_info, write_block

    nrows = a.rows or (1_000_000 if a.quick else 100_000_000 if a.full else 10_000_000)
    fshape = (64, 512, 256) if a.quick else (1024, 512, 256) if a.full else (256, 512, 256)
    fshape = (a.planes, *fshape[1:]) if a.planes else fshape
    threads = [1, 2]
    results: dict[tuple, dict[str, list]] = {}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=a.tmpdir) as tmp:
        tmp = Path(tmp)
        sources = {"table": tmp / "table.npy", "field": tmp / "field.npy"}
        log(f"making data: {nrows} rows, field {fshape}")
        np.save(sources["table"], era5_rows(nrows))
        np.save(sources["field"], field(fshape))
        shapes = {"table": (nrows,), "field": fshape}
        configs = []
        for kind in a.kinds:
            for chunks in ("auto", "big"):
                for tool in a.tools:
                    for th in threads if tool in THREADED else [1]:
                        configs.append((kind, chunks, tool, th))
        for rnd in range(a.reps):
            for op in ("write", "read", "small"):
                for kind, chunks, tool, th in configs:
                    if op == "write" and tool in READS_FROM:
                        continue
                    owner = READS_FROM.get(tool, tool)
                    fname = (
                        tmp
                        / f"{kind}-{chunks}-{owner}-{th if op != 'write' or owner in THREADED else 1}.h5".replace(
                            " ", "_"
                        )
                    )
                    if op != "write" and not fname.exists():
                        fname = tmp / f"{kind}-{chunks}-{owner}-1.h5".replace(" ", "_")
                    spec = {
                        "tool": tool,
                        "kind": kind,
                        "op": op,
                        "chunks": chunks,
                        "threads": th,
                        "src": str(sources[kind]),
                        "file": str(fname),
                        "shape": list(shapes[kind]),
                    }
                    r = run_child(spec)
                    rec = results.setdefault((kind, chunks, tool, th), {})
                    rec.setdefault(op, []).append(r["time"])
                    rec.setdefault(op + "_rss", []).append(r["rss_mb"])
                    if op == "write":
                        rec["size_mb"], rec["chunkshape"] = r["size_mb"], r["chunkshape"]
                    log(
                        f"round {rnd} {op:5} {kind:5} {chunks:4} {tool:20} t{th}: "
                        f"{r['time'] * 1e3:9.2f} ms  rss {r['rss_mb']:.0f} MB"
                    )
        for (kind, chunks, tool, th), rec in results.items():
            if "write" not in rec:  # b2h5py: the file hdf5plugin wrote
                src = results[(kind, chunks, READS_FROM[tool], th)]
                rec["size_mb"], rec["chunkshape"] = src["size_mb"], src["chunkshape"]
    m = machine_info()
    load1 = os.getloadavg()[0]
    versions = tool_versions()
    mode = " --quick" if a.quick else " --full" if a.full else ""
    head = (
        f"Command: `make develop-release && python bench/hdf5_bench.py{mode}"
        f" --reps {a.reps}`. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{load0:.1f} at the start, {load1:.1f} at the end (the machine is shared with other agents' builds and "
        f"tests: absolute times are noisy, the ratios of interleaved runs less so).  \n"
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; {versions}.  \n"
        f"Data: ERA5-like table of {nrows:,} rows x 32 B ({nrows * 32 / 1e6:.0f} MB; 3 int32 + 5 float32 "
        f"columns), 3-D float32 field {fshape} ({np.prod(fshape) * 4 / 1e6:.0f} MB). zstd 5 + shuffle for "
        f"every Blosc; medians of {a.reps} interleaved rounds, each measurement in a fresh process; small = "
        f"median of {NSMALL} reads of 10 rows (table) or a 10x10 box (field); RSS = the process's peak "
        f"(a write holds its input, a full read its output).\n"
    )
    table = summary_table(results)
    ratios = ratio_lines(results)
    block = head + "\n" + table + "\n" + ratios
    print(block)
    if a.json:
        Path(a.json).write_text(json.dumps({" | ".join(map(str, k)): v for k, v in results.items()}, indent=1))
    if a.plot:
        plot(results, Path(a.plot), nrows, fshape)
    if a.write_docs:
        write_block(
            HERE.parent / "docs" / "benchmarks.md",
            "hdf5-seed",
            "HDF5: the seed's scenario (tables and a 3-D field)",
            block,
        )


def med(rec, key):
    return statistics.median(rec[key]) if key in rec else float("nan")


def summary_table(results) -> str:
    lines = [
        "| data | chunks | tool | threads | chunk shape | size MB | write s | full read s | small read ms "
        "| peak RSS write / read MB |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for (kind, chunks, tool, th), rec in results.items():
        cs = "x".join(str(c) for c in rec["chunkshape"])
        w = f"{med(rec, 'write'):.2f}" if "write" in rec else "(hdf5plugin's)"
        lines.append(
            f"| {kind} | {chunks} | {tool} | {th} | {cs} | {rec['size_mb']:.0f} | {w} | {med(rec, 'read'):.3f} | "
            f"{med(rec, 'small') * 1e3:.2f} | {med(rec, 'write_rss'):.0f} / {med(rec, 'read_rss'):.0f} |"
        )
    return "\n".join(lines) + "\n"


def ratio_lines(results) -> str:
    """Time of each peer / time of oxblosc optimized (above 1: ours faster), same config."""
    peers = ["PyTables Blosc2 opt", "b2h5py", "hdf5plugin Blosc2", "oxblosc filter"]
    lines = [
        "Ratios: peer time / oxblosc optimized time, same data, chunks and threads (above 1: oxblosc faster).\n",
        "| data | chunks | threads | vs | write | full read | small read |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for (kind, chunks, tool, th), ours in results.items():
        if tool != "oxblosc optimized":
            continue
        for p in peers:
            rec = results.get((kind, chunks, p, th))
            if rec is None:
                continue
            cells = []
            for op in ("write", "read", "small"):
                if op in rec and op in ours:
                    cells.append(f"{med(rec, op) / med(ours, op):.2f}")
                else:
                    cells.append("-")
            lines.append(f"| {kind} | {chunks} | {th} | {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def tool_versions() -> str:
    code = (
        "import h5py, hdf5plugin, blosc2; from importlib.metadata import version as v;"
        "print(f'h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), hdf5plugin {hdf5plugin.version}, "
        'b2h5py {v("b2h5py")}, python-blosc2 {blosc2.__version__}\')'
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
    pt = subprocess.run(
        [sys.executable, "-c", "import tables; print(f'PyTables {tables.__version__} (HDF5 {tables.hdf5_version})')"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{out}, {pt}"


def plot(results, png: Path, nrows, fshape) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5), dpi=80)
    ops = [("write", "write (s)"), ("read", "full read (s)"), ("small", "small read (ms)")]
    for row, kind in enumerate(("table", "field")):
        for col, (op, label) in enumerate(ops):
            ax = axes[row][col]
            names, vals, colors = [], [], []
            for (k, chunks, tool, th), rec in results.items():
                if k != kind or chunks != "big" or op not in rec or (th != 2 and tool in THREADED):
                    continue
                names.append(tool.replace("hdf5plugin ", "h5plugin "))
                v = med(rec, op) * (1e3 if op == "small" else 1)
                vals.append(v)
                colors.append("tab:red" if tool.startswith("oxblosc optimized") else "tab:gray")
            ax.barh(names, vals, color=colors)
            ax.set_title(f"{kind}: {label}", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.invert_yaxis()
            if op == "small":
                ax.set_xscale("log")
    fig.suptitle(
        f"HDF5, 32 MiB chunks, 2 threads where the tool threads (ERA5-like table {nrows:,} rows; field {fshape})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(png)


# ---------------------------------------------------------------------- the earlier small-slice table

SLICES = {
    "one item": (10, 200, 50),
    "10x10 box": (10, slice(200, 210), slice(50, 60)),
    "one row": (10, 200, slice(None)),
    "one plane (64 KB)": (slice(10, 11), slice(0, 64), slice(None)),
}


def slices_main(a) -> None:
    """Small slices of a hdf5plugin-written 3-D field: oxblosc.hdf5.Dataset vs h5py's filter."""
    import h5py
    import hdf5plugin
    import oxblosc.hdf5 as oh5
    from _benchutil import log, machine_info

    chunk = BIG_FIELD
    shape = (chunk[0] * (1 if a.quick else 2), *chunk[1:])
    data = field(shape)
    filters = {
        "Blosc2 zstd 5 shuffle": hdf5plugin.Blosc2("zstd", 5, hdf5plugin.Blosc2.SHUFFLE),
        "Blosc2 lz4 5 shuffle": hdf5plugin.Blosc2("lz4", 5, hdf5plugin.Blosc2.SHUFFLE),
        "Blosc lz4 5 shuffle": hdf5plugin.Blosc("lz4", 5, hdf5plugin.Blosc.SHUFFLE),
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.h5")
        with h5py.File(path, "w") as f:
            for name, opts in filters.items():
                log(f"writing {name} {shape}")
                f.create_dataset(name, data=data, chunks=chunk, **opts)
        with h5py.File(path, "r") as f:
            for name in filters:
                d = f[name]
                ours = oh5.Dataset(d, nthreads=1)
                for what, key in SLICES.items():
                    want = data[key]
                    assert np.array_equal(ours[key], want) and np.array_equal(d[key], want)
                    b0 = ours.blocks_decoded
                    t_ours, t_h5 = [], []
                    for _ in range(a.reps):  # interleaved
                        t_ours.append(timed(lambda key=key, ours=ours: ours[key])[0])
                        t_h5.append(timed(lambda key=key, d=d: d[key])[0])
                    blocks = (ours.blocks_decoded - b0) / a.reps
                    mo, mh = statistics.median(t_ours), statistics.median(t_h5)
                    rows.append((name, what, mh * 1e3, mo * 1e3, mh / mo, blocks))
                    log(f"{name:24} {what:18} h5py {mh * 1e3:8.2f} ms  ours {mo * 1e3:8.3f} ms  x{mh / mo:7.1f}")
                ours.close()
    m = machine_info()
    print(
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; h5py {h5py.__version__}, "
        f"hdf5plugin {hdf5plugin.version}, HDF5 {h5py.version.hdf5_version}.  "
    )
    print(
        f"Dataset: float32 {shape}, HDF5 chunks {chunk} (32 MiB), written by hdf5plugin; "
        f"medians of {a.reps} interleaved reads, 1 thread.\n"
    )
    print("| filter | slice | h5py + hdf5plugin (ms) | oxblosc.hdf5.Dataset (ms) | speedup | blocks decoded per read |")
    print("|---|---|---:|---:|---:|---:|")
    for name, what, mh, mo, r, b in rows:
        print(f"| {name} | {what} | {mh:.2f} | {mo:.3f} | {r:.0f}x | {b:g} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 M rows and one field chunk (about two minutes)")
    ap.add_argument("--full", action="store_true", help="100 M rows, the seed's size")
    ap.add_argument("--rows", type=int, default=None, help="table rows (overrides the mode's)")
    ap.add_argument("--planes", type=int, default=None, help="field planes of 512 x 256 (overrides the mode's)")
    ap.add_argument("--tools", nargs="+", default=TOOLS, choices=TOOLS, metavar="TOOL", help="a subset of the tools")
    ap.add_argument("--kinds", nargs="+", default=["table", "field"], choices=["table", "field"])
    ap.add_argument("--slices", action="store_true", help="the earlier small-slice table only")
    ap.add_argument("--reps", type=int, default=None, help="rounds (default 3; --slices: 15 reads)")
    ap.add_argument("--write-docs", action="store_true", help="replace the block in docs/benchmarks.md")
    ap.add_argument("--plot", default=None, help="write a PNG plot here")
    ap.add_argument("--json", default=None, help="write the raw times here")
    ap.add_argument("--tmpdir", default=None, help="scratch directory for the HDF5 files")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a)))
        return
    sys.path.insert(0, str(HERE))
    if a.slices:
        a.reps = a.reps or 15
        slices_main(a)
        return
    a.reps = a.reps or 3
    scenario(a)


if __name__ == "__main__":
    main()
