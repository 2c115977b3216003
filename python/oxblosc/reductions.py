"""Reductions (sum prod mean std var min max any all argmin argmax) of NDArrays and lazy
expressions, chunk by chunk: each chunk is decoded (or evaluated) and reduced on its own by
NumPy in a pool of threads (decoding, evaluation and NumPy's loops release the GIL), and the
partial results are merged in chunk order. Memory is a few chunks per thread plus the
result, whatever the array's size; results match NumPy's (float sums up to summation order:
pairwise within a chunk, then chunk after chunk).

Merging: sums and products add/multiply partials; min/max keep the smaller/larger (NaN
wins, as in NumPy); mean divides the merged sum by the count; var/std merge (count, mean,
sum of squared deviations) per chunk (Chan et al.), so no second pass and no cancellation;
argmin/argmax keep (value, global index), the first index on ties and at the first NaN.
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import core as _core

OPS = ("sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax")


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple | list) else (axis,)
    out = []
    for a in items:
        a = int(a.__index__())
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _grid(obj: Any) -> list[tuple[slice, ...]]:
    from .lazyexpr import _grid as grid

    return list(grid(tuple(obj.shape), tuple(obj.chunks)))


def _mask_reader(where: Any, shape: tuple[int, ...]) -> Any:
    """A function region -> boolean mask of the region's shape (None: no mask)."""
    if where is None or where is True:
        return lambda region: None
    if hasattr(where, "shape") and tuple(where.shape) == shape and not isinstance(where, np.ndarray):
        return lambda region: np.asarray(where[region], dtype=bool)
    w = np.broadcast_to(np.asarray(where, dtype=bool), shape)
    return lambda region: w[region]


