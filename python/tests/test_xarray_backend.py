"""The oxblosc xarray backend: open_dataset(engine="oxblosc") lazily with Dask chunks, names
from vlmeta written by oxblosc.xarray.to_oxblosc; python-blosc2 files open with defaults."""

from __future__ import annotations

import blosc2
import dask.array as da
import numpy as np
import oxblosc as ox
import pytest
from oxblosc.xarray import to_oxblosc

xr = pytest.importorskip("xarray")


def test_round_trip_with_dims_and_attrs(tmp_path):
    data = np.arange(60 * 40 * 3, dtype="f4").reshape(60, 40, 3)
    arr = xr.DataArray(data, dims=("time", "y", "band"), name="radiance",
                       attrs={"units": "W", "scale": np.float32(0.5), "flags": [1, 2]})  # fmt: skip
    path = str(tmp_path / "r.b2nd")
    to_oxblosc(arr, path, chunks=(16, 40, 3), blocks=(4, 40, 3))
    ds = xr.open_dataset(path, engine="oxblosc", chunks={})
    v = ds["radiance"]
    assert v.dims == ("time", "y", "band")
    assert v.attrs == {"units": "W", "scale": 0.5, "flags": [1, 2]}
    assert isinstance(v.data, da.Array)  # lazy, one Dask chunk per file chunk
    assert v.data.chunks[0] == (16, 16, 16, 12)
    np.testing.assert_array_equal(v.isel(time=slice(10, 50), y=7).values, data[10:50, 7])
    np.testing.assert_array_equal(v.sum("time").values, data.sum(0))
    assert ox.open(path).vlmeta["_xarray_dims"] == ["time", "y", "band"]


def test_lazy_without_dask(tmp_path):
    path = str(tmp_path / "a.b2nd")
    ox.asarray(np.arange(1000.0).reshape(100, 10), urlpath=path, mode="w", chunks=(10, 10))
    ds = xr.open_dataset(path, engine="oxblosc")
    assert list(ds.data_vars) == ["a"] and ds["a"].dims == ("dim_0", "dim_1")
    assert not isinstance(ds["a"].variable._data, np.ndarray)  # nothing read yet
    np.testing.assert_array_equal(ds["a"][5:7, 2].values, [52.0, 62.0])


def test_dask_backed_dataarray_and_python_blosc2_file(tmp_path):
    x = da.from_array(np.linspace(0, 1, 5000).reshape(50, 100), chunks=(10, 100))
    to_oxblosc(xr.DataArray(x, dims=("a", "b"), name="data"), str(tmp_path / "d.b2nd"), chunks=(10, 100))
    ds = xr.open_dataset(str(tmp_path / "d.b2nd"), engine="oxblosc", chunks={})
    np.testing.assert_array_equal(ds["data"].values, x.compute())
    p = str(tmp_path / "theirs.b2nd")
    blosc2.asarray(np.arange(24, dtype="i2").reshape(4, 6), urlpath=p, mode="w")
    ds = xr.open_dataset(p, engine="oxblosc")
    np.testing.assert_array_equal(ds["theirs"].values, np.arange(24, dtype="i2").reshape(4, 6))


def test_python_blosc2_vlmeta_dims_as_one_string_or_a_tuple(tmp_path):
    """A python-blosc2 user may store one dimension name as a string: it is one name (xarray's
    rule for dims="x"), never its characters (a 4-D array took "time" as t, i, m, e)."""
    data = np.arange(2 * 3 * 4 * 5, dtype="f4").reshape(2, 3, 4, 5)
    p4 = str(tmp_path / "four.b2nd")
    b = blosc2.asarray(data, urlpath=p4, mode="w")
    b.vlmeta["_xarray_dims"] = "time"
    with pytest.raises(ValueError, match="names 1 dimensions"):
        xr.open_dataset(p4, engine="oxblosc")
    p1 = str(tmp_path / "one.b2nd")
    b = blosc2.asarray(np.arange(6.0), urlpath=p1, mode="w")
    b.vlmeta["_xarray_dims"] = "time"
    b.vlmeta["_xarray_attrs"] = {"units": "s"}
    ds = xr.open_dataset(p1, engine="oxblosc", chunks={})
    assert ds["one"].dims == ("time",) and ds["one"].attrs == {"units": "s"}
    np.testing.assert_array_equal(ds["one"].values, np.arange(6.0))
    pt = str(tmp_path / "tuple.b2nd")
    b = blosc2.asarray(data, urlpath=pt, mode="w")
    b.vlmeta["_xarray_dims"] = ("a", "b", "c", "d")
    assert xr.open_dataset(pt, engine="oxblosc")["tuple"].dims == ("a", "b", "c", "d")
    pa = str(tmp_path / "badattrs.b2nd")
    b = blosc2.asarray(np.arange(6.0), urlpath=pa, mode="w")
    b.vlmeta["_xarray_attrs"] = [1, 2]
    with pytest.raises(ValueError, match="_xarray_attrs must be a dict"):
        xr.open_dataset(pa, engine="oxblosc")


def test_cf_decoding_and_its_switches_as_the_zarr_engine(tmp_path):
    """xarray's usual decoder keywords (decode_times=False, mask_and_scale=False, ...) were a
    TypeError, and CF attributes were left undecoded where the zarr engine decodes them."""
    raw = np.array([0, 1, -1, 3, 4], dtype="i2")
    attrs = {"scale_factor": 0.5, "add_offset": 1.0, "_FillValue": -1}
    ours = str(tmp_path / "s.b2nd")
    to_oxblosc(xr.DataArray(raw, dims="x", name="s", attrs=attrs), ours, chunks=(2,))
    theirs = str(tmp_path / "s.zarr")
    xr.Dataset({"s": ("x", raw, attrs)}).to_zarr(theirs, mode="w")
    for kw in ({}, {"mask_and_scale": False}, {"decode_times": False}, {"decode_cf": False}, {"chunks": {}}):
        got = xr.open_dataset(ours, engine="oxblosc", **kw)["s"]
        want = xr.open_dataset(theirs, engine="zarr", **kw)["s"]
        np.testing.assert_array_equal(got.values, want.values)
        assert got.dtype == want.dtype
    assert xr.open_dataset(ours, engine="oxblosc", chunks={})["s"].chunks == ((2, 2, 1),)
    t = xr.DataArray(np.array([0, 1, 2], dtype="i8"), dims="time", name="t", attrs={"units": "days since 2000-01-01"})
    to_oxblosc(t, str(tmp_path / "t.b2nd"))
    assert xr.open_dataset(str(tmp_path / "t.b2nd"), engine="oxblosc")["t"].dtype.kind == "M"
    assert xr.open_dataset(str(tmp_path / "t.b2nd"), engine="oxblosc", decode_times=False)["t"].dtype == "i8"
