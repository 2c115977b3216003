#!/usr/bin/env python
"""oxblosc.evaluate vs numexpr.evaluate on in-RAM columns: the six table queries.

Same data and queries as ../shared/bench/table_query.py (make_columns / make_queries), the
boolean mask only (no row extraction), same thread count for both, interleaved repetitions,
medians.

    python bench/expr_bench.py --rows 10000000 --nthreads 2 --reps 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--nthreads", type=int, default=2)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--shared", default=str(Path(__file__).resolve().parents[1] / "../shared/bench"))
    args = p.parse_args()
    os.environ["NUMEXPR_MAX_THREADS"] = str(args.nthreads)
    sys.path.insert(0, args.shared)
    import numexpr as ne
    import numpy as np
    import oxblosc
    import table_query as tq

    ne.set_num_threads(args.nthreads)
    cols = tq.make_columns(args.rows)
    queries = tq.make_queries(cols)
    print(f"{args.rows:,} rows, {args.nthreads} threads, numexpr {ne.__version__}, numpy {np.__version__}")
    print("| query | numexpr ms | oxblosc ms | ratio (oxblosc/numexpr) | rows (ne / ox) |")
    print("|---|---|---|---|---|")
    tot_ne = tot_ox = 0.0
    for i, q in enumerate(queries, 1):
        ref = ne.evaluate(q, local_dict=cols)
        ours = oxblosc.evaluate(q, cols, nthreads=args.nthreads)
        t_ne, t_ox = [], []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            ne.evaluate(q, local_dict=cols)
            t_ne.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            oxblosc.evaluate(q, cols, nthreads=args.nthreads)
            t_ox.append(time.perf_counter() - t0)
        m_ne, m_ox = statistics.median(t_ne) * 1e3, statistics.median(t_ox) * 1e3
        tot_ne += m_ne
        tot_ox += m_ox
        # numexpr compares float32 columns with float64 constants; NumPy 2 (and oxblosc) in
        # float32, so rows equal to float32(threshold) may differ.
        print(f"| q{i} `{q}` | {m_ne:.1f} | {m_ox:.1f} | {m_ox / m_ne:.2f} | {int(ref.sum())} / {int(ours.sum())} |")
    print(f"| sum of medians | {tot_ne:.1f} | {tot_ox:.1f} | {tot_ox / tot_ne:.2f} | |")


if __name__ == "__main__":
    main()
