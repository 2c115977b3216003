"""The PyTables side of the HDF5 interop tests, run as a script in its own process.

PyTables bundles its own HDF5 (and its Blosc/Blosc2 filters), so it never shares a process
with h5py: ``python tables_side.py write|read FILE``. ``write`` creates CArrays and EArrays
with PyTables' Blosc2 and Blosc filters (the data, dtype and shape of ``hdf5_side``, attrs
``dt``/``rank`` as there) and prints their names (JSON); ``read`` reads every array node of any
HDF5 file and prints the names that differ from the regenerated data or fail, and the
compound datasets of rank > 1 it skips (PyTables reads compound data as 1-D Tables) (JSON).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import tables  # noqa: E402
from hdf5_side import SHAPES, data_for, dtype_of, expected  # noqa: E402

DTYPES = ["u1", "<i2", "<f4", "<f8", "|S3"]
# (complib, shuffle, bitshuffle): Blosc2 codecs and Blosc1.
FILTERS = [
    ("blosc2:zstd", True, False),
    ("blosc2:lz4", False, True),
    ("blosc2:blosclz", True, False),
    ("blosc:lz4", True, False),
    ("blosc:zstd", False, True),
]


def cases():
    """(name, dtype string, rank, filter index, extendible)."""
    out = []
    i = 0
    for dt in DTYPES:
        for rank in (1, 2, 3, 4):
            for earray in (False, True):
                fi = i % len(FILTERS)
                lib = FILTERS[fi][0].replace(":", "_")
                out.append((f"pt_{i}_{lib}_r{rank}_{'e' if earray else 'c'}", dt, rank, fi, earray))
                i += 1
    return out


def write(path: str) -> list[str]:
    names = []
    with tables.open_file(path, "w") as f:
        for name, dt, rank, fi, earray in cases():
            shape, chunks = SHAPES[rank]
            data = data_for(name, dtype_of(dt), shape)
            lib, shuffle, bitshuffle = FILTERS[fi]
            filters = tables.Filters(complevel=5, complib=lib, shuffle=shuffle, bitshuffle=bitshuffle)
            atom = tables.Atom.from_dtype(data.dtype)
            if earray:
                # Extendible along the first axis, appended in uneven pieces.
                node = f.create_earray("/", name, atom, (0, *shape[1:]), filters=filters, chunkshape=chunks)
                for a in range(0, shape[0], 3):
                    node.append(data[a : a + 3])
            else:
                node = f.create_carray("/", name, atom, shape, filters=filters, chunkshape=chunks, obj=data)
            node.attrs.dt, node.attrs.rank = dt, rank
            names.append(name)
    return names


def read(path: str) -> dict:
    bad, n, skipped = [], 0, []
    with tables.open_file(path, "r") as f:
        for node in f.walk_nodes("/", "Leaf"):
            name = node._v_name
            if isinstance(node, tables.Table) and int(node.attrs.rank) > 1:
                # PyTables reads compound datasets as Tables, which are 1-D only.
                skipped.append(name)
                continue
            n += 1
            try:
                got = node.read()
                dt, rank = node.attrs.dt, int(node.attrs.rank)
            except Exception as e:  # noqa: BLE001 - reported to the test
                bad.append(f"{name}: {type(e).__name__}: {e}")
                continue
            want = expected(name, dt, rank)
            if isinstance(got, np.ndarray) and got.dtype.names and want.dtype.names:
                same = all(np.array_equal(got[k], want[k]) for k in want.dtype.names)
            else:
                same = np.asarray(got).dtype == want.dtype and np.array_equal(got, want)
            if not same:
                bad.append(f"{name}: data differ")
    return {"n": n, "bad": bad, "skipped": skipped}


def main() -> int:
    mode, path = sys.argv[1:3]
    print(json.dumps(write(path) if mode == "write" else read(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
