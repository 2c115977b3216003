"""where, clip, isnan/isfinite and boolean masks from expressions used as indices."""

from __future__ import annotations

import numpy as np
import oxblosc
import pytest


def _data():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(13, 7, 4))
    x[rng.random(x.shape) < 0.1] = np.nan
    return x, oxblosc.asarray(x, chunks=(5, 3, 4), blocks=(2, 2, 2))


def test_where_clip_isnan():
    x, a = _data()
    y = np.arange(28.0).reshape(7, 4)
    with np.errstate(invalid="ignore"):
        cases = [
            (oxblosc.where(a > 0, a, y), np.where(x > 0, x, y)),
            (oxblosc.where(oxblosc.isnan(a), 0, a), np.where(np.isnan(x), 0, x)),
            (oxblosc.clip(a, -0.5, 0.5), np.clip(x, -0.5, 0.5)),
            (oxblosc.clip(a, None, 0.1), np.clip(x, None, 0.1)),
            (np.clip(a, -1, 1), np.clip(x, -1, 1)),
            (oxblosc.isfinite(a * 2), np.isfinite(x * 2)),
            (oxblosc.isinf(a / 0), np.isinf(x / 0)),
            ((a > 0).where(1, -1), np.where(x > 0, 1, -1)),
        ]
        for lazy, ref in cases:
            assert isinstance(lazy, oxblosc.LazyExpr)
            np.testing.assert_array_equal(lazy[...], ref)
            assert lazy.dtype == ref.dtype
    i = oxblosc.asarray(np.arange(-5, 5, dtype=np.int8))
    np.testing.assert_array_equal(oxblosc.clip(i, -2, 3)[:], np.clip(np.arange(-5, 5, dtype=np.int8), -2, 3))
    assert oxblosc.clip(i, -2, 3).dtype == np.int8
    with pytest.raises(TypeError, match="needs both"):
        oxblosc.where(a > 0)


def test_masks_as_indices():
    x, a = _data()
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(a[a > 0.5], x[x > 0.5])
        np.testing.assert_array_equal((a * 2)[a > 0.5], (x * 2)[x > 0.5])
        np.testing.assert_array_equal(a[oxblosc.isnan(a)], x[np.isnan(x)])
        m = oxblosc.asarray(x > 1)
        np.testing.assert_array_equal(a[m], x[x > 1])
        np.testing.assert_array_equal(a[x > 1], x[x > 1])
        assert a[a > 100].shape == (0,)
        # A mask over the leading axes only (NumPy's rule) is read whole.
        lead = x[:, :, 0] > 0
        np.testing.assert_array_equal(a[lead], x[lead])
    # Integer NDArrays still index as arrays.
    idx = oxblosc.asarray(np.array([0, 2]))
    np.testing.assert_array_equal(a[idx], x[[0, 2]])
    with pytest.raises(IndexError, match="boolean"):
        a[a + 1]


def test_mask_reads_in_slabs():
    x = np.arange(100 * 50, dtype=np.float64).reshape(100, 50)
    a = oxblosc.asarray(x, chunks=(10, 50), blocks=(5, 50))
    got = a[(a > 1000) & (a < 1100)]
    np.testing.assert_array_equal(got, x[(x > 1000) & (x < 1100)])
