"""Interop with the real python-blosc2 wheel, both directions, over a sampled parameter matrix.

Directions checked for every cell:

* ``oxblosc.compress2`` -> ``blosc2.decompress2`` gives the input back (lossy pipelines: what
  blosc2 decodes from its own output for the same input).
* ``blosc2.compress2`` (nthreads 1 and 2; multi-threaded C writes unsorted block starts) ->
  ``oxblosc.decompress2`` (nthreads 1 and 2) gives what C-Blosc2 itself decodes with one thread.

C-Blosc2 pitfalls worked around here (../shared/research/cblosc2-pitfalls.md):
1. DELTA after another filter decodes wrongly with 2+ C threads: the C side compresses with one
   thread for those pipelines and always decodes our DELTA chunks with one thread.
4. 3+ filters make C write into its input: C always gets a private copy of the input.
5. DELTA/TRUNC_PREC leave ragged tail bytes unwritten in C: those pipelines use sizes that are
   multiples of the typesize in cells that involve C.

Matrix: (A) every codec x clevel x pipeline at a multi-block size, and (B) an all-pairs cover
of codec, clevel, pipeline, typesize, splitmode, nthreads, size, blocksize and dataset.
"""

from __future__ import annotations

import blosc2
import numpy as np
import oxblosc as ox
import pytest

from .helpers import DATASETS, make_data, pairwise

F = ox.Filter
CODECS = [ox.Codec.BLOSCLZ, ox.Codec.LZ4, ox.Codec.LZ4HC, ox.Codec.ZLIB, ox.Codec.ZSTD]
CLEVELS = [0, 1, 5, 9]
SPLITMODES = list(ox.SplitMode)
TYPESIZES = [1, 2, 4, 8, 3, 16, 300]

# name -> (filters, filters_meta, lossy)
PIPELINES = {
    "none": ([], [], False),
    "shuffle": ([F.SHUFFLE], [], False),
    "bitshuffle": ([F.BITSHUFFLE], [], False),
    "delta": ([F.DELTA], [], False),
    "shuffle+bytedelta": ([F.SHUFFLE, F.BYTEDELTA], [], False),
    "shuffle+delta": ([F.SHUFFLE, F.DELTA], [], False),
    "bitshuffle+delta": ([F.BITSHUFFLE, F.DELTA], [], False),
    "delta+shuffle+bytedelta": ([F.DELTA, F.SHUFFLE, F.BYTEDELTA], [], False),
    "shuffle+bitshuffle+delta+shuffle": ([F.SHUFFLE, F.BITSHUFFLE, F.DELTA, F.SHUFFLE], [], False),
    "six": ([F.SHUFFLE, F.DELTA, F.BITSHUFFLE, F.SHUFFLE, F.BYTEDELTA, F.SHUFFLE], [], False),
    "trunc_prec+shuffle": ([F.TRUNC_PREC, F.SHUFFLE], [10, 0], True),
    "int_trunc+bitshuffle": ([F.INT_TRUNC, F.BITSHUFFLE], [-3, 0], True),
}


def pipeline_ok(name: str, typesize: int) -> bool:
    filters, _, _ = PIPELINES[name]
    if F.TRUNC_PREC in filters and typesize not in (4, 8):
        return False
    if F.INT_TRUNC in filters and typesize not in (1, 2, 4, 8):
        return False
    if F.BYTEDELTA in filters and typesize > 255:
        return False
    return True


def needs_whole_items(name: str) -> bool:
    """C leaves ragged tails unwritten for these pipelines (pitfall 5)."""
    filters, _, _ = PIPELINES[name]
    return any(f in filters for f in (F.DELTA, F.TRUNC_PREC, F.INT_TRUNC))


def delta_after_filter(filters) -> bool:
    seen_other = False
    for f in filters:
        if f == F.DELTA and seen_other:
            return True
        if f not in (F.NOFILTER, F.DELTA):
            seen_other = True
    return False


def b2_kwargs(codec, clevel, typesize, filters, meta, nthreads, blocksize=0, splitmode=3, use_dict=False):
    return dict(
        codec=blosc2.Codec(int(codec)),
        clevel=clevel,
        typesize=typesize,
        nthreads=nthreads,
        blocksize=blocksize,
        splitmode=blosc2.SplitMode(int(splitmode)),
        filters=[blosc2.Filter(int(f)) for f in filters],
        filters_meta=list(meta) + [0] * (len(filters) - len(meta)),
        use_dict=use_dict,
    )


