"""HDF5 filters: Blosc2 (id 32026) and Blosc (id 32001), written by oxblosc's own plugin.

The chunks are the bytes PyTables and hdf5plugin write, so files go both ways. Usage mirrors
hdf5plugin (switching is a change of import)::

    import h5py, oxblosc.hdf5
    with h5py.File("a.h5", "w") as f:
        f.create_dataset("x", data=arr, chunks=(64, 64), **oxblosc.hdf5.Blosc2(codec="zstd", clevel=5))

``register()`` makes the filters available to h5py in this process (creating a filter option
object calls it). Other HDF5 applications (h5dump, C programs, MATLAB) load the Blosc2 filter
from ``PLUGIN_PATH`` when it is on ``HDF5_PLUGIN_PATH``; ``python -m oxblosc.hdf5`` prints it.

``Dataset(h5py_dataset)`` (or ``open(path, name)``) reads a Blosc-compressed dataset reading
and decoding only the Blosc blocks a selection touches inside each HDF5 chunk, whichever
filter wrote it, and writes whole chunks with direct chunk writes::

    with h5py.File("a.h5", "r") as f:
        row = oxblosc.hdf5.Dataset(f["x"])[17]

``create_dataset(group, name, data=...)`` creates a Blosc2 dataset with big chunks (about the
L3 cache) and L2-sized blocks (``suggest_chunks``) and writes it directly.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ..core import Codec, Filter, SplitMode

__all__ = [
    "BLOSC2_ID",
    "BLOSC_ID",
    "PLUGIN_PATH",
    "Blosc",
    "Blosc2",
    "ChunkSuggestion",
    "Dataset",
    "create_dataset",
    "Table",
    "create_table",
    "open",
    "plugin_file",
    "register",
    "suggest_chunks",
]

BLOSC2_ID = 32026
BLOSC_ID = 32001

#: The directory to put on ``HDF5_PLUGIN_PATH`` for HDF5 applications outside Python.
PLUGIN_PATH = str(Path(__file__).resolve().parent / "plugins")

if sys.platform == "win32":
    _LIB = "oxblosc_hdf5.dll"
elif sys.platform == "darwin":
    _LIB = "liboxblosc_hdf5.dylib"
else:
    _LIB = "liboxblosc_hdf5.so"

# Marks the full-pipeline extension of the Blosc2 cd_values (crates/oxblosc/src/hdf5/cdvalues.rs).
_EXT_MARKER = 0x4F580001
_BLOSC1_CODECS = {"blosclz": 0, "lz4": 1, "lz4hc": 2, "zlib": 4, "zstd": 5}

_registered = False


def plugin_file() -> Path:
    """The plugin library shipped with this package."""
    return Path(PLUGIN_PATH) / _LIB


def register(force: bool = False) -> None:
    """Register both filters with h5py's HDF5 in this process (replacing any other plugin's,
    e.g. hdf5plugin's, for the same ids). Idempotent unless ``force``."""
    global _registered
    if _registered and not force:
        return
    import h5py

    path = plugin_file()
    if not path.is_file():
        raise FileNotFoundError(
            f"oxblosc.hdf5: the filter plugin is not in this install ({path}); build it with `make develop`"
        )
    lib = ctypes.CDLL(str(path))
    lib.oxblosc_hdf5_filter_info.restype = ctypes.c_void_p
    lib.oxblosc_hdf5_filter_info.argtypes = [ctypes.c_int]
    if os.name != "nt":
        # h5py's wheel loads its HDF5 privately (RTLD_LOCAL): bind the plugin's HDF5 calls to
        # it through the module that links it, so dataset creation (set_local) works.
        lib.init_filter.argtypes = [ctypes.c_char_p]
        if lib.init_filter(os.fsencode(h5py.h5z.__file__)) != 0:
            raise OSError(f"oxblosc.hdf5: cannot bind the plugin to h5py's HDF5 ({h5py.h5z.__file__})")
    for fid in (BLOSC2_ID, BLOSC_ID):
        if h5py.h5z.register_filter(lib.oxblosc_hdf5_filter_info(fid)) < 0:
            raise OSError(f"oxblosc.hdf5: HDF5 refused to register filter {fid}")
    _registered = True


try:  # h5py's base makes `compression=Blosc2(...)` work too; `**Blosc2(...)` needs only Mapping.
    from h5py._hl.filters import FilterRefBase as _Base
except ImportError:  # pragma: no cover - h5py missing: the options are still a Mapping

    class _Base(Mapping):
        filter_id: int | None = None
        filter_options: tuple = ()

        def __getitem__(self, key):
            return {"compression": self.filter_id, "compression_opts": self.filter_options}[key]

        def __iter__(self):
            return iter(("compression", "compression_opts"))

        def __len__(self):
            return 2


def _enum(kind, value, what: str):
    """An enum member from a member, its value or its (case-insensitive) name."""
    try:
        if isinstance(value, str):
            return kind[value.upper()]
        return kind(value)
    except (KeyError, ValueError):
        names = ", ".join(m.name.lower() for m in kind)
        raise ValueError(f"{what} {value!r} is not one of: {names}") from None


