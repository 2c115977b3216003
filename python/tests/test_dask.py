"""Dask: NDArray as a source (threads and a LocalCluster of processes), pickling by file
reference, to_oxblosc / dask.array.store from many threads and processes into one file, and
codecs inside distributed workers using one thread per call."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import oxblosc as ox
import pytest
from oxblosc.dask import to_oxblosc

distributed = pytest.importorskip("distributed")

DATA = np.cumsum(np.random.default_rng(5).normal(size=(240, 90)), axis=1).astype("f4")


@pytest.fixture(scope="module")
def client():
    """Two worker processes (spawned by distributed's nannies), two threads each."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster, distributed.Client(cluster) as c:  # fmt: skip
        yield c


def test_pickles_as_file_reference(tmp_path):
    path = str(tmp_path / "a.b2nd")
    a = ox.asarray(DATA, urlpath=path, mode="w", chunks=(40, 30))
    blob = pickle.dumps(a)
    assert len(blob) < 300 and path.encode() in blob  # a reference, not 86 KB of data
    b = pickle.loads(blob)
    assert b.urlpath == path and b.mode == "a"
    assert b.dparams.nthreads == b.cparams.nthreads == ox.nthreads  # main thread: the default
    np.testing.assert_array_equal(b[...], DATA)
    r = pickle.loads(pickle.dumps(ox.open(path)))
    assert r.mode == "r"
    mm = pickle.loads(pickle.dumps(ox.open(path, mmap_mode="r")))  # memory-mapped: mapped again
    assert mm.mmap_mode == "r" and len(pickle.dumps(mm)) < 300
    np.testing.assert_array_equal(mm[...], DATA)
    mem = ox.asarray(DATA, chunks=(40, 30))
    m = pickle.loads(pickle.dumps(mem))  # in memory: its bytes travel
    assert m.urlpath is None
    np.testing.assert_array_equal(m[...], DATA)


def test_from_arrays_copy_of_a_file_pickles_as_a_reference(tmp_path):
    """dask.array.from_array copies the array it is given (``x.copy()``): an unchanged copy of
    a file's array pickles as a reference to the file (a distributed graph used to carry the
    whole frame, 1.9 GB for the 4.3 GB benchmark array), a changed one as its bytes."""
    path = str(tmp_path / "c.b2nd")
    a = ox.asarray(DATA, urlpath=path, mode="w", chunks=(40, 30))
    for src in (a, ox.open(path), ox.open(path, mmap_mode="r")):
        c = src.copy()
        assert c.urlpath is None and len(pickle.dumps(c)) < 300
        r = pickle.loads(pickle.dumps(c))
        assert r.urlpath is None and r.mode == "a"  # a writable in-memory copy again
        np.testing.assert_array_equal(r[...], DATA)
        r[0, 0] = -1  # changing the unpickled copy leaves the file alone
        np.testing.assert_array_equal(ox.open(path)[...], DATA)
    x = da.from_array(ox.open(path), chunks=(40, 30))
    assert len(pickle.dumps(x)) < 20_000  # the graph holds a reference, not 80 KB of frame
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(x)).compute(scheduler="threads"), DATA)
    c = a.copy()
    c[1, 1] = 7  # a changed copy carries its bytes, the change included
    assert len(pickle.dumps(c)) > 10_000
    assert pickle.loads(pickle.dumps(c))[1, 1] == 7
    c = a.copy()
    a[2, 2] = 9  # the file changed after the copy: the copy's own bytes travel
    assert len(pickle.dumps(c)) > 10_000
    assert pickle.loads(pickle.dumps(c))[2, 2] == DATA[2, 2]


def test_from_array_threads(tmp_path):
    a = ox.asarray(DATA, urlpath=str(tmp_path / "a.b2nd"), mode="w", chunks=(40, 30))
    x = da.from_array(a, chunks=a.chunks)
    assert x.npartitions == 18
    np.testing.assert_allclose(x.sum().compute(scheduler="threads"), DATA.sum(dtype="f8"), rtol=1e-5)
    np.testing.assert_array_equal(x[17:203, 5:77].compute(scheduler="threads"), DATA[17:203, 5:77])
    assert dask.base.tokenize(a) == dask.base.tokenize(ox.open(a.urlpath))


def test_whole_chunk_reads_of_a_python_blosc2_file(tmp_path):
    """Dask asks for whole chunks; with blocks in C order (one row thick, full width) they
    decode straight into the output: values as python-blosc2 wrote them."""
    blosc2 = pytest.importorskip("blosc2")
    path = str(tmp_path / "b.b2nd")
    blosc2.asarray(DATA, urlpath=path, mode="w", chunks=(40, 30), blocks=(1, 30))
    a = ox.open(path)
    x = da.from_array(a, chunks=a.chunks)
    np.testing.assert_array_equal(x.compute(scheduler="threads"), DATA)
    np.testing.assert_array_equal(a[40:80, 60:90], DATA[40:80, 60:90])


