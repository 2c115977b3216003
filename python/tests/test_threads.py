"""One SChunk / NDArray handle shared by several Python threads: reads run side by side (GIL
released, shared lock), changes are serialised, every read sees one committed state, and
nothing raises ("Already borrowed") or deadlocks."""

from __future__ import annotations

import threading

import numpy as np
import oxblosc
import pytest

JOIN_TIMEOUT = 120  # a deadlock fails the test instead of hanging the suite


def run_threads(targets):
    """Start every target, join them; returns the exceptions they raised."""
    errors = []

    def wrap(f):
        def run():
            try:
                f()
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(f)) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "threads still running: deadlock?"
    return errors


def native(obj):
    return obj._n if isinstance(obj, oxblosc.SChunk) else obj.schunk._n


@pytest.mark.parametrize("kind", ["schunk", "ndarray"])
def test_reads_of_one_handle_overlap(kind, tmp_path):
    """Two threads are inside reads of the same handle at the same moment (each waits in the
    native read until the other has arrived: impossible if reads were serialised)."""
    if kind == "schunk":
        obj = oxblosc.SChunk(chunksize=4000, data=np.arange(10_000, dtype="i4"), urlpath=str(tmp_path / "s.b2frame"))
    else:
        obj = oxblosc.asarray(np.arange(100), urlpath=str(tmp_path / "a.b2nd"))
    n = native(obj)
    seen = []
    errors = run_threads([lambda: seen.append(n._rendezvous(2, 60.0))] * 2)
    assert not errors
    assert seen == [True, True]
    assert n._peak_readers >= 2


@pytest.mark.parametrize("urlpath", [False, True])
def test_ndarray_readers_see_whole_states_while_a_writer_changes(urlpath, tmp_path):
    """The writer alternately overwrites the whole array with g and appends rows of g, so
    every committed state holds one value: a read mixing two values tore a write."""
    kw = {"urlpath": str(tmp_path / "a.b2nd")} if urlpath else {}
    a = oxblosc.zeros((64, 256), dtype="i8", chunks=(16, 256), blocks=(4, 256), **kw)
    done = threading.Event()
    reads = []

    def writer():
        try:
            for g in range(1, 25):
                a[:] = g
                a.append(np.full((16, 256), g, dtype="i8"))
        finally:
            done.set()

    def reader(seed):
        rng = np.random.default_rng(seed)

        def run():
            while not done.is_set() or len(reads) < 8:
                shape = a.shape
                assert shape[1] == 256 and shape[0] % 16 == 0 and 64 <= shape[0] <= 64 + 24 * 16
                lo = int(rng.integers(0, 64))
                part = a[lo : lo + int(rng.integers(1, 200))] if rng.random() < 0.7 else a[:]
                assert part.size and (part == part.flat[0]).all(), f"torn read: values {np.unique(part)}"
                reads.append(part.shape[0])

        return run

    errors = run_threads([writer, reader(1), reader(2), reader(3)])
    assert not errors, errors
    assert a.shape == (64 + 24 * 16, 256)
    assert (a[:] == 24).all()
    if urlpath:
        assert (oxblosc.open(kw["urlpath"])[:] == 24).all()


