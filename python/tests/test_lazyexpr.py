"""Lazy expressions over NDArrays (``oxblosc.LazyExpr``) against NumPy and python-blosc2.

Random expression trees are built twice from the same choices: once with oxblosc operators
(NDArrays, NumPy arrays and scalars mixed, broadcasting shapes, edge chunks) and once with
NumPy on the same values; results must agree in dtype and value.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import blosc2
import numpy as np
import oxblosc
import pytest

SHAPE = (7, 10, 5)
CHUNKS, BLOCKS = (3, 4, 5), (2, 2, 3)
# Operand shapes that broadcast to SHAPE.
SHAPES = [SHAPE, (10, 5), (1, 10, 1), (5,), (7, 1, 1), ()]
DTYPES = ["?", "i1", "i4", "i8", "u1", "u4", "f4", "f8"]


def _values(rng, dt, shape):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -50, 50, size=shape).astype(dt)
    return (rng.normal(size=shape) * 10).astype(dt)


def _leaf(rng):
    """One operand as (oxblosc side, numpy side)."""
    choice = rng.integers(0, 10)
    dt = DTYPES[rng.integers(0, len(DTYPES))]
    if choice < 2:  # a Python scalar (weak)
        v = [2, 3, -1, 0.5, 2.5, True][rng.integers(0, 6)]
        return v, v
    shape = SHAPES[rng.integers(0, len(SHAPES))]
    x = _values(rng, dt, shape)
    if choice < 4 or not shape:
        return x, x  # a NumPy array (or 0-d)
    chunks = tuple(min(c, n) for c, n in zip(CHUNKS[-len(shape) :], shape, strict=True))
    blocks = tuple(min(b, c) for b, c in zip(BLOCKS[-len(shape) :], chunks, strict=True))
    return oxblosc.asarray(x, chunks=chunks, blocks=blocks), x


BIN = ["+", "-", "*", "/", "//", "%", "<", "<=", ">", ">=", "==", "!=", "&", "|", "^", "**2"]
FUNCS = ["sin", "exp", "sqrt", "abs", "negative", "floor", "isnan", "isfinite", "maximum", "minimum", "arctan2"]


def _kind(x):
    return np.asarray(x).dtype


def _tree(rng, depth):
    """A random expression as (oxblosc side, numpy side); None when NumPy refuses it."""
    if depth == 0 or rng.random() < 0.25:
        return _leaf(rng)
    r = rng.random()
    a = _tree(rng, depth - 1)
    if r < 0.55:
        b = _tree(rng, depth - 1)
        op = BIN[rng.integers(0, len(BIN))]
        ka, kb = _kind(a[1]), _kind(b[1])
        if op in "&|^" and (ka.kind == "f" or kb.kind == "f"):
            op = "+"
        if op == "-" and ka.kind == "b" and kb.kind == "b":
            op = "+"
        if op == "**2":
            if ka.kind == "b":
                return a
            return a[0] ** 2, a[1] ** 2
        f = {
            "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
            "/": lambda x, y: x / y, "//": lambda x, y: x // y, "%": lambda x, y: x % y,
            "<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
            ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y,
            "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
        }[op]  # fmt: skip
        if op in ("//", "%") and (ka.kind == "b" or kb.kind == "b"):
            return a
        if not isinstance(a[0], oxblosc.NDArray | oxblosc.LazyExpr) and not isinstance(
            b[0], oxblosc.NDArray | oxblosc.LazyExpr
        ):
            a = (oxblosc.asarray(np.asarray(a[1])), a[1]) if np.ndim(a[1]) else a
        try:
            ref = f(a[1], b[1])
        except (OverflowError, TypeError):  # NumPy refuses it (NEP 50): so does the engine
            return a
        return f(a[0], b[0]), ref
    fn = FUNCS[rng.integers(0, len(FUNCS))]
    k = _kind(a[1])
    if fn in ("sin", "exp", "sqrt", "arctan2") and k.itemsize == 1:
        fn = "abs"  # NumPy gives float16 there; the engine float32 (documented)
    if fn == "negative" and k.kind == "b":
        fn = "isnan"
    if fn in ("maximum", "minimum", "arctan2"):
        b = _tree(rng, 0)
        if fn == "arctan2" and _kind(b[1]).itemsize == 1:
            fn = "maximum"
        g = getattr(np, fn)
        return g(a[0], b[0]), g(a[1], b[1])
    g = getattr(np, fn)
    return g(a[0]), g(a[1])


def _check(got, want):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind == "f":
        tol = 1e-5 if want.dtype == np.float32 else 1e-9
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def test_random_trees_against_numpy():
    rng = np.random.default_rng(1234)
    checked = 0
    with np.errstate(all="ignore"):
        for _ in range(300):
            lazy, ref = _tree(rng, 3)
            if not isinstance(lazy, oxblosc.LazyExpr):
                continue
            _check(lazy[()], ref)
            assert lazy.shape == np.shape(ref) and lazy.dtype == np.asarray(ref).dtype
            if lazy.shape == SHAPE:
                _check(lazy[1:6, ::3, -1], np.asarray(ref)[1:6, ::3, -1])
                _check(lazy[-1, None, 2:9:2], np.asarray(ref)[-1, None, 2:9:2])
                _check(lazy[::-2, 3], np.asarray(ref)[::-2, 3])
                _check(lazy.compute(chunks=(4, 3, 2), blocks=(2, 2, 2))[...], ref)
            checked += 1
    assert checked > 150


def test_compute_in_the_engine_matches_numpy(monkeypatch):
    """Random trees over NDArrays of one geometry (edge chunks, padded blocks), NumPy arrays
    (broadcast ones too) and scalars: compute() runs decode, evaluation and compression in
    the engine (NumPy operands as dense ones), and gives the same bits as evaluating the
    whole expression at once (``[()]``), and NumPy's values (float32 operands: float32's
    tolerance, NumPy's float32 functions differ in the last bit); without dense operands,
    trees with NumPy ones take the general path."""
    lz = sys.modules["oxblosc.lazyexpr"]
    monkeypatch.setattr(sys.modules[__name__], "SHAPES", [SHAPE, ()])
    used = []
    native, dense = lz._compute_native, lz._dense
    monkeypatch.setattr(lz, "_compute_native", lambda e, out: used.append(native(e, out)) or used[-1])
    rng = np.random.default_rng(99)
    with np.errstate(all="ignore"):
        for i in range(200):
            # NumPy operands go to the engine as dense operands, or (every other tree: no
            # dense operands) take the general path.
            monkeypatch.setattr(lz, "_dense", dense if i % 2 else lambda o, shape: None)
            lazy, ref = _tree(rng, 3)
            if isinstance(lazy, oxblosc.LazyExpr) and lazy.shape == SHAPE:
                r = lazy.compute()
                if lazy._base() is not None:
                    assert (r.chunks, r.blocks) == (lazy._base().chunks, lazy._base().blocks)
                np.testing.assert_array_equal(r[...], lazy[()])
                if all(o.dtype != np.float32 for o in lazy.operands.values()):
                    _check(r[...], ref)
                else:
                    np.testing.assert_allclose(r[...], ref, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert used.count(True) > 40 and used.count(False) > 5


def test_operators_and_ufuncs():
    x = np.arange(-12, 12, dtype=np.int16).reshape(4, 6)
    a = oxblosc.asarray(x, chunks=(3, 4), blocks=(2, 2))
    cases = {
        "neg": (-a, -x), "pos": (+a, +x), "abs": (abs(a), abs(x)), "inv": (~a, ~x),
        "radd": (1 + a, 1 + x), "rsub": (100 - a, 100 - x), "rfloordiv": (7 // a, 7 // x),
        "rmod": (7 % a, 7 % x), "rpow": (2.0 ** a, 2.0 ** x), "np_left": (x * a, x * x),
        "np_add": (np.add(a, x), x + x), "np_scalar": (a * np.int8(3), x * np.int8(3)),
        "i64": (a + np.int64(1), x + np.int64(1)), "f32": (a * np.float32(0.5), x * np.float32(0.5)),
        "logical_and": (np.logical_and(a > 0, a < 5), np.logical_and(x > 0, x < 5)),
        "logical_not": (np.logical_not(a), np.logical_not(x)),
        "eq": (a == 3, x == 3), "ne": (a != x, x != x),
    }  # fmt: skip
    with np.errstate(all="ignore"):
        for name, (lazy, ref) in cases.items():
            assert isinstance(lazy, oxblosc.LazyExpr), name
            _check(lazy[...], ref)
    # NEP 50: a Python int that does not fit the array's type is refused, as NumPy 2 does.
    with pytest.raises((OverflowError, TypeError, ValueError)):
        (oxblosc.asarray(np.zeros(3, np.int8)) + 1000)[:]
    # Arrays stay hashable (comparisons build expressions).
    assert {a: 1}[a] == 1


def test_ufunc_fallback_and_out():
    x = np.linspace(0, 1, 20)
    a = oxblosc.asarray(x)
    np.testing.assert_allclose(np.add.reduce(a), np.add.reduce(x))  # not an engine ufunc method
    np.testing.assert_allclose(np.hypot(a, a), np.hypot(x, x))  # not an engine function
    out = oxblosc.zeros(20)
    np.sin(a, out=out)
    np.testing.assert_allclose(out[:], np.sin(x))


def test_lazyexpr_text_and_names():
    x, y = np.arange(10.0), np.linspace(1, 2, 10)
    a, b = oxblosc.asarray(x), oxblosc.asarray(y)
    e = oxblosc.lazyexpr("a * b + sin(a) - pi", {"a": a, "b": b})
    np.testing.assert_allclose(e[:], x * y + np.sin(x) - np.pi)
    # Names from the caller's variables (looked up, never evaluated).
    e2 = oxblosc.lazyexpr("a + b * 2")
    np.testing.assert_allclose(np.asarray(e2), x + y * 2)
    # A nested expression operand is inlined, operands are renamed without clashes.
    e3 = oxblosc.lazyexpr("o1 - o0", {"o0": e, "o1": a})
    np.testing.assert_allclose(e3[:], x - (x * y + np.sin(x) - np.pi))
    assert (e + e3).operands.keys() <= {"o0", "o1"}


@pytest.mark.parametrize(
    ("text", "err", "fragment"),
    [
        ("a +", ValueError, "at byte 3"),
        ("__import__('os').system('true')", (ValueError, NameError, TypeError), ""),
        ("a.__class__", ValueError, "'.' is not supported"),
        ("a[zz] + 1", ValueError, "only integers, slices"),  # a[0] is python-blosc2 text now (test_lazy_api)
        ("lambda: a", (ValueError, NameError), ""),
        ("(" * 500 + "a" + ")" * 500, ValueError, "nest"),
        ("a + zz", NameError, "zz"),
        ("a + 'x'", TypeError, ""),
        ("a" + " + a" * 60000, ValueError, ""),
    ],
)
def test_hostile_text(text, err, fragment):
    a = oxblosc.asarray(np.arange(5.0))
    with pytest.raises(err) as info:
        oxblosc.lazyexpr(text, {"a": a})[:]
    assert fragment in str(info.value)


def test_long_operator_chains_and_precedence():
    x, y = np.arange(5.0), np.arange(5.0) + 1
    a, b = oxblosc.asarray(x), oxblosc.asarray(y)
    acc, ref = a, x
    for i in range(300):  # parentheses only where needed: no nesting limit hit
        acc, ref = acc + b * i, ref + y * i
    np.testing.assert_allclose(acc[:], ref)
    cases = [
        ((a + b) * 2, (x + y) * 2), (a - (b - 1), x - (y - 1)), ((a < 2) == (b < 3), (x < 2) == (y < 3)),
        ((a**2) ** 0.5, (x**2) ** 0.5), (a ** (b**0.5), x ** (y**0.5)), (-(a + 1), -(x + 1)),
        (a / (b * 2), x / (y * 2)), ((a > 1) & (b < 4) | (a == 0), (x > 1) & (y < 4) | (x == 0)),
    ]  # fmt: skip
    for lazy, want in cases:
        np.testing.assert_allclose(lazy[:], want)


def test_bad_operands():
    a = oxblosc.asarray(np.arange(5.0))
    with pytest.raises(ValueError, match="do not broadcast"):
        a + np.arange(3)
    with pytest.raises(TypeError, match="complex128"):
        oxblosc.lazyexpr("a + b", {"a": a, "b": np.arange(5) * 1j})
    # A ufunc on types the engine lacks runs NumPy on the values.
    np.testing.assert_array_equal(a + np.arange(5) * 1j, np.arange(5.0) + np.arange(5) * 1j)
    with pytest.raises(TypeError):
        a + "x"


def test_selection_decodes_only_touched_blocks():
    x = np.arange(64 * 64, dtype=np.float64).reshape(64, 64)
    a = oxblosc.asarray(x, chunks=(32, 32), blocks=(8, 8))
    b = oxblosc.asarray(x * 2, chunks=(32, 32), blocks=(8, 8))
    e = a * b + 1
    before = a.blocks_decoded, b.blocks_decoded
    np.testing.assert_array_equal(e[6:10, 10:12], x[6:10, 10:12] * x[6:10, 10:12] * 2 + 1)
    assert (a.blocks_decoded - before[0], b.blocks_decoded - before[1]) == (2, 2)
    assert e[40, 40] == x[40, 40] * x[40, 40] * 2 + 1


def test_compute_to_file_opens_in_blosc2(tmp_path):
    x = np.random.default_rng(0).normal(size=(50, 30)).astype(np.float32)
    a = oxblosc.asarray(x, chunks=(16, 30), blocks=(8, 10))
    p = str(tmp_path / "r.b2nd")
    r = (a * 2 + np.cos(a)).compute(urlpath=p, cparams=oxblosc.CParams(codec=oxblosc.Codec.ZSTD, clevel=5))
    assert r.chunks == (16, 30) and r.cparams.codec == oxblosc.Codec.ZSTD
    want = x * 2 + np.cos(x)
    np.testing.assert_allclose(blosc2.open(p)[:], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(oxblosc.open(p)[:], want, rtol=1e-6, atol=1e-6)


def test_same_values_as_blosc2():
    rng = np.random.default_rng(5)
    xs = [rng.normal(size=(20, 30, 10)) for _ in range(3)]
    ours = [oxblosc.asarray(x, chunks=(8, 16, 10)) for x in xs]
    theirs = [blosc2.asarray(x, chunks=(8, 16, 10)) for x in xs]
    text = "a * b + sin(c)"
    got = oxblosc.lazyexpr(text, dict(zip("abc", ours, strict=True)))
    ref = blosc2.lazyexpr(text, dict(zip("abc", theirs, strict=True)))
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got[2:9, ::3], ref[2:9, ::3], rtol=1e-12)
    np.testing.assert_allclose(got.compute()[:], ref.compute()[:], rtol=1e-12)
    np.testing.assert_allclose((ours[0] > 0.5)[:], (theirs[0] > 0.5)[:])


def test_zero_d_and_empty():
    a = oxblosc.asarray(np.array(3.0))
    e = a * 2
    assert e.shape == () and e[()] == 6.0 and float(np.asarray(e)) == 6.0
    assert e.compute()[()] == 6.0
    z = oxblosc.zeros((0, 4))
    assert (z + 1)[:].shape == (0, 4) and (z + 1).compute().shape == (0, 4)


def test_compute_memory_is_bounded(tmp_path):
    """compute() and a reduction of an expression 4x larger than the address-space room left
    to the process succeed; loading the same expression whole fails with MemoryError."""
    child = textwrap.dedent(
        """
        import resource, numpy as np, oxblosc
        oxblosc.set_nthreads(2)  # thread stacks count against the limit: the same on every machine
        n = 50_000_000  # 400 MB of float64 per operand and for the result
        a = oxblosc.full((n,), 1.5, chunks=(1 << 20,), blocks=(1 << 16,))
        b = oxblosc.arange(0, n, 1, dtype=np.float64, chunks=(1 << 20,), blocks=(1 << 16,))
        e = a * 2 + b
        e[: 1 << 21]; e.compute(chunks=(1 << 20,), blocks=(1 << 16,))[:10]  # thread pools up
        vm = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmSize"))) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (150 << 20), vm + (150 << 20)))
        r = e.compute(chunks=(1 << 20,), blocks=(1 << 16,))
        assert r.shape == (n,) and r[n - 1] == 3.0 + n - 1 and r[7] == 10.0
        assert float(e.sum()) == 3.0 * n + n * (n - 1) / 2
        try:
            np.asarray(e)
        except MemoryError:
            print("bounded")
        """
    )
    env = dict(os.environ, MALLOC_ARENA_MAX="2")
    res = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "bounded"


def test_compute_to_a_file_memory_is_bounded(tmp_path):
    """compute(urlpath=...) of a poorly compressible result 1.5x larger than the address-space room
    left to the process succeeds, for a contiguous file and a sparse directory (each chunk is
    written out as it is computed; the engine used to keep the compressed result in memory
    until the final commit), and python-blosc2 reads the result."""
    child = textwrap.dedent(
        f"""
        import resource, numpy as np, oxblosc
        oxblosc.set_nthreads(2)
        n = 40_000_000  # 320 MB of float64, about 230 MB compressed (sin of large arguments)
        b = oxblosc.arange(0, n, 1, dtype=np.float64, chunks=(1 << 20,), blocks=(1 << 16,))
        e = oxblosc.sin(b) * 1000.0
        small = oxblosc.arange(0, 1 << 21, 1, dtype=np.float64, chunks=(1 << 20,), blocks=(1 << 16,))
        (oxblosc.sin(small) * 1000.0).compute(urlpath={str(tmp_path / "warm.b2nd")!r})  # thread pools up
        vm = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmSize"))) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (150 << 20), vm + (150 << 20)))
        for name, contiguous in (("c.b2nd", True), ("s.b2nd", False)):
            p = {str(tmp_path)!r} + "/" + name
            r = e.compute(urlpath=p, mode="w", contiguous=contiguous, chunks=(1 << 20,), blocks=(1 << 16,))
            assert r.schunk.cbytes > (200 << 20), r.schunk.cbytes  # more than the room left
            assert np.isclose(r[n - 1], np.sin(float(n - 1)) * 1000.0, rtol=1e-12)
            del r
        print("bounded")
        """
    )
    env = dict(os.environ, MALLOC_ARENA_MAX="2")
    res = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "bounded"
    x = blosc2.open(str(tmp_path / "c.b2nd"))
    assert x.shape == (40_000_000,) and np.isclose(x[12345], np.sin(12345.0) * 1000.0, rtol=1e-12)
    assert np.isclose(blosc2.open(str(tmp_path / "s.b2nd"))[-1], np.sin(39_999_999.0) * 1000.0, rtol=1e-12)


def test_lazyexpr_where_argument():
    """``lazyexpr(text, operands, where=(x, y))`` is ``where(text, x, y)``: python-blosc2's
    documented meaning and its ``expr.where(x, y)`` (its ``where=`` itself returns the bare
    condition in 4.14.1); ``out=`` receives it."""
    x = np.linspace(-3, 3, 60).reshape(6, 10)
    a = oxblosc.asarray(x, chunks=(4, 4), blocks=(2, 2))
    want = np.where(x > 0.5, x, -1.0)
    np.testing.assert_array_equal(oxblosc.lazyexpr("a > 0.5", {"a": a}, where=(a, -1.0))[:], want)
    np.testing.assert_array_equal(oxblosc.lazyexpr(a > 0.5, where=[a, -1.0]).compute()[:], want)
    out = oxblosc.zeros((6, 10), chunks=(4, 4), blocks=(2, 2))
    assert oxblosc.lazyexpr("a > 0.5", {"a": a}, out=out, where=(a, -1.0)) is out
    np.testing.assert_array_equal(out[:], want)
    b = blosc2.asarray(x, chunks=(4, 4), blocks=(2, 2))
    np.testing.assert_array_equal(blosc2.lazyexpr("b > 0.5", {"b": b}).where(b, -1.0)[:], want)
    with pytest.raises(ValueError, match="where= takes"):
        oxblosc.lazyexpr("a > 0.5", {"a": a}, where=(a,))


def test_compute_in_the_engine_to_sparse_and_contiguous_files(tmp_path):
    """The engine's compute stores into frames on disk (one commit): python-blosc2 reads them."""
    x = np.random.default_rng(3).normal(size=(50, 30))
    a = oxblosc.asarray(x, chunks=(16, 30), blocks=(8, 10))
    want = x * 2 + np.sin(x)
    for name, contiguous in (("c.b2nd", True), ("s.b2nd", False)):
        p = str(tmp_path / name)
        r = (a * 2 + np.sin(a)).compute(urlpath=p, contiguous=contiguous)
        assert r.schunk.nchunks == 4
        np.testing.assert_allclose(blosc2.open(p)[:], want, rtol=1e-12)
        np.testing.assert_allclose(oxblosc.open(p)[:], want, rtol=1e-12)