def ox_kwargs(codec, clevel, typesize, filters, meta, nthreads, blocksize=0, splitmode=3, use_dict=False):
    return dict(
        codec=codec,
        clevel=clevel,
        typesize=typesize,
        nthreads=nthreads,
        blocksize=blocksize,
        splitmode=ox.SplitMode(int(splitmode)),
        filters=list(filters),
        filters_meta=list(meta) + [0] * (len(filters) - len(meta)),
        use_dict=use_dict,
    )


def check_interop(data: bytes, *, codec, clevel, typesize, pipeline, ox_nthreads, blocksize=0, splitmode=3):
    filters, meta, lossy = PIPELINES[pipeline]
    da = delta_after_filter(filters)
    args = (codec, clevel, typesize, filters, meta)
    ctx = f"pipeline={pipeline} codec={codec!r} clevel={clevel} ts={typesize} n={len(data)}"
    ctx += f" bs={blocksize} split={splitmode}"

    # Reference result: what C-Blosc2 decodes from its own single-threaded output.
    c_ref_chunk = blosc2.compress2(bytearray(data), **b2_kwargs(*args, 1, blocksize, splitmode))
    try:
        c_ref = blosc2.decompress2(c_ref_chunk, nthreads=1)
    except ValueError:
        # C-Blosc2 3.3 writes undecodable chunks when a forced blocksize exceeds an nbytes that
        # is not a multiple of typesize (header records nbytes, data uses it rounded down;
        # format-spec Trap 40). oxblosc must reject such a chunk cleanly, not mis-decode it.
        assert blocksize > 0 and len(data) % typesize, f"C-Blosc2 cannot decode its own chunk: {ctx}"
        with pytest.raises(ox.ChunkError):
            ox.decompress2(c_ref_chunk)
        c_ref = None
    expected = c_ref if lossy else data

    # oxblosc -> blosc2
    chunk = ox.compress2(data, **ox_kwargs(*args, ox_nthreads, blocksize, splitmode))
    assert len(chunk) <= len(data) + 32, ctx
    nbytes, cbytes, _ = blosc2.get_cbuffer_sizes(chunk)
    assert (nbytes, cbytes) == (len(data), len(chunk)), ctx
    for nt in (1,) if F.DELTA in filters else (1, 2):
        assert blosc2.decompress2(chunk, nthreads=nt) == expected, f"blosc2 nthreads={nt} decoding oxblosc chunk: {ctx}"
    assert ox.decompress2(chunk, nthreads=ox_nthreads) == expected, ctx

    # blosc2 -> oxblosc
    if c_ref is None:
        return
    for c_nt in (1,) if da else (1, 2):
        cchunk = (
            c_ref_chunk
            if c_nt == 1
            else blosc2.compress2(bytearray(data), **b2_kwargs(*args, c_nt, blocksize, splitmode))
        )
        want = blosc2.decompress2(cchunk, nthreads=1)
        if not lossy and len(filters) < 3:
            assert want == data, f"oracle self-check (C round trip) failed: {ctx}"
        for nt in (1, 2):
            got = ox.decompress2(cchunk, nthreads=nt)
            assert got == want, f"oxblosc nthreads={nt} decoding blosc2 nthreads={c_nt} chunk: {ctx}"
        assert ox.get_cbuffer_sizes(cchunk) == blosc2.get_cbuffer_sizes(cchunk), ctx


# ---------------------------------------------------------------------------------------------
# (A) every codec x clevel x pipeline, multi-block, typesize fitting the pipeline.

A_CELLS = []
for i, (codec, clevel, pipeline) in enumerate((c, lv, p) for c in CODECS for lv in CLEVELS for p in PIPELINES):
    if pipeline == "trunc_prec+shuffle":
        ds, ts = ("smooth_f32", 4) if i % 2 else ("linspace_f64", 8)
    elif pipeline == "int_trunc+bitshuffle":
        ds, ts = ("arange_i64", 8) if i % 2 else ("genotype_i8", 1)
    else:
        ds = DATASETS[i % len(DATASETS)]
        ts = (8, 4, 2)[i % 3]
    A_CELLS.append(pytest.param(i, codec, clevel, pipeline, ds, ts, id=f"{codec.name}-{clevel}-{pipeline}-{ds}-{ts}"))


