"""Every C-Blosc2 compat vector (*.cdata chunk) decodes from Python, identically to blosc2.

Vectors are read from $OXBLOSC_SHARED/vectors/c-blosc2-compat (default ../shared next to the repo).
"""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc as ox
import pytest

from .helpers import vectors_dir

REFERENCE = np.arange(1_000_000, dtype="<i4").tobytes()
HEADERLESS = {"shuffle-2.20.0.cdata", "bitshuffle-2.20.0.cdata"}
# The README's notes on tails that the writing release never wrote or that are not reference data.
COMPARE = {
    "blosc-1.17.1-lz4-bitshuffle8-nomemcpy.cdata": 641_088,
    "blosc-1.18.0-lz4-bitshuffle4-memcpy.cdata": 641_088,
    "blosc-1.18.0-lz4-bitshuffle8-nomemcpy.cdata": 641_088,
}
FILES = (
    sorted(p.name for p in vectors_dir().glob("*.cdata") if p.name not in HEADERLESS) if vectors_dir().is_dir() else []
)


def test_vectors_present(vectors):
    assert len(FILES) >= 25, f"expected the c-blosc2 compat vectors in {vectors}"


@pytest.mark.parametrize("name", FILES)
def test_vector_decodes_like_blosc2(vectors, name):
    chunk = (vectors / name).read_bytes()
    nbytes, cbytes, _ = ox.get_cbuffer_sizes(chunk)
    assert (nbytes, cbytes) == blosc2.get_cbuffer_sizes(chunk)[:2]
    outs = [ox.decompress2(chunk, nthreads=nt) for nt in (1, 2)]
    assert outs[0] == outs[1]
    got = outs[0]
    assert len(got) == nbytes
    n = COMPARE.get(name, nbytes)
    assert got[:n] == REFERENCE[:n], f"{name} differs from the reference data"
    # blosc2's own decoding (one thread); C-Blosc2 leaves some legacy tails unwritten, and
    # mis-decodes some pre-1.11 chunks (format-spec 1.10), so only compare where C is right.
    try:
        want = blosc2.decompress2(chunk, nthreads=1)
    except (ValueError, RuntimeError):
        want = None
    if want is not None and want[:n] == REFERENCE[:n]:
        assert got[:n] == want[:n]
    # getitem over a few windows
    ts = chunk[3]
    for start in (0, 1234, nbytes // ts // 2, nbytes // ts - 10):
        start = max(start, 0)
        k = min(10, nbytes // ts - start)
        assert ox.getitem(chunk, start, k) == got[start * ts : (start + k) * ts]