class _Reduction:
    """One reduction: the per-chunk partial (``part``) and the merge into the result."""

    def __init__(self, op: str, obj: Any, axes: tuple[int, ...], dtype: Any, ddof: int, initial: Any) -> None:
        self.op, self.axes, self.ddof, self.initial = op, axes, ddof, initial
        self.shape = tuple(obj.shape)
        self.kshape = tuple(1 if d in axes else n for d, n in enumerate(self.shape))
        probe = np.zeros(1, obj.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if op in ("argmin", "argmax"):
                self.rdtype = np.dtype(np.intp)
            elif op in ("min", "max"):
                self.rdtype = obj.dtype
            elif op in ("any", "all"):
                self.rdtype = np.dtype(bool)
            else:
                self.rdtype = getattr(np, op)(probe, dtype=dtype).dtype
        # Partials of mean/var/std are kept in float64 (or the requested dtype).
        self.dtype = dtype
        self.acc_dtype = np.dtype(dtype) if dtype is not None else np.result_type(self.rdtype, np.float64)
        self.seen: set = set()
        self.acc: Any = None
        self.aux: Any = None
        self.aux2: Any = None

    # ---------------------------------------------------------------- per chunk

    def part(self, vals: np.ndarray, mask: np.ndarray | None, region: tuple[slice, ...]) -> Any:
        op, ax = self.op, self.axes
        kw: dict = {} if mask is None else {"where": mask}
        if op in ("sum", "prod"):
            return getattr(np, op)(vals, axis=ax, dtype=self.dtype, keepdims=True, **kw)
        if op in ("any", "all"):
            return getattr(np, op)(vals, axis=ax, keepdims=True, **kw)
        if op in ("min", "max"):
            if self.initial is not None:
                kw["initial"] = self.initial
            return getattr(np, op)(vals, axis=ax, keepdims=True, **kw)
        if op in ("mean", "var", "std"):
            n = (
                np.sum(mask, axis=ax, keepdims=True, dtype=np.int64)
                if mask is not None
                else np.full([1] * vals.ndim, math.prod(vals.shape[a] for a in ax), np.int64)
            )
            s = np.sum(vals, axis=ax, dtype=self.acc_dtype, keepdims=True, **kw)
            if op == "mean":
                return n, s
            with np.errstate(invalid="ignore", divide="ignore"):
                m = s / n
            d = vals.astype(self.acc_dtype, copy=False) - m
            return n, m, np.sum(d * d, axis=ax, keepdims=True, **kw)
        # argmin / argmax: one axis or all
        flat = len(ax) > 1 or vals.ndim <= 1
        if flat:
            local = int(getattr(np, op)(vals))
            coords = np.unravel_index(local, vals.shape) if vals.ndim else ()
            glob = tuple(int(c) + r.start for c, r in zip(coords, region, strict=True))
            idx = np.ravel_multi_index(glob, self.shape) if self.shape else 0
            return np.asarray(vals.flat[local]).reshape([1] * vals.ndim), np.full([1] * vals.ndim, idx, np.intp)
        (a,) = ax
        li = getattr(np, op)(vals, axis=a, keepdims=True)
        return np.take_along_axis(vals, li, a), (li + region[a].start).astype(np.intp)

    # ---------------------------------------------------------------- merging

    def merge(self, part: Any, region: tuple[slice, ...]) -> None:
        if self.acc is None:
            self._init(part)
        key = tuple(slice(0, 1) if d in self.axes else r for d, r in enumerate(region))
        first = tuple((k.start, k.stop) for k in key) not in self.seen
        self.seen.add(tuple((k.start, k.stop) for k in key))
        op = self.op
        if op in ("sum", "prod", "any", "all", "min", "max"):
            if first:
                self.acc[key] = part
            elif op == "sum":
                self.acc[key] += part
            elif op == "prod":
                self.acc[key] *= part
            elif op == "any":
                self.acc[key] |= part
            elif op == "all":
                self.acc[key] &= part
            else:
                self.acc[key] = (np.minimum if op == "min" else np.maximum)(self.acc[key], part)
        elif op == "mean":
            n, s = part
            if first:
                self.aux[key], self.acc[key] = n, s
            else:
                self.aux[key] += n
                self.acc[key] += s
        elif op in ("var", "std"):
            nb, mb, m2b = part
            if first:
                self.aux[key], self.aux2[key], self.acc[key] = nb, mb, m2b
                return
            na, ma, m2a = self.aux[key], self.aux2[key], self.acc[key]
            n = na + nb
            with np.errstate(invalid="ignore", divide="ignore"):
                delta = mb - ma
                wb = np.where(n > 0, nb / np.maximum(n, 1), 0)
                mean = np.where(nb == 0, ma, np.where(na == 0, mb, ma + delta * wb))
                m2 = np.where(nb == 0, m2a, np.where(na == 0, m2b, m2a + m2b + delta * delta * na * wb))
            self.aux[key], self.aux2[key], self.acc[key] = n, mean, m2
        else:
            v, i = part
            if first:
                self.acc[key], self.aux[key] = v, i
                return
            av, ai = self.acc[key], self.aux[key]
            better = v < av if op == "argmin" else v > av
            if v.dtype.kind == "f":
                vn, an = np.isnan(v), np.isnan(av)
                better = (better & ~an) | (vn & ~an) | (vn & an & (i < ai))
            better |= (v == av) & (i < ai)
            self.acc[key] = np.where(better, v, av)
            self.aux[key] = np.where(better, i, ai)

    def _init(self, part: Any) -> None:
        op = self.op
        if op in ("mean", "var", "std"):
            self.aux = np.zeros(self.kshape, np.int64)
            self.acc = np.zeros(self.kshape, self.acc_dtype)
            self.aux2 = np.zeros(self.kshape, self.acc_dtype)
        elif op in ("argmin", "argmax"):
            kshape = self.kshape if len(self.axes) == 1 and len(self.shape) > 1 else [1] * len(self.shape)
            self.acc = np.zeros(kshape, part[0].dtype)
            self.aux = np.zeros(kshape, np.intp)
        else:
            self.acc = np.zeros(self.kshape, part.dtype)

    def result(self) -> Any:
        op = self.op
        if op == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                if self.aux.min(initial=1) == 0:
                    warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=5)
                return (self.acc / self.aux).astype(self.rdtype)
        if op in ("var", "std"):
            with np.errstate(invalid="ignore", divide="ignore"):
                dof = self.aux - self.ddof
                if dof.min(initial=1) <= 0:
                    warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=5)
                r = np.where(dof > 0, self.acc / np.maximum(dof, 1), np.nan)
                return (np.sqrt(r) if op == "std" else r).astype(self.rdtype)
        if op in ("argmin", "argmax"):
            return self.aux
        if op in ("sum", "prod") and self.initial is not None:
            return self.acc + self.initial if op == "sum" else self.acc * self.initial
        return self.acc


