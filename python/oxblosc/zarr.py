"""Zarr v3 codecs backed by oxblosc: ``BloscCodec`` (the spec's ``blosc`` codec) and
``Blosc2Codec`` (``blosc2``: whole Blosc2 chunks).

``BloscCodec`` is zarr-python's own ``zarr.codecs.BloscCodec`` (same configuration, same
parsing, same metadata: ``cname``, ``clevel``, ``shuffle`` as "noshuffle"/"shuffle"/
"bitshuffle", ``typesize``, ``blocksize``; typesize and shuffle left unset are taken from the
array's dtype by ``evolve_from_array_spec`` and recorded) with the chunks compressed and
decompressed by :class:`oxblosc.numcodecs.Blosc`: Blosc1 chunks that zarr's codec reads, and
zarr's chunks read here. Zarr keeps its own class for "blosc" unless told otherwise::

    zarr.config.set({"codecs.blosc": "oxblosc.zarr.BloscCodec"})

``Blosc2Codec`` (``{"name": "blosc2", "configuration": {"cname", "clevel", "filters",
"filters_meta", "typesize", "blocksize", "splitmode"}}``, filters by name such as
"shuffle", "bitshuffle", "delta", "bytedelta", "trunc_prec") writes Blosc2 chunks with every
filter and split option. Both are registered through zarr's ``zarr.codecs`` entry points, so
arrays naming them open once oxblosc is installed.

Each chunk is coded in a worker thread (as zarr's own Blosc codec does) with one oxblosc
thread per call: zarr already codes many chunks at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from zarr.abc.codec import BytesBytesCodec
from zarr.codecs.blosc import BloscCodec as _ZarrBloscCodec
from zarr.core.common import parse_named_configuration
from zarr.core.dtype.common import HasItemSize

from . import numcodecs as _ncodecs

_SHUFFLE_NUMBER = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


class BloscCodec(_ZarrBloscCodec):
    """The Zarr v3 ``blosc`` codec (zarr-python's class and metadata) coded by oxblosc."""

    @cached_property
    def _blosc_codec(self) -> _ncodecs.Blosc:
        return _ncodecs.Blosc(
            cname=self.cname.value,
            clevel=self.clevel,
            shuffle=_SHUFFLE_NUMBER[self.shuffle.value],
            blocksize=self.blocksize,
            typesize=self.typesize,
        )


def _item_size(array_spec: Any) -> int:
    return array_spec.dtype.item_size if isinstance(array_spec.dtype, HasItemSize) else 1


@dataclass(frozen=True)
class Blosc2Codec(BytesBytesCodec):
    """The ``blosc2`` bytes-to-bytes codec: one Blosc2 chunk per Zarr chunk.

    ``typesize=None`` (the default) takes the array's item size; the options are those of
    :class:`oxblosc.numcodecs.Blosc2` (which checks them)."""

    is_fixed_size = False

    cname: str = "zstd"
    clevel: int = 5
    filters: tuple[str, ...] = ("shuffle",)
    filters_meta: tuple[int, ...] | None = None
    typesize: int | None = None
    blocksize: int = 0
    splitmode: str = "auto"

    def __post_init__(self) -> None:
        codec = self._codec  # validates every option now rather than at the first chunk
        object.__setattr__(self, "filters", tuple(codec.filters))
        object.__setattr__(self, "filters_meta", tuple(codec.filters_meta))
        object.__setattr__(self, "cname", codec.cname)
        object.__setattr__(self, "splitmode", codec.splitmode)

    @cached_property
    def _codec(self) -> _ncodecs.Blosc2:
        return _ncodecs.Blosc2(
            cname=self.cname,
            clevel=self.clevel,
            filters=self.filters,
            filters_meta=self.filters_meta,
            blocksize=self.blocksize,
            splitmode=self.splitmode,
            typesize=self.typesize,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Blosc2Codec:
        _, config = parse_named_configuration(data, "blosc2")
        config = dict(config)
        for key in ("filters", "filters_meta"):
            if config.get(key) is not None:
                config[key] = tuple(config[key])
        return cls(**config)

    def to_dict(self) -> dict[str, Any]:
        config = {
            "cname": self.cname,
            "clevel": self.clevel,
            "filters": list(self.filters),
            "filters_meta": list(self.filters_meta),
            "blocksize": self.blocksize,
            "splitmode": self.splitmode,
        }
        if self.typesize is not None:
            config["typesize"] = self.typesize
        return {"name": "blosc2", "configuration": config}

    def evolve_from_array_spec(self, array_spec: Any) -> Blosc2Codec:
        if self.typesize is not None:
            return self
        return dataclasses.replace(self, typesize=_item_size(array_spec))

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return chunk_spec.prototype.buffer.from_bytes(self._codec.decode(chunk_bytes.as_numpy_array()))

    def _encode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return chunk_spec.prototype.buffer.from_bytes(self._codec.encode(chunk_bytes.as_numpy_array()))

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    async def _encode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return await asyncio.to_thread(self._encode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: Any) -> int:
        raise NotImplementedError


__all__ = ["Blosc2Codec", "BloscCodec"]
