"""Random sequences of super-chunk edits on a real file, checked after every step against a
plain byte model *and* against python-blosc2 opening the same file.

A user mixes both libraries on one file: we write, python-blosc2 reads; python-blosc2 writes
(appends, updates, vlmeta) between our sessions, we reopen and go on. Hypothesis drives the
sequence (appends, inserts, updates, deletes, slice writes across chunk borders, vlmeta,
reopening, the other library's turn) in contiguous frames and sparse directories; any
difference from the model, in either library's view, fails with the shrunk sequence.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import blosc2
import numpy as np
import oxblosc
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

ITEMS = 256  # int32 items per chunk
CHUNK = ITEMS * 4


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
    @rule(seed=st.integers(0, 10_000))
    def append(self, seed: int) -> None:
        assert self.ours.append_data(payload(seed)) == len(self.chunks) + 1
        self.chunks.append(payload(seed))

    @precondition(lambda self: self.chunks)
    @rule(data=st.data(), seed=st.integers(0, 10_000))
    def insert(self, data, seed: int) -> None:
        pos = data.draw(st.integers(0, len(self.chunks)))
        self.ours.insert_data(pos, payload(seed), copy=True)
        self.chunks.insert(pos, payload(seed))

    @precondition(lambda self: self.chunks)
    @rule(data=st.data(), seed=st.integers(0, 10_000))
    def update(self, data, seed: int) -> None:
        pos = data.draw(st.integers(0, len(self.chunks) - 1))
        self.ours.update_data(pos, payload(seed), copy=True)
        self.chunks[pos] = payload(seed)

    @precondition(lambda self: self.chunks)
    @rule(data=st.data())
    def delete(self, data) -> None:
        pos = data.draw(st.integers(0, len(self.chunks) - 1))
        assert self.ours.delete_chunk(pos) == len(self.chunks) - 1
        del self.chunks[pos]

    @precondition(lambda self: self.chunks)
    @rule(data=st.data(), seed=st.integers(0, 10_000))
    def write_slice(self, data, seed: int) -> None:
        """A run of items that may cross chunk borders (``schunk[a:b] = ...``)."""
        n = len(self.chunks) * ITEMS
        start = data.draw(st.integers(0, n - 1))
        stop = data.draw(st.integers(start + 1, min(n, start + 3 * ITEMS)))
        new = payload(seed, stop - start)
        self.ours[start:stop] = np.frombuffer(new, dtype=np.int32)
        flat = bytearray(b"".join(self.chunks))
        flat[start * 4 : stop * 4] = new
        self.chunks = [bytes(flat[i : i + CHUNK]) for i in range(0, len(flat), CHUNK)]

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