def test_to_oxblosc_threads(tmp_path):
    x = da.from_array(DATA, chunks=(35, 50))  # irregular against the file's chunks
    out = to_oxblosc(x, str(tmp_path / "t.b2nd"), chunks=(40, 30), scheduler="threads")
    assert out.chunks == (40, 30)
    np.testing.assert_array_equal(out[...], DATA)


@pytest.mark.parametrize("contiguous", [True, False])
def test_to_oxblosc_edge_chunks_match_the_array_writer(tmp_path, contiguous):
    """Chunks written by to_oxblosc through the locked handle are the chunks of an array made
    in one go (edge chunks padded alike), contiguous or sparse; python-blosc2 reads them."""
    blosc2 = pytest.importorskip("blosc2")
    data = np.cumsum(np.random.default_rng(2).normal(size=(250, 95)), axis=0).astype("f4")
    cp = {"codec": ox.Codec.LZ4, "clevel": 5}
    out = to_oxblosc(da.from_array(data, chunks=(60, 50)), str(tmp_path / "d.b2nd"), chunks=(40, 30),
                     blocks=(10, 30), cparams=cp, contiguous=contiguous, scheduler="threads")  # fmt: skip
    ref = ox.asarray(data, chunks=(40, 30), blocks=(10, 30), cparams=cp)
    assert out.schunk.nchunks == ref.schunk.nchunks == 28
    for n in range(28):
        assert out.schunk.get_chunk(n) == ref.schunk.get_chunk(n), n
    np.testing.assert_array_equal(blosc2.open(str(tmp_path / "d.b2nd"))[...], data)


class _Recorder:
    """Stands in for an array's native object, counting the calls of the two-step write."""

    def __init__(self, native):
        self._n, self.encoded, self.committed = native, 0, 0

    def __getattr__(self, name):
        return getattr(self._n, name)

    def encode_chunk(self, sel, data):
        enc = self._n.encode_chunk(sel, data)
        self.encoded += enc is not None
        return enc

    def commit_encoded(self, enc):
        self.committed += 1
        return self._n.commit_encoded(enc)


@pytest.mark.parametrize("contiguous", [True, False])
def test_locked_whole_chunk_writes_compress_outside_the_lock(tmp_path, contiguous):
    """A locked handle writes a whole chunk (Dask's store tasks) in two steps: compressed with
    no lock held, then committed under the frame lock; other writes take the usual path. The
    chunks are those of an array written in one go."""
    path = str(tmp_path / "w.b2nd")
    cp = {"codec": ox.Codec.ZSTD, "clevel": 3}
    geo = {"chunks": (50, 40), "blocks": (10, 40), "cparams": cp}  # 5 x 3 chunks, edges on both axes
    ox.zeros(DATA.shape, DATA.dtype, urlpath=path, mode="w", contiguous=contiguous, **geo)
    w = ox.open(path, mode="a", locking=True)
    rec = w._n = _Recorder(w._n)
    whole = [np.s_[50:100, 40:80], np.s_[200:240, 80:90]]  # chunk 4, and edge chunk 14 (its part inside)
    for sl in whole:
        w[sl] = DATA[sl]
    assert (rec.encoded, rec.committed) == (2, 2)
    other = [np.s_[0:50, 0:40], np.s_[0:49, 40:80], np.s_[100:150, 0:80]]
    w[other[0]] = DATA[other[0]].astype("f8")  # another dtype: converted the usual way
    w[other[1]] = DATA[other[1]]  # part of a chunk
    w[other[2]] = DATA[other[2]]  # two chunks
    w[150:200, 0:40] = 1.5  # broadcast
    assert (rec.encoded, rec.committed) == (2, 2)
    want = np.zeros_like(DATA)
    for sl in whole + other:
        want[sl] = DATA[sl]
    want[150:200, 0:40] = 1.5
    got = ox.open(path)
    np.testing.assert_array_equal(got[...], want)
    ref = ox.asarray(want, **geo)
    for n in (4, 14):
        assert got.schunk.get_chunk(n) == ref.schunk.get_chunk(n), n


