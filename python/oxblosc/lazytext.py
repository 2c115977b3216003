"""Reductions written inside expression text: ``lazyexpr("a - mean(a, axis=0)")``,
``"sum(a) + b"``, ``"a.sum(axis=1, keepdims=True) * 2"`` (python-blosc2 accepts these).

The engine's grammar has no keyword arguments and no reductions, so the text is split
here, without evaluating anything: each reduction call becomes a placeholder name in the
remaining text (the body) and a :class:`Reduced` operand. That operand knows its shape and
dtype up front and computes its values once, chunk by chunk (``reductions.reduce``), the
first time the body is evaluated; the body then broadcasts against it as against any other
operand. Keyword values must be literals (numbers, ``True``/``False``/``None``, tuples,
strings), read with ``ast.literal_eval``: never code.
"""

from __future__ import annotations

import ast
import math
import re
import threading
import warnings
from typing import Any

import numpy as np

REDUCERS = ("sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax")
# Running sums/products keep the shape (their values come from a new NDArray, read per part).
SCANS = ("cumulative_sum", "cumulative_prod")
# A reduction as a function call (not an attribute) or as a method of the text before the dot.
_CALL = re.compile(r"(?<![\w.])(" + "|".join(REDUCERS + SCANS) + r")\s*\(")
_METHOD = re.compile(r"\.\s*(" + "|".join(REDUCERS + SCANS) + r")\s*\(")
# ``x[...]`` after a name or a closing bracket, and ``x.T``.
_INDEX = re.compile(r"(?<=[\w)\]])\s*\[")
_TRANSPOSE = re.compile(r"\.\s*T\b(?!\s*\()")
# python-blosc2 stores ``a[1:3]`` as ``a.slice((slice(1, 3, None),))``.
_SLICE = re.compile(r"\.\s*slice\s*\(")
# Array constructors with literal arguments (``arange(10)``, ``zeros((6, 10))``), optionally
# ``.reshape(...)``: new compressed arrays as operands.
CONSTRUCTORS = ("arange", "linspace", "zeros", "ones", "full")
_CTOR = re.compile(r"(?<![\w.])(" + "|".join(CONSTRUCTORS) + r")\s*\(")
_RESHAPE = re.compile(r"\.\s*reshape\s*\(")
_STRING = re.compile(r"""b?'[^']*'|b?"[^"]*\"""")
# Keyword values longer than this are not literals anyone writes by hand.
_MAX_LITERAL = 200
# Reductions per expression text (nested ones included): bounds the work on hostile text.
MAX_REDUCTIONS = 64


def _masked(text: str) -> str:
    """``text`` with string literal contents blanked (same length), so brackets and names
    inside strings are not seen."""
    return _STRING.sub(lambda m: m.group(0)[0] + "_" * (len(m.group(0)) - 2) + m.group(0)[-1], text)


def _close(masked: str, start: int, where: str) -> int:
    """Index of the bracket closing the one at ``start``."""
    depth = 0
    for i in range(start, len(masked)):
        c = masked[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced parentheses in {where!r} (at byte {start})")


def _open(masked: str, end: int, where: str) -> int:
    """Index of the bracket opening the one closed at ``end``."""
    depth = 0
    for i in range(end, -1, -1):
        c = masked[i]
        if c in ")]":
            depth += 1
        elif c in "([":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced parentheses in {where!r} (at byte {end})")


def _split_args(text: str, masked: str) -> list[str]:
    """The comma-separated arguments of a call (commas inside brackets belong to them)."""
    args, depth, last = [], 0, 0
    for i, c in enumerate(masked):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[last:i].strip())
            last = i + 1
    args.append(text[last:].strip())
    return [] if args == [""] else args


def _literal(op: str, name: str, value: str) -> Any:
    if len(value) > _MAX_LITERAL:
        raise ValueError(f"argument {name}= of {op}() in the expression text is too long ({len(value)} characters)")
    try:
        v = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(
            f"argument {name}={value} of {op}() in the expression text must be a literal "
            "(a number, True/False/None, a tuple of integers or a dtype name in quotes)"
        ) from None
    if name == "dtype" and v is not None:
        return np.dtype(v)
    return v