def test_compute_out_that_fails_part_way_leaves_out_as_it_was(tmp_path):
    """compute(out=...) with ``out`` in the operands' geometry runs in the engine as one
    commit: an error in a late chunk (an integer to a negative power) leaves a stored
    ``out`` exactly as before, also on reopening; the same expression without the bad value
    fills it (and an ``out`` of other chunks takes the general path)."""
    x = np.arange(100_000, dtype=np.int64) % 7
    y = np.ones(100_000, dtype=np.int64)
    y[-5] = -1
    a = oxblosc.asarray(x, chunks=(10_000,), blocks=(1000,))
    b = oxblosc.asarray(y, chunks=(10_000,), blocks=(1000,))
    p = str(tmp_path / "out.b2nd")
    for urlpath in (p, None):
        out = oxblosc.full((100_000,), 3, dtype=np.int64, chunks=(10_000,), blocks=(1000,), urlpath=urlpath, mode="w")
        with pytest.raises(ValueError, match="negative integer powers"):
            (a**b).compute(out=out)
        assert (out[:] == 3).all()
        if urlpath:
            assert (oxblosc.open(p)[:] == 3).all()
    b[-5] = 2
    assert (a**b).compute(out=out) is out
    np.testing.assert_array_equal(out[:], x ** np.where(y == -1, 2, y))
    other = oxblosc.zeros((100_000,), dtype=np.int64, chunks=(30_000,), blocks=(5000,))
    np.testing.assert_array_equal((a * 2).compute(out=other)[:], x * 2)


