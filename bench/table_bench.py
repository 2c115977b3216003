#!/usr/bin/env python
"""Table queries: oxblosc.CTable against pandas, numexpr, python-blosc2 CTable and PyTables.

The setup of ``../shared/bench/table_query.py`` (imported from there, so data and queries are
the same): an 8-column ERA5-like table (10 M rows, 100 M with ``--full``, 1 M with
``--quick``), six queries each selecting ~1% of the rows and returning the matching rows.
Every system runs in its own subprocess (peak RSS is its own), one after the other, and the
whole round is repeated ``--rounds`` times interleaved; the figures are medians.

Systems: oxblosc in memory and on disk (.b2d directory), LZ4+shuffle and Zstd+bitshuffle
(``t.where(q).to_numpy()``); pandas ``DataFrame.query`` (numexpr engine) and numexpr on
in-RAM arrays (the shared script's workers); python-blosc2 ``CTable.where`` (in memory,
LZ4+shuffle, every column of the result read); PyTables ``read_where`` on a Blosc2-LZ4 table.

    python bench/table_bench.py --quick
    python bench/table_bench.py            # 10 M rows, writes docs/benchmarks.md + PNG
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("OXBLOSC_SHARED", HERE.parent.parent / "shared")) / "bench"
sys.path.insert(0, str(SHARED))
sys.path.insert(0, str(HERE))

OX = {
    "oxblosc-mem-lz4": (False, "LZ4", "SHUFFLE"),
    "oxblosc-mem-zstd": (False, "ZSTD", "BITSHUFFLE"),
    "oxblosc-disk-lz4": (True, "LZ4", "SHUFFLE"),
    "oxblosc-disk-zstd": (True, "ZSTD", "BITSHUFFLE"),
}
SYSTEMS = list(OX) + ["pandas", "numexpr", "blosc2-ctable", "pytables-b2lz4"]


def shared():
    try:
        import _common
        import table_query
    except ImportError as e:
        sys.exit(f"needs ../shared/bench/table_query.py (set OXBLOSC_SHARED): {e}")
    return _common, table_query


def slices(workdir: Path, names, nrows: int, step: int = 1 << 20):
    """The columns ``step`` rows at a time, read from the .npy files without mapping them
    (mapped pages would count in the writer's resident set)."""
    import numpy as np

    for lo in range(0, nrows, step):
        part = {}
        for n in names:
            with open(workdir / f"col-{n}.npy", "rb") as f:
                np.lib.format.read_magic(f)
                _, _, dt = np.lib.format.read_array_header_1_0(f)
                f.seek(lo * dt.itemsize, 1)
                part[n] = np.fromfile(f, dtype=dt, count=min(step, nrows - lo))
        yield part


def worker(
    system: str,
    workdir: Path,
    queries: list[str],
    reps: int,
    nrows: int,
    nthreads: int,
    phase: str = "all",
    block_rows: int | None = None,
) -> dict:
    import numpy as np

    C, TQ = shared()
    names = [n for n, _ in TQ.COLUMNS]
    res: dict = {"tool": system}
    if system in OX:
        import oxblosc

        oxblosc.set_nthreads(nthreads)
        disk, codec, filt = OX[system]
        cp = oxblosc.CParams(
            codec=getattr(oxblosc.Codec, codec), clevel=5, filters=[getattr(oxblosc.Filter, filt)], filters_meta=[0]
        )
        path = workdir / f"{system}.b2d" if disk else None
        if phase != "query":
            t0 = time.perf_counter()
            t = None
            for part in slices(workdir, names, nrows):  # written 1 M rows at a time
                if t is None:
                    t = oxblosc.CTable(
                        part, urlpath=path, cparams=cp, nthreads=nthreads, chunks=1 << 20, blocks=block_rows
                    )
                else:
                    t.extend(part)
            res["write_s"] = time.perf_counter() - t0
            if phase == "write":  # the table closed and synced; queries run in a fresh process
                del t
                gc.collect()
                C.fsync_path(path)
                res["write_fsync_s"] = time.perf_counter() - t0
                res["file_MB"] = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
                res["peak_write_MB"] = C.peak_rss_bytes() / 1e6
                return res
            res["file_MB"] = t.cbytes / 1e6
        else:
            t = oxblosc.CTable.open(path)
            t.nthreads = nthreads

        def run(q):
            return t.where(q).to_numpy()
    elif system == "blosc2-ctable":
        import dataclasses

        import blosc2

        blosc2.set_nthreads(nthreads)
        fields = {n: blosc2.field(blosc2.int32() if dt == "i4" else blosc2.float32()) for n, dt in TQ.COLUMNS}
        row = dataclasses.make_dataclass("Row", [(n, int if dt == "i4" else float, fields[n]) for n, dt in TQ.COLUMNS])
        cparams = dict(codec=blosc2.Codec.LZ4, clevel=5, filters=[blosc2.Filter.SHUFFLE], filters_meta=[0])
        t0 = time.perf_counter()
        t = blosc2.CTable(row, expected_size=nrows, cparams=cparams)
        for part in slices(workdir, names, nrows):
            rec = np.empty(len(part[names[0]]), dtype=TQ.COLUMNS)
            for n in names:
                rec[n] = part[n]
            t.extend(rec)
        t.close()
        res["write_s"] = time.perf_counter() - t0
        res["file_MB"] = t.cbytes / 1e6

        def run(q):
            v = t.where(q)
            return {n: v[n][:] for n in names}[names[0]]
    else:  # the shared script's own workers (pandas, numexpr, PyTables)
        return TQ.worker(system, workdir, queries, reps, nrows, 5, 0, 1 << 20)
    res["rss_base_MB"] = C.rss_bytes() / 1e6
    res["peak_reset"] = C.reset_peak_rss()
    res["queries"] = []
    for q in queries:
        n_out = len(run(q))
        res["queries"].append(
            {"query": q, "nrows_out": n_out, "times": C.repeat(lambda q=q: run(q), reps=reps, warmup=0)}
        )
    res["peak_query_MB"] = C.peak_rss_bytes() / 1e6
    if system in OX:
        res["blocks_skipped"] = t.blocks_skipped
        res["blocks_scanned"] = t.blocks_scanned
    return res


def run_sub(system: str, args, qfile: Path, nrows: int) -> dict:
    """Run ``system`` in its own process; a disk table is written by one process and queried
    by another (as a table on disk is used), the writer's time, size and peak recorded."""
    if system in OX and OX[system][0]:
        wres = run_one(system, args, qfile, nrows, "write")
        res = run_one(system, args, qfile, nrows, "query")
        res.update({k: wres[k] for k in ("write_s", "write_fsync_s", "file_MB")}, peak_write_MB=wres["peak_total_MB"])
        return res
    return run_one(system, args, qfile, nrows, "all")


def run_one(system: str, args, qfile: Path, nrows: int, phase: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", system, "--phase", phase, "--workdir", str(args.tmpdir)]
    cmd += [
        "--queries-file",
        str(qfile),
        "--reps",
        str(args.reps),
        "--rows",
        str(nrows),
        "--nthreads",
        str(args.nthreads),
    ]
    if args.block_rows:
        cmd += ["--block-rows", str(args.block_rows)]
    env = dict(
        os.environ,
        BLOSC_NTHREADS=str(args.nthreads),
        NUMEXPR_MAX_THREADS=str(args.nthreads),
        NUMEXPR_NUM_THREADS=str(args.nthreads),
        OMP_NUM_THREADS=str(args.nthreads),
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"worker {system} ({phase}) failed with status {status}")
    res = json.loads(out.decode().strip().splitlines()[-1])
    res["peak_total_MB"] = ru.ru_maxrss * 1024 / 1e6
    return res


def plot(summary: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    a.barh(names, [summary[n]["sum_ms"] for n in names], color="tab:blue")
    a.set_xlabel("sum of six query medians (ms)")
    b.barh(names, [summary[n]["peak_MB"] for n in names], color="tab:orange")
    b.set_xlabel("peak RSS of the process (MB)")
    b.set_yticklabels([])
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--quick", action="store_true", help="1 M rows")
    p.add_argument("--full", action="store_true", help="100 M rows")
    p.add_argument("--rows", type=int)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds of all systems")
    p.add_argument("--nthreads", type=int, default=2)
    p.add_argument("--block-rows", type=int, help="rows per block of the oxblosc tables (default: CTable's)")
    p.add_argument("--systems", nargs="+", default=SYSTEMS, choices=SYSTEMS)
    p.add_argument("--tmpdir", type=Path, default=Path(tempfile.gettempdir()) / "oxblosc-table-bench")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--worker")
    p.add_argument("--make-data", action="store_true")
    p.add_argument("--phase", default="all", choices=["all", "write", "query"])
    p.add_argument("--workdir", type=Path)
    p.add_argument("--queries-file", type=Path)
    args = p.parse_args()
    nrows = args.rows or (1_000_000 if args.quick else 100_000_000 if args.full else 10_000_000)
    if args.make_data:
        import numpy as np

        _, TQ = shared()
        made = args.workdir / "made.json"  # the data of an earlier run is reused when it fits
        if made.exists() and json.loads(made.read_text()) == {"rows": nrows}:
            return
        cols = TQ.make_columns(nrows)
        for n, _ in TQ.COLUMNS:
            np.save(args.workdir / f"col-{n}.npy", cols[n])
        queries = TQ.make_queries(cols)
        (args.workdir / "queries.json").write_text(json.dumps(queries))
        (args.workdir / "selectivity.json").write_text(json.dumps([TQ.selectivity(cols, q) for q in queries]))
        made.write_text(json.dumps({"rows": nrows}))
        return
    if args.worker:
        queries = json.loads(args.queries_file.read_text())
        res = worker(args.worker, args.workdir, queries, args.reps, nrows, args.nthreads, args.phase, args.block_rows)
        print(json.dumps(res))
        return
    from _benchutil import log, machine_info, write_block

    C, TQ = shared()
    args.tmpdir.mkdir(parents=True, exist_ok=True)
    # The data is made in a child process: a worker's peak RSS (wait4) starts from this
    # process's resident size at fork, which must stay small.
    subprocess.run(
        [sys.executable, __file__, "--make-data", "--workdir", str(args.tmpdir), "--rows", str(nrows)], check=True
    )
    qfile = args.tmpdir / "queries.json"
    queries, sel = json.loads(qfile.read_text()), json.loads((args.tmpdir / "selectivity.json").read_text())
    log(f"{nrows} rows; selectivities " + ", ".join(f"{s * 100:.2f}%" for s in sel))
    runs: dict = {s: [] for s in args.systems}
    for r in range(args.rounds):
        for s in args.systems:
            res = run_sub(s, args, qfile, nrows)
            runs[s].append(res)
            log(
                f"round {r + 1} {s:18s} "
                + " ".join(f"{C.tmed(q['times']) * 1e3:7.1f}" for q in res["queries"])
                + f"  peak {res['peak_total_MB']:.0f} MB"
            )
    summary = {}
    for s, rs in runs.items():
        per_q = [statistics.median(t for r in rs for t in r["queries"][i]["times"]) * 1e3 for i in range(len(queries))]
        summary[s] = dict(
            q_ms=per_q,
            sum_ms=sum(per_q),
            peak_MB=statistics.median(r["peak_total_MB"] for r in rs),
            peak_write_MB=rs[0].get("peak_write_MB"),
            write_s=statistics.median(r.get("write_s", r.get("load_s", 0)) or 0 for r in rs),
            size_MB=rs[0].get("file_MB"),
            nout=[q["nrows_out"] for q in rs[0]["queries"]],
            skipped=rs[0].get("blocks_skipped"),
            scanned=rs[0].get("blocks_scanned"),
        )
    ref = summary[args.systems[0]]["nout"]
    for s, v in summary.items():
        if any(abs(a - b) > max(2, nrows // 10000) for a, b in zip(v["nout"], ref, strict=False)):
            raise AssertionError(f"{s}: result sizes {v['nout']} != {ref}")
    md = [
        f"{nrows:,} rows x 8 columns ({nrows * 32 / 1e6:.0f} MB raw), {args.nthreads} threads, "
        f"{args.rounds} interleaved rounds x {args.reps} reps, medians. Machine: {machine_info()['cpu']}, "
        f"{os.cpu_count()} cores shared with other jobs running at the same time (figures are noisy).",
        "",
        "Queries (selectivity): "
        + "; ".join(f"q{i + 1} `{q}` ({s * 100:.2f}%)" for i, (q, s) in enumerate(zip(queries, sel, strict=False))),
        "",
        "| system | "
        + " | ".join(f"q{i + 1} ms" for i in range(len(queries)))
        + " | sum ms | vs pandas | peak RSS MB | write/load s | size MB |",
        "|---" * (len(queries) + 6) + "|",
    ]
    pd_sum = summary.get("pandas", {}).get("sum_ms")
    for s, v in summary.items():
        ratio = f"{v['sum_ms'] / pd_sum:.2f}" if pd_sum else ""
        size = f"{v['size_MB']:.0f}" if v["size_MB"] is not None else ""
        md.append(
            f"| {s} | "
            + " | ".join(f"{x:.0f}" for x in v["q_ms"])
            + f" | {v['sum_ms']:.0f} | {ratio} | {v['peak_MB']:.0f}"
            + f" | {v['write_s']:.2f} | {size} |"
        )
    ox = {s: v for s, v in summary.items() if s in OX}
    if ox:
        md += [
            "",
            "peak RSS: of the whole process (reading the data, building, querying); the disk tables"
            " are written by one process (its peak: "
            + ", ".join(f"{s} {v['peak_write_MB']:.0f} MB" for s, v in ox.items() if v["peak_write_MB"])
            + ") and opened and queried by another, whose peak is shown. Size: compressed bytes in memory,"
            " or the closed table directory.",
            "",
            "Blocks skipped by statistics / scanned over the six queries (first run): "
            + ", ".join(f"{s} {v['skipped']}/{v['scanned']}" for s, v in ox.items()),
        ]
    text = "\n".join(md)
    print(text)
    print(json.dumps(summary, indent=1), file=sys.stderr)
    if not args.no_save:
        docs = HERE.parent / "docs"
        png = docs / "table_bench.png"
        plot(summary, png, f"table queries, {nrows:,} rows, {args.nthreads} threads (lower is better)")
        write_block(
            docs / "benchmarks.md",
            "table_bench",
            "Table queries (bench/table_bench.py)",
            text + f"\n\n![table benchmark]({png.name})\n",
        )


if __name__ == "__main__":
    main()
