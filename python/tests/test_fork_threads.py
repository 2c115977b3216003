"""Codecs in processes forked after first use, and the per-call thread count."""

from __future__ import annotations

import multiprocessing
import threading

import numcodecs
import numpy as np
import oxblosc as ox
import pytest
from oxblosc.numcodecs import Blosc, Blosc2, call_nthreads

DATA = np.linspace(0, 1, 1_000_000)


def _round_trip_in_child(_: int) -> bool:
    """Compress/decompress with two threads: the thread pool inherited from the parent has
    no threads in the child (this hung before pools were made per process)."""
    c = ox.compress2(DATA, typesize=8, nthreads=2, blocksize=65536)
    ok = np.array_equal(np.frombuffer(ox.decompress2(c, nthreads=2), "f8"), DATA)
    for codec in (Blosc(nthreads=2), Blosc2(nthreads=2)):
        ok &= np.array_equal(np.frombuffer(codec.decode(codec.encode(DATA)), "f8"), DATA)
    return ok


def test_codecs_work_in_processes_forked_after_use():
    assert _round_trip_in_child(0)  # the parent's 2-thread pool now exists
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        result = pool.map_async(_round_trip_in_child, range(4))
        result.wait(60)
        assert result.ready(), "a forked child hung in the inherited thread pool"
        assert all(result.get())


def test_zarr_v2_chunks_from_forked_workers(tmp_path):
    """numcodecs' registry handing out our Blosc, used in forked workers."""
    assert Blosc().decode(Blosc(nthreads=2).encode(DATA))
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        encoded = pool.map_async(Blosc(cname="zstd", nthreads=2).encode, [DATA[i::4] for i in range(4)])
        encoded.wait(60)
        assert encoded.ready()
    for i, enc in enumerate(encoded.get()):
        assert np.array_equal(np.frombuffer(numcodecs.Blosc().decode(enc), "f8"), DATA[i::4])


def test_call_nthreads_default_is_one_off_the_main_thread():
    assert call_nthreads(None) == ox.nthreads
    assert call_nthreads(3) == 3
    seen = []
    t = threading.Thread(target=lambda: seen.append((call_nthreads(None), call_nthreads(2))))
    t.start()
    t.join()
    assert seen == [(1, 2)]


@pytest.mark.parametrize("cls", [Blosc, Blosc2])
def test_nthreads_does_not_change_bytes(cls):
    a = np.cumsum(np.random.default_rng(1).normal(size=500_000))
    assert bytes(cls(nthreads=1).encode(a)) == bytes(cls(nthreads=4).encode(a))
