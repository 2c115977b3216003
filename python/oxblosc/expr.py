"""Expressions over arrays, evaluated by oxblosc's own engine (Rust; never Python ``eval``).

``evaluate("(wind > 12.5) & (pressure < 1000)", {"wind": w, "pressure": p})`` returns a
NumPy array, with NumPy 2's type rules; see ``crates/oxblosc-expr`` for the grammar.
"""

from __future__ import annotations

import sys
from typing import Any

from ._native import expr_evaluate, expr_names

__all__ = ["evaluate", "expr_names"]


def evaluate(
    expression: str,
    operands: dict | None = None,
    nthreads: int | None = None,
    *,
    local_dict: dict | None = None,
    global_dict: dict | None = None,
    out: Any = None,
):
    """Evaluate ``expression`` over ``operands`` (name -> array of one shape, or scalar).

    Block by block, in ``nthreads`` threads (default: oxblosc's), with the GIL released.
    Errors name the position in the text: ``ValueError`` (syntax, limits), ``NameError``
    (unknown name, with a suggestion), ``TypeError`` (types NumPy would refuse).

    python-blosc2's form works too: without ``operands`` the names are looked up (never
    evaluated) in ``local_dict``/``global_dict`` or the caller's variables; NDArray operands,
    broadcasting shapes and reductions in the text (``"a - mean(a, axis=0)"``) go through
    a lazy expression; ``out=`` receives the result.
    """
    from .lazyexpr import LazyExpr, _text_names, lazyexpr
    from .lazytext import has_extras
    from .ndarray import NDArray

    if operands is None:
        frame = sys._getframe(1)
        scopes = [d for d in (local_dict, global_dict) if d is not None] or [frame.f_locals, frame.f_globals]
        operands = {}
        for n in _text_names(expression):
            found = next((sc[n] for sc in scopes if n in sc), None)
            if found is not None:
                operands[n] = found
    if not isinstance(operands, dict):
        operands = dict(operands)
    if has_extras(expression) or any(isinstance(v, NDArray | LazyExpr) for v in operands.values()):
        res = lazyexpr(expression, operands)[()]
        res = res[()] if res.ndim == 0 else res
    else:
        res = expr_evaluate(expression, operands, nthreads)
    if out is None:
        return res
    out[...] = res
    return out