def reduce(
    obj: Any,
    op: str,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    where: Any = None,
    ddof: int = 0,
    initial: Any = None,
    **storage: Any,
) -> Any:
    """``op`` of ``obj`` (an NDArray or LazyExpr) along ``axis`` as NumPy computes it;
    with ``storage`` keywords (``urlpath``, ``cparams``, ``chunks``...) the result is a new
    NDArray stored so (python-blosc2's ``**kwargs``)."""
    from .lazyexpr import drop_tuning

    storage = drop_tuning(storage)
    if storage:
        from .ndarray import _storage_kwargs, asarray

        _storage_kwargs(dict(storage))  # unknown keywords fail before the work
        res = reduce(obj, op, axis, dtype, None, keepdims, where, ddof, initial)
        return _finish(asarray(np.asarray(res), **storage), out)
    shape = tuple(obj.shape)
    if op in ("argmin", "argmax"):
        if where is not None:
            raise TypeError(f"{op}() got an unexpected keyword argument 'where'")
        if isinstance(axis, tuple | list):
            raise TypeError("'tuple' object cannot be interpreted as an integer")
    axes = _axes(axis, len(shape))
    if math.prod(shape) == 0 or (op in ("argmin", "argmax") and not shape):
        # Nothing to read: NumPy's own answer (or error) on an empty stand-in.
        kw = _numpy_kwargs(op, dtype, keepdims, where, ddof, initial, shape)
        return _finish(getattr(np, op)(np.empty(shape, obj.dtype), axis=axis, **kw), out)
    res = _native_reduce(obj, op, axes, dtype, where, initial, ddof)
    if res is None:
        res = _chunked(obj, op, axes, dtype, where, ddof, initial)
    if op in ("argmin", "argmax") and (axis is None or len(shape) <= 1):
        res = res.reshape([1] * len(shape) if keepdims else ())
    elif not keepdims:
        res = res.reshape(tuple(n for d, n in enumerate(res.shape) if d not in axes))
    return _finish(res[()] if res.ndim == 0 else res, out)


def _chunked(obj: Any, op: str, axes: tuple[int, ...], dtype: Any, where: Any, ddof: int, initial: Any) -> Any:
    """The reduction chunk by chunk in NumPy (result with the reduced axes of length 1)."""
    shape = tuple(obj.shape)
    red = _Reduction(op, obj, axes, dtype, ddof, initial)
    mask_of = _mask_reader(where, shape)
    regions = _grid(obj)

    def task(region: tuple[slice, ...]) -> Any:
        vals = np.asarray(obj[region])
        return red.part(vals, mask_of(region), region)

    nthreads = max(1, min(_core.nthreads, len(regions)))
    window = 2 * nthreads
    if nthreads == 1:
        for r in regions:
            red.merge(task(r), r)
    else:
        with ThreadPoolExecutor(nthreads) as pool:
            for start in range(0, len(regions), window):
                batch = regions[start : start + window]
                for r, p in zip(batch, pool.map(task, batch), strict=True):
                    red.merge(p, r)
    return red.result()


# Result cells up to which the engine reduces (each part keeps a partial result of that
# many cells).
_NATIVE_MAX_CELLS = 1 << 22


