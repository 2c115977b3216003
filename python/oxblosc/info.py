"""``info``: what ``SChunk.info`` and ``NDArray.info`` return, a text table that a REPL
prints as a table (its repr is the text) and a notebook as HTML."""

from __future__ import annotations

import html
from typing import Any

from . import core as _core


def human_bytes(n: int) -> str:
    """``n`` followed by a readable size, e.g. ``"2048 (2.00 KiB)"``."""
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):  # noqa: B007 - the last one is kept
        if value < 1024 or unit == "PiB":
            break
        value /= 1024
    return f"{n} ({n} B)" if unit == "B" else f"{n} ({value:.2f} {unit})"


def cparams_summary(cp: _core.CParams) -> str:
    """Codec, level, filters and threads of ``cp`` on one line, by name."""
    codec = _core.Codec(cp.codec).name if cp.codec in _core.Codec._value2member_map_ else str(cp.codec)
    filters = [_core.Filter(f).name if f in _core.Filter._value2member_map_ else f for f in cp.filters if f]
    return f"codec={codec} clevel={cp.clevel} filters={filters} nthreads={cp.nthreads}"


class InfoTable(str):
    """``name : value`` rows as text; its repr is the text itself, so ``a.info`` at a
    prompt prints the table (python-blosc2 shows ``info`` the same way)."""

    def __new__(cls, items: list[tuple[str, Any]]) -> InfoTable:
        width = max(len(k) for k, _ in items)
        text = super().__new__(cls, "\n".join(f"{k:<{width}} : {v}" for k, v in items))
        text.items = items
        return text

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in self.items)
        return f"<table>{cells}</table>"


__all__ = ["InfoTable", "cparams_summary", "human_bytes"]
