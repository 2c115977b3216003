"""Reads that decode whole chunks straight into the output (chunks spanning the inner axes,
blocks padded on the split axis: python-blosc2's automatic (1, 721, 1440) / (1, 45, 1440)
has that layout) give the same values as NumPy, on files written by either library."""

import blosc2
import numpy as np
import oxblosc
import pytest

SELECTIONS = [
    (slice(None),),
    (slice(1, 10),),
    (slice(3, 5),),
    (slice(None), slice(0, 6)),  # not a whole chunk on an inner axis: the general path
    (slice(2, 9), slice(None), slice(1, 4)),
    (4,),
]


@pytest.mark.parametrize("writer", [oxblosc, blosc2])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_slab_reads_match_numpy(tmp_path, writer, nthreads):
    a = np.arange(11 * 7 * 5, dtype=np.float32).reshape(11, 7, 5) * 0.5
    path = str(tmp_path / "a.b2nd")
    cp = writer.CParams(codec=writer.Codec.LZ4, clevel=5, typesize=4, nthreads=nthreads)
    writer.asarray(a, chunks=(2, 7, 5), blocks=(1, 3, 5), urlpath=path, mode="w", cparams=cp)
    old = oxblosc.set_nthreads(nthreads)
    try:
        x = oxblosc.open(path)
        m = oxblosc.asarray(a, chunks=(2, 7, 5), blocks=(1, 3, 5))
        for sel in SELECTIONS:
            np.testing.assert_array_equal(x[sel], a[sel], err_msg=str(sel))
            np.testing.assert_array_equal(m[sel], a[sel], err_msg=str(sel))
        # And python-blosc2 reads what oxblosc wrote with that layout.
        if writer is oxblosc:
            np.testing.assert_array_equal(blosc2.open(path)[:], a)
    finally:
        oxblosc.set_nthreads(old)
