"""Bad input never crashes, hangs or allocates huge memory: it raises oxblosc.ChunkError (a
ValueError and RuntimeError) or ValueError naming the problem.

Covers truncation at every length, seeded bit flips, lying headers, parameter errors, and (in a
subprocess with RLIMIT_AS = 1.5 GB) chunks whose nbytes is a lie.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import textwrap

import numpy as np
import oxblosc as ox
import pytest

from .helpers import make_data

F = ox.Filter


def _chunks():
    a = make_data("smooth_f32", 12_000)
    return {
        "lz4-shuffle": ox.compress2(a, typesize=4, codec=ox.Codec.LZ4, blocksize=2048),
        "zstd-dict": ox.compress2(a * 3, typesize=4, codec=ox.Codec.ZSTD, use_dict=True, blocksize=8192),
        "blosclz-delta": ox.compress2(
            a, typesize=4, codec=ox.Codec.BLOSCLZ, filters=[F.SHUFFLE, F.DELTA], blocksize=2048
        ),
        "zlib-bitshuffle": ox.compress2(a, typesize=8, codec=ox.Codec.ZLIB, filters=[F.BITSHUFFLE], blocksize=8192),
        "lz4-dict": ox.compress2(a * 3, typesize=4, codec=ox.Codec.LZ4, use_dict=True, blocksize=8192),
        "memcpy": ox.compress2(a[:1000], clevel=0),
        "blosc1": ox.compress_blosc1(a, typesize=4, codec=ox.Codec.LZ4),
        "value": ox.special_chunk(ox.SpecialValue.VALUE, 8000, 8, b"12345678"),
    }


CHUNKS = _chunks()


def _try_all(chunk: bytes):
    """Run every decoding entry point; each must return or raise ChunkError/ValueError."""
    results = []
    for call in (
        lambda: ox.decompress2(chunk, nthreads=1),
        lambda: ox.decompress2(chunk, nthreads=2),
        lambda: ox.getitem(chunk, 3, 5),
        lambda: ox.get_cbuffer_sizes(chunk),
        lambda: ox.chunk_info(chunk),
    ):
        try:
            results.append(call())
        except ValueError as e:  # ChunkError is a ValueError
            assert str(e), "error without a message"
            results.append(e)
    return results


def test_chunk_error_hierarchy():
    assert issubclass(ox.ChunkError, ValueError)
    assert issubclass(ox.ChunkError, RuntimeError)


@pytest.mark.parametrize("name", list(CHUNKS))
def test_truncated_at_every_length(name):
    chunk = CHUNKS[name]
    full = ox.decompress2(chunk)
    for n in range(len(chunk)):
        with pytest.raises(ox.ChunkError):
            ox.decompress2(chunk[:n])
        if n < 16:
            with pytest.raises(ox.ChunkError):
                ox.get_cbuffer_sizes(chunk[:n])
    # Trailing garbage past cbytes is ignored (the chunk is self-delimiting).
    assert ox.decompress2(chunk + b"\x00" * 10) == full


@pytest.mark.parametrize("name", list(CHUNKS))
def test_bit_flips(name):
    chunk = CHUNKS[name]
    rng = random.Random(hash(name) & 0xFFFF)
    (nbytes,) = struct.unpack_from("<i", chunk, 4)
    for _ in range(600):
        b = bytearray(chunk)
        for _ in range(rng.choice((1, 1, 2, 8))):
            pos = rng.randrange(len(b)) if rng.random() < 0.7 else rng.randrange(min(len(b), 64))
            if name == "value" and pos in (5, 6, 7):
                continue  # a special chunk legitimately decodes to any nbytes: keep the CI run short
            b[pos] ^= 1 << rng.randrange(8)
        for r in _try_all(bytes(b)):
            if isinstance(r, bytes) and r is not None and len(r) > 4 * len(chunk) + 100_000:
                # decoding "succeeded" to a size the header claims: must be exactly that size
                assert len(r) == struct.unpack_from("<i", b, 4)[0]


def _hdr(chunk: bytes, **fields) -> bytes:
    b = bytearray(chunk)
    offs = {
        "version": (0, "B"),
        "flags": (2, "B"),
        "typesize": (3, "B"),
        "nbytes": (4, "<i"),
        "blocksize": (8, "<i"),
        "cbytes": (12, "<i"),
        "udcompcode": (22, "B"),
        "flags2": (30, "B"),
        "bflags": (31, "B"),
    }
    for k, v in fields.items():
        if k.startswith("filter"):
            b[16 + int(k[6:])] = v
        elif k.startswith("meta"):
            b[24 + int(k[4:])] = v
        elif k.startswith("bstart"):
            struct.pack_into("<i", b, 32 + 4 * int(k[6:]), v)
        else:
            off, fmt = offs[k]
            struct.pack_into(fmt, b, off, v)
    return bytes(b)


LZ4 = CHUNKS["lz4-shuffle"]
NB = struct.unpack_from("<i", LZ4, 4)[0]
FIRST_STREAM = struct.unpack_from("<i", LZ4, 32)[0]


def _set_i32(chunk, off, v):
    b = bytearray(chunk)
    struct.pack_into("<i", b, off, v)
    return bytes(b)


LIES = {
    "huge nbytes, tiny cbytes": (_hdr(LZ4, nbytes=2_000_000_000), "truncated|block"),
    "negative nbytes": (_hdr(LZ4, nbytes=-5), "nbytes"),
    "negative blocksize": (_hdr(LZ4, blocksize=-4096), "blocksize"),
    "negative cbytes": (_hdr(LZ4, cbytes=-1), "cbytes"),
    "cbytes > len": (_hdr(LZ4, cbytes=len(LZ4) + 1), "cbytes|truncated"),
    "cbytes < header": (_hdr(LZ4, cbytes=20), "cbytes"),
    "blocksize 0": (_hdr(LZ4, blocksize=0), "blocksize"),
    "blocksize > max": (_hdr(LZ4, blocksize=536_866_817), "blocksize"),
    "typesize 0": (_hdr(LZ4, typesize=0), "typesize"),
    "bstart past end": (_hdr(LZ4, bstart0=len(LZ4) + 100), "block|offset|truncated"),
    "bstart negative": (_hdr(LZ4, bstart1=-8), "block|offset"),
    "bstart inside header": (_hdr(LZ4, bstart0=4), "block|offset"),
    "csize past end": (_set_i32(LZ4, FIRST_STREAM, len(LZ4)), "block|truncated"),
    "csize negative garbage": (_set_i32(LZ4, FIRST_STREAM, -1_000_000), "block|token|run"),
    "csize int min": (_set_i32(LZ4, FIRST_STREAM, -(2**31)), "block|token|run"),
    "version 0": (_hdr(LZ4, version=0), "version"),
    "version 7": (_hdr(LZ4, version=7), "version"),
    "version 255": (_hdr(LZ4, version=255), "version"),
    "unknown flags2 bits": (_hdr(LZ4, flags2=0x02), "flags2"),
    "codec format 5": (_hdr(LZ4, flags=(LZ4[2] & 0x1F) | (5 << 5)), "codec"),
    "codec format 6 unknown plugin": (_hdr(LZ4, flags=(LZ4[2] & 0x1F) | (6 << 5), udcompcode=200), "codec"),
    "codec format 7": (_hdr(LZ4, flags=(LZ4[2] & 0x1F) | (7 << 5)), "codec"),
    "unknown filter id": (_hdr(LZ4, filter0=99), "filter"),
    "filter 5 sentinel": (_hdr(LZ4, filter1=5), "filter"),
    "special kind 5": (_hdr(ox.special_chunk(ox.SpecialValue.ZERO, 800, 8), bflags=5 << 4), "special"),
    "special kind 6": (_hdr(ox.special_chunk(ox.SpecialValue.ZERO, 800, 8), bflags=6 << 4), "special"),
    "special kind 7": (_hdr(ox.special_chunk(ox.SpecialValue.ZERO, 800, 8), bflags=7 << 4), "special"),
    "NaN special typesize 3": (
        _hdr(ox.special_chunk(ox.SpecialValue.NAN, 800, 8), typesize=3, nbytes=900),
        "NaN|typesize",
    ),
    "value special nbytes not multiple": (_hdr(CHUNKS["value"], nbytes=8001), "multiple|nbytes|value"),
    "memcpy cbytes mismatch": (_hdr(CHUNKS["memcpy"], nbytes=2000), "cbytes|memcpy|truncated"),
    "instrumented codec": (_hdr(LZ4, bflags=0x80), "instrument"),
    "lazy chunk": (_hdr(LZ4, bflags=0x08), "lazy"),
}


def _dict_lies():
    z = CHUNKS["zstd-dict"]
    nblocks = ox.chunk_info(z)["nblocks"]
    off = 32 + 4 * nblocks
    out = {}
    for name, v in (
        ("dict size 0", 0),
        ("dict size negative", -3),
        ("dict size > 32 KiB", 40_000),
        ("dict size past end", len(z)),
    ):
        out[name] = (_set_i32(z, off, v), "dict")
    out["dict garbage"] = (z[: off + 4] + bytes(64) + z[off + 68 :], "dict|zstd|block")
    return out


def _vl_chunk():
    """A VL-blocks chunk (version 6): 2 blocks of 100 raw bytes (payload length == size)."""
    hdr = bytearray(32)
    hdr[0:4] = bytes([6, 1, 0x05 | 0x10 | (1 << 5), 1])
    body0 = struct.pack("<i", 100) + bytes(range(100))
    body1 = struct.pack("<i", 100) + bytes(range(100, 200))
    bstarts = struct.pack("<ii", 40, 40 + len(body0))
    chunk = hdr + bstarts + body0 + body1
    struct.pack_into("<iii", chunk, 4, 200, 2, len(chunk))
    chunk[22] = 1
    chunk[30] = 1
    return bytes(chunk)


VL = _vl_chunk()


def test_vl_chunk_fixture_decodes():
    assert ox.decompress2(VL) == bytes(range(200))


VL_LIES = {
    "vl nbytes != sum": (_hdr(VL, nbytes=300), "nbytes|block|size"),
    "vl nblocks huge": (_hdr(VL, blocksize=1_000_000), "block|truncated"),
    "vl nblocks 0": (_hdr(VL, blocksize=0), "block"),
    "vl block size lie": (_set_i32(VL, 40, 5000), "block|size"),
    "vl bstarts unsorted": (_hdr(VL, bstart0=144, bstart1=40), "block|offset"),
    "vl negative size": (_set_i32(VL, 40, -100), "block|size"),
}


@pytest.mark.parametrize("name", list(LIES) + list(_dict_lies()) + list(VL_LIES))
def test_lying_header(name):
    table = {**LIES, **_dict_lies(), **VL_LIES}
    chunk, pattern = table[name]
    # ChunkError for malformed chunks; unknown codec/filter ids may be a plain ValueError.
    with pytest.raises(ValueError, match=f"(?i){pattern}"):
        ox.decompress2(chunk)
    _try_all(chunk)


def _run_limited(code: str) -> subprocess.CompletedProcess:
    prog = (
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))\n"
        + textwrap.dedent(code)
    )
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)


HUGE_CASES = {
    "regular": """
    c = bytearray(ox.compress2(np.arange(1000, dtype=np.int64), codec=ox.Codec.LZ4))
    struct.pack_into("<i", c, 4, 2_000_000_000)
    """,
    "memcpy": """
    c = bytearray(ox.compress2(b"x" * 20, clevel=0)); struct.pack_into("<i", c, 4, 2_100_000_000)
    """,
    "vl-sum-lie": """
    c = bytearray(32 + 8 + 2 * 104)  # VL chunk claiming 2e9 bytes in 2 blocks of 100
    c[0:4] = bytes([6, 1, 0x35, 1]); c[22] = 1; c[30] = 1
    struct.pack_into("<iii", c, 4, 2_000_000_000, 2, len(c)); struct.pack_into("<ii", c, 32, 40, 144)
    struct.pack_into("<i", c, 40, 100); struct.pack_into("<i", c, 144, 100)
    """,
}


@pytest.mark.parametrize(
    "case",
    [
        "regular",
        "memcpy",
        "vl-sum-lie",  # was BUG-T5
    ],
)
def test_huge_nbytes_lies_do_not_allocate(case):
    code = (
        "import struct, oxblosc as ox, numpy as np\n"
        + textwrap.dedent(HUGE_CASES[case])
        + textwrap.dedent("""
    for f in (lambda: ox.decompress2(bytes(c)), lambda: ox.decompress2(bytes(c), nthreads=2),
              lambda: ox.getitem(bytes(c), 0, 1)):
        try:
            f()
            print("NOERR")
        except ox.ChunkError as e:
            print("CHUNKERROR", e)
    """)
    )
    r = _run_limited(code)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("CHUNKERROR") for line in lines), r.stdout


def test_impossible_codec_streams_fail_cleanly_under_memory_limit():
    """4 blocks of 512 MiB, each a 10-byte LZ4 stream: the process must survive (ChunkError, or
    MemoryError if the engine allocates nbytes before decoding), never abort."""
    code = """
    import struct, oxblosc as ox
    nb, bs = 2_000_000_000, 536_866_816
    h = bytearray(32); h[0:4] = bytes([5, 1, 0x05 | 0x10 | (1 << 5), 1]); h[22] = 1
    struct.pack_into("<iii", h, 4, nb, bs, 0)
    c = h + struct.pack("<4i", 48, 48, 48, 48) + struct.pack("<i", 10) + b"\\x1f" * 10
    struct.pack_into("<i", c, 12, len(c))
    for nt in (1, 2):
        try:
            ox.decompress2(bytes(c), nthreads=nt); print("NOERR")
        except (ox.ChunkError, MemoryError) as e:
            print(type(e).__name__)
    """
    r = _run_limited(code)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() in (
        ["ChunkError"] * 2,
        ["MemoryError"] * 2,
        ["ChunkError", "MemoryError"],
        ["MemoryError", "ChunkError"],
    ), r.stdout


def test_corrupt_delta_block0_does_not_hang():
    """Pitfall 2: a corrupt block 0 of a DELTA chunk must fail, not strand the other threads."""
    chunk = CHUNKS["blosclz-delta"]
    first = struct.unpack_from("<i", chunk, 32)[0]
    bad = bytearray(chunk)
    for k in range(first + 4, min(first + 40, len(bad))):
        bad[k] = 0xFF
    for nt in (1, 2, 4):
        try:
            ox.decompress2(bytes(bad), nthreads=nt)
        except ox.ChunkError:
            pass


# ---------------------------------------------------------------------------------------------
# Parameter errors: ValueError (python-blosc2 raises OverflowError for some of these).

PARAM_ERRORS = [
    dict(typesize=0),
    dict(typesize=-1),
    dict(typesize=ox.MAX_TYPESIZE + 1),
    dict(typesize=2**64),
    dict(clevel=-1),
    dict(clevel=10),
    dict(codec=3),
    dict(codec=99),
    dict(codec=-1),
    dict(codec="zstd"),
    dict(filters=[99]),
    dict(filters=[F.TRUNC_PREC], filters_meta=[0], typesize=4),
    dict(filters=[F.TRUNC_PREC], filters_meta=[24], typesize=4),
    dict(filters=[F.TRUNC_PREC], typesize=2),
    dict(filters=[F.INT_TRUNC], filters_meta=[-64], typesize=8),
    dict(filters=[F.INT_TRUNC], typesize=3, filters_meta=[1]),
    dict(filters_meta=[300]),
    dict(filters_meta=[-129]),
    dict(filters=[F.SHUFFLE, F.BYTEDELTA], typesize=256),
    dict(nthreads=0),
    dict(nthreads=-2),
    dict(blocksize=-1),
    dict(splitmode=0),
    dict(splitmode=5),
    dict(filters=[F.SHUFFLE] * 7),
]


@pytest.mark.parametrize("kw", PARAM_ERRORS, ids=[str(k) for k in PARAM_ERRORS])
def test_compress2_parameter_errors(kw):
    data = bytes(4096 * 3)
    with pytest.raises(ValueError):
        ox.compress2(data, **kw)


def test_other_parameter_errors():
    c = ox.compress2(bytes(800))
    with pytest.raises(ValueError):
        ox.decompress2(c, nthreads=0)
    with pytest.raises(ValueError):
        ox.set_nthreads(-1)
    with pytest.raises(ValueError):
        ox.compress(b"12345678", typesize=0)
    with pytest.raises(ValueError):
        ox.compress(b"12345678", clevel=11)
    with pytest.raises(ValueError):
        ox.compress_blosc1(b"12345678", shuffle=F.DELTA)
    with pytest.raises(ValueError):
        ox.compress_blosc1(b"12345678", typesize=0)
    with pytest.raises(ValueError):
        ox.getitem(c, -1, 1)
    with pytest.raises((ValueError, TypeError)):
        ox.decompress2(12345)


def test_not_a_chunk():
    for junk in (
        b"",
        b"\x00",
        b"hello world, this is not a chunk!!",
        bytes(32),
        b"\xff" * 64,
        np.arange(100, dtype=np.int64).tobytes(),
    ):
        _try_all(junk)
        with pytest.raises(ox.ChunkError):
            ox.decompress2(junk)


def _lz4_chunk_with_stream(stream: bytes, nbytes: int) -> bytes:
    """A one-block, one-stream LZ4 chunk (no filter) whose stream is `stream`."""
    model = ox.compress2(b"a" * nbytes, typesize=1, codec=ox.Codec.LZ4, filters=[], splitmode=ox.SplitMode.NEVER_SPLIT)
    head = bytearray(model[:32])
    body = struct.pack("<i", 36) + struct.pack("<i", len(stream)) + stream
    struct.pack_into("<i", head, 12, 32 + len(body))
    return bytes(head) + body


def test_lz4_match_at_offset_zero_is_an_error_not_old_memory():
    # 16 literals, then a 40-byte match at offset 0 (it would copy the bytes being written:
    # liblz4 accepts this and leaves whatever the new buffer held), then 8 last literals.
    good = bytes([0xFF, 1]) + b"abcdefghijklmnop" + bytes([1, 0, 21]) + bytes([0x80]) + b"ABCDEFGH"
    assert ox.decompress2(_lz4_chunk_with_stream(good, 64)) == b"abcdefghijklmnop" + b"p" * 40 + b"ABCDEFGH"
    bad = bytes([0xFF, 1]) + b"abcdefghijklmnop" + bytes([0, 0, 21]) + bytes([0x80]) + b"ABCDEFGH"
    chunk = _lz4_chunk_with_stream(bad, 64)
    with pytest.raises(ox.ChunkError, match="offset"):
        ox.decompress2(chunk)
    out = bytearray(64)
    with pytest.raises(ox.ChunkError, match="offset"):
        ox.decompress2(chunk, dst=out)


@pytest.mark.parametrize("size", [-256, -263, -511, -(2**31)])
def test_run_stream_longer_than_one_byte_value_is_refused_like_c_blosc2(size):
    # A run stream is csize -v (v = 1..255) plus a token byte; python-blosc2 refuses any other
    # negative size. Keeping its low byte would decode a run of the wrong value, silently.
    blosc2 = pytest.importorskip("blosc2")
    src = bytes(range(97)) * 200
    c = bytearray(blosc2.compress2(src, typesize=1, codec=blosc2.Codec.LZ4, blocksize=4096, filters=[]))
    first = struct.unpack_from("<i", c, 32)[0]
    struct.pack_into("<i", c, first, size)
    c[first + 4] |= 1  # the token byte says "run"
    with pytest.raises(ValueError):  # python-blosc2: "Error while decompressing"
        blosc2.decompress2(bytes(c))
    with pytest.raises(ox.ChunkError, match=r"block 0 .*is not -1..-255"):
        ox.decompress2(bytes(c))
    runs = bytearray(ox.compress2(b"\xff" * 4096, typesize=1))
    at = struct.unpack_from("<i", runs, 32)[0]
    assert runs[at : at + 5] == b"\x01\xff\xff\xff\x01"  # -255, token 1: a run of 0xFF
    assert blosc2.decompress2(bytes(runs)) == ox.decompress2(bytes(runs)) == b"\xff" * 4096
