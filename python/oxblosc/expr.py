"""Expressions over arrays, evaluated by oxblosc's own engine (Rust; never Python ``eval``).

``evaluate("(wind > 12.5) & (pressure < 1000)", {"wind": w, "pressure": p})`` returns a
NumPy array, with NumPy 2's type rules; see ``crates/oxblosc-expr`` for the grammar.
"""

from __future__ import annotations

from ._native import expr_evaluate, expr_names

__all__ = ["evaluate", "expr_names"]


def evaluate(expression: str, operands: dict, nthreads: int | None = None):
    """Evaluate ``expression`` over ``operands`` (name -> array of one shape, or scalar).

    Block by block, in ``nthreads`` threads (default: oxblosc's), with the GIL released.
    Errors name the position in the text: ``ValueError`` (syntax, limits), ``NameError``
    (unknown name, with a suggestion), ``TypeError`` (types NumPy would refuse).
    """
    if not isinstance(operands, dict):
        operands = dict(operands)
    return expr_evaluate(expression, operands, nthreads)
