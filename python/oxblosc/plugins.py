"""User-defined codecs and filters, with python-blosc2's names and semantics.

``register_codec(name, id, encoder, decoder)`` and ``register_filter(id, forward, backward)``
take Python callables ``f(input, output, meta, context)`` working on uint8 NumPy arrays.
They go into the engine's one registry (the one the built-in codecs and filters live in),
so a registered id works everywhere: ``compress2``, ``SChunk``, ``NDArray``, any thread
count. Differences from python-blosc2, all in the user's favour: several threads work
(each callback holds the GIL only while it runs), plain chunks work, and the fourth
argument is a ``PluginContext`` (``typesize``, ``block``, ``clevel``) instead of the SChunk.
"""

from __future__ import annotations

import importlib.metadata
import threading
import warnings
from collections.abc import Callable

from . import _native

#: User plugins take ids 160-255 (as in C-Blosc2 and python-blosc2).
USER_ID_RANGE = range(160, 256)

PluginContext = _native.PluginContext


def _check_id(id: int) -> int:
    if isinstance(id, bool) or not isinstance(id, int) or id not in USER_ID_RANGE:
        raise ValueError(f"`id` must be between 160 and 255 (user-defined plugins), got {id!r}")
    return id


def _check_callables(what: str, pair: tuple) -> None:
    for f in pair:
        if not callable(f):
            raise TypeError(f"{what}: both functions must be callables, got {type(f).__name__}")


def register_codec(
    codec_name: str,
    id: int,
    encoder: Callable | None = None,
    decoder: Callable | None = None,
    version: int = 1,
) -> None:
    """Register a user-defined codec under ``id`` (160-255).

    ``encoder(input, output, meta, context)`` compresses ``input`` into ``output`` and returns
    the number of bytes written, or 0 when the data does not compress (the stream is then
    stored as is). ``decoder(input, output, meta, context)`` fills ``output`` entirely and
    returns its size. ``meta`` is the chunk's ``codec_meta``. Without functions
    (python-blosc2's dynamic plugins) the installed package declaring ``id`` is loaded now. An id can be registered once
    per process; a second registration raises ``ValueError``.
    """
    _check_id(id)
    if encoder is None and decoder is None:
        return _require_package("codec", id, codec_name)
    _check_callables("register_codec", (encoder, decoder))
    if not isinstance(version, int) or not 0 <= version <= 255:
        raise ValueError(f"`version` must be in 0..255, got {version!r}")
    _native.register_codec(str(codec_name), id, encoder, decoder, version)


def register_filter(
    id: int,
    forward: Callable | None = None,
    backward: Callable | None = None,
    name: str | None = None,
) -> None:
    """Register a user-defined filter under ``id`` (160-255).

    ``forward(input, output, meta, context)`` transforms a block into ``output`` (same
    size); ``backward`` undoes it. ``meta`` is the slot's ``filters_meta`` value. Without
    functions the installed package declaring ``id`` is loaded now. An id can
    be registered once per process; a second registration raises ``ValueError``.
    """
    _check_id(id)
    if forward is None and backward is None:
        return _require_package("filter", id, name)
    _check_callables("register_filter", (forward, backward))
    _native.register_filter(id, forward, backward, name if name is not None else f"user_filter_{id}")


def _require_package(kind: str, id: int, name: str | None) -> None:
    """python-blosc2's "dynamic plugin" registration (no functions): load the installed
    package that declares ``id`` now, or say that none does."""
    _load_entry_point(kind, id)
    rows = _native.registered_codecs() if kind == "codec" else _native.registered_filters()
    if not any(r[0] == id for r in rows):
        group = ENTRY_POINT_GROUPS[kind]
        raise ValueError(
            f"register_{kind}: no installed package declares {kind} {id} ({name}) in the entry point "
            f"group {group!r} or {COMPILED_GROUPS[kind]!r}; oxblosc does not load C-Blosc2 plugin libraries"
        )


def _rows(rows) -> list[dict]:
    return [{"id": i, "name": n, "version": v, "origin": o} for i, n, v, o in rows]


def registered_codecs() -> list[dict]:
    """Every codec the engine knows: built-in ones and registered plugins, by id."""
    return _rows(_native.registered_codecs())


def registered_filters() -> list[dict]:
    """Every filter the engine knows: built-in ones and registered plugins, by id."""
    return _rows(_native.registered_filters())


# Plugins from installed packages -----------------------------------------------------------
#
# A package declares entry points in the groups below, named by the id they provide:
#
#     [project.entry-points."oxblosc.filters"]
#     250 = "my_plugin:plus_one"        # an object with name, forward, backward
#     [project.entry-points."oxblosc.codecs"]
#     251 = "my_plugin:my_codec"        # an object with name, encoder, decoder (version)
#     [project.entry-points."oxblosc.compiled_codecs"]
#     252 = "my_plugin.libmyplugin"     # my_plugin/libmyplugin.so, speaking the C ABI
#
# The engine asks for an id the first time a chunk needs it and nobody registered it; only
# the entry point declaring that id is loaded, once (a compiled declaration wins over a
# Python one). Nothing in a file is ever run, and no interpreter is started
# (docs/plugins.md). The CLI and Rust programs read the same compiled declarations.

ENTRY_POINT_GROUPS = {"codec": "oxblosc.codecs", "filter": "oxblosc.filters"}
COMPILED_GROUPS = {"codec": "oxblosc.compiled_codecs", "filter": "oxblosc.compiled_filters"}
_tried: set = set()
_load_lock = threading.RLock()


def _declared(group: str, id: int):
    for ep in importlib.metadata.entry_points(group=group):
        if ep.name.strip() == str(id):
            return ep, (ep.dist.name if ep.dist is not None else ep.value)
    return None, None


def _load_entry_point(kind: str, id: int) -> None:
    """Register the installed plugin that declares ``id`` for ``kind``, if any (once)."""
    with _load_lock:
        if (kind, id) in _tried:
            return
        _tried.add((kind, id))
        ep, package = _declared(COMPILED_GROUPS[kind], id)
        if ep is not None and ep.dist is not None:
            try:
                _native.load_compiled_plugin(kind, id, str(ep.dist.locate_file("")), ep.value, package)
            except ValueError as e:
                warnings.warn(
                    f"oxblosc: compiled plugin of {package} for {kind} {id} failed to load: {e}", stacklevel=2
                )
            return
        ep, package = _declared(ENTRY_POINT_GROUPS[kind], id)
        if ep is None:
            return
        try:
            obj = ep.load()
            if kind == "codec":
                _native.register_codec(
                    str(obj.name), id, obj.encoder, obj.decoder, int(getattr(obj, "version", 1)), package
                )
            else:
                _native.register_filter(id, obj.forward, obj.backward, str(obj.name), package)
        except Exception as e:  # a broken plugin must not break unrelated reads
            warnings.warn(f"oxblosc: plugin {package} ({ep.value}) for {kind} {id} failed to load: {e}", stacklevel=2)


_native.enable_package_loader()
