"""oxblosc.Streamer: read-ahead block streaming checked against a plain read (ordered,
unordered, cyclic, queue access, early break, consumer exception, corrupt chunk)."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import oxblosc as ox
import pytest
from oxblosc.streamer import Streamer


def _stream_threads() -> int:
    """Reader threads alive in this process (named oxblosc-stream-N by the engine)."""
    n = 0
    for t in os.listdir("/proc/self/task"):
        try:
            n += Path(f"/proc/self/task/{t}/comm").read_text().startswith("oxblosc-stream")
        except OSError:
            pass
    return n


@pytest.fixture
def array_file(tmp_path):
    data = np.cumsum(np.random.default_rng(3).normal(size=(1003, 7)), axis=0)
    ox.asarray(data, urlpath=str(tmp_path / "a.b2nd"), mode="w", chunks=(64, 7), blocks=(16, 7))
    return str(tmp_path / "a.b2nd"), data


@pytest.mark.parametrize("nthreads", [1, 3])
@pytest.mark.parametrize("block_rows", [50, 64, 2000])
def test_ordered_matches_plain_read(array_file, nthreads, block_rows):
    path, data = array_file
    starts, blocks = [], []
    for start, block in ox.Streamer(path, block_rows=block_rows, nthreads=nthreads, nslots=3):
        starts.append(start)
        blocks.append(block.copy())
    assert starts == list(range(0, 1003, block_rows))
    np.testing.assert_array_equal(np.concatenate(blocks), data)
    assert np.concatenate(blocks).dtype == data.dtype


def test_unordered_every_block_exactly_once(array_file):
    path, data = array_file
    got = {}
    for start, block in Streamer(ox.open(path), block_rows=10, ordered=False, nthreads=4, copy=True):
        assert start not in got
        got[start] = block
    assert sorted(got) == list(range(0, 1003, 10))
    np.testing.assert_array_equal(np.concatenate([got[k] for k in sorted(got)]), data)


def test_copy_gives_owned_blocks(array_file):
    path, data = array_file
    blocks = list(Streamer(path, block_rows=100, copy=True, nslots=2, nthreads=2))
    for start, block in blocks:
        assert block.flags.owndata
        np.testing.assert_array_equal(block, data[start : start + 100])


def test_cyclic_wraps_then_break_stops_readers(array_file):
    path, data = array_file
    s = Streamer(path, block_rows=300, cyclic=True, nthreads=2)
    seen = []
    for start, block in s:
        np.testing.assert_array_equal(block, data[start : start + 300])
        seen.append(start)
        if len(seen) == 10:
            break
    assert seen == [0, 300, 600, 900] * 2 + [0, 300]
    assert _stream_threads() == 0  # break closed the generator, which joined the readers


def test_unordered_cyclic_every_position_once(array_file):
    """Unordered and cyclic: each stream position comes once, its rows are those of block
    ``seq % nblocks``, and the positions delivered stay within the ring of the next due."""
    path, data = array_file
    with Streamer(path, block_rows=100, ordered=False, cyclic=True, nthreads=3, nslots=4) as s:
        seqs = []
        for _ in range(35):  # three and a half cycles of 11 blocks
            with s.acquire() as slot:
                assert slot.start == (slot.seq % 11) * 100
                np.testing.assert_array_equal(slot.block, data[slot.start : slot.start + 100])
                seqs.append(slot.seq)
    assert len(set(seqs)) == 35 and max(seqs) < 35 + 4
    assert _stream_threads() == 0


def test_consumer_exception_and_gc_stop_readers(array_file):
    path, _ = array_file
    with pytest.raises(RuntimeError, match="consumer"):
        for _start, _block in Streamer(path, block_rows=10, nthreads=2, cyclic=True):
            raise RuntimeError("consumer failed")
    gc.collect()
    assert _stream_threads() == 0
    s = Streamer(path, block_rows=10, nthreads=2, cyclic=True)
    assert s.acquire() is not None  # readers running, a slot held
    del s
    gc.collect()
    assert _stream_threads() == 0


def test_queue_interface_holds_several_slots(array_file):
    path, data = array_file
    with Streamer(path, block_rows=100, nthreads=2, nslots=4) as s:
        held = [s.acquire() for _ in range(4)]  # the whole ring
        for slot in held:
            np.testing.assert_array_equal(slot.block, data[slot.start : slot.start + 100])
        assert [h.start for h in held] == [0, 100, 200, 300]
        for slot in held:
            slot.release()
        rest = []
        while (slot := s.acquire()) is not None:
            with slot:
                rest.append(slot.start)
        assert rest == list(range(400, 1003, 100))


def test_schunk_items(tmp_path):
    data = np.arange(100_000, dtype="i4")
    sc = ox.SChunk(chunksize=4000 * 4, data=data, urlpath=str(tmp_path / "s.b2frame"), mode="w",
                   cparams=ox.CParams(typesize=4))  # fmt: skip
    out = np.concatenate([b.view("i4") for _, b in Streamer(sc, block_rows=3000, copy=True)])
    np.testing.assert_array_equal(out, data)


def test_corrupt_chunk_raises_at_its_place(tmp_path):
    data = np.arange(40_000, dtype="f8").reshape(400, 100)
    path = str(tmp_path / "sparse.b2nd")
    ox.asarray(data, urlpath=path, mode="w", contiguous=False, chunks=(40, 100), blocks=(10, 100))
    victim = Path(path) / "00000005.chunk"
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2 :] = bytes(len(raw) - len(raw) // 2)  # zero the back half of chunk 5
    victim.write_bytes(bytes(raw))
    got = []
    with pytest.raises((ox.ChunkError, OSError)) as info:
        for start, block in Streamer(path, block_rows=40, nthreads=3):
            got.append(start)
            np.testing.assert_array_equal(block, data[start : start + 40])
    assert got == [0, 40, 80, 120, 160]  # every block before the bad one, in order
    assert "rows 200..240" in str(info.value) and "sparse.b2nd" in str(info.value)
    assert _stream_threads() == 0


def test_in_memory_source_refused():
    with pytest.raises(ValueError, match="in memory"):
        Streamer(ox.asarray(np.arange(10)))


def test_python_blosc2_files(tmp_path):
    """Files python-blosc2 wrote (an array and a plain super-chunk) stream the same."""
    import blosc2  # noqa: PLC0415

    data = np.random.default_rng(9).integers(0, 1000, size=(777, 13)).astype("i2")
    p = str(tmp_path / "theirs.b2nd")
    blosc2.asarray(data, urlpath=p, mode="w", chunks=(100, 13), blocks=(25, 13))
    got = [(s, b) for s, b in Streamer(p, block_rows=70, ordered=False, nthreads=2, copy=True)]
    got.sort(key=lambda g: g[0])
    np.testing.assert_array_equal(np.concatenate([b for _, b in got]), data)
    items = np.arange(50_000, dtype="f8")
    sp = str(tmp_path / "theirs.b2frame")
    blosc2.SChunk(chunksize=8000 * 8, data=items, urlpath=sp, mode="w", cparams={"typesize": 8})
    out = np.concatenate([b.view("f8") for _, b in Streamer(sp, copy=True)])
    np.testing.assert_array_equal(out, items)


# --------------------------------------------------------------------------- HDF5 datasets


def _h5():
    h5py = pytest.importorskip("h5py")
    import oxblosc.hdf5 as oh5

    return h5py, oh5


@pytest.mark.parametrize("filt", ["blosc2", "blosc"])
@pytest.mark.parametrize("block_rows", [7, 16, 45])
def test_hdf5_dataset_matches_h5py(tmp_path, filt, block_rows):
    # Edge chunks on every axis, blocks of rows across chunk rows, both Blosc filters.
    h5py, oh5 = _h5()
    opts = oh5.Blosc2("zstd", 5, filters=1) if filt == "blosc2" else oh5.Blosc("lz4", 5)
    data = np.cumsum(np.random.default_rng(5).normal(size=(101, 13, 9)), axis=0).astype("<f4")
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(16, 5, 4), **opts)
    with h5py.File(path, "r") as f:
        d = f["x"]
        plain = d[...]
        for ordered, nthreads in [(True, 1), (True, 3), (False, 2)]:
            got = {}
            for start, block in ox.Streamer(d, block_rows=block_rows, ordered=ordered, nthreads=nthreads, copy=True):
                assert start not in got
                got[start] = block
            assert sorted(got) == list(range(0, 101, block_rows))
            if ordered:
                assert list(got) == sorted(got)
            np.testing.assert_array_equal(np.concatenate([got[k] for k in sorted(got)]), plain)
        # The default block is a chunk's rows; an oxblosc.hdf5.Dataset works as a source too.
        s = ox.Streamer(oh5.Dataset(d), nthreads=2)
        assert s.block_rows == 16 and s.dtype == d.dtype and s.row_shape == (13, 9)
        np.testing.assert_array_equal(np.concatenate([b.copy() for _, b in s]), plain)


def test_hdf5_files_hdf5plugin_wrote(tmp_path):
    # C-Blosc2 and c-blosc (hdf5plugin, in its own process) wrote every codec, dtype and rank.
    _h5()
    pytest.importorskip("hdf5plugin")
    import h5py

    from .hdf5_side import expected
    from .test_hdf5 import side

    side("write", "ref", tmp_path / "ref.h5")
    n = 0
    with h5py.File(tmp_path / "ref.h5", "r") as f:
        for name, d in f.items():
            want = expected(name, d.attrs["dt"], int(d.attrs["rank"]))
            rows = max(1, d.chunks[0] - 1)
            blocks = [b for _, b in ox.Streamer(d, block_rows=rows, nthreads=2, cyclic=False, copy=True)]
            assert np.array_equal(np.concatenate(blocks), want), name
            n += 1
    assert n > 40


def test_hdf5_unwritten_chunks_and_refusals(tmp_path):
    h5py, oh5 = _h5()
    path = tmp_path / "u.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(50, 20), dtype="<i4", chunks=(10, 8), **oh5.Blosc2("lz4", 5))
        d[12:33, 3:17] = 7
        f.create_dataset("fill", shape=(50, 20), dtype="<i4", chunks=(10, 8), fillvalue=-1, **oh5.Blosc2("lz4", 5))
        f.create_dataset("gz", data=np.ones((50, 20)), chunks=(10, 8), compression="gzip")
        f.create_dataset("flat", data=np.ones((50, 20)))
        # Still open for writing: the stream sees what was written (flushed first).
        blocks = [b for _, b in ox.Streamer(f["x"], block_rows=9, copy=True)]
        np.testing.assert_array_equal(np.concatenate(blocks), f["x"][...])
        for name in ("fill", "gz", "flat"):
            with pytest.raises(ValueError, match=name):
                ox.Streamer(f[name])


def test_hdf5_corrupt_chunk_raises_at_its_place(tmp_path):
    h5py, oh5 = _h5()
    path = tmp_path / "c.h5"
    data = np.arange(60 * 10, dtype="<i8").reshape(60, 10)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", data=data, chunks=(10, 10), **oh5.Blosc2("zstd", 5))
        raw = d.id.read_direct_chunk((30, 0))[1]
        d.id.write_direct_chunk((30, 0), bytes(b ^ 0x5A for b in raw))
    with h5py.File(path, "r") as f:
        got = []
        with pytest.raises(ox.ChunkError, match=r"rows 30\.\.40 of .*c\.h5.*HDF5 chunk \[3, 0\]"):
            for start, block in ox.Streamer(f["x"], block_rows=10, nthreads=2):
                got.append((start, block.copy()))
        assert [s for s, _ in got] == [0, 10, 20]
        np.testing.assert_array_equal(np.concatenate([b for _, b in got]), data[:30])
    assert _stream_threads() == 0


def test_a_second_loop_reads_the_source_again(array_file):
    """A loop over a Streamer whose stream ended (or was left early) starts from row 0 with new
    readers: epochs of a training loop each see every row (not an empty second pass)."""
    path, data = array_file
    s = Streamer(path, block_rows=100, nthreads=2)
    for _epoch in range(3):
        got = np.concatenate([block.copy() for _, block in s])
        np.testing.assert_array_equal(got, data)
    for start, _ in s:  # left early ...
        assert start == 0
        break
    assert [start for start, _ in s] == list(range(0, 1003, 100))  # ... then whole again
    assert s.acquire() is None  # the queue interface keeps "None once over"
    gc.collect()
    assert _stream_threads() == 0


def test_a_slot_of_an_earlier_run_does_not_free_a_buffer_of_the_next(array_file):
    path, data = array_file
    s = Streamer(path, block_rows=100, nthreads=1, nslots=2)
    old = s.acquire()
    s.close()
    for k, (start, block) in enumerate(s):
        if k == 0:
            old.release()  # a buffer the new run owns: must not go back to its readers
            time.sleep(0.3)  # (time for a reader to refill it, were it given back)
        np.testing.assert_array_equal(block, data[start : start + 100])


def _outcome(f):
    try:
        return (None, f())
    except Exception as e:  # noqa: BLE001 - the outcome is what is checked
        return (type(e), str(e))


def test_acquiring_beyond_the_held_ring_raises_instead_of_hanging(array_file):
    path, data = array_file
    with Streamer(path, block_rows=100, nthreads=1, nslots=2) as s:
        held = [s.acquire(), s.acquire()]
        got = []
        t = threading.Thread(target=lambda: got.append(_outcome(s.acquire)), daemon=True)
        t.start()
        t.join(10)  # (waited forever before: no buffer left for the readers)
        assert got and got[0][0] is RuntimeError and "all 2 slots" in got[0][1]
        held[0].release()
        third = s.acquire()
        assert third.start == 200
        np.testing.assert_array_equal(third.block, data[200:300])


@pytest.mark.parametrize("option", ["block_rows", "nslots", "nthreads"])
def test_zero_options_are_refused_not_taken_for_defaults(array_file, option):
    path, _ = array_file
    with pytest.raises(ValueError, match=f"{option} must be in 1"):
        Streamer(path, **{option: 0})


def test_dropping_a_streamer_stops_its_readers_without_the_cycle_collector(array_file):
    path, _ = array_file
    gc.disable()
    try:
        s = Streamer(path, block_rows=10, nthreads=2, cyclic=True)
        assert s.acquire() is not None
        deadline = time.monotonic() + 10
        while _stream_threads() < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # (a reader thread names itself once it runs)
        assert _stream_threads() == 2
        del s
        assert _stream_threads() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize("nthreads", [1, 4])
def test_a_file_replaced_mid_stream_is_not_mixed_in(tmp_path, nthreads):
    """A file replaced by a rename while streamed (as to_oxblosc or a publish replaces it):
    every block still comes from the version the stream started on. Readers (and the
    consumer's own reader) used to open the file on their first block: with one slot, those
    that had not read yet read the new file."""
    path = str(tmp_path / "r.b2nd")
    old = np.arange(4000 * 10, dtype="f8").reshape(4000, 10)
    ox.asarray(old, urlpath=path, mode="w", chunks=(100, 10))
    s = Streamer(path, block_rows=100, nthreads=nthreads, nslots=1)
    first = s.acquire()
    np.testing.assert_array_equal(first.block, old[:100])
    first.release()
    ox.asarray(-old, urlpath=path + ".new", mode="w", chunks=(100, 10))
    os.replace(path + ".new", path)
    got = [(slot.start, slot.block.copy(), slot.release()) for slot in iter(s.acquire, None)]
    assert [g[0] for g in got] == list(range(100, 4000, 100))
    for start, block, _ in got:
        np.testing.assert_array_equal(block, old[start : start + 100])
    # the next loop reads the file as it is then
    np.testing.assert_array_equal(np.concatenate([b.copy() for _, b in s]), -old)


def _run_in_fork(fn, timeout=30.0):
    """``fn()`` in a forked child: its exit code (0: returned), or None if it hung."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if fn() else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_a_streamer_inherited_through_fork_starts_again_or_says_why(tmp_path):
    """Forked while its readers fill the next blocks (a multiprocessing worker inheriting it):
    the child's readers do not exist, so waiting for their blocks hung forever. A for loop
    in the child starts new readers; acquire() says why it cannot go on."""
    path = str(tmp_path / "f.b2nd")
    data = np.random.default_rng(0).normal(size=(200_000, 16))
    ox.asarray(data, urlpath=path, mode="w", chunks=(25_000, 16), cparams={"clevel": 9, "codec": ox.Codec.ZSTD})
    for _ in range(2):
        s = Streamer(path, block_rows=25_000, nthreads=2, nslots=4)
        s.acquire().release()  # the readers now fill blocks 1, 2, ...

        def loop_in_child(s=s):
            got = np.concatenate([block.copy() for _, block in s])
            return np.array_equal(got, data)

        def acquire_in_child(s=s):
            try:
                s.acquire()
            except RuntimeError as e:
                return "forked" in str(e)
            return False

        assert _run_in_fork(loop_in_child) == 0
        assert _run_in_fork(acquire_in_child) == 0
        rest = [(slot.start, slot.release())[0] for slot in iter(s.acquire, None)]  # the parent's goes on
        assert rest == list(range(25_000, 200_000, 25_000))


@pytest.mark.parametrize("filt", ["blosc", "blosc2"])
def test_hdf5_file_written_while_streaming_raises(tmp_path, filt):
    # The stream lists chunk addresses once. A write then moved chunk 1 (it grew) and HDF5
    # put a new, small chunk 3 in chunk 1's old place: reading the old address gave chunk 3's
    # rows as rows 1000..2000 (Blosc filter), silently. Now any write after the listing
    # makes the next block fail, naming the file.
    h5py, oh5 = _h5()
    path = tmp_path / "w.h5"
    opts = oh5.Blosc2("zstd", 5) if filt == "blosc2" else oh5.Blosc("zstd", 5)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(3000,), maxshape=(None,), dtype="<i8", chunks=(1000,), **opts)
        for k in range(3):
            d[k * 1000 : (k + 1) * 1000] = np.arange(k * 1000, (k + 1) * 1000)
        f.flush()
        old1 = d.id.get_chunk_info(1).byte_offset
        stream = iter(ox.Streamer(d, block_rows=1000, nthreads=1, nslots=1))
        start, first = next(stream)  # the one slot is held: nothing later was read yet
        np.testing.assert_array_equal(first, np.arange(1000))
        d[1000:2000] = np.random.default_rng(1).integers(0, 1 << 40, 1000)  # grows: moved
        d.resize((4000,))
        d[3000:4000] = 5  # small: HDF5 stores it where chunk 1 was
        f.flush()
        assert d.id.get_chunk_info(3).byte_offset == old1, "HDF5 placed chunk 3 elsewhere: the test needs redoing"
        with pytest.raises(OSError, match=r"rows 1000\.\.2000 of .*w\.h5.*was written since .*start a new stream"):
            for _ in stream:
                pass
    assert _stream_threads() == 0


