"""python-blosc2's Python block callbacks on SChunk (prefilter, postfilter, filler): the same
data as the real python-blosc2 wheel gives, per-block offsets, and failed callbacks that leave
the super-chunk as it was."""

import blosc2
import numpy as np
import oxblosc
import pytest

N = 1000


def _pair(**cp):
    """The same empty super-chunk in python-blosc2 and in oxblosc (int32 items, 2 chunks of N/2)."""
    out = []
    for lib in (blosc2, oxblosc):
        out.append(
            lib.SChunk(
                chunksize=N // 2 * 4,
                cparams=lib.CParams(typesize=4, nthreads=1, **cp),
                dparams=lib.DParams(nthreads=1),
            )
        )
    return out


def _ints(s, lo=None, hi=None):
    return np.frombuffer(s[lo:hi], dtype=np.int32)


@pytest.mark.parametrize("data", ["zeros", "arange"])
@pytest.mark.parametrize("blocksize", [400, 1000])
def test_postfilter_same_reads_as_python_blosc2(data, blocksize):
    values = np.zeros(N, np.int32) if data == "zeros" else np.arange(N, dtype=np.int32)
    results = []
    for s in _pair(blocksize=blocksize):

        @s.postfilter(np.int32)
        def add_offset(inp, out, offset):
            out[:] = inp + offset

        s.append_data(values[: N // 2])
        s.append_data(values[N // 2 :])
        chunk1 = np.empty(N // 2, np.int32)
        s.decompress_chunk(1, chunk1)
        results.append((_ints(s), _ints(s, 150, 620), np.frombuffer(s.decompress_chunk(0), np.int32), chunk1))
        s.remove_postfilter("add_offset")
        np.testing.assert_array_equal(_ints(s), values)  # stored data never changed
    for theirs, ours in zip(*results, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    # Offsets are block starts: with 400-byte blocks, item 100 is a block's first item.
    assert results[1][0][100] == values[100] + (100 if blocksize == 400 else 0)


def test_postfilter_with_automatic_blocks_uses_each_chunks_blocks():
    s = oxblosc.SChunk(chunksize=1 << 20, cparams={"typesize": 4, "clevel": 5})
    values = np.arange(3 * (1 << 18), dtype=np.int32)
    s.append_data(values[: 1 << 18])
    s.append_data(values[1 << 18 :])

    @s.postfilter(np.int32, np.float32)
    def offsets(inp, out, offset):
        out[:] = offset

    got = np.frombuffer(s[:], np.float32)
    want = np.empty(values.size, np.float32)
    first = 0
    for i in range(s.nchunks):
        info = oxblosc.chunk_info(s.get_chunk(i))
        per_block = info["blocksize"] // 4
        n = info["nbytes"] // 4
        want[first : first + n] = first + np.arange(n) // per_block * per_block
        first += n
    np.testing.assert_array_equal(got, want)
    assert len(set(got[: 1 << 18].tolist())) > 1  # several blocks per chunk


def test_prefilter_writes_what_python_blosc2_writes():
    written = []
    for s in _pair(blocksize=400):

        @s.prefilter(np.int32, np.float32)
        def scale(inp, out, offset):
            out[:] = inp * 2 + offset

        s.append_data(np.ones(N // 2, np.int32))
        s[N // 2 : N] = np.arange(N // 2, dtype=np.int32)
        written.append(np.frombuffer(s[:], np.float32))
        s.remove_prefilter("scale")
        s.append_data(np.ones(N // 2, np.int32))  # no longer filtered
        assert np.frombuffer(s.decompress_chunk(2), np.int32).tolist() == [1] * (N // 2)
    np.testing.assert_array_equal(written[1], written[0])


def test_prefilter_on_insert_and_update_and_file_read_by_python_blosc2(tmp_path):
    path = str(tmp_path / "pre.b2frame")
    s = oxblosc.SChunk(chunksize=N // 2 * 4, urlpath=path, mode="w", cparams={"typesize": 4, "blocksize": 400})

    @s.prefilter(np.int32)
    def plus_offset(inp, out, offset):
        out[:] = inp + offset

    zeros = np.zeros(N // 2, np.int32)
    s.append_data(zeros)
    s.append_data(zeros)
    s.update_data(1, zeros + 7)
    s.insert_data(0, zeros)
    got = np.frombuffer(blosc2.open(path)[:], np.int32)
    block_starts = np.arange(N // 2) // 100 * 100
    np.testing.assert_array_equal(got[: N // 2], block_starts)
    np.testing.assert_array_equal(got[N // 2 : N], block_starts)  # the old chunk 0 moved, unchanged
    np.testing.assert_array_equal(got[N:], 7 + N // 2 + block_starts)
    with pytest.raises(NotImplementedError, match="appended"):
        s[0:10] = np.zeros(10, np.int32)


def test_filler_same_data_as_python_blosc2():
    a = np.arange(N, dtype=np.int32)
    results = []
    for lib in (blosc2, oxblosc):
        src = lib.SChunk(chunksize=300 * 8, data=np.arange(N, dtype=np.float64), cparams={"typesize": 8})
        s = lib.SChunk(chunksize=500 * 8, cparams=lib.CParams(typesize=8, nthreads=1, blocksize=800))

        @s.filler(((a, np.int32), (src, np.float64), (2.5, np.float32)), np.float64)
        def fill(inputs, output, offset):
            output[:] = inputs[0] + inputs[1] + offset + inputs[2]

        results.append((s.nchunks, np.frombuffer(s[:], np.float64)))
    assert results[0][0] == results[1][0] == 2
    np.testing.assert_array_equal(results[1][1], results[0][1])


def test_filler_checks_and_a_failing_filler_leaves_the_file_as_it_was(tmp_path):
    path = str(tmp_path / "fill.b2frame")
    s = oxblosc.SChunk(chunksize=100 * 8, urlpath=path, mode="w", cparams={"typesize": 8})
    s.append_data(np.arange(100, dtype=np.float64))
    with pytest.raises(ValueError, match="same number of items"):
        s.filler(((np.arange(5), np.int64), (np.arange(6), np.int64)), np.float64)
    with pytest.raises(ValueError, match="typesize"):
        s.filler(((np.arange(5), np.int32),), np.int32)

    def failing(inputs, output, offset):
        if offset >= 250:
            raise ZeroDivisionError("boom")
        output[:] = inputs[0]

    with pytest.raises(RuntimeError, match="filler 'failing' raised at item offset 300: boom"):
        s.filler(((np.arange(400.0), np.float64),), np.float64)(failing)
    assert s.nchunks == 1
    reopened = oxblosc.open(path)
    assert reopened.nchunks == 1
    np.testing.assert_array_equal(np.frombuffer(reopened[:], np.float64), np.arange(100.0))


def test_failing_callbacks_change_nothing():
    s = oxblosc.SChunk(chunksize=400, cparams={"typesize": 4})
    s.append_data(np.arange(100, dtype=np.int32))

    @s.prefilter(np.int32)
    def bad_pre(inp, out, offset):
        raise ValueError("no")

    with pytest.raises(RuntimeError, match="prefilter 'bad_pre' raised at item offset 100: no"):
        s.append_data(np.arange(100, dtype=np.int32))
    assert s.nchunks == 1
    s.remove_prefilter("bad_pre")

    @s.postfilter(np.int32)
    def bad_post(inp, out, offset):
        raise ValueError("no")

    with pytest.raises(RuntimeError, match="postfilter 'bad_post' raised at item offset 0: no"):
        s[:]
    s.remove_postfilter("bad_post")
    np.testing.assert_array_equal(np.frombuffer(s[:], np.int32), np.arange(100))
    with pytest.raises(ValueError, match="same item size"):
        s.postfilter(np.int32, np.float64)


def test_callbacks_on_a_super_chunk_with_the_per_chunk_tuner():
    """Chunks built from callbacks use the super-chunk's fixed parameters (the tuner belongs to
    the engine's write path); plain appends keep being tuned."""
    s = oxblosc.SChunk(chunksize=4000, cparams=oxblosc.CParams(typesize=4, tuner=oxblosc.Tuner.BTUNE))

    @s.prefilter(np.int32)
    def double(inp, out, offset):
        out[:] = inp * 2

    s.append_data(np.arange(1000, dtype=np.int32))
    s.remove_prefilter("double")

    @s.filler(((np.arange(1000, dtype=np.int32), np.int32),), np.int32)
    def copy(inputs, output, offset):
        output[:] = inputs[0]

    np.testing.assert_array_equal(_ints(s), np.concatenate([np.arange(1000) * 2, np.arange(1000)]))
