"""The Bloscpack paper's comparison, redone for the ``oxblosc`` CLI: file write / read time and
ratio for arrays of three sizes and three entropies, against np.save/np.load,
np.savez_compressed, the ``zstd -T0`` and ``lz4`` command lines, python-blosc2's
save_array/load_array, and oxblosc's Python SChunk.

Write times include fsync of the output. Reads are warm-cache (the file was just written; the
machine is shared, so caches are not dropped): they measure decoding, not the disk. The CLI
and command-line tools decompress to /dev/null; the Python readers return an array.

    python bench/cli_bench.py --quick            # 80 KB and 8 MB, < 1 min
    python bench/cli_bench.py --write-doc docs/benchmarks.md --plot docs/cli_bench.png
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import blosc2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oxblosc  # noqa: E402
from _benchutil import cpu_busy, log, machine_info, write_block  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def cli_binary() -> str:
    for p in (
        os.environ.get("OXBLOSC_CLI"),
        ROOT / "target/release/oxblosc",
        ROOT / "python/oxblosc/_bin/oxblosc",
    ):
        if p and Path(p).is_file():
            return str(p)
    sys.exit("build the CLI first: cargo build --release -p oxblosc-cli (or set OXBLOSC_CLI)")


def make_array(n: int, entropy: str) -> np.ndarray:
    rng = np.random.default_rng(42)
    if entropy == "low":
        return np.arange(n, dtype="f8")
    if entropy == "medium":
        return np.sin(np.arange(n, dtype="f8") / 1000.0) + rng.normal(0, 0.01, n)
    return rng.random(n)


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run(cmd: list[str], stdout=subprocess.DEVNULL) -> None:
    subprocess.run(cmd, check=True, stdout=stdout)


def size_of(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def tools(cli: str, raw: Path, d: Path, a: np.ndarray):
    """(name, write(), read(), output path) for every tool."""
    out = {}

    def ox(name, extra):
        f = d / f"{name}.b2frame"
        out[name] = (
            lambda: run([cli, "compress", "-q", "-f", "--typesize", "8", *extra, str(raw), str(f)]),
            lambda: run([cli, "decompress", "-q", str(f), "-"]),
            f,
        )

    ox("oxblosc CLI (zstd 5)", [])
    ox("oxblosc CLI (lz4 5)", ["--codec", "lz4"])

    f_sc = d / "py.b2frame"

    def ox_py_write():
        if f_sc.exists():
            f_sc.unlink()
        s = oxblosc.SChunk(chunksize=4 << 20, data=a, urlpath=str(f_sc), mode="w", cparams={"typesize": 8})
        del s
        fsync(f_sc)

    out["oxblosc SChunk (Python)"] = (
        ox_py_write,
        lambda: np.frombuffer(oxblosc.open(str(f_sc))[:], dtype=a.dtype),
        f_sc,
    )

    f_b2 = d / "b2.b2nd"

    def b2_write():
        blosc2.save_array(a, str(f_b2), mode="w")
        fsync(f_b2)

    out["python-blosc2 save_array"] = (b2_write, lambda: blosc2.load_array(str(f_b2)), f_b2)

    f_npy = d / "a.npy"

    def npy_write():
        np.save(f_npy, a)
        fsync(f_npy)

    out["np.save"] = (npy_write, lambda: np.load(f_npy), f_npy)

    f_npz = d / "a.npz"

    def npz_write():
        np.savez_compressed(f_npz, a=a)
        fsync(f_npz)

    out["np.savez_compressed"] = (npz_write, lambda: np.load(f_npz)["a"], f_npz)

    if shutil.which("zstd"):
        f_z = d / "a.zst"

        def z_write():
            run(["zstd", "-q", "-f", "-T0", str(raw), "-o", str(f_z)])
            fsync(f_z)

        out["zstd -T0 (level 3)"] = (z_write, lambda: run(["zstd", "-q", "-d", "-c", str(f_z)]), f_z)
    if shutil.which("lz4"):
        f_l = d / "a.lz4"

        def l_write():
            run(["lz4", "-q", "-f", str(raw), str(f_l)])
            fsync(f_l)

        out["lz4 (level 1)"] = (l_write, lambda: run(["lz4", "-q", "-d", "-c", str(f_l)]), f_l)
    return out


def timed(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write-doc", type=Path)
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    cli = cli_binary()
    sizes = (
        [("80 KB", 10_000), ("8 MB", 1_000_000)]
        if args.quick
        else [
            ("80 KB", 10_000),
            ("80 MB", 10_000_000),
            ("800 MB", 100_000_000),
        ]
    )
    rows = []
    w0, c0 = cpu_busy()
    with tempfile.TemporaryDirectory(prefix="oxblosc-cli-bench-", dir=os.environ.get("BENCH_DIR")) as tmp:
        d = Path(tmp)
        for label, n in sizes:
            repeats = 5 if n <= 1_000_000 else (3 if n <= 10_000_000 else 1)
            for entropy in ("low", "medium", "high"):
                a = make_array(n, entropy)
                raw = d / "a.raw"
                a.tofile(raw)
                for name, (write, read, path) in tools(cli, raw, d, a).items():
                    tw = timed(write, repeats)
                    tr = timed(read, repeats)
                    ratio = a.nbytes / size_of(path)
                    rows.append((label, entropy, name, tw, tr, ratio))
                    times = f"write {tw * 1e3:9.2f} ms  read {tr * 1e3:9.2f} ms"
                    log(f"{label:>6} {entropy:>6} {name:<26} {times}  ratio {ratio:7.2f}")
                    if path.is_dir():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
    w1, c1 = cpu_busy()
    load = (c1 - c0) / (w1 - w0)
    report(rows, args, load)


def report(rows, args, load: float) -> None:
    m = machine_info()
    cmd = "python bench/cli_bench.py" + (" --quick" if args.quick else "")
    if args.write_doc:
        cmd += f" --write-doc {args.write_doc}"
    if args.plot:
        cmd += f" --plot {args.plot}"
    lines = [
        "Generated by `bench/cli_bench.py` (the Bloscpack paper's comparison).",
        "",
        f"Command: `nice {cmd}`  ",
        f"Machine: {m['cpu']} ({m['cores']} cores, shared; mean busy cores during the run {load:.1f}), "
        f"oxblosc {m['oxblosc']}, python-blosc2 {m['blosc2']}, numpy {m['numpy']}.",
        "",
        "float64 arrays; entropy low = arange, medium = sin + 1% noise, high = uniform random. Write "
        "includes fsync; reads are warm-cache (decode speed, not disk): command-line tools decompress "
        "to /dev/null, Python readers return an array. Every tool at its default settings "
        "(oxblosc: zstd clevel 5 + shuffle, 4 MiB chunks, checksums; python-blosc2 save_array: its "
        "defaults). Median of 5 runs (80 KB, 8 MB), 3 (80 MB), 1 (800 MB); times in ms.",
        "",
        "| size | entropy | tool | write ms | read ms | ratio |",
        "|---|---|---|---:|---:|---:|",
    ]
    for label, entropy, name, tw, tr, ratio in rows:
        lines.append(f"| {label} | {entropy} | {name} | {tw * 1e3:.1f} | {tr * 1e3:.1f} | {ratio:.2f} |")
    if args.plot:
        lines += ["", f"![CLI benchmark]({args.plot.name})"]
        plot(rows, args.plot)
    block = "\n".join(lines)
    print(block)
    if args.write_doc:
        write_block(args.write_doc, "cli", "Command line (Bloscpack comparison)", block)


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(dict.fromkeys(r[0] for r in rows))
    ents = ["low", "medium", "high"]
    names = list(dict.fromkeys(r[2] for r in rows))
    fig, axes = plt.subplots(3, len(sizes), figsize=(5 * len(sizes), 11), squeeze=False)
    colors = plt.cm.tab10(np.linspace(0, 1, 10))
    for j, size in enumerate(sizes):
        for i, (metric, k, ylabel) in enumerate(
            [("write", 3, "write s (incl. fsync)"), ("read", 4, "read s (warm)"), ("ratio", 5, "ratio")]
        ):
            ax = axes[i][j]
            width = 0.8 / len(names)
            for t, name in enumerate(names):
                vals = [next((r[k] for r in rows if r[0] == size and r[1] == e and r[2] == name), 0) for e in ents]
                ax.bar(np.arange(3) + t * width, vals, width, label=name, color=colors[t % 10])
            ax.set_xticks(np.arange(3) + 0.4 - width / 2, ents)
            ax.set_yscale("log")
            ax.set_title(f"{size}: {metric}")
            ax.set_ylabel(ylabel)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


if __name__ == "__main__":
    main()
