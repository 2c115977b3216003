"""OXBLOSC_SIMD=scalar|sse2|avx2 turns the faster kernels off; the chunks stay byte-identical."""

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
# Element sizes with their own AVX2 kernels (3, 5, 6, 7: byte gathers) and the generic ones.
raw = a.view("u1")[1:]
for ts in (3, 5, 6, 7, 12):
    cp = oxblosc.CParams(codec=oxblosc.Codec.LZ4, typesize=ts, nthreads=1, filters=[oxblosc.Filter.SHUFFLE])
    c = oxblosc.compress2(raw, cparams=cp)
    assert oxblosc.decompress2(c) == raw.tobytes()
    out.append(c)
sys.stdout.buffer.write(b"".join(out))
"""


def test_scalar_and_sse2_paths_write_the_same_chunks():
    runs = {}
    for level in ("scalar", "sse2", "avx2", "best"):
        env = {"OXBLOSC_SIMD": level, "PATH": "/usr/bin:/bin"}
        runs[level] = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, check=True).stdout
    assert runs["scalar"] == runs["sse2"] == runs["avx2"] == runs["best"] and len(runs["best"]) > 1000
    # ... and equal to this process's own chunks.
    a = (np.sin(np.arange(100_003) * 0.01) * 1000).astype("f4")
    cp = oxblosc.CParams(
        codec=oxblosc.Codec.LZ4, typesize=4, nthreads=1, filters=[oxblosc.Filter.SHUFFLE], blocksize=40_000
    )
    assert runs["best"].startswith(oxblosc.compress2(a[1:], cparams=cp))


def test_odd_element_sizes_match_python_blosc2_both_ways():
    """The AVX2 gathers for element sizes 3, 5, 6, 7 write C-Blosc2's bytes and read its chunks."""
    import blosc2

    raw = np.frombuffer((np.sin(np.arange(200_001) * 0.003) * 30000).astype("<i4").tobytes()[1:], dtype="u1")
    for ts in (3, 5, 6, 7):
        ours = oxblosc.compress2(raw, cparams=oxblosc.CParams(codec=oxblosc.Codec.LZ4, typesize=ts, nthreads=1))
        theirs = blosc2.compress2(raw, cparams=blosc2.CParams(codec=blosc2.Codec.LZ4, typesize=ts, nthreads=1))
        assert ours == theirs, ts
        assert oxblosc.decompress2(theirs) == raw.tobytes()
        assert blosc2.decompress2(ours) == raw.tobytes()