def test_a_new_loop_lists_a_written_hdf5_file_again(tmp_path):
    # Epochs over an HDF5 dataset that is written between them (a training set growing): the
    # second loop reused the first loop's chunk listing and failed ("start a new stream")
    # although a new loop is a new stream. It now lists the chunks again when the file
    # changed; an unchanged file keeps the listing, even once the file was closed.
    h5py, oh5 = _h5()
    path = tmp_path / "e.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(3000,), maxshape=(None,), dtype="<i8", chunks=(1000,), **oh5.Blosc2("zstd", 5))
        d[:] = np.arange(3000)
        s = ox.Streamer(f["x"], nthreads=1)  # (a temporary dataset object: the Streamer holds it)
        np.testing.assert_array_equal(np.concatenate([b.copy() for _, b in s]), np.arange(3000))
        d[1000:2000] = np.random.default_rng(1).integers(0, 1 << 40, 1000)  # grows: moved
        d.resize((4500,))
        d[3000:] = 5
        f.flush()
        want = d[:]
        got = [(start, b.copy()) for start, b in s]
        assert [start for start, _ in got] == [0, 1000, 2000, 3000, 4000]
        np.testing.assert_array_equal(np.concatenate([b for _, b in got]), want)
        assert s.nrows == 4500
    # Read-only, closed, unchanged: the listing still holds.
    with h5py.File(path, "r") as f:
        s = ox.Streamer(f["x"], nthreads=1)
    np.testing.assert_array_equal(np.concatenate([b.copy() for _, b in s]), want)
    # Closed, then written by another handle: nothing to list with, a clear error.
    with h5py.File(path, "a") as f:
        f["x"][:10] = -1
    with pytest.raises(OSError, match=r"e\.h5 was written since .*was closed: make a new Streamer"):
        for _ in s:
            pass
    assert _stream_threads() == 0


