"""Default parameter sets with python-blosc2's names: the ``Storage`` dataclass and the
``cparams_dflts``/``dparams_dflts``/``storage_dflts`` dicts.

``Storage`` gathers the storage keywords that ``SChunk``, ``NDArray`` constructors and
``pack_tensor`` accept one by one (``storage=Storage(urlpath=..., mode="w")``).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import asdict, dataclass

from .core import CParams, DParams

# Fields whose None means "not set"; any other None is replaced by the default, with a warning.
_NONE_ALLOWED = ("urlpath", "mmap_mode", "initial_mapping_size", "meta")


@dataclass
class Storage:
    """Where and how a super-chunk or array is stored (same fields and defaults as
    ``blosc2.Storage``).

    ``contiguous``: one frame file (True, the default when ``urlpath`` is given) or a sparse
    directory (False; the default in memory). ``urlpath``: the file or directory, None in
    memory. ``mode``: "r" read-only, "a" read/write (create if missing), "w" create
    (replacing what is there). ``mmap_mode``: "r", "r+", "w+" or "c" (see ``SChunk``).
    ``initial_mapping_size``: accepted, ignored. ``locking``: the advisory ``.b2lock`` lock.
    ``meta``: metalayers to create, ``{name: msgpack-able value}``.
    """

    contiguous: bool | None = None
    urlpath: str | None = None
    mode: str = "a"
    mmap_mode: str | None = None
    initial_mapping_size: int | None = None
    locking: bool = False
    meta: dict | None = None

    def __post_init__(self) -> None:
        if isinstance(self.urlpath, bytes):
            self.urlpath = self.urlpath.decode()
        elif self.urlpath is not None:
            self.urlpath = os.fspath(self.urlpath)
        if self.contiguous is None:
            self.contiguous = self.urlpath is not None
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is None and f.name not in _NONE_ALLOWED:
                setattr(self, f.name, f.default)
                warnings.warn(f"`{f.name}` field value changed from `None` to `{f.default}`", stacklevel=2)


#: Compression defaults (``CParams()`` as a dict).
cparams_dflts = asdict(CParams())
#: Decompression defaults (``DParams()`` as a dict).
dparams_dflts = asdict(DParams())
#: Storage defaults (``Storage()`` as a dict), for ``SChunk`` and ``NDArray``.
storage_dflts = asdict(Storage())

__all__ = ["Storage", "cparams_dflts", "dparams_dflts", "storage_dflts"]