def _native_source(obj: Any) -> Any:
    """A function ``(op, axes, means, float_acc, nthreads) -> (cells, acc, index)`` reducing
    ``obj`` in the engine: an NDArray's blocks decoded and folded, or a lazy expression's
    operands' blocks decoded, evaluated and folded at once (fused: nothing else is stored);
    None when ``obj`` is not one the engine takes."""
    from ._native import NativeNDArray, expr_reduce, nd_reduce
    from .lazyexpr import LazyExpr, _native_order, native_args
    from .ndarray import NDArray

    if not obj.ndim or not _native_order(obj.dtype) or obj.dtype.kind not in "biuf" or obj.dtype == np.float16:
        return None
    if isinstance(obj, NDArray):
        if type(obj._n) is not NativeNDArray:
            return None
        return lambda *a: nd_reduce(obj._n, obj.dtype.str, *a)
    if isinstance(obj, LazyExpr):
        base = obj._base()
        args = None if base is None else native_args(obj, (base.shape, base.chunks, base.blocks))
        if args is None:
            return None
        arrays, scalars, dense = args
        return lambda *a: expr_reduce(obj._body, arrays, scalars, *a, dense=dense)
    return None


def _result_dtype(op: str, dt: np.dtype, dtype: Any) -> np.dtype:
    """NumPy's result type of ``op`` on ``dt`` items (with ``dtype=``)."""
    if op in ("argmin", "argmax"):
        return np.dtype(np.intp)
    if op in ("any", "all"):
        return np.dtype(bool)
    if op in ("min", "max"):
        return dt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(np, op)(np.zeros(1, dt), dtype=dtype).dtype


def _native_reduce(obj: Any, op: str, axes: tuple[int, ...], dtype: Any, where: Any, initial: Any, ddof: int) -> Any:
    """``op`` of an NDArray or a lazy expression over NDArrays of one geometry in the engine
    (blocks decoded, evaluated and folded in Rust, in parallel, GIL released), with the
    reduced axes of length 1 and NumPy's result type; None when the case is not one it takes
    (then NumPy reduces chunk by chunk)."""
    if op not in OPS or where is not None or initial is not None:
        return None
    src = _native_source(obj)
    if src is None:
        return None
    dt = np.dtype(obj.dtype)
    rdtype = _result_dtype(op, dt, None)
    float_acc = op in ("mean", "var", "std")
    if dtype is not None and np.dtype(dtype) != rdtype:
        if np.dtype(dtype) != np.float64 or op not in ("sum", "prod", "mean", "var", "std"):
            return None
        rdtype, float_acc = np.dtype(np.float64), True  # items converted to float64, as NumPy does
    kshape = tuple(1 if d in axes else n for d, n in enumerate(obj.shape))
    count = math.prod(obj.shape[d] for d in axes)
    if math.prod(kshape) > _NATIVE_MAX_CELLS or (op in ("var", "std") and count - ddof <= 0):
        return None
    nthreads = _core.call_nthreads(None)

    def run(what: str, means: Any = None) -> tuple[np.ndarray, Any]:
        raw, acc, index = src(what, list(axes), means, float_acc, nthreads)
        return np.frombuffer(raw, acc).reshape(kshape), index

    if op in ("argmin", "argmax"):
        return np.frombuffer(run(op)[1], "<u8").astype(np.intp).reshape(kshape)
    if op not in ("mean", "var", "std"):
        return run(op)[0].astype(rdtype)
    mean = run("sum")[0] / count
    if op == "mean":
        return mean.astype(rdtype)
    var = run("sqdev", mean.tobytes())[0] / (count - ddof)
    return (np.sqrt(var) if op == "std" else var).astype(rdtype)


def _numpy_kwargs(op: str, dtype: Any, keepdims: bool, where: Any, ddof: int, initial: Any, shape: tuple) -> dict:
    kw: dict = {"keepdims": keepdims}
    if op in ("sum", "prod", "mean", "std", "var") and dtype is not None:
        kw["dtype"] = dtype
    if op in ("std", "var"):
        kw["ddof"] = ddof
    if where is not None and op not in ("argmin", "argmax"):
        kw["where"] = np.broadcast_to(np.asarray(where, dtype=bool), shape)
    if initial is not None and op in ("min", "max", "sum", "prod"):
        kw["initial"] = initial
    return kw


def _finish(res: Any, out: Any) -> Any:
    if out is None:
        return res
    out[...] = res
    return out