# python-blosc2 functions the engine has no name for, spelled with ones it has (each
# argument parenthesised; ``{n}`` is the n-th argument).
_MACROS = {
    "square": (1, "(({0}) * ({0}))"),
    "sign": (1, "where(({0}) > 0, 1, where(({0}) < 0, -1, ({0}) - ({0})))"),
    "clip": (3, "minimum(maximum({0}, {1}), {2})"),
}
_MACRO = re.compile(r"(?<![\w.])(" + "|".join(_MACROS) + r"|count_nonzero)\s*\(")
# Longest text the engine parses (its own limit; checked here too as macros grow the text).
MAX_TEXT = 100_000


def expand(text: str) -> str:
    """``text`` with ``square(x)``, ``sign(x)``, ``clip(x, lo, hi)`` and
    ``count_nonzero(x, axis)`` written in the engine's functions and reductions."""
    masked = _masked(text)
    if not _MACRO.search(masked):
        return text
    pos = 0
    for _ in range(MAX_REDUCTIONS + 1):
        m = _MACRO.search(masked, pos)
        if m is None:
            return text
        name, paren = m.group(1), m.end() - 1
        end = _close(masked, paren, text)
        args = _split_args(text[paren + 1 : end], masked[paren + 1 : end])
        if name == "count_nonzero":
            if not 1 <= len(args) <= 2:
                raise ValueError(f"count_nonzero() in {text!r} takes an expression and an optional axis")
            new = f"sum(({args[0]}) != 0, {args[1] if len(args) > 1 else 'axis=None'}, dtype='int64')"
        else:
            nargs, template = _MACROS[name]
            if len(args) != nargs:
                raise ValueError(f"{name}() in {text!r} takes {nargs} argument(s), got {len(args)}")
            if name == "clip" and "None" in (args[1], args[2]):
                if args[1] == args[2]:
                    raise ValueError("clip(): one of the bounds must be given")
                template = "minimum({0}, {2})" if args[1] == "None" else "maximum({0}, {1})"
            new = template.format(*args)
        text = text[: m.start()] + new + text[end + 1 :]
        if len(text) > MAX_TEXT:
            raise ValueError(f"the expression text grows beyond {MAX_TEXT} bytes when its functions are expanded")
        masked = _masked(text)
        pos = m.start()
    raise ValueError(f"more than {MAX_REDUCTIONS} function calls to expand in the expression {text[:80]!r}")


def _receiver(masked: str, j: int, text: str, what: str) -> int:
    """Start of the operand ending at ``j`` that ``what`` (``.sum(``, ``[``, ``.T``) applies
    to: a name, or a bracketed group with the call name or name before it; a chain
    (``b.sum(axis=0)[1:4]``) belongs to it too."""
    while True:
        while j >= 0 and masked[j].isspace():
            j -= 1
        if j >= 0 and masked[j] in ")]":
            start = _open(masked, j, text)
            while start > 0 and (masked[start - 1].isalnum() or masked[start - 1] == "_"):
                start -= 1
        else:
            start = j + 1
            while start > 0 and (masked[start - 1].isalnum() or masked[start - 1] == "_"):
                start -= 1
            if start == j + 1:
                raise ValueError(f"{what!r} without an array before it in {text[:200]!r} (at byte {j + 1})")
        k = start - 1
        while k >= 0 and masked[k].isspace():
            k -= 1
        if k < 0 or masked[k] != ".":
            return start
        j = k - 1


def _index_key(text: str, where: str) -> tuple:
    """A literal basic index (``1:3, ::2, 0, None, ...``) as a Python key."""
    key: list[Any] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "...":
            key.append(Ellipsis)
        elif part == "None":
            key.append(None)
        elif re.fullmatch(r"(-?\d+)?(:(-?\d+)?){1,2}", part.replace(" ", "")):
            bits = part.replace(" ", "").split(":")
            key.append(slice(*(int(b) if b else None for b in bits)))
        elif re.fullmatch(r"-?\d+", part):
            key.append(int(part))
        else:
            raise ValueError(
                f"index [{text}] in {where!r}: only integers, slices (with literal bounds), None and ... are allowed"
            )
    return tuple(key)


def _slice_call_key(text: str, where: str) -> tuple:
    """The key of python-blosc2's ``x.slice(KEY)``: a tuple of ``slice(a, b, c)``,
    integers, ``None`` and ``Ellipsis`` written as literals."""
    inner = text.strip()
    if inner.startswith("(") and _close(inner, 0, where) == len(inner) - 1:
        inner = inner[1:-1]
    parts = [p for p in _split_args(inner, _masked(inner)) if p]
    key: list[Any] = []
    for part in parts:
        m = re.fullmatch(r"slice\s*\(([^()]*)\)", part)
        if m:
            bits = [b.strip() for b in m.group(1).split(",")]
            if len(bits) > 3 or not all(re.fullmatch(r"-?\d+|None", b) for b in bits):
                raise ValueError(f"{part} in {where!r}: slice bounds must be integer literals or None")
            key.append(slice(*(None if b == "None" else int(b) for b in bits)))
        elif part in ("Ellipsis", "..."):
            key.append(Ellipsis)
        else:
            key.extend(_index_key(part, where))
    return tuple(key)