def test_schunk_readers_while_a_writer_appends_and_updates(tmp_path):
    """Chunk i holds items equal to i; the writer appends new chunks and rewrites old ones
    (same content) while readers read random item ranges and chunks."""
    cs = 1000
    s = oxblosc.SChunk(chunksize=cs * 4, urlpath=str(tmp_path / "s.b2frame"), cparams={"typesize": 4})
    for i in range(4):
        s.append_data(np.full(cs, i, dtype="i4"))
    done = threading.Event()
    nreads = [0]

    def writer():
        try:
            for i in range(4, 60):
                s.append_data(np.full(cs, i, dtype="i4"))
                k = i // 2
                s.update_data(k, np.full(cs, k, dtype="i4"))
                s[k * cs : k * cs + 10] = np.full(10, k, dtype="i4")
        finally:
            done.set()

    def reader(seed):
        rng = np.random.default_rng(seed)

        def run():
            while not done.is_set() or nreads[0] < 10:
                n = len(s)
                start = int(rng.integers(0, n))
                stop = min(n, start + int(rng.integers(1, 5 * cs)))
                got = np.frombuffer(s[start:stop], dtype="i4")
                assert (got == np.arange(start, stop) // cs).all()
                c = int(rng.integers(0, s.nchunks))
                assert (np.frombuffer(s.decompress_chunk(c), dtype="i4") == c).all()
                nreads[0] += 1

        return run

    errors = run_threads([writer, reader(1), reader(2), reader(3)])
    assert not errors, errors
    assert s.nchunks == 60
    assert (np.frombuffer(s[:], dtype="i4") == np.arange(60 * cs) // cs).all()


def test_decompress_chunk_while_a_writer_resizes_it(tmp_path):
    """`decompress_chunk` sizes its result from the chunk header, then decodes under a second
    read lock: a writer replacing the chunk with one of another size in between must give the
    reader one whole version, never a short or mixed one."""
    small, big = np.arange(300, dtype="i4"), np.arange(5000, dtype="i4") * 7
    s = oxblosc.SChunk(urlpath=str(tmp_path / "v.b2frame"), cparams={"typesize": 4})
    s.append_data(small)
    s.append_data(big)  # a larger second chunk: variable chunk sizes from here on
    done = threading.Event()
    seen = set()

    def writer():
        try:
            for k in range(300):
                s.update_data(0, big if k % 2 == 0 else small)
        finally:
            done.set()

    def reader():
        while not done.is_set():
            got = np.frombuffer(s.decompress_chunk(0), dtype="i4")
            assert np.array_equal(got, small) or np.array_equal(got, big), got.size
            seen.add(got.size)

    errors = run_threads([writer, reader, reader])
    assert not errors, errors
    assert seen, "the readers read nothing"


def test_composite_writes_are_serialised():
    """Fancy-index and oindex assignments read the bounding box, change a few items and write
    it back: from several threads at once, no thread's items are lost."""
    a = oxblosc.zeros((4, 64), dtype="i8", chunks=(2, 32), blocks=(1, 16))

    def setter(t):
        def run():
            for row in range(4):
                # The boxes of all threads overlap (columns t .. 63 - t).
                a[[row, row], [t, 63 - t]] = t + 1
                a.oindex[[row], [t + 8]] = t + 1

        return run

    errors = run_threads([setter(t) for t in range(8)])
    assert not errors, errors
    expect = np.zeros(64, dtype="i8")
    for t in range(8):
        expect[[t, 63 - t, t + 8]] = t + 1
    assert (a[:] == expect).all()


def test_parallel_compress2_from_many_threads_writes_the_one_thread_bytes():
    """Calls with 2-4 threads from several Python threads at once share the helper threads
    (a call whose helper is busy with another call does its blocks alone): every chunk is
    byte for byte the 1-thread chunk and decodes back."""
    rng = np.random.default_rng(5)
    cases = []
    for i in range(24):
        n = int(rng.integers(1, 400_000))
        base = np.cumsum(rng.normal(size=n)).astype(np.float32)
        if i % 3 == 0:
            base[rng.integers(0, n, n // 7)] = rng.normal(size=n // 7)  # some noise
        codec = [oxblosc.Codec.LZ4, oxblosc.Codec.BLOSCLZ, oxblosc.Codec.ZSTD][i % 3]
        blocksize = [0, 16384, 65536][i % 3]
        cases.append((base, codec, blocksize))
    want = [
        oxblosc.compress2(a, codec=c, clevel=5, typesize=4, nthreads=1, blocksize=b, filters=[oxblosc.Filter.SHUFFLE])
        for a, c, b in cases
    ]
    got = {}

    def worker(k):
        def run():
            for rep in range(3):
                for j in range(k, len(cases), 2):
                    a, c, b = cases[j]
                    nt = 2 + (j + rep) % 3
                    out = oxblosc.compress2(
                        a, codec=c, clevel=5, typesize=4, nthreads=nt, blocksize=b, filters=[oxblosc.Filter.SHUFFLE]
                    )
                    got.setdefault(j, []).append(out)

        return run

    assert run_threads([worker(k) for k in (0, 1, 0, 1, 0, 1)]) == []
    for j, outs in got.items():
        assert all(o == want[j] for o in outs), f"case {j}: a parallel chunk differs from the 1-thread one"
        back = np.frombuffer(oxblosc.decompress2(outs[-1], nthreads=2), dtype=np.float32)
        assert np.array_equal(back, cases[j][0])
    assert len(got) == len(cases)