@pytest.mark.parametrize("i,codec,clevel,pipeline,dataset,typesize", A_CELLS)
def test_codec_clevel_pipeline(i, codec, clevel, pipeline, dataset, typesize):
    nbytes = 96_000 + typesize * 3 * (i % 5)  # multiple of typesize
    blocksize = (0, 8192, typesize * 1000)[i % 3]
    data = make_data(dataset, nbytes, seed=i)
    check_interop(
        data,
        codec=codec,
        clevel=clevel,
        typesize=typesize,
        pipeline=pipeline,
        ox_nthreads=1 + i % 2,
        blocksize=blocksize,
    )


# ---------------------------------------------------------------------------------------------
# (B) all-pairs over everything else.

SIZE_KINDS = ["0", "1", "ts-1", "ts", "31", "32", "33", "1000", "ragged", "not-mult-bs", "big"]
BS_KINDS = ["auto", "ts*37", "4k", "64k"]


def resolve_size(kind: str, ts: int) -> int:
    return {
        "0": 0,
        "1": 1,
        "ts-1": ts - 1,
        "ts": ts,
        "31": 31,
        "32": 32,
        "33": 33,
        "1000": 1000,
        "ragged": 1000 * ts + ts // 2,
        "not-mult-bs": ts * 12_347,
        "big": ts * (2_200_000 // ts),
    }[kind]


def resolve_bs(kind: str, ts: int) -> int:
    if kind == "auto":
        return 0
    if kind == "ts*37":
        return ts * 37
    target = {"4k": 4096, "64k": 65536}[kind]
    return max(ts, target // ts * ts)


def _valid(row) -> bool:
    ts = row["typesize"]
    if not pipeline_ok(row["pipeline"], ts):
        return False
    n = resolve_size(row["size"], ts)
    if needs_whole_items(row["pipeline"]) and n % ts:
        return False
    if row["size"] == "big" and row["clevel"] == 9 and row["codec"] in (ox.Codec.ZSTD, ox.Codec.LZ4HC, ox.Codec.ZLIB):
        return False  # CI budget: the slowest codecs at their top level run in (A) at ~100 KB
    return True


B_FACTORS = {
    "codec": CODECS,
    "clevel": CLEVELS,
    "pipeline": list(PIPELINES),
    "typesize": TYPESIZES,
    "splitmode": SPLITMODES,
    "nthreads": [1, 2],
    "size": SIZE_KINDS,
    "blocksize": BS_KINDS,
    "dataset": list(DATASETS),
}
B_ROWS = pairwise(B_FACTORS, seed=20240611, valid=_valid) + pairwise(B_FACTORS, seed=7, valid=_valid)


@pytest.mark.parametrize("row", B_ROWS, ids=[f"r{i}" for i in range(len(B_ROWS))])
def test_pairwise(row):
    ts = row["typesize"]
    n = resolve_size(row["size"], ts)
    data = make_data(row["dataset"], n, seed=n)
    check_interop(
        data,
        codec=row["codec"],
        clevel=row["clevel"],
        typesize=ts,
        pipeline=row["pipeline"],
        ox_nthreads=row["nthreads"],
        blocksize=resolve_bs(row["blocksize"], ts),
        splitmode=row["splitmode"],
    )


def test_pairwise_cover_is_complete():
    """Every value of every factor appears in the sampled matrix."""
    for name, values in B_FACTORS.items():
        seen = {repr(r[name]) for r in B_ROWS}
        assert seen == {repr(v) for v in values}, name


# ---------------------------------------------------------------------------------------------
# Lossy filters: truncation semantics, checked against NumPy as well as against blosc2.


@pytest.mark.parametrize("prec", [1, 10, 23, -1, -5, -22])
def test_trunc_prec_f32_semantics(prec):
    a = make_data("smooth_f32", 40_000)
    chunk = ox.compress2(a, typesize=4, filters=[F.TRUNC_PREC], filters_meta=[prec], nthreads=1)
    out = np.frombuffer(ox.decompress2(chunk), dtype=np.uint32)
    zbits = 23 - prec if prec >= 0 else -prec
    want = np.frombuffer(a, dtype=np.uint32) & np.uint32((0xFFFFFFFF << zbits) & 0xFFFFFFFF)
    np.testing.assert_array_equal(out, want)
    assert blosc2.decompress2(chunk) == out.tobytes()


@pytest.mark.parametrize("prec", [1, 20, 52, -3, -51])
def test_trunc_prec_f64_semantics(prec):
    a = make_data("random_f64", 80_000)
    chunk = ox.compress2(a, typesize=8, filters=[F.TRUNC_PREC, F.SHUFFLE], filters_meta=[prec, 0], nthreads=2)
    out = np.frombuffer(ox.decompress2(chunk), dtype=np.uint64)
    zbits = 52 - prec if prec >= 0 else -prec
    want = np.frombuffer(a, dtype=np.uint64) & np.uint64(((1 << 64) - 1) ^ ((1 << zbits) - 1))
    np.testing.assert_array_equal(out, want)
    c = blosc2.compress2(
        bytearray(a),
        typesize=8,
        filters=[blosc2.Filter.TRUNC_PREC, blosc2.Filter.SHUFFLE],
        filters_meta=[prec, 0],
        nthreads=1,
    )
    assert blosc2.decompress2(c) == out.tobytes()


@pytest.mark.parametrize("dtype,meta", [(np.int8, -2), (np.int16, 5), (np.int32, -7), (np.int64, 40), (np.uint32, 3)])
def test_int_trunc_semantics(dtype, meta):
    a = np.random.default_rng(7).integers(-(2**30), 2**30, size=5000).astype(dtype)
    ts = a.itemsize
    chunk = ox.compress2(a, typesize=ts, filters=[F.INT_TRUNC], filters_meta=[meta], nthreads=1)
    out = np.frombuffer(ox.decompress2(chunk), dtype=dtype)
    zbits = 8 * ts - meta if meta >= 0 else -meta
    ut = np.dtype(f"u{ts}")
    mask = np.array(((1 << (8 * ts)) - 1) ^ ((1 << zbits) - 1), dtype=ut)
    np.testing.assert_array_equal(out.view(ut), a.view(ut) & mask)
    assert blosc2.decompress2(chunk) == out.tobytes()


# ---------------------------------------------------------------------------------------------
# Dictionaries (use_dict) in both directions.


@pytest.mark.parametrize("codec", [ox.Codec.ZSTD, ox.Codec.LZ4, ox.Codec.LZ4HC])
@pytest.mark.parametrize("clevel", [1, 5, 9])
@pytest.mark.parametrize(
    "dataset,ts,filters",
    [
        ("linspace_f64", 8, [F.SHUFFLE]),
        ("genotype_i8", 1, []),
        ("smooth_f32", 4, [F.SHUFFLE, F.BYTEDELTA]),
    ],
)
def test_use_dict_both_directions(codec, clevel, dataset, ts, filters):
    data = make_data(dataset, 300_000 // ts * ts, seed=clevel)
    args = (codec, clevel, ts, filters, [])
    for bs in (0, 16384):
        chunk = ox.compress2(data, **ox_kwargs(*args, 2, bs, use_dict=True))
        info = ox.chunk_info(chunk)
        if not info["memcpyed"] and not info["special"]:
            assert info["use_dict"], "oxblosc did not write a dictionary"
        assert blosc2.decompress2(chunk, nthreads=1) == data
        assert blosc2.decompress2(chunk, nthreads=2) == data
        for c_nt in (1, 2):
            cchunk = blosc2.compress2(bytearray(data), **b2_kwargs(*args, c_nt, bs, use_dict=True))
            if ox.chunk_info(cchunk)["nblocks"] > 1:
                assert cchunk[31] & 1, "blosc2 was expected to write a dict chunk"
            for nt in (1, 2):
                assert ox.decompress2(cchunk, nthreads=nt) == data
            assert ox.getitem(cchunk, 1000, 500) == data[1000 * ts : 1500 * ts]


# ---------------------------------------------------------------------------------------------
# Typesize > 255 and buffer types.


@pytest.mark.parametrize("ts", [256, 300, 1000, 65536])
def test_huge_typesize(ts):
    data = make_data("linspace_f64", ts * 40)
    for filters in ([F.SHUFFLE], [F.BITSHUFFLE], [F.DELTA]):
        chunk = ox.compress2(data, typesize=ts, filters=filters, codec=ox.Codec.LZ4, nthreads=2)
        assert chunk[3] == 1, "typesize > 255 is stored as 1"
        assert blosc2.decompress2(chunk, nthreads=1) == data
        cchunk = blosc2.compress2(
            bytearray(data),
            typesize=ts,
            filters=[blosc2.Filter(int(f)) for f in filters],
            codec=blosc2.Codec.LZ4,
            nthreads=1,
        )
        assert ox.decompress2(cchunk) == data


def test_numpy_input_multidimensional():
    a = np.arange(60_000, dtype=np.float32).reshape(300, 200)
    chunk = ox.compress2(a, typesize=4)
    assert blosc2.decompress2(chunk) == a.tobytes()
    assert ox.decompress2(blosc2.compress2(a, typesize=4)) == a.tobytes()
