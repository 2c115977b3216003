"""Frame-layer trust from Python (issue 14): checksums checked by default, failed writes that
change nothing, and ``mmap_mode="w+"`` files valid after every append.

The full-disk tests mount a small tmpfs (root only; skipped otherwise) and fill it, so
appends fail with a real ``OSError`` (ENOSPC).
"""

from __future__ import annotations

import errno
import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import blosc2
import numpy as np
import oxblosc
import pytest

CHUNK_ITEMS = 4096


def _data(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**62, CHUNK_ITEMS, dtype=np.int64)


def _flip_in_chunk(path: Path, s: oxblosc.SChunk, nchunk: int) -> None:
    raw = bytearray(path.read_bytes())
    chunk = s.get_chunk(nchunk)
    at = raw.find(chunk)
    assert at > 0, "chunk bytes not found in the file"
    raw[at + len(chunk) // 2] ^= 0x10
    path.write_bytes(bytes(raw))


def _with_checksums(path: Path) -> None:
    s = oxblosc.SChunk(chunksize=CHUNK_ITEMS * 8, urlpath=str(path), mode="w", cparams={"clevel": 1, "typesize": 8})
    for k in range(3):
        s.append_data(_data(k))
    s.enable_checksums()
    del s


def test_checksums_are_verified_by_default(tmp_path: Path) -> None:
    path = tmp_path / "c.b2frame"
    _with_checksums(path)
    s = oxblosc.open(path)
    assert s.verify_checksums, "a frame with checksums is verified by default"
    _flip_in_chunk(path, s, 1)
    with pytest.raises(oxblosc.ChunkError, match=r"chunk 1.*c\.b2frame|c\.b2frame.*chunk 1"):
        oxblosc.open(path)[:]
    with pytest.raises(oxblosc.ChunkError, match="checksum"):
        oxblosc.SChunk(urlpath=str(path), mode="r").decompress_chunk(1)
    # The opt-out reads without checking (the damaged chunk may decode to wrong bytes).
    fast = oxblosc.open(path, verify_checksums=False)
    assert not fast.verify_checksums
    assert fast.decompress_chunk(0) == _data(0).tobytes()


def test_verify_checksums_true_insists_on_checksums(tmp_path: Path) -> None:
    path = tmp_path / "py.b2frame"
    b = blosc2.SChunk(chunksize=CHUNK_ITEMS * 8, urlpath=str(path), mode="w", cparams={"typesize": 8})
    b.append_data(_data(0))
    del b
    with pytest.raises(ValueError, match="no checksums"):
        oxblosc.open(path, verify_checksums=True)
    s = oxblosc.open(path)  # without the explicit request, a frame without checksums opens
    assert not s.verify_checksums
    assert s.decompress_chunk(0) == _data(0).tobytes()


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs; the test fills it when it wants writes to fail."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1024k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(d: Path) -> None:
    with open(d / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\xa5" * 4096)
        except OSError:
            pass


def _state(s: oxblosc.SChunk) -> tuple[int, int, list[bytes], dict[str, object]]:
    return s.nchunks, s.nbytes, [s.decompress_chunk(i) for i in range(s.nchunks)], dict(s.vlmeta.getall())


@pytest.mark.parametrize("contiguous", [True, False])
def test_failed_writes_change_nothing(full_disk: Path, contiguous: bool) -> None:
    path = full_disk / ("f.b2frame" if contiguous else "f.b2frame.d")
    s = oxblosc.SChunk(
        chunksize=CHUNK_ITEMS * 8, urlpath=str(path), contiguous=contiguous, mode="w", cparams={"typesize": 8}
    )
    for k in range(3):
        s.append_data(_data(k))
    s.vlmeta["tag"] = "v1"
    _fill(full_disk)
    before = _state(s)
    for op in (
        lambda s: s.append_data(_data(10)),
        lambda s: s.insert_data(1, _data(11), copy=True),
        lambda s: s.update_data(0, _data(12), copy=True),
        lambda s: s.__setitem__(slice(10, 10 + CHUNK_ITEMS), _data(13)),
        lambda s: s.vlmeta.__setitem__("big", np.random.default_rng(1).bytes(200_000)),
    ):
        with pytest.raises(OSError) as e:
            op(s)
        assert e.value.errno == errno.ENOSPC, e.value
        assert _state(s) == before, "a failed write changed the handle"
        assert _state(oxblosc.open(path)) == before, "a failed write changed the file"
    # Room again: the next append adds exactly one chunk; both libraries read the result.
    (full_disk / "filler").unlink()
    assert s.append_data(_data(20)) == 4
    del s
    want = before[2] + [_data(20).tobytes()]
    assert _state(oxblosc.open(path))[2] == want
    b = blosc2.open(str(path))
    assert [b.decompress_chunk(i) for i in range(b.nchunks)] == want
    assert b.vlmeta["tag"] == "v1"


@pytest.mark.parametrize("room_at_close", [False, True])
def test_closing_after_a_failed_append_keeps_the_file(full_disk: Path, room_at_close: bool) -> None:
    # The handle is closed right after the failure (no successful write in between): the close
    # used to write an index of no blocks and point the header at it, and the file was lost
    # for both libraries. It must stay exactly the committed frame, whether the close has room
    # for its compact tail or not.
    path = full_disk / "f.b2frame"
    (full_disk / "ballast").write_bytes(b"\x01" * (256 << 10))
    s = oxblosc.SChunk(chunksize=25_000 * 8, urlpath=str(path), mode="w", cparams={"typesize": 8, "clevel": 1})
    rng = np.random.default_rng(0)
    err = None
    while err is None:
        try:
            s.append_data(rng.integers(0, 2**62, 25_000).astype("i8"))
        except OSError as e:
            err = e.errno  # not the exception: its traceback would keep the handle open
    assert err == errno.ENOSPC
    before = _state(s)
    assert before[0] >= 1
    if room_at_close:
        (full_disk / "ballast").unlink()
    del s
    gc.collect()
    assert _state(oxblosc.open(path)) == before
    b = blosc2.open(str(path))
    assert [b.decompress_chunk(i) for i in range(b.nchunks)] == before[2]


def test_mmap_w_plus_file_is_valid_after_every_append(tmp_path: Path) -> None:
    path = tmp_path / "w.b2frame"
    s = oxblosc.SChunk(chunksize=CHUNK_ITEMS * 8, urlpath=str(path), mmap_mode="w+", cparams={"typesize": 8})
    for k in range(4):
        s.append_data(_data(k))
        b = blosc2.open(str(path), mode="r")
        assert b.nchunks == k + 1
        assert b.decompress_chunk(k) == _data(k).tobytes()
    a = oxblosc.zeros((0, 16), dtype=np.int32, chunks=(4, 16), urlpath=str(tmp_path / "a.b2nd"), mmap_mode="w+")
    for k in range(3):
        a.resize((4 * (k + 1), 16))
        a[4 * k :] = np.full((4, 16), k, np.int32)
        np.testing.assert_array_equal(blosc2.open(str(tmp_path / "a.b2nd"))[4 * k :], np.full((4, 16), k))


@pytest.mark.parametrize("contiguous", [True, False])
def test_empty_frame_vlmeta_interop(tmp_path: Path, contiguous: bool) -> None:
    """Zero chunks plus a vlmetalayer, and an array with a zero-length axis: each library sees
    the other's vlmetalayers (C-Blosc2 reads the trailer of a frame without data right after
    the header)."""
    for writer, reader in ((oxblosc, blosc2), (blosc2, oxblosc)):
        p = str(tmp_path / f"{writer.__name__}.b2frame")
        s = writer.SChunk(chunksize=800, urlpath=p, contiguous=contiguous, mode="w", cparams={"typesize": 8})
        s.vlmeta["k"] = "v"
        if writer is oxblosc:  # emptied again after holding data
            s.append_data(b"x" * 800)
            s.delete_chunk(0)
        del s
        r = reader.open(p)
        assert r.nchunks == 0 and r.vlmeta["k"] == "v", f"{reader.__name__} reading {writer.__name__}"
        del r
        q = str(tmp_path / f"{writer.__name__}.b2nd")
        a = writer.zeros((0, 5), dtype=np.float64, urlpath=q, mode="w", contiguous=contiguous)
        a.vlmeta["unit"] = "m"
        del a
        r = reader.open(q)
        assert r.shape == (0, 5) and r.vlmeta["unit"] == "m", f"{reader.__name__} reading {writer.__name__}"


def test_damaged_typesize_or_shape_is_caught(tmp_path: Path) -> None:
    """A flipped byte in the header's typesize, or in an array's shape metalayer, makes reads
    and ``oxblosc verify`` fail instead of returning short or misshapen data; python-blosc2
    still reads the intact file (the digest lives in the checksum vlmetalayer)."""
    path = tmp_path / "c.b2frame"
    _with_checksums(path)
    good = path.read_bytes()
    assert good[47:52] == b"\xd2\x00\x00\x00\x08"
    b = blosc2.open(str(path))
    assert b.decompress_chunk(2) == _data(2).tobytes()
    del b
    bad = bytearray(good)
    bad[51] ^= 0x0C
    path.write_bytes(bytes(bad))
    with pytest.raises(oxblosc.ChunkError, match="typesize or metalayers"):
        oxblosc.open(path)[:]
    cli = str(Path(sys.executable).parent / "oxblosc")
    r = subprocess.run([cli, "verify", str(path)], capture_output=True, text=True)
    assert r.returncode != 0 and "typesize or metalayers" in r.stderr, r.stderr
    np.save(tmp_path / "a.npy", np.arange(600, dtype=np.int32).reshape(20, 30))
    assert subprocess.run([cli, "compress", "-q", str(tmp_path / "a.npy")]).returncode == 0  # checksums on
    arr = tmp_path / "a.b2nd"
    np.testing.assert_array_equal(oxblosc.open(arr)[:], np.arange(600).reshape(20, 30))
    raw = bytearray(arr.read_bytes())
    shape = b"\x92\xd3" + (20).to_bytes(8, "big") + b"\xd3" + (30).to_bytes(8, "big")
    at = raw.find(shape)  # msgpack [20, 30] as int64: the shape in the b2nd metalayer
    assert at > 0
    raw[at + 9] = 10
    arr.write_bytes(bytes(raw))
    with pytest.raises(oxblosc.ChunkError, match="typesize or metalayers"):
        oxblosc.open(arr)[:]


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("zeros_first", [True, False])
def test_damaged_chunksize_is_refused_like_python_blosc2(tmp_path: Path, zeros_first: bool, contiguous: bool) -> None:
    """One flipped bit in the header's chunksize (4000 -> 69536) makes nbytes / chunksize count
    one chunk while the index holds five. python-blosc2 refuses the file; so do we, at open,
    naming the field. (With an all-zero first chunk we used to return 20000 zero bytes and drop
    the other chunks, silently.)"""
    path = tmp_path / ("d.b2frame" if contiguous else "d.b2frame.d")
    s = oxblosc.SChunk(chunksize=4000, urlpath=str(path), contiguous=contiguous, mode="w", cparams={"typesize": 4})
    first = np.zeros(1000, np.int32) if zeros_first else np.arange(1000, dtype=np.int32)
    s.append_data(first)
    for i in range(1, 5):
        s.append_data(np.arange(1000, dtype=np.int32) + i)
    del s
    header = path if contiguous else path / "chunks.b2frame"
    raw = bytearray(header.read_bytes())
    assert raw[57] == 0xD2 and raw[58:62] == (4000).to_bytes(4, "big")  # msgpack int32 chunksize
    raw[59] ^= 1
    header.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError):
        blosc2.open(str(path))
    with pytest.raises(oxblosc.ChunkError, match=r"chunksize 69536 and nbytes 20000 .*entry 1 is a chunk of 4000"):
        oxblosc.open(path)
