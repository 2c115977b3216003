"""`compress2`, `compress` and `compress_blosc1` write the chunk straight into the returned `bytes` and shrink it
in place (CPython's `_PyBytes_Resize`, looked up at run time); `OXBLOSC_NO_BYTES_RESIZE=1`
selects the older path (a reused buffer, then one copy). Both must return the same chunks,
python-blosc2 must read them, and the returned objects must not keep the worst-case size."""

import subprocess
import sys

import blosc2
import numpy as np
import oxblosc

SCRIPT = """
import sys, numpy as np, oxblosc
rng = np.random.default_rng(7)
smooth = (np.sin(np.arange(300_001) * 0.003) * 1000).astype("f4")
noise = rng.integers(0, 256, 1 << 20, dtype=np.uint8)       # stored raw (memcpyed)
inputs = [smooth, noise, smooth[:3], np.zeros(0, "u1"), np.zeros(1 << 20, "f8"), smooth.view("u1")[1:]]
out = []
for a in inputs:
    for codec in (oxblosc.Codec.BLOSCLZ, oxblosc.Codec.LZ4, oxblosc.Codec.ZSTD):
        for nthreads in (1, 2, 3):
            for filters in ([oxblosc.Filter.SHUFFLE], [oxblosc.Filter.NOFILTER]):
                ts = a.itemsize
                cp = oxblosc.CParams(codec=codec, typesize=ts, nthreads=nthreads, filters=filters)
                c = oxblosc.compress2(a, cparams=cp)
                assert oxblosc.decompress2(c) == a.tobytes()
                out.append(len(c).to_bytes(8, "little") + c)
    for nthreads in (1, 2):
        c = oxblosc.compress(a, typesize=a.itemsize, clevel=5, codec=oxblosc.Codec.LZ4)
        assert oxblosc.decompress(c) == a.tobytes()
        b1 = oxblosc.compress_blosc1(a, typesize=a.itemsize, nthreads=nthreads)
        assert oxblosc.decompress(b1) == a.tobytes()
        out += [len(c).to_bytes(8, "little") + c, len(b1).to_bytes(8, "little") + b1]
sys.stdout.buffer.write(b"".join(out))
"""


def run(**env):
    base = {"PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", SCRIPT], env={**base, **env}, capture_output=True, check=True).stdout


PROBE = "import oxblosc._native as n; print(n.compresses_into_bytes())"


def test_in_place_and_copied_paths_return_the_same_chunks():
    # Both paths are really taken (every CPython on Linux exports _PyBytes_Resize).
    probe = [sys.executable, "-c", PROBE]
    assert subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip() == "True"
    env = {"PATH": "/usr/bin:/bin", "OXBLOSC_NO_BYTES_RESIZE": "1"}
    assert subprocess.run(probe, capture_output=True, text=True, check=True, env=env).stdout.strip() == "False"
    direct, copied = run(), run(OXBLOSC_NO_BYTES_RESIZE="1")
    assert len(direct) > 1 << 20
    assert direct == copied


def test_returned_bytes_are_exact_and_readable_by_python_blosc2():
    a = (np.sin(np.arange(2_000_000) * 0.001) * 1000).astype("f4")
    for nthreads in (1, 2):
        c = oxblosc.compress2(a, typesize=4, nthreads=nthreads, codec=oxblosc.Codec.LZ4)
        assert isinstance(c, bytes) and type(c) is bytes
        assert len(c) < a.nbytes * 0.7
        # The object holds the chunk's length, not the worst case it was allocated with.
        assert sys.getsizeof(c) < len(c) + 100
        assert oxblosc.get_cbuffer_sizes(c)[1] == len(c)
        assert blosc2.decompress2(c) == a.tobytes()
        # A chunk python-blosc2 writes is the same length (BloscLZ: the same bytes).
        cb = blosc2.compress2(a, typesize=4, nthreads=1, codec=blosc2.Codec.BLOSCLZ)
        co = oxblosc.compress2(a, typesize=4, nthreads=1, codec=oxblosc.Codec.BLOSCLZ)
        assert co == cb


def test_a_failed_compression_raises_and_leaks_nothing():
    a = np.arange(1000, dtype="f8")
    for _ in range(3):
        try:
            oxblosc.compress2(a, typesize=8, codec=250)  # no such codec
        except ValueError as e:
            assert "codec" in str(e).lower()
        else:
            raise AssertionError("an unknown codec must raise")


def test_an_input_past_the_chunk_limit_is_refused_before_any_output_exists(tmp_path):
    # A sparse 2 GiB file: one byte past what a chunk holds. Nothing is read or allocated.
    a = np.memmap(tmp_path / "big.bin", mode="w+", dtype="u1", shape=(2**31,))
    with open("/proc/self/status") as f:
        before = int(f.read().split("VmHWM:")[1].split()[0])
    for call in (lambda: oxblosc.compress2(a, typesize=1), lambda: oxblosc.compress_blosc1(a, typesize=1)):
        try:
            call()
        except ValueError as e:
            assert "exceeds the chunk limit" in str(e)
        else:
            raise AssertionError("a 2 GiB input must be refused")
    with open("/proc/self/status") as f:
        after = int(f.read().split("VmHWM:")[1].split()[0])
    assert after - before < 64 * 1024, f"peak memory grew by {after - before} kB"
