"""One side of the HDF5 interop tests, run as a script in its own process.

Our filters and hdf5plugin's own the same ids (32026, 32001), so one process registers only
one of them: ``python hdf5_side.py write|read ours|ref FILE``. ``write`` creates every case
and prints each dataset's final cd_values (JSON); ``read`` checks every dataset it finds
against the data regenerated here and prints the names that differ or fail (JSON).
"""

from __future__ import annotations

import json
import sys
import zlib

import numpy as np

SHAPES = {
    1: ((1000,), (300,)),
    2: ((37, 50), (16, 24)),
    3: ((9, 10, 11), (4, 5, 6)),
    4: ((5, 6, 7, 3), (2, 4, 3, 2)),
    # Above rank 8 the filter writes plain frames (no b2nd), as the C filter does.
    9: ((2, 3, 2, 2, 3, 2, 2, 2, 3), (1, 2, 2, 1, 2, 2, 1, 2, 2)),
}
DTYPES = ["u1", "<i2", "<f4", "<f8", "|S3", "[('a', '<i4'), ('b', '<f8')]"]
CODECS = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]


def dtype_of(s: str) -> np.dtype:
    return np.dtype(eval(s) if s.startswith("[") else s)  # noqa: S307 - our own literals


def data_for(name: str, dtype: np.dtype, shape) -> np.ndarray:
    """Compressible but not trivial data, the same in every process."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = int(np.prod(shape))
    raw = (np.arange(n) // 3 + rng.integers(0, 4, n)).astype("<i8")
    out = np.empty(n, dtype)
    if dtype.names:
        out["a"], out["b"] = raw, raw / 7
    elif dtype.kind == "S":
        out[:] = [b"%03d" % (v % 1000) for v in raw]
    else:
        out[:] = (raw % 251 if dtype.itemsize == 1 else raw / (3 if dtype.kind == "f" else 1)).astype(dtype)
    return out.reshape(shape)


def cases(side: str):
    """(name, dtype string, rank, filter kwargs) for every dataset; ours adds what only we write."""
    if side == "ours":
        from oxblosc.hdf5 import Blosc, Blosc2
    else:
        from hdf5plugin import Blosc, Blosc2
    out = []
    i = 0
    for dt in DTYPES:
        for rank in SHAPES:
            codec, filt = CODECS[i % 5], i % 3
            out.append((f"b2_{i}_{codec}_f{filt}_r{rank}", dt, rank, Blosc2(codec, clevel=1 + i % 9, filters=filt)))
            i += 1
    for codec in CODECS:
        for filt in (0, 1, 2, 3):
            out.append((f"b2_{codec}_f{filt}", "<f8", 2, Blosc2(codec, clevel=5, filters=filt)))
        for shuffle in (0, 1, 2):
            for dt, rank in (("<f4", 2), ("<i2", 1)):
                out.append((f"b1_{codec}_s{shuffle}_{dt[1:]}", dt, rank, Blosc(codec, clevel=5, shuffle=shuffle)))
    if side == "ours":
        out += [
            ("ox_shuffle_bytedelta", "<f4", 3, Blosc2("zstd", 5, filters=[Blosc2.SHUFFLE, Blosc2.BYTEDELTA])),
            ("ox_delta_shuffle", "<f8", 2, Blosc2("lz4", 5, filters=["delta", "shuffle"], filters_meta=[0, 0])),
            ("ox_blocksize_split", "<i2", 2, Blosc2("blosclz", 9, filters=1, blocksize=4096, splitmode="never_split")),
        ]
    return out


def expected(name: str, dt: str | bytes, rank: int) -> np.ndarray:
    dt = dt.decode() if isinstance(dt, bytes) else str(dt)  # PyTables' string attributes
    return data_for(name, dtype_of(dt), SHAPES[rank][0])


def main() -> int:
    mode, side, path = sys.argv[1:4]
    if side == "ours":
        import oxblosc.hdf5

        oxblosc.hdf5.register()
    else:
        import hdf5plugin  # noqa: F401 - registers its filters
    import h5py

    if mode == "write":
        cd = {}
        with h5py.File(path, "w") as f:
            for name, dt, rank, opts in cases(side):
                shape, chunks = SHAPES[rank]
                d = f.create_dataset(name, data=data_for(name, dtype_of(dt), shape), chunks=chunks, **opts)
                d.attrs["dt"], d.attrs["rank"] = dt, rank
                cd[name] = list(d.id.get_create_plist().get_filter(0)[2])
        print(json.dumps(cd))
        return 0
    bad = []
    with h5py.File(path, "r") as f:
        for name, d in f.items():
            try:
                got = d[...]
            except Exception as e:  # noqa: BLE001 - reported to the test
                bad.append(f"{name}: {type(e).__name__}: {e}")
                continue
            want = expected(name, d.attrs["dt"], int(d.attrs["rank"]))
            if got.dtype != want.dtype or not np.array_equal(got, want):
                bad.append(f"{name}: data differ")
        print(json.dumps({"n": len(f), "bad": bad}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
