"""Byte identity with the blosc2 wheel (single-threaded on both sides) and serial == parallel.

* BloscLZ (our own encoder): output must be byte-identical to C-Blosc2's for every clevel,
  filter choice, size and typesize sampled here.
* LZ4 / LZ4HC / ZLIB / ZSTD: sizes must be within 1% of the wheel's (and whole-chunk identity
  is reported by ``test_identity_report``; run with ``-s`` to see the table).
* oxblosc with 2 or 3 threads writes exactly the bytes it writes with 1 thread.
"""

from __future__ import annotations

import blosc2
import oxblosc as ox
import pytest

from .helpers import make_data

F = ox.Filter
SIZES = [0, 7, 31, 32, 33, 127, 1000, 4099, 65_536, 100_003, 600_000]
TYPESIZES = [1, 2, 4, 8, 3, 16]
DATASETS = ["arange_i64", "linspace_f64", "smooth_f32", "random_f64", "genotype_i8", "constant"]


def _pair(data, codec, clevel, ts, filters, blocksize=0, splitmode=3):
    o = ox.compress2(
        data,
        codec=codec,
        clevel=clevel,
        typesize=ts,
        filters=filters,
        nthreads=1,
        blocksize=blocksize,
        splitmode=ox.SplitMode(splitmode),
    )
    c = blosc2.compress2(
        bytearray(data),
        codec=blosc2.Codec(int(codec)),
        clevel=clevel,
        typesize=ts,
        filters=[blosc2.Filter(int(f)) for f in filters],
        nthreads=1,
        blocksize=blocksize,
        splitmode=blosc2.SplitMode(splitmode),
    )
    return o, c


def _blosclz_cases():
    i = 0
    for clevel in range(10):
        for filters in ([], [F.SHUFFLE], [F.BITSHUFFLE]):
            for size in SIZES:
                ts = TYPESIZES[i % len(TYPESIZES)]
                ds = DATASETS[i % len(DATASETS)]
                i += 1
                yield pytest.param(
                    clevel,
                    filters,
                    size,
                    ts,
                    ds,
                    id=f"c{clevel}-{'+'.join(f.name for f in filters) or 'none'}-{size}-ts{ts}-{ds}",
                )


@pytest.mark.parametrize("clevel,filters,size,ts,dataset", list(_blosclz_cases()))
def test_blosclz_byte_identical(clevel, filters, size, ts, dataset):
    data = make_data(dataset, size, seed=size)
    o, c = _pair(data, ox.Codec.BLOSCLZ, clevel, ts, filters)
    assert o == c, f"BloscLZ output differs from C-Blosc2: {len(o)} vs {len(c)} bytes, first diff at " + str(
        next((k for k, (x, y) in enumerate(zip(o, c, strict=False)) if x != y), min(len(o), len(c)))
    )


@pytest.mark.parametrize("blocksize", [256, 4096, 12_000, 65_536])
@pytest.mark.parametrize("splitmode", [1, 2, 3, 4])
def test_blosclz_byte_identical_forced_geometry(blocksize, splitmode):
    data = make_data("smooth_f32", 300_000)
    for clevel in (1, 5, 9):
        o, c = _pair(data, ox.Codec.BLOSCLZ, clevel, 4, [F.SHUFFLE], blocksize, splitmode)
        assert o == c


OTHER = [ox.Codec.LZ4, ox.Codec.LZ4HC, ox.Codec.ZLIB, ox.Codec.ZSTD]


def _other_cases():
    i = 0
    for codec in OTHER:
        for clevel in (1, 5, 9):
            for filters in ([], [F.SHUFFLE], [F.BITSHUFFLE], [F.SHUFFLE, F.BYTEDELTA]):
                for size in (1000, 100_003, 600_000):
                    ts = (8, 4, 2, 1)[i % 4]
                    ds = DATASETS[i % len(DATASETS)]
                    i += 1
                    yield codec, clevel, filters, size, ts, ds


OTHER_CASES = list(_other_cases())


@pytest.mark.parametrize("codec,clevel,filters,size,ts,dataset", OTHER_CASES)
def test_other_codecs_size_within_1pct(codec, clevel, filters, size, ts, dataset):
    data = make_data(dataset, size, seed=size)
    o, c = _pair(data, codec, clevel, ts, filters)
    ho, hc = ox.chunk_info(o), ox.chunk_info(c)
    for k in (
        "version",
        "flags",
        "typesize",
        "nbytes",
        "blocksize",
        "split",
        "codec",
        "filters",
        "filters_meta",
        "memcpyed",
    ):
        assert ho[k] == hc[k], f"header field {k}: oxblosc {ho[k]!r} vs blosc2 {hc[k]!r}"
    assert abs(len(o) - len(c)) <= 0.01 * len(c), f"{codec.name}: {len(o)} vs {len(c)} bytes"


