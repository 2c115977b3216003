"""Reads that fill fresh `bytes` without zero-filling them first (decompress2, SChunk
decompress_chunk and get_slice): every byte must come from the data, for ranges that start,
end and cross anywhere in the chunks, in memory and on disk."""

import numpy as np
import oxblosc
import pytest


@pytest.mark.parametrize("urlpath", [None, "file"])
def test_get_slice_pieces(tmp_path, urlpath):
    a = (np.arange(25_013) * 7 % 1000).astype("<i4")
    path = None if urlpath is None else str(tmp_path / "s.b2frame")
    sc = oxblosc.SChunk(chunksize=4000 * 4, urlpath=path, mode="w", cparams=oxblosc.CParams(typesize=4, nthreads=2))
    for i in range(0, len(a), 4000):
        sc.append_data(a[i : i + 4000])
    if path:
        sc = oxblosc.open(path)
    for start, stop in [(0, len(a)), (1, 3999), (3999, 4001), (3999, 12_001), (7, 25_013), (24_000, 25_013)]:
        assert sc.get_slice(start, stop) == a[start:stop].tobytes(), (start, stop)
        assert sc[start:stop] == a[start:stop].tobytes()
    for i in range(sc.nchunks):
        assert sc.decompress_chunk(i) == a[i * 4000 : (i + 1) * 4000].tobytes()


def test_decompress2_special_and_memcpyed_chunks():
    assert oxblosc.decompress2(oxblosc.special_chunk(oxblosc.SpecialValue.ZERO, 40_000, 4)) == bytes(40_000)
    nan = np.frombuffer(oxblosc.decompress2(oxblosc.special_chunk(oxblosc.SpecialValue.NAN, 400, 4)), "f4")
    assert np.isnan(nan).all()
    raw = np.random.default_rng(1).integers(0, 255, 100_000, dtype="u1")
    c = oxblosc.compress2(raw, cparams=oxblosc.CParams(typesize=1, clevel=0))
    assert oxblosc.decompress2(c) == raw.tobytes()


def test_get_slice_of_many_chunks_on_two_threads(tmp_path):
    """Slices of several chunks are read one chunk per thread: every byte lands in place
    (a short last chunk, partial ends), and a damaged chunk is named."""
    a = (np.arange(50_003) * 13 % 977).astype("<i4")
    a[8000:12_000] = 0
    path = str(tmp_path / "p.b2frame")
    sc = oxblosc.SChunk(chunksize=4000 * 4, urlpath=path, mode="w", cparams={"typesize": 4})
    for i in range(0, len(a), 4000):
        sc.append_data(a[i : i + 4000])
    sc = oxblosc.open(path, dparams={"nthreads": 2})
    for start, stop in [(0, len(a)), (5, 49_999), (3999, 12_001), (8000, 16_000), (40_001, 50_003)]:
        assert sc[start:stop] == a[start:stop].tobytes(), (start, stop)
    # Damage the data of chunk 5 (its stored bytes, not its header).
    where = oxblosc.open(path)
    lazy = where.get_chunk(5)
    raw = bytearray(open(path, "rb").read())
    at = raw.find(lazy)
    assert at > 0
    raw[at + 40 : at + 400] = bytes(360)
    open(path, "wb").write(bytes(raw))
    damaged = oxblosc.open(path, dparams={"nthreads": 2})
    with pytest.raises(Exception, match="chunk 5"):
        damaged[:]
    assert damaged[0:4000] == a[:4000].tobytes()  # the other chunks still read
