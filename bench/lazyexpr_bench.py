#!/usr/bin/env python
"""Lazy expressions and reductions on a compressed 3-D float field: oxblosc vs python-blosc2
vs NumPy on the same data, in the same run.

Three float64 fields a, b, c of shape (n, n, n) (smooth, compressible), stored in memory with
the same chunks/blocks and codec (LZ4, shuffle) by oxblosc and python-blosc2, and as NumPy
arrays. Measured, interleaved repetitions, medians:
  - `a * b + sin(c)` (and `a * b + c`, without the transcendental function) computed into a
    new compressed array (`.compute()`), and NumPy's `a * b + np.sin(c)` into a new in-RAM
    array;
  - `sum(axis=k)` of `a` for k = 0, 1, 2 and None, and `mean()`, `min()`, `max()`, `std()`.
Peak RSS is measured per tool in a fresh child process running the same operation once
(the peak after the data was created, reset through /proc/self/clear_refs, minus the RSS then).

    python bench/lazyexpr_bench.py --n 400 --reps 5 --nthreads 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def make_fields(n: int):
    import numpy as np

    x = np.linspace(0, 4 * np.pi, n)
    base = np.sin(x)[:, None, None] * np.cos(x)[None, :, None] + 0.1 * x[None, None, :]
    return base, base * 0.5 + 1.0, base * 2.0 - 0.3


def build(tool: str, n: int, nthreads: int, text: str = "a * b + sin(c)"):
    """The three operands for ``tool`` and its two operations."""
    import numpy as np

    fields = make_fields(n)
    if tool == "numpy":
        a, b, c = fields
        f = (lambda: a * b + np.sin(c)) if "sin" in text else (lambda: a * b + c)
        return (a, b, c), f, (lambda ax, op="sum": getattr(a, op)(axis=ax))
    # About 8 MB chunks of whole (n, n) planes, 256 KB blocks: the same for both libraries.
    chunks = (max(1, min(n, (8 << 20) // (n * n * 8))), n, n)
    blocks = (1, min(n, max(1, (256 << 10) // (n * 8))), n)
    if tool == "oxblosc":
        import oxblosc as m

        m.set_nthreads(nthreads)
        cp = m.CParams(codec=m.Codec.LZ4, clevel=5, nthreads=nthreads)
    else:
        import blosc2 as m

        m.set_nthreads(nthreads)
        cp = m.CParams(codec=m.Codec.LZ4, clevel=5, nthreads=nthreads)
    a, b, c = (m.asarray(f, chunks=chunks, blocks=blocks, cparams=cp) for f in fields)
    return (
        (a, b, c),
        (lambda: m.lazyexpr(text, {"a": a, "b": b, "c": c}).compute(cparams=cp)),
        (lambda ax, op="sum": getattr(a, op)(axis=ax)),
    )


def _rss_child(tool: str, n: int, nthreads: int, what: str) -> float:
    """Peak RSS growth (MB) of one operation in a fresh process."""
    here = str(Path(__file__).resolve().parent)
    code = (
        f"import sys, resource; sys.path.insert(0, {here!r}); import lazyexpr_bench as lb; "
        f"ops, expr, red = lb.build({tool!r}, {n}, {nthreads}); before = lb.reset_peak(); "
        f"r = expr() if {what!r} == 'expr' else red(0); "
        "print(lb.peak() - before)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _status(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> float:
    """Reset the peak RSS (Linux: clear_refs 5) and return the current RSS (MB)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status("VmRSS")


def peak() -> float:
    return _status("VmHWM")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--nthreads", type=int, default=2)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    import numpy as np
    from _benchutil import cpu_busy, machine_info

    tools = ["oxblosc", "blosc2", "numpy"]
    built = {t: build(t, args.n, args.nthreads) for t in tools}
    ref_e = built["numpy"][1]()
    for t in ("oxblosc", "blosc2"):
        np.testing.assert_allclose(built[t][1]()[:], ref_e, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(built[t][2](1), built["numpy"][2](1), rtol=1e-9)
    plain = {t: build(t, args.n, args.nthreads, "a * b + c")[1] for t in tools}
    cases = [("a * b + sin(c)", lambda t: built[t][1]()), ("a * b + c", lambda t: plain[t]())] + [
        (f"sum(axis={ax})", (lambda ax: lambda t: built[t][2](ax))(ax)) for ax in (0, 1, 2, None)
    ]
    cases += [(f"{op}()", (lambda op: lambda t: built[t][2](None, op))(op)) for op in ("mean", "min", "max", "std")]
    times = {(c, t): [] for c, _ in cases for t in tools}
    cpu = {(c, t): [] for c, _ in cases for t in tools}
    w0, b0 = cpu_busy()
    for _ in range(args.reps):
        for cname, fn in cases:
            for t in tools:
                c0, t0 = time.process_time(), time.perf_counter()
                fn(t)
                times[(cname, t)].append(time.perf_counter() - t0)
                cpu[(cname, t)].append(time.process_time() - c0)
    w1, b1 = cpu_busy()
    load = (b1 - b0) / (w1 - w0)
    rss = {(w, t): _rss_child(t, args.n, args.nthreads, w) for w in ("expr", "sum") for t in tools}
    mb = 3 * args.n**3 * 8 / 2**20
    info = machine_info()
    print(
        f"3 float64 fields of {args.n}^3 ({mb:.0f} MB uncompressed in total), {args.nthreads} threads, "
        f"{args.reps} interleaved reps, medians; machine busy {load:.1f} of {info['cores']} cores during the run; "
        f"blosc2 {info['blosc2']}, numpy {info['numpy']}"
    )
    print()
    print("Wall time, and CPU time of the process (all threads; less sensitive to other load):")
    print()
    print(
        "| operation | oxblosc ms | python-blosc2 ms | NumPy ms | oxblosc / blosc2 | oxblosc / NumPy "
        "| CPU ms oxblosc / blosc2 / NumPy |"
    )
    print("|---|---|---|---|---|---|---|")
    res = {}
    for cname, _ in cases:
        m = {t: statistics.median(times[(cname, t)]) * 1e3 for t in tools}
        c = {t: statistics.median(cpu[(cname, t)]) * 1e3 for t in tools}
        res[cname] = {**m, **{f"cpu_{t}": v for t, v in c.items()}}
        print(
            f"| `{cname}` | {m['oxblosc']:.1f} | {m['blosc2']:.1f} | {m['numpy']:.1f} | "
            f"{m['oxblosc'] / m['blosc2']:.2f} | {m['oxblosc'] / m['numpy']:.2f} | "
            f"{c['oxblosc']:.0f} / {c['blosc2']:.0f} / {c['numpy']:.0f} |"
        )
    print()
    print("Peak RSS growth of one operation in a fresh process (MB; the operands are created first):")
    print()
    print("| operation | oxblosc | python-blosc2 | NumPy |")
    print("|---|---|---|---|")
    for w, label in (("expr", "`a * b + sin(c)`"), ("sum", "`sum(axis=0)`")):
        print(f"| {label} | {rss[(w, 'oxblosc')]:.0f} | {rss[(w, 'blosc2')]:.0f} | {rss[(w, 'numpy')]:.0f} |")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"times_ms": res, "rss_mb": {f"{k[0]}/{k[1]}": v for k, v in rss.items()}})
        )


if __name__ == "__main__":
    main()