def test_identity_report(capsys):
    """Report (not assert) how many chunks are byte-identical per codec."""
    rows = {}
    for codec, clevel, filters, size, ts, dataset in OTHER_CASES:
        data = make_data(dataset, size, seed=size)
        o, c = _pair(data, codec, clevel, ts, filters)
        r = rows.setdefault(codec.name, [0, 0, 0, 0])
        r[0] += 1
        r[1] += o == c
        r[2] += len(o)
        r[3] += len(c)
    with capsys.disabled():
        print("\nbyte identity vs blosc2 4.14.1 (nthreads=1):")
        for name, (n, same, lo, lc) in rows.items():
            print(
                f"  {name:6s} identical {same}/{n}  total bytes oxblosc {lo} blosc2 {lc} ({100 * (lo - lc) / lc:+.3f}%)"
            )


@pytest.mark.parametrize("codec", [ox.Codec.BLOSCLZ, *OTHER])
@pytest.mark.parametrize(
    "filters", [[F.SHUFFLE], [F.BITSHUFFLE, F.DELTA], [F.SHUFFLE, F.BYTEDELTA], [F.DELTA, F.SHUFFLE, F.BITSHUFFLE]]
)
def test_parallel_output_identical_to_serial(codec, filters):
    for ds, size, ts, bs in (
        ("linspace_f64", 1_000_000, 8, 0),
        ("genotype_i8", 333_333, 1, 8192),
        ("random_f64", 200_000, 4, 4000),
    ):
        data = make_data(ds, size)
        for clevel in (1, 6):
            for use_dict in (False, True):
                if use_dict and codec not in (ox.Codec.ZSTD, ox.Codec.LZ4, ox.Codec.LZ4HC):
                    continue
                kw = dict(codec=codec, clevel=clevel, typesize=ts, filters=filters, blocksize=bs, use_dict=use_dict)
                serial = ox.compress2(data, nthreads=1, **kw)
                for nt in (2, 3):
                    assert ox.compress2(data, nthreads=nt, **kw) == serial, f"nthreads={nt} {kw}"


def test_all_zero_is_32_bytes_in_both():
    for codec in [ox.Codec.BLOSCLZ, *OTHER]:
        for filters in ([], [F.SHUFFLE], [F.BITSHUFFLE], [F.SHUFFLE, F.BYTEDELTA]):
            for size in (32, 1000, 100_000, 1_000_000):
                data = bytes(size)
                o, c = _pair(data, codec, 5, 8 if size % 8 == 0 else 1, filters)
                assert len(c) == 32
                assert len(o) == 32, f"{codec.name} {filters} {size}: {len(o)} bytes"
                assert o[31] >> 4 & 7 == 1
                assert blosc2.decompress2(o) == data
                assert ox.decompress2(c) == data


def test_bytedelta_typesize1_like_blosc2():
    """python-blosc2 drops BYTEDELTA for typesize 1 (blosc2_ext.pyx); so must oxblosc (was BUG-T1)."""
    data = bytes(range(256)) * 100
    o, c = _pair(data, ox.Codec.LZ4, 5, 1, [F.SHUFFLE, F.BYTEDELTA])
    assert o == c


@pytest.mark.parametrize("codec", [ox.Codec.BLOSCLZ, *OTHER])
@pytest.mark.parametrize("filters", [[], [F.SHUFFLE]])
def test_incompressible_chunks_stored_raw_like_blosc2(codec, filters):
    # A memcpyed chunk is built as header + data straight into the returned bytes (the data
    # are not staged in the output buffer first): same bytes as python-blosc2's, also from a
    # view at an odd offset and for sizes that end in a partial block.
    import numpy as np

    rng = np.random.default_rng(5)
    for size in (4099, 600_001, 2_000_000):
        buf = rng.integers(0, 256, size + 1, dtype=np.uint8).tobytes()
        data = memoryview(buf)[1:]
        o, c = _pair(data, codec, 5, 1, filters)
        assert o == c, f"{codec.name} {filters} {size}"
        assert len(o) == size + 32
        assert ox.decompress2(o) == bytes(data)
        # and a compressible chunk next to it on the same thread (the reused output buffer)
        small = bytes(size)
        assert ox.decompress2(ox.compress2(small, codec=codec, typesize=1, filters=filters, nthreads=1)) == small
