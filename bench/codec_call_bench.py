"""One Blosc1 codec call, ours vs numcodecs.Blosc: thread CPU per (8, 256, 256) float32 chunk.

The Zarr benchmark (datastack_bench.py) measures the codec inside zarr's machinery; this
measures the call alone, as zarr makes it: from a worker thread (so our codec uses one
thread, as numcodecs with ``use_threads = False``), same chunks (the Zarr benchmark's smooth
field), same settings, the two codecs alternating. Prints medians of the per-round means.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numcodecs
import numpy as np
from oxblosc.numcodecs import Blosc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cname", default="lz4")
    p.add_argument("--clevel", type=int, default=5)
    p.add_argument("--shuffle", type=int, default=1)
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    numcodecs.blosc.use_threads = False
    a = np.cumsum(np.random.default_rng(0).normal(size=(64, 512, 512)).astype("f4"), axis=-1) / 10
    chunks = [np.ascontiguousarray(a[i : i + 8, j : j + 256, k : k + 256])
              for i in range(0, 64, 8) for j in (0, 256) for k in (0, 256)]  # fmt: skip
    codecs = {
        "oxblosc": Blosc(args.cname, args.clevel, args.shuffle),
        "numcodecs": numcodecs.Blosc(args.cname, args.clevel, args.shuffle),
    }
    encoded = {who: [c.encode(x) for x in chunks] for who, c in codecs.items()}
    ms = {(who, op): [] for who in codecs for op in ("encode", "decode")}

    def rounds() -> None:
        for r in range(args.rounds):
            for who in sorted(codecs, reverse=bool(r % 2)):  # alternate who goes first
                c = codecs[who]
                t = time.thread_time()
                for x in chunks:
                    c.encode(x)
                ms[who, "encode"].append((time.thread_time() - t) / len(chunks) * 1e3)
                t = time.thread_time()
                for e in encoded[who]:
                    c.decode(e)
                ms[who, "decode"].append((time.thread_time() - t) / len(chunks) * 1e3)

    worker = threading.Thread(target=rounds)
    worker.start()
    worker.join()
    for op in ("encode", "decode"):
        ours, theirs = (statistics.median(ms[who, op]) for who in ("oxblosc", "numcodecs"))
        print(f"{args.cname} clevel {args.clevel} {op}: oxblosc {ours:.3f} ms, numcodecs {theirs:.3f} ms, "
              f"numcodecs / oxblosc {theirs / ours:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
