"""zlib clevel 1 after zlib blocks that did not fit their output, on the same thread: the next
chunk must be readable by oxblosc and python-blosc2 (session 9: the reused deflate state wrote
undecodable streams after a stream cut short)."""

import sys

import blosc2
import numpy as np
import oxblosc

from .helpers import shared_dir


def climate(nbytes):
    sys.path.insert(0, str(shared_dir() / "bench"))
    import _datasets

    return np.ascontiguousarray(_datasets.make("climate_f4", nbytes)).reshape(-1)[: nbytes // 4]


def test_zlib_chunks_after_blocks_cut_short_decode_in_both_libraries():
    a = climate(1 << 20)
    for blocksize in (64 << 10, 256 << 10):
        raw = oxblosc.CParams(
            codec=oxblosc.Codec.ZLIB, clevel=1, typesize=4, nthreads=1, blocksize=blocksize, filters=[]
        )
        c = oxblosc.compress2(a, cparams=raw)
        assert oxblosc.decompress2(c) == a.tobytes()
        cp = oxblosc.CParams(
            codec=oxblosc.Codec.ZLIB, clevel=1, typesize=4, nthreads=1, filters=[oxblosc.Filter.SHUFFLE]
        )
        c = oxblosc.compress2(a, cparams=cp)
        assert oxblosc.decompress2(c) == a.tobytes()
        assert blosc2.decompress2(c) == a.tobytes()
