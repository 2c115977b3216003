"""Process-wide switches and facts with python-blosc2's names: ``IS_WASM``,
``set_releasegil`` and ``print_versions``."""

from __future__ import annotations

import platform
import sys

import numpy as np

from . import _native
from . import core as _core

#: oxblosc never runs under WebAssembly (python-blosc2 uses this to skip threads and mmap).
IS_WASM = False

_releasegil = False


def set_releasegil(gilstate: bool) -> bool:
    """Record whether compression calls should release the GIL; returns the previous setting
    (False at start, as in python-blosc2).

    oxblosc releases the GIL around every call that touches more than a few kilobytes
    whatever this says, so the setting only changes what the next call returns."""
    global _releasegil
    old, _releasegil = _releasegil, bool(gilstate)
    return old


def print_versions() -> None:
    """Print the versions oxblosc runs with (the facts python-blosc2's ``print_versions``
    shows: package, codecs, NumPy, Python, platform, cores and threads)."""
    line = "-=" * 38
    uname = platform.uname()
    print(line)
    print(f"oxblosc version: {_native.__version__}")
    print(f"Codecs available: {', '.join(c.name for c in _core.Codec)}")
    print(f"NumPy version: {np.__version__}")
    print(f"Python version: {sys.version}")
    print(f"Platform: {uname.system}-{uname.release}-{uname.machine} ({uname.version})")
    print(f"Processor: {uname.processor or 'not recognized'}")
    print(f"Byte-ordering: {sys.byteorder}")
    print(f"Detected cores: {_core.ncores}")
    print(f"Number of threads to use by default: {_core.nthreads}")
    print(line)


__all__ = ["IS_WASM", "print_versions", "set_releasegil"]
