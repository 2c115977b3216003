"""Random sequences of super-chunk edits on a real file, checked after every step against a
plain byte model *and* against python-blosc2 opening the same file.

A user mixes both libraries on one file: we write, python-blosc2 reads; python-blosc2 writes
(appends, updates, vlmeta) between our sessions, we reopen and go on. Hypothesis drives the
sequence (appends, inserts, updates, deletes, slice writes across chunk borders, vlmeta,
reopening, the other library's turn) in contiguous frames and sparse directories; any
difference from the model, in either library's view, fails with the shrunk sequence.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import blosc2
import numpy as np
import oxblosc
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from .helpers import file_size_limit

ITEMS = 256  # int32 items per chunk
CHUNK = ITEMS * 4
EDITS = ["append", "insert", "update", "delete", "slice"]


def payload(seed: int, nitems: int = ITEMS) -> bytes:
    """Chunk contents of three kinds: compressible ramps, random noise, runs of one value."""
    rng = np.random.default_rng(seed)
    kind = seed % 3
    if kind == 0:
        a = np.arange(seed, seed + nitems, dtype=np.int32)
    elif kind == 1:
        a = rng.integers(-(2**31), 2**31 - 1, nitems, dtype=np.int32)
    else:
        a = np.full(nitems, seed, dtype=np.int32)
    return a.tobytes()


class SuperChunkVsBlosc2(RuleBasedStateMachine):
    """The model is `self.chunks` (bytes per chunk) and `self.vlmeta`."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ox-stateful-"))
        self.ours = None

    @initialize(contiguous=st.booleans(), codec=st.sampled_from(["LZ4", "ZSTD", "BLOSCLZ"]))
    def create(self, contiguous: bool, codec: str) -> None:
        self.contiguous = contiguous
        self.path = str(self.dir / ("f.b2frame" if contiguous else "d.b2frame"))
        cparams = {"codec": getattr(oxblosc.Codec, codec), "clevel": 5, "typesize": 4}
        self.ours = oxblosc.SChunk(chunksize=CHUNK, urlpath=self.path, contiguous=contiguous, cparams=cparams, mode="w")
        self.chunks: list[bytes] = []
        self.vlmeta: dict[str, object] = {}

    # --- our edits -------------------------------------------------------------------------
    def edit(self, op: str, data, seed: int) -> None:
        """One edit on our handle, then on the model (so a raising edit leaves the model)."""
        n = len(self.chunks)
        if op == "append" or n == 0:
            assert self.ours.append_data(payload(seed)) == n + 1
            self.chunks.append(payload(seed))
        elif op == "insert":
            pos = data.draw(st.integers(0, n))
            self.ours.insert_data(pos, payload(seed), copy=True)
            self.chunks.insert(pos, payload(seed))
        elif op == "update":
            pos = data.draw(st.integers(0, n - 1))
            self.ours.update_data(pos, payload(seed), copy=True)
            self.chunks[pos] = payload(seed)
        elif op == "delete":
            pos = data.draw(st.integers(0, n - 1))
            assert self.ours.delete_chunk(pos) == n - 1
            del self.chunks[pos]
        else:  # a run of items that may cross chunk borders (``schunk[a:b] = ...``)
            start = data.draw(st.integers(0, n * ITEMS - 1))
            stop = data.draw(st.integers(start + 1, min(n * ITEMS, start + 3 * ITEMS)))
            new = payload(seed, stop - start)
            self.ours[start:stop] = np.frombuffer(new, dtype=np.int32)
            flat = bytearray(b"".join(self.chunks))
            flat[start * 4 : stop * 4] = new
            self.chunks = [bytes(flat[i : i + CHUNK]) for i in range(0, len(flat), CHUNK)]

    @rule(data=st.data(), op=st.sampled_from(EDITS), seed=st.integers(0, 10_000))
    def edit_rule(self, data, op: str, seed: int) -> None:
        self.edit(op, data, seed)

    @rule(data=st.data(), op=st.sampled_from([*EDITS, "vlmeta"]), seed=st.integers(0, 10_000))
    def edit_under_file_size_limit(self, data, op: str, seed: int) -> None:
        """RLIMIT_FSIZE somewhere below the frame's size (writes past it fail with EFBIG): the
        edit happens completely or raises naming the error and changes nothing, in the file
        and in our handle, which stays usable (the invariant checks both libraries' views)."""
        files = [self.path] if self.contiguous else [os.path.join(self.path, f) for f in os.listdir(self.path)]
        limit = data.draw(st.integers(0, max(os.path.getsize(f) for f in files)))
        before = (list(self.chunks), dict(self.vlmeta))
        try:
            with file_size_limit(limit):
                if op == "vlmeta":
                    self.ours.vlmeta["a"] = seed
                    self.vlmeta["a"] = seed
                else:
                    self.edit(op, data, seed)
        except OSError as e:
            assert "File too large" in str(e), e
            assert (self.chunks, self.vlmeta) == before

    @rule(key=st.sampled_from(["a", "b", "unit"]), value=st.one_of(st.integers(-5, 5), st.text(max_size=4)))
    def set_vlmeta(self, key: str, value) -> None:
        self.ours.vlmeta[key] = value
        self.vlmeta[key] = value

    @precondition(lambda self: self.vlmeta)
    @rule(data=st.data())
    def del_vlmeta(self, data) -> None:
        key = data.draw(st.sampled_from(sorted(self.vlmeta)))
        del self.ours.vlmeta[key]
        del self.vlmeta[key]

    @rule()
    def reopen(self) -> None:
        del self.ours
        self.ours = oxblosc.open(self.path, mode="a")

    # --- python-blosc2's turn on the same file -------------------------------------------------
    @rule(seed=st.integers(0, 10_000), what=st.sampled_from(["append", "update", "vlmeta", "delete"]))
    def blosc2_edits(self, seed: int, what: str) -> None:
        del self.ours
        theirs = blosc2.open(self.path, mode="a")
        if what == "append" or not self.chunks:
            theirs.append_data(payload(seed))
            self.chunks.append(payload(seed))
        elif what == "update":
            pos = seed % len(self.chunks)
            theirs.update_data(pos, payload(seed), copy=True)
            self.chunks[pos] = payload(seed)
        elif what == "delete":
            pos = seed % len(self.chunks)
            theirs.delete_chunk(pos)
            del self.chunks[pos]
        else:
            theirs.vlmeta["from_b2"] = seed
            self.vlmeta["from_b2"] = seed
        del theirs
        self.ours = oxblosc.open(self.path, mode="a")

    # --- both libraries see the model after every step ------------------------------------------
    @invariant()
    def both_views_match_the_model(self) -> None:
        if self.ours is None:
            return
        want = b"".join(self.chunks)
        assert self.ours.nchunks == len(self.chunks)
        assert self.ours.nbytes == len(want)
        if self.chunks:
            assert bytes(self.ours.get_slice(0, len(want) // 4)) == want
            last = len(self.chunks) - 1
            assert self.ours.decompress_chunk(last) == self.chunks[last]
        assert dict(self.ours.vlmeta.getall()) == self.vlmeta
        theirs = blosc2.open(self.path, mode="r")
        assert theirs.nchunks == len(self.chunks)
        if self.chunks:
            assert bytes(theirs.get_slice(0, len(want) // 4)) == want
        assert {k: theirs.vlmeta[k] for k in theirs.vlmeta.getall()} == self.vlmeta

    def teardown(self) -> None:
        self.ours = None
        shutil.rmtree(self.dir, ignore_errors=True)


SuperChunkVsBlosc2.TestCase.settings = settings(max_examples=30, stateful_step_count=15, deadline=None)
test_schunk_edits_agree_with_model_and_blosc2 = SuperChunkVsBlosc2.TestCase


def test_sparse_frame_after_deletes_and_shrink_opens_in_blosc2(tmp_path):
    """python-blosc2 refuses sparse frames whose chunk file ids pass its bound (id + 32 >
    cbytes), even ones it wrote itself; ours compact the ids so it opens them."""
    path = str(tmp_path / "s.b2frame")
    s = oxblosc.SChunk(chunksize=8, urlpath=path, contiguous=False, cparams={"typesize": 2}, mode="w")
    for k in range(60):
        s.append_data(np.full(4, k, "i2"))
    for _ in range(58):
        s.delete_chunk(0)
    del s
    assert np.frombuffer(blosc2.open(path)[:], "i2").tolist() == [58] * 4 + [59] * 4
    # An n-d shrink rewrites every chunk in one change.
    apath = str(tmp_path / "a.b2nd")
    a = oxblosc.asarray(np.arange(13 * 15, dtype="i2").reshape(13, 15), urlpath=apath, contiguous=False, chunks=(2, 2))
    a.resize((2, 3))
    np.testing.assert_array_equal(blosc2.open(apath)[...], [[0, 1, 2], [15, 16, 17]])


def test_append_after_blosc2_emptied_the_frame(tmp_path):
    """python-blosc2 deleting the last chunk leaves a header claiming the old cbytes with the
    trailer right after the header; appending to it must not place chunks over that (the
    appended chunk and the new index overlapped: 'chunk cbytes 308 does not fit')."""
    path = str(tmp_path / "z.b2frame")
    cparams = {"codec": oxblosc.Codec.LZ4, "clevel": 5, "typesize": 4}
    with oxblosc.SChunk(chunksize=CHUNK, urlpath=path, contiguous=True, cparams=cparams, mode="w"):
        pass
    for edit in ("append", "delete"):
        theirs = blosc2.open(path, mode="a")
        theirs.append_data(payload(0)) if edit == "append" else theirs.delete_chunk(0)
        del theirs
        with oxblosc.open(path, mode="a"):
            pass
    ours = oxblosc.open(path, mode="a")
    ours.append_data(payload(0))
    ours.append_data(payload(6))
    assert bytes(ours.get_slice(0, 2 * ITEMS)) == payload(0) + payload(6)
    del ours
    assert bytes(blosc2.open(path).get_slice(0, 2 * ITEMS)) == payload(0) + payload(6)


KNOWN_SHORT_CUT = pytest.mark.xfail(
    strict=True,
    reason="known limitation (docs/architecture.md, L2 durability): changed chunks get fresh file "
    "ids; C-Blosc2 refuses a sparse frame with an id + 32 > cbytes, which python-blosc2's own "
    "cut of a frame of tiny chunks can produce. Renumbering on close fixed it but gave readers "
    "opened before the close another chunk's bytes (test_reader_opened_before_writer_closes...)",
)


@pytest.mark.parametrize(
    "edit",
    [pytest.param(e, marks=KNOWN_SHORT_CUT) for e in ["update first", "insert first", "update all"]] + ["delete first"],
)
def test_blosc2_can_cut_our_sparse_frame_short_after_edits(tmp_path, edit):
    """Changed chunks get fresh file ids (never overwritten in place). C-Blosc2 refuses sparse
    frames with a chunk file id + 32 > cbytes, so when python-blosc2 cuts such a frame of tiny
    chunks down to its first chunk (deleting from the end, or `resize`), it can no longer open
    its own result. Known, rare with real chunk sizes (needs id + 32 > the kept chunks' bytes)."""
    path = str(tmp_path / "d.b2frame")
    items = np.arange(2, dtype=np.int32)
    with oxblosc.SChunk(chunksize=8, urlpath=path, contiguous=False, cparams={"typesize": 4}, mode="w") as s:
        for k in range(40):
            s.append_data((items + 10 * k).tobytes())
    model = [(items + 10 * k).tobytes() for k in range(40)]
    s = oxblosc.open(path, mode="a")
    new = (items - 7).tobytes()
    if edit == "update first":
        s.update_data(0, new, copy=True)
        model[0] = new
    elif edit == "insert first":
        s.insert_data(0, new, copy=True)
        model.insert(0, new)
    elif edit == "delete first":
        s.delete_chunk(0)
        del model[0]
    else:
        for k in range(len(model)):
            s.update_data(k, new, copy=True)
            model[k] = new
    del s
    theirs = blosc2.open(path, mode="a")
    while theirs.nchunks > 1:
        theirs.delete_chunk(theirs.nchunks - 1)
    del theirs
    assert blosc2.open(path).decompress_chunk(0) == model[0]
    assert oxblosc.open(path).decompress_chunk(0) == model[0]


@KNOWN_SHORT_CUT
def test_blosc2_can_resize_our_sparse_array_after_an_update(tmp_path):
    """The same through b2nd: an update of chunk 0, then python-blosc2's resize to one chunk."""
    path = str(tmp_path / "d.b2nd")
    a = oxblosc.asarray(np.arange(17, dtype="i2"), urlpath=path, contiguous=False, chunks=(2,), blocks=(1,), mode="w")
    a[0:1] = np.array([5], dtype="i2")
    del a
    b = blosc2.open(path, mode="a")
    b.resize((1,))
    del b
    np.testing.assert_array_equal(blosc2.open(path)[:], [5])
    np.testing.assert_array_equal(oxblosc.open(path)[:], [5])


@pytest.mark.parametrize("contiguous", [True, False])
def test_reader_opened_before_writer_closes_reads_the_right_chunks(tmp_path, contiguous):
    """A reader opened while a writer is still open (Dask's `to_oxblosc` returns one) keeps a
    view of the committed state; the writer's close must not move chunk files under it (a
    close-time renumbering of sparse ids once gave it another chunk's bytes)."""
    path = str(tmp_path / ("f.b2frame" if contiguous else "d.b2frame"))
    items = np.arange(2, dtype=np.int32)
    with oxblosc.SChunk(chunksize=8, urlpath=path, contiguous=contiguous, cparams={"typesize": 4}, mode="w") as s:
        for k in range(12):
            s.append_data((items + 10 * k).tobytes())
    model = [(items + 10 * k).tobytes() for k in range(12)]
    w = oxblosc.open(path, mode="a")
    for k in (0, 5, 3):
        model[k] = (items - k - 100).tobytes()
        w.update_data(k, model[k], copy=True)
    r = oxblosc.open(path, mode="r")
    del w
    assert [r.decompress_chunk(k) for k in range(12)] == model
    assert [blosc2.open(path).decompress_chunk(k) for k in range(12)] == model
