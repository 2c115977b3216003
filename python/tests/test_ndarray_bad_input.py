"""Lying b2nd metalayers and bad arguments: clear errors naming what is wrong, never a crash,
a hang or a giant allocation."""

from __future__ import annotations

import struct

import numpy as np
import oxblosc
import pytest


def meta_bytes(shape, chunks, blocks, dtype="<f8", ndim=None, header=0x97):
    n = len(shape) if ndim is None else ndim
    out = bytes([header, 0, n, 0x90 + len(shape)])
    out += b"".join(b"\xd3" + struct.pack(">q", s) for s in shape)
    for v in (chunks, blocks):
        out += bytes([0x90 + len(v)]) + b"".join(b"\xd2" + struct.pack(">i", s) for s in v)
    d = dtype.encode() if isinstance(dtype, str) else dtype
    return out + b"\x00\xdb" + struct.pack(">I", len(d)) + d


@pytest.fixture(scope="module")
def good():
    """A valid frame and the position of its b2nd metalayer content."""
    x = oxblosc.asarray(np.arange(40.0).reshape(8, 5), chunks=(4, 5), blocks=(2, 5))
    frame = x.to_cframe()
    content = meta_bytes((8, 5), (4, 5), (2, 5))
    at = frame.find(content)
    assert at > 0
    return frame, at, len(content)


def patched(good, content: bytes) -> bytes:
    frame, at, n = good
    assert len(content) == n, "metalayer updates keep their length"
    return frame[:at] + content + frame[at + n :]


def open_error(good, content) -> str:
    with pytest.raises(ValueError) as e:
        oxblosc.ndarray_from_cframe(patched(good, content))
    return str(e.value)


def test_the_unpatched_frame_opens(good):
    x = oxblosc.ndarray_from_cframe(good[0])
    np.testing.assert_array_equal(x[...], np.arange(40.0).reshape(8, 5))


def test_nchunks_mismatch(good):
    e = open_error(good, meta_bytes((16, 5), (4, 5), (2, 5)))
    assert "4 chunks" in e and "holds 2" in e


def test_ndim_over_16(good):
    content = bytearray(meta_bytes((8, 5), (4, 5), (2, 5)))
    content[2] = 17
    e = open_error(good, bytes(content))
    assert "ndim" in e and "17" in e


def test_overflowing_products(good):
    big = 2**62
    e = open_error(good, meta_bytes((big, big), (4, 5), (2, 5)))
    assert "overflow" in e
    e = open_error(good, meta_bytes((8, 5), (2**30, 2**30), (2**30, 2**30)))
    assert "limit" in e or "overflow" in e


def test_negative_and_zero_sizes(good):
    assert "negative" in open_error(good, meta_bytes((-8, 5), (4, 5), (2, 5)))
    assert "chunks[0] is 0" in open_error(good, meta_bytes((8, 5), (0, 5), (2, 5)))
    assert "blocks[1] is 0" in open_error(good, meta_bytes((8, 5), (4, 5), (2, 0)))


def test_block_larger_than_chunk(good):
    # C-Blosc2 reads blockshape > chunkshape (the padded chunk grows to the block); here the
    # padded chunk then no longer matches the frame's chunk size, which must be reported.
    e = open_error(good, meta_bytes((8, 5), (4, 5), (6, 5)))
    assert "chunk size" in e or "bytes" in e


def test_garbage_and_huge_dtype(good):
    assert "dtype" in open_error(good, meta_bytes((8, 5), (4, 5), (2, 5), dtype=b"\x01\x02\x03"))
    assert "dtype" in open_error(good, meta_bytes((8, 5), (4, 5), (2, 5), dtype=b"[(x"))
    # A length field claiming 4 GiB: refused before any copy.
    content = bytearray(meta_bytes((8, 5), (4, 5), (2, 5)))
    content[-7:-3] = struct.pack(">I", 0xFFFFFFFF)
    e = open_error(good, bytes(content))
    assert "exceeds the limit" in e
    # Syntactically plausible but not a NumPy dtype: the Python layer says so.
    with pytest.raises(ValueError, match="not a NumPy dtype"):
        oxblosc.ndarray_from_cframe(patched(good, meta_bytes((8, 5), (4, 5), (2, 5), dtype="<z8")))


def test_random_metalayer_corruption_never_crashes(good):
    frame, at, n = good
    rng = np.random.default_rng(11)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(400):
        b = bytearray(frame)
        for _ in range(int(rng.integers(1, 4))):
            b[at + int(rng.integers(0, n))] = int(rng.integers(0, 256))
        try:
            x = oxblosc.ndarray_from_cframe(bytes(b))
            x[...]
            outcomes["ok"] += 1
        except (ValueError, RuntimeError, IndexError, OverflowError):
            outcomes["error"] += 1
    assert outcomes["error"] > 0 and sum(outcomes.values()) == 400


def test_bad_arguments():
    with pytest.raises(ValueError, match="blocks cannot be greater than chunks"):
        oxblosc.zeros((10,), chunks=(4,), blocks=(5,))
    with pytest.raises(ValueError, match="16 dimensions"):
        oxblosc.zeros((1,) * 17)
    with pytest.raises(ValueError, match="negative"):
        oxblosc.zeros((3, -1))
    with pytest.raises(ValueError):
        oxblosc.zeros((2**40, 2**40), chunks=(2**20, 2**20), blocks=(1, 1))
    with pytest.raises(ValueError, match="chunks"):
        oxblosc.zeros((10, 10), chunks=(5,))
    with pytest.raises(TypeError):
        oxblosc.asarray(np.array([object()]))
    x = oxblosc.zeros((4, 4))
    with pytest.raises(ValueError):
        x[0:2] = np.ones((3, 4))
    with pytest.raises(ValueError):
        x.resize((4,))
    with pytest.raises(ValueError):
        x.meta["b2nd"] = b"x"


HUGE = [
    "oxblosc.zeros((2**50,), chunks=(10,))",
    "oxblosc.zeros((10,), dtype='u1').resize((2**60,))",
    "oxblosc.full((2**31, 2**31), 3, dtype='u1', chunks=(1, 1))",
    "oxblosc.empty((2**62,), dtype='u1')",
    "oxblosc.asarray(np.zeros(4, 'u1'), chunks=(1,)).resize((2**40,))",
    "oxblosc.empty((2**40, 2**20), dtype='u1', chunks=(1, 1), urlpath=P, mode='w')",
]


@pytest.mark.parametrize("expr", HUGE)
def test_huge_chunk_counts_raise_instead_of_aborting(expr, tmp_path):
    """Shapes needing more chunks than a frame can index are refused before any per-chunk
    state is built. Run in a child with a 4 GB address-space limit, so a regression aborts
    (or fails to allocate) there instead of exhausting the machine."""
    import subprocess
    import sys

    code = (
        "import resource, numpy as np, oxblosc\n"
        "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
        f"P = {str(tmp_path / 'big.b2nd')!r}\n"
        "try:\n"
        f"    {expr}\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "refused:" in r.stdout and "chunks" in r.stdout, r.stdout