def test_compute_out_outside_the_engine_that_fails_part_way_leaves_out_as_it_was(tmp_path):
    """The general path of compute(out=...) (an ``out`` of other chunks, or ``out`` among
    the operands) wrote ``out`` chunk by chunk as results came: an expression failing in a
    late chunk left the first chunks overwritten (a file too). It now evaluates everything
    before writing: ``out`` stays as it was."""
    x = np.arange(100_000, dtype=np.int64) % 7
    y = np.ones(100_000, dtype=np.int64)
    y[-5] = -1
    a = oxblosc.asarray(x, chunks=(10_000,), blocks=(1000,))
    b = oxblosc.asarray(y, chunks=(10_000,), blocks=(1000,))
    p = str(tmp_path / "other.b2nd")
    for urlpath in (p, None):
        other = oxblosc.full((100_000,), 3, dtype=np.int64, chunks=(30_000,), blocks=(5000,), urlpath=urlpath, mode="w")
        with pytest.raises(ValueError, match="negative integer powers"):
            (a**b).compute(out=other)
        assert (other[:] == 3).all()
        if urlpath:
            assert (oxblosc.open(p)[:] == 3).all()
            # (the result waited in a temporary file beside ``out``, removed either way)
            assert sorted(os.listdir(tmp_path)) == ["other.b2nd"]
            np.testing.assert_array_equal((a * 2).compute(out=other)[:], x * 2)
            assert sorted(os.listdir(tmp_path)) == ["other.b2nd"]
    # ``out`` is an operand (the engine refuses that): the failure leaves it whole.
    c = oxblosc.asarray(x, chunks=(10_000,), blocks=(1000,))
    with pytest.raises(ValueError, match="negative integer powers"):
        (c**b + c).compute(out=c)
    np.testing.assert_array_equal(c[:], x)
    b[-5] = 1
    np.testing.assert_array_equal((c**b + c).compute(out=c)[:], x + x)