# Any of the above, in one scan (most texts have none: one search and done).
_ANY = re.compile("|".join(r.pattern for r in (_CALL, _METHOD, _INDEX, _TRANSPOSE, _SLICE, _CTOR, _RESHAPE, _MACRO)))


def has_extras(text: str) -> bool:
    """Whether ``text`` uses anything :func:`split` or :func:`expand` rewrites."""
    masked = _masked(text) if "'" in text or '"' in text else text
    return _ANY.search(masked) is not None


def split(text: str, avoid: set[str]) -> tuple[str, list[tuple[str, str, str, dict[str, Any]]]]:
    """``text`` with its outermost reduction calls, ``name[index]`` and ``name.T`` replaced
    by placeholder names (none of ``avoid``, none already in the text), and per placeholder
    (name, reduction or ``"[]"``/``"T"``, argument text, keyword arguments or ``{"key":
    index}``). Text without any of them comes back unchanged (``square`` & co expanded)."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"expression text of {len(text)} bytes (at most {MAX_TEXT})")
    if not has_extras(text):
        return text, []
    text = expand(text)
    masked = _masked(text)
    _check_depth(masked)
    total = sum(len(r.findall(masked)) for r in (_CALL, _METHOD, _INDEX, _TRANSPOSE, _SLICE, _CTOR, _RESHAPE))
    if not total:
        return text, []
    # Nested ones are split again from their argument text (a substring), so this bounds
    # the nesting depth and the work too.
    if total > MAX_REDUCTIONS:
        raise ValueError(f"more than {MAX_REDUCTIONS} reductions or indexings in the expression {text[:80]!r}")
    taken = set(avoid) | set(re.findall(r"\w+", text))
    found: list[tuple[str, str, str, dict[str, Any]]] = []
    pos = 0
    while True:
        spans = []  # (start, -end, kind, match)
        for kind, rx in (
            ("call", _CALL),
            ("method", _METHOD),
            ("index", _INDEX),
            ("T", _TRANSPOSE),
            ("slice", _SLICE),
            ("ctor", _CTOR),
            ("reshape", _RESHAPE),
        ):
            m = rx.search(masked, pos)
            if m is None:
                continue
            if kind == "T":
                end = m.end() - 1
            else:
                end = _close(masked, m.end() - 1, text)
            start = (
                m.start() if kind in ("call", "ctor") else _receiver(masked, m.start() - 1, text, m.group(0).strip())
            )
            spans.append((start, -end, kind, m))
        if not spans:
            return text, found
        # The leftmost, then the longest: ``sum(a)[0]`` indexes the sum, ``sum(a.sum())``
        # reduces the inner reduction.
        start, neg_end, kind, m = min(spans, key=lambda t: (t[0], t[1]))
        end = -neg_end
        # a chain (``a.T.T``, ``a.sum(axis=0)[1]``): the last link takes the whole receiver
        while (nxt := _postfix_at(masked, end + 1)) is not None:
            kind, m = nxt
            end = m.end() - 1 if kind == "T" else _close(masked, m.end() - 1, text)
        if kind == "T":
            op, inner, kwargs = "T", text[start : m.start()], {}
        elif kind == "index":
            op, inner = "[]", text[start : m.start()]
            kwargs = {"key": _index_key(text[m.end() : end], text)}
        elif kind == "slice":
            op, inner = "[]", text[start : m.start()]
            kwargs = {"key": _slice_call_key(text[m.end() : end], text)}
        elif kind in ("ctor", "reshape"):
            op, inner, kwargs = "ctor", "", _constructor(text[start : end + 1], text)
        else:
            op, paren = m.group(1), m.end() - 1
            args = _split_args(text[paren + 1 : end], masked[paren + 1 : end])
            if kind == "method":
                args.insert(0, text[start : m.start()])
            inner, kwargs = _call_args(op, args, text)
        n = 0
        while f"_r{n}" in taken:
            n += 1
        ph = f"_r{n}"
        taken.add(ph)
        found.append((ph, op, inner, kwargs))
        text = text[:start] + ph + text[end + 1 :]
        masked = masked[:start] + ph + masked[end + 1 :]
        pos = start + len(ph)


# The engine's nesting limit (``oxblosc_expr::MAX_DEPTH``): deeper brackets fail there
# anyway, so they fail here first, before any work on the text.
MAX_DEPTH = 100


def _check_depth(masked: str) -> None:
    depth = 0
    for i, c in enumerate(masked):
        if c in "([":
            depth += 1
            if depth > MAX_DEPTH:
                raise ValueError(f"expression nested deeper than {MAX_DEPTH} levels (at byte {i})")
        elif c in ")]":
            depth -= 1


def _constructor(call: str, where: str) -> dict[str, Any]:
    """``{"name", "args", "kwargs"}`` of ``arange(...)``-style text with literal arguments,
    ``.reshape(...)`` after it folded in as ``shape=``."""
    masked = _masked(call)
    m = _CTOR.match(masked)
    end = _close(masked, m.end() - 1, where) if m else -1
    reshape = _RESHAPE.match(masked, end + 1) if m else None
    if m is None or (
        end != len(call) - 1 and (reshape is None or _close(masked, reshape.end() - 1, where) != len(call) - 1)
    ):
        raise ValueError(f"reshape() in {where!r}: only arrays made by {'/'.join(CONSTRUCTORS)}() can be reshaped")
    name = m.group(1)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for arg in _split_args(call[m.end() : end], masked[m.end() : end]):
        k = re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)", arg)
        if k is None:
            if kwargs:
                raise ValueError(f"{name}() in {where!r}: positional argument after a keyword")
            args.append(_literal(name, "positional", arg))
        else:
            kwargs[k.group(1)] = _literal(name, k.group(1), arg[k.end() :].strip())
    if reshape is not None:
        dims = [
            _literal("reshape", "shape", a) for a in _split_args(call[reshape.end() : -1], masked[reshape.end() : -1])
        ]
        kwargs["shape"] = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], tuple | list) else tuple(dims)
    return {"name": name, "args": args, "kwargs": kwargs}


# Items an array constructor in expression text may make (hostile text must not fill disks).
MAX_CONSTRUCTED = 1 << 32


def _ctor_items(name: str, args: list, kwargs: dict) -> int:
    """How many items ``name(*args, **kwargs)`` would make (0 when the arguments are bad:
    the constructor then raises its own error)."""
    try:
        if "shape" in kwargs:
            shape = kwargs["shape"]
        elif name == "arange":
            a = list(args) + [None] * 3
            start, stop, step = (0, a[0], 1) if a[1] is None else (a[0], a[1], 1 if a[2] is None else a[2])
            return max(0, math.ceil((stop - start) / step))
        elif name == "linspace":
            return int(args[2] if len(args) > 2 else kwargs.get("num", 50))
        else:
            shape = args[0] if args else 0
        return math.prod(shape) if isinstance(shape, tuple | list) else int(shape)
    except (TypeError, ValueError, ZeroDivisionError, IndexError, OverflowError):
        return 0


def _postfix_at(masked: str, pos: int) -> tuple[str, re.Match] | None:
    """The method call, index, ``.T``, ``.slice(`` or ``.reshape(`` starting at ``pos``."""
    for kind, rx in (
        ("method", _METHOD),
        ("index", _INDEX),
        ("T", _TRANSPOSE),
        ("slice", _SLICE),
        ("reshape", _RESHAPE),
    ):
        m = rx.match(masked, pos)
        if m is not None:
            return kind, m
    return None


def _call_args(op: str, args: list[str], text: str) -> tuple[str, dict[str, Any]]:
    """The expression to reduce and the keyword arguments of a reduction call."""
    if not args or re.match(r"\s*[A-Za-z_]\w*\s*=(?!=)", args[0]):
        raise ValueError(f"{op}() in the expression {text!r} needs an expression to reduce as its first argument")
    kwargs: dict[str, Any] = {}
    for i, arg in enumerate(args[1:]):
        k = re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)", arg)
        if k is None:
            if i or kwargs:
                raise ValueError(f"{op}() in expression text takes one positional axis; pass the rest by keyword")
            kwargs["axis"] = _literal(op, "axis", arg)
            continue
        name = k.group(1)
        if name in kwargs:
            raise ValueError(f"{op}() in the expression text got {name}= twice")
        kwargs[name] = _literal(op, name, arg[k.end() :].strip())
    return args[0], kwargs


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    from .reductions import _axes as axes

    return axes(axis, ndim)


class _Once:
    """An operand whose values are computed on first read (``_compute``), then kept."""

    shape: tuple[int, ...]

    def __init__(self) -> None:
        self._value: Any = None
        self._lock = threading.Lock()

    def value(self) -> Any:
        with self._lock:
            if self._value is None:
                self._value = self._compute()
            return self._value

    def _compute(self) -> Any:
        raise NotImplementedError

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(self.value()[key])


def operand(op: str, inner: Any, kwargs: dict[str, Any]) -> Any:
    """The operand a placeholder of :func:`split` stands for, over the expression
    ``inner`` (a ``LazyExpr``)."""
    if op == "[]":
        return Indexed(inner, kwargs["key"])
    if op == "T":
        return Transposed(inner)
    if op == "ctor":
        from . import construct, ndarray

        items = _ctor_items(kwargs["name"], kwargs["args"], kwargs["kwargs"])
        if items > MAX_CONSTRUCTED:
            raise ValueError(
                f"{kwargs['name']}() in the expression text makes {items} items (at most {MAX_CONSTRUCTED})"
            )

        make = getattr(construct if kwargs["name"] in ("arange", "linspace") else ndarray, kwargs["name"])
        try:
            return make(*kwargs["args"], **kwargs["kwargs"])
        except TypeError as e:
            raise TypeError(f"{kwargs['name']}() in the expression text: {e}") from None
    return Reduced(op, inner, kwargs)


class Indexed(_Once):
    """``x[1:3, 0]`` in the text: that part of ``x``, read once when first needed."""

    def __init__(self, inner: Any, key: tuple) -> None:
        super().__init__()
        self.inner, self.key, self.dtype = inner, key, np.dtype(inner.dtype)
        # NumPy's shape and errors for the key, on a stand-in without memory
        self.shape = np.broadcast_to(np.empty((), self.dtype), inner.shape)[key].shape
        self.ndim = len(self.shape)

    def _compute(self) -> np.ndarray:
        return np.asarray(self.inner[self.key]).reshape(self.shape)


class Transposed:
    """``x.T`` in the text: axes reversed; a part is read as the mirrored part of ``x``."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dtype = inner, np.dtype(inner.dtype)
        self.shape = tuple(reversed(inner.shape))
        self.ndim = len(self.shape)

    def __getitem__(self, key: Any) -> np.ndarray:
        if key == ():
            return np.asarray(self.inner[()]).T
        if not (isinstance(key, tuple) and len(key) == self.ndim and all(isinstance(k, slice) for k in key)):
            raise IndexError("a transposed operand is read by one slice per axis")
        return np.asarray(self.inner[tuple(reversed(key))]).T


class Reduced(_Once):
    """The result of one reduction in expression text, as an operand: shape and dtype at
    once (NumPy's, from a stand-in of ones), values on first read, then kept."""

    def __init__(self, op: str, inner: Any, kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.op, self.inner, self.kwargs = op, inner, kwargs
        method = getattr(inner, op)
        axis, keepdims = kwargs.get("axis"), bool(kwargs.get("keepdims", False))
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")  # ddof=1 of one item: NumPy warns, the type is what counts
                probe = getattr(np, op)(np.ones((1,) * inner.ndim, inner.dtype), **kwargs)
        except TypeError as e:
            raise TypeError(f"{op}() in the expression text: {e}") from None
        self.dtype = np.asarray(probe).dtype
        if op in SCANS:
            (ax,) = _axes(0 if axis is None else axis, inner.ndim)
            grow = bool(kwargs.get("include_initial", False))
            self.shape = tuple(n + grow * (d == ax) for d, n in enumerate(inner.shape))
        else:
            axes = tuple(range(inner.ndim)) if op in ("argmin", "argmax") and axis is None else _axes(axis, inner.ndim)
            self.shape = tuple(1 if d in axes else n for d, n in enumerate(inner.shape) if keepdims or d not in axes)
        self.ndim = len(self.shape)
        self._method = method

    def _compute(self) -> Any:
        """The result: a NumPy array, or for scans the new NDArray (read part by part)."""
        v = self._method(**self.kwargs)
        return v if self.op in SCANS else np.asarray(v).reshape(self.shape)

    def __repr__(self) -> str:
        return f"<{self.op}() of {self.inner.expression!r}>"