def _clevel(clevel) -> int:
    if not isinstance(clevel, int) or not 0 <= clevel <= 9:
        raise ValueError(f"clevel {clevel!r} is not an integer in 0..9")
    return int(clevel)


class Blosc2(_Base):
    """Options of the Blosc2 filter (32026), for ``create_dataset(..., **Blosc2(...))``.

    ``cname``/``codec``: a :class:`~oxblosc.Codec` or its name (zstd by default). ``filters``:
    one filter or a pipeline of up to 6 (run in order, e.g. ``[SHUFFLE, BYTEDELTA]``), with
    ``filters_meta`` alongside. ``blocksize`` 0 lets Blosc2 choose. A single filter with the
    default split mode gives exactly hdf5plugin's cd_values; anything else is recorded in an
    extension that other readers ignore (decoding needs only the chunk itself).
    """

    filter_id = BLOSC2_ID
    NOFILTER = Filter.NOFILTER
    SHUFFLE = Filter.SHUFFLE
    BITSHUFFLE = Filter.BITSHUFFLE
    DELTA = Filter.DELTA
    TRUNC_PREC = Filter.TRUNC_PREC
    BYTEDELTA = Filter.BYTEDELTA

    def __init__(
        self,
        cname=None,
        clevel: int = 5,
        filters=Filter.SHUFFLE,
        filters_meta=None,
        blocksize: int = 0,
        splitmode=SplitMode.FORWARD_COMPAT_SPLIT,
        *,
        codec=None,
    ):
        if cname is not None and codec is not None and cname != codec:
            raise ValueError("give the codec once (cname= or codec=)")
        self.codec = _enum(Codec, codec if codec is not None else (cname or Codec.ZSTD), "codec")
        self.clevel = _clevel(clevel)
        pipeline = [filters] if isinstance(filters, int | str) else list(filters)
        if len(pipeline) > 6:
            raise ValueError(f"at most 6 filters, got {len(pipeline)}")
        self.filters = [_enum(Filter, f, "filter") for f in pipeline]
        metas = [0] * len(pipeline) if filters_meta is None else list(filters_meta)
        if len(metas) != len(pipeline):
            raise ValueError(f"filters_meta has {len(metas)} values for {len(pipeline)} filters")
        if any(not isinstance(m, int) or not -128 <= m <= 255 for m in metas):
            raise ValueError(f"filters_meta {metas!r}: each is an integer in -128..255")
        self.filters_meta = [m & 0xFF for m in metas]
        if not isinstance(blocksize, int) or not 0 <= blocksize < 2**32:
            raise ValueError(f"blocksize {blocksize!r} is not a byte count (0 = automatic)")
        self.blocksize = blocksize
        self.splitmode = _enum(SplitMode, splitmode, "splitmode")
        register()

    @property
    def filter_options(self) -> tuple[int, ...]:
        # The pipeline fills the last slots, so a single filter sits where the C filter puts it.
        slots = [0] * (6 - len(self.filters)) + [int(f) for f in self.filters]
        metas = [0] * (6 - len(self.filters)) + self.filters_meta
        head = (0, self.blocksize, 0, 0, self.clevel, slots[5], int(self.codec))
        plain = slots[:5] == [0] * 5 and metas == [0] * 6 and self.splitmode == SplitMode.FORWARD_COMPAT_SPLIT
        if plain:
            return head
        return (*head, _EXT_MARKER, *slots, *metas, int(self.splitmode))

    def __repr__(self) -> str:
        names = [f.name for f in self.filters]
        return f"Blosc2(codec={self.codec.name}, clevel={self.clevel}, filters={names}, blocksize={self.blocksize})"


class Blosc(_Base):
    """Options of the original Blosc filter (32001), as hdf5plugin's ``Blosc``."""

    filter_id = BLOSC_ID
    NOSHUFFLE = 0
    SHUFFLE = 1
    BITSHUFFLE = 2

    def __init__(self, cname: str = "lz4", clevel: int = 5, shuffle: int = SHUFFLE):
        name = cname.name.lower() if isinstance(cname, Codec) else str(cname).lower()
        if name not in _BLOSC1_CODECS:
            raise ValueError(f"cname {cname!r} is not one of: {', '.join(_BLOSC1_CODECS)}")
        if shuffle not in (0, 1, 2):
            raise ValueError(f"shuffle {shuffle!r} is not NOSHUFFLE (0), SHUFFLE (1) or BITSHUFFLE (2)")
        self.cname = name
        self.clevel = _clevel(clevel)
        self.shuffle = int(shuffle)
        register()

    @property
    def filter_options(self) -> tuple[int, ...]:
        return (0, 0, 0, 0, self.clevel, self.shuffle, _BLOSC1_CODECS[self.cname])

    def __repr__(self) -> str:
        return f"Blosc(cname={self.cname!r}, clevel={self.clevel}, shuffle={self.shuffle})"


from .create import ChunkSuggestion, create_dataset, suggest_chunks  # noqa: E402
from .dataset import Dataset, open  # noqa: E402 - after the filter options it may register
from .table import Table, create_table  # noqa: E402