def test_locked_whole_chunk_write_after_another_handle_resized(tmp_path):
    """The chunk was compressed for the old shape: its commit writes nothing and the write
    goes the usual way on the new shape."""
    path = str(tmp_path / "r.b2nd")
    ox.zeros((80, 60), "f8", chunks=(40, 30), urlpath=path, mode="w")
    w = ox.open(path, mode="a", locking=True)
    other = ox.open(path, mode="a", locking=True)
    native = w._n
    stale = {}

    class ResizeFirst(_Recorder):
        def commit_encoded(self, enc):
            other.resize((80, 90))  # between compression and commit
            ok = super().commit_encoded(enc)
            stale["ok"] = ok
            return ok

    w._n = ResizeFirst(native)
    w[40:80, 30:60] = np.full((40, 30), 2.0)
    assert stale["ok"] is False
    got = ox.open(path)
    assert got.shape == (80, 90)
    want = np.zeros((80, 90))
    want[40:80, 30:60] = 2.0
    np.testing.assert_array_equal(got[...], want)


def test_processes_read_and_write_one_file(tmp_path, client):
    # reading: workers in other processes reopen the file from the pickled reference
    a = ox.asarray(DATA, urlpath=str(tmp_path / "src.b2nd"), mode="w", chunks=(40, 30))
    x = da.from_array(a, chunks=a.chunks)
    np.testing.assert_allclose(client.compute(x.sum()).result(), DATA.sum(dtype="f8"), rtol=1e-5)
    # writing: 18 chunk tasks on 2 processes x 2 threads, one locked file, nothing lost
    out = to_oxblosc(x * 2, str(tmp_path / "dst.b2nd"))
    np.testing.assert_array_equal(out[...], DATA * 2)
    # dask.array.store into a locked target (sparse frame this time)
    target = ox.zeros(DATA.shape, DATA.dtype, chunks=(40, 30), urlpath=str(tmp_path / "dir.b2nd"), contiguous=False)
    locked = ox.open(target.urlpath, mode="a", locking=True)
    da.store(x + 1, locked, lock=False)
    np.testing.assert_array_equal(ox.open(target.urlpath)[...], DATA + 1)
    assert len(list(Path(target.urlpath).glob("*.chunk"))) == 18


def _codec_threads_in_worker() -> tuple[int, int]:
    """Inside a worker task: the default thread count and the oxblosc pool threads alive
    after encoding 8 MB (none: the call ran on the task's own thread)."""
    from oxblosc.numcodecs import Blosc, call_nthreads  # noqa: PLC0415

    Blosc().encode(np.zeros(1 << 20))
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            names.append(Path(f"/proc/self/task/{t}/comm").read_text())
        except OSError:
            pass
    return call_nthreads(None), sum(n.startswith("oxblosc-") for n in names)


def test_codecs_use_one_thread_in_worker_tasks(client):
    futures = [client.submit(_codec_threads_in_worker, pure=False) for _ in range(4)]
    assert [f.result() for f in futures] == [(1, 0)] * 4


def _array_threads_in_worker(a) -> tuple[int, int]:
    """Inside a worker task: the thread counts of an array that arrived pickled."""
    return a.dparams.nthreads, a.cparams.nthreads


def test_arrays_reopened_in_workers_use_one_thread(tmp_path, client):
    """An array shipped to a worker process is reopened there with one thread for its own
    reads and writes (the worker runs a task per thread already), like the codecs."""
    a = ox.asarray(DATA, urlpath=str(tmp_path / "t.b2nd"), mode="w", chunks=(40, 30))
    assert a.dparams.nthreads == ox.nthreads
    futures = [client.submit(_array_threads_in_worker, a, pure=False) for _ in range(3)]
    assert [f.result() for f in futures] == [(1, 1)] * 3


def _fails_part_way(block, block_info=None):
    """A chunk task that raises for one chunk late in the graph, after others were written."""
    if block_info[0]["chunk-location"] == (4, 2):
        raise RuntimeError("a task fails part way")
    return block * 3