def test_broadcast_and_numpy_operands_run_in_the_engine(monkeypatch):
    """NumPy operands (full, broadcast, and np.broadcast_to views, which are passed without
    being expanded), small NDArrays of another shape or chunking, and scalars go to the
    engine as dense operands: compute(), [:] and fused reductions give NumPy's values
    without the general chunk loop; an NDArray of another chunking above the dense limit
    takes the general path with the same values."""
    lz = sys.modules["oxblosc.lazyexpr"]
    rng = np.random.default_rng(21)
    x = rng.normal(size=(30, 20, 12))
    a = oxblosc.asarray(x, chunks=(7, 8, 12), blocks=(3, 5, 4))
    row = rng.normal(size=12)
    col = rng.normal(size=(30, 1, 1))
    view = np.broadcast_to(rng.normal(size=(1, 20, 1)), (30, 20, 12))
    other = rng.normal(size=(30, 20, 12)).astype(np.float32)
    o2 = oxblosc.asarray(other, chunks=(10, 10, 6), blocks=(5, 5, 3))
    small = oxblosc.asarray(rng.normal(size=(20, 1)), chunks=(4, 1))
    cases = [
        (a * row + col, x * row + col),
        (a - view, x - view),
        (np.sin(a) + x * 2, np.sin(x) + x * 2),
        (a + o2 * small, x + other * small[:]),
        ((a > row) & (a < 1.5), (x > row) & (x < 1.5)),
    ]
    fill = lz._fill
    monkeypatch.setattr(lz, "_fill", lambda *a: (_ for _ in ()).throw(AssertionError("general path")))
    for e, want in cases:
        assert np.asarray(e.compute()[...]).dtype == want.dtype
        np.testing.assert_allclose(e.compute()[...], want, rtol=1e-6)
        np.testing.assert_allclose(e[:], want, rtol=1e-6)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(e.sum(axis=1), want.sum(axis=1), rtol=1e-9)
            np.testing.assert_allclose(e.max(), want.max())
    monkeypatch.setattr(lz, "_fill", fill)
    monkeypatch.setattr(lz, "_DENSE_NDARRAY_LIMIT", 1000)
    used = []
    native = lz._compute_native
    monkeypatch.setattr(lz, "_compute_native", lambda e, out: used.append(native(e, out)) or used[-1])
    np.testing.assert_allclose((a + o2).compute()[...], x + other, rtol=1e-6)
    assert used == [False]