def test_hdf5_chunk_size_past_the_end_of_the_file(tmp_path):
    # A corrupt chunk index (here: a chunk size of 3.75 GiB for a 1.6 KB chunk, patched into
    # HDF5's B-tree) zeroed a buffer of that size before the read failed (3.9 GB resident).
    # Now it is refused before anything is allocated, naming the file, size and offset; the
    # same for oxblosc.hdf5.Dataset reads. In a process of its own to see its peak memory.
    _h5()
    path = tmp_path / "big.h5"
    code = f"""
import resource, struct, numpy as np, h5py, oxblosc as ox, oxblosc.hdf5 as oh5
p = {str(path)!r}
with h5py.File(p, "w") as f:
    d = f.create_dataset("x", data=np.arange(100000, dtype="<i8"), chunks=(100000,), **oh5.Blosc2("zstd", 5))
    size = d.id.get_chunk_info(0).size
raw = bytearray(open(p, "rb").read())
key = struct.pack("<IIQQ", size, 0, 0, 0)  # v1 B-tree key: size, filter mask, chunk offset
assert raw.count(key) == 1
i = raw.index(key)
raw[i : i + 4] = struct.pack("<I", 0xF0000000)
open(p, "wb").write(raw)
with h5py.File(p, "r") as f:
    assert f["x"].id.get_chunk_info(0).size == 0xF0000000
    for how in ("stream", "dataset"):
        try:
            if how == "stream":
                list(ox.Streamer(f["x"], nthreads=1))
            else:
                oh5.Dataset(f["x"])[10:20]
        except OSError as e:
            print(how, "|", e)
# This process's own peak (VmHWM): ru_maxrss of a child started with vfork, as subprocess
# does, also counts the parent's peak from before the exec (pytest's, 1.3 GB in one CI run).
try:
    hwm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")]
except OSError:  # not Linux
    hwm = []
print("maxrss_mb", (hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) // 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for how in ("stream", "dataset"):
        msg = next((line for line in lines if line.startswith(how + " |")), "")
        assert re.search(r"big\.h5: chunk of 4026531840 bytes at byte \d+ runs past the end of the file", msg), lines
    assert int(lines[-1].split()[1]) < 1000, lines