@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "sparse"])
def test_to_oxblosc_replaces_the_old_array_only_on_success(tmp_path, client, contiguous):
    blosc2 = pytest.importorskip("blosc2")
    from .test_replace_on_failure import snapshot  # noqa: PLC0415

    p = str(tmp_path / "old.b2nd")
    old = np.arange(DATA.size, dtype=np.int64).reshape(DATA.shape)
    ox.asarray(old, urlpath=p, chunks=(60, 45), contiguous=contiguous)
    before = snapshot(p)
    x = da.from_array(DATA, chunks=(40, 30))
    # 2 worker processes write the new array; one of its 18 chunk tasks raises
    with pytest.raises(RuntimeError, match="part way"):
        to_oxblosc(x.map_blocks(_fails_part_way, dtype=DATA.dtype), p, contiguous=contiguous)
    assert snapshot(p) == before, "the old array changed"
    np.testing.assert_array_equal(blosc2.open(p)[:], old)
    # (a task still running when the graph failed may recreate the temporary's lock file)
    assert [n for n in os.listdir(tmp_path) if not n.endswith(".b2lock")] == ["old.b2nd"]
    # succeeding, the new array replaces the old one (python-blosc2 reads it)
    out = to_oxblosc(x * 3, p, contiguous=contiguous)
    assert out.urlpath == p and out.chunks == (40, 30)
    np.testing.assert_array_equal(blosc2.open(p)[:], DATA * 3)
    assert [n for n in os.listdir(tmp_path) if not n.endswith(".b2lock")] == ["old.b2nd"]
    # compute=False: the Delayed writes, then publishes
    to_oxblosc(x + 1, p, contiguous=contiguous, compute=False).compute()
    np.testing.assert_array_equal(blosc2.open(p)[:], DATA + 1)
    assert sorted(os.listdir(tmp_path)) == ["old.b2nd"]


def test_to_oxblosc_from_processes_leaves_no_dead_space(tmp_path, client):
    # locked writers in 2 processes took turns; the published file holds its chunks, its
    # index and no reserve left before the index (a file size python-blosc2 agrees with)
    blosc2 = pytest.importorskip("blosc2")
    x = da.from_array(np.repeat(DATA, 20, axis=0), chunks=(100, 90))  # 1.7 MB, 48 tasks
    p = str(tmp_path / "packed.b2nd")
    to_oxblosc(x, p, chunks=(100, 90), cparams={"clevel": 0})
    s = ox.open(p).schunk
    live = sum(s._n.chunk_summary(i)[1] for i in range(s.nchunks))
    assert blosc2.open(p).schunk.cbytes == s.cbytes == live
    assert os.path.getsize(p) < live + 4096
    np.testing.assert_array_equal(blosc2.open(p)[:], np.repeat(DATA, 20, axis=0))


def test_to_oxblosc_sweeps_what_killed_writers_left(tmp_path):
    """A process killed during ``to_oxblosc`` leaves its temporary array (and, its writers
    being locked, the temporary's ``.b2lock``) beside ``urlpath``; the next ``to_oxblosc`` at
    that path removes them once their process is gone and they are ten minutes old. A live
    process's temporary, a recent one and other names stay."""
    import subprocess
    import time

    p = str(tmp_path / "x.b2nd")
    child = subprocess.Popen(["true"])
    child.wait()
    dead, alive = child.pid, os.getpid()
    ox.zeros((4, 4), np.int32, urlpath=p + f".oxtmp-{dead}-1")  # a whole staged array
    stale = [f"x.b2nd.oxtmp-{dead}-1", f"x.b2nd.oxtmp-{dead}-1.b2lock"]
    kept = [f"x.b2nd.oxtmp-{dead}-2.b2lock", f"x.b2nd.oxtmp-{alive}-3", "x.b2nd.oxtmp-notes"]
    for name in stale[1:] + kept:
        (tmp_path / name).write_bytes(b"left")
    hour_ago = time.time() - 3600
    for name in stale + kept[1:]:
        os.utime(tmp_path / name, (hour_ago, hour_ago))  # kept[0]: recent
    x = da.arange(64, dtype=np.int32, chunks=16).reshape(8, 8).rechunk((4, 8))
    to_oxblosc(x, p, scheduler="threads")
    assert sorted(os.listdir(tmp_path)) == sorted(["x.b2nd", *kept])
    np.testing.assert_array_equal(ox.open(p)[:], np.arange(64, dtype=np.int32).reshape(8, 8))


def test_to_oxblosc_refusals_are_clear_and_leave_nothing(tmp_path):
    x = da.from_array(DATA, chunks=(60, 45))
    # unknown chunk sizes (boolean indexing): dask's own advice, not "cannot convert float NaN"
    with pytest.raises(ValueError, match="unknown chunk sizes.*compute_chunk_sizes"):
        to_oxblosc(x[x > 0], str(tmp_path / "u.b2nd"), scheduler="threads")
    # a missing directory is named, not a temporary's temporary
    with pytest.raises(FileNotFoundError, match="nodir") as info:
        to_oxblosc(x, str(tmp_path / "nodir" / "a.b2nd"), scheduler="threads")
    assert "oxtmp" not in str(info.value)
    # a path the publish refuses (a directory that is not a sparse frame): the written
    # temporary, a whole array, is removed (nothing would ever sweep it: it sits inside)
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a sparse frame"):
        to_oxblosc(x, str(tmp_path / "adir") + "/", scheduler="threads")
    assert sorted(os.listdir(tmp_path / "adir")) == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["adir"]
