"""OXBLOSC_SIMD=scalar|sse2 turns the faster kernels off; the chunks stay byte-identical."""

import subprocess
import sys

import numpy as np
import oxblosc

SCRIPT = """
import sys, numpy as np, oxblosc
a = (np.sin(np.arange(100_003) * 0.01) * 1000).astype("f4")
out = []
for f in (oxblosc.Filter.SHUFFLE, oxblosc.Filter.BITSHUFFLE, oxblosc.Filter.BYTEDELTA):
    filters = [oxblosc.Filter.SHUFFLE, f] if f == oxblosc.Filter.BYTEDELTA else [f]
    cp = oxblosc.CParams(codec=oxblosc.Codec.LZ4, typesize=4, nthreads=1, filters=filters, blocksize=40_000)
    c = oxblosc.compress2(a[1:], cparams=cp)
    assert oxblosc.decompress2(c) == a[1:].tobytes()
    out.append(c)
sys.stdout.buffer.write(b"".join(out))
"""


def test_scalar_and_sse2_paths_write_the_same_chunks():
    runs = {}
    for level in ("scalar", "sse2", "best"):
        env = {"OXBLOSC_SIMD": level, "PATH": "/usr/bin:/bin"}
        runs[level] = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, check=True).stdout
    assert runs["scalar"] == runs["sse2"] == runs["best"] and len(runs["best"]) > 1000
    # ... and equal to this process's own chunks.
    a = (np.sin(np.arange(100_003) * 0.01) * 1000).astype("f4")
    cp = oxblosc.CParams(
        codec=oxblosc.Codec.LZ4, typesize=4, nthreads=1, filters=[oxblosc.Filter.SHUFFLE], blocksize=40_000
    )
    assert runs["best"].startswith(oxblosc.compress2(a[1:], cparams=cp))
