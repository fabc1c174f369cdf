"""meshrt._fusevm (the fused expressions' interpreter) against numpy and the Numba kernel, bit for bit; serial."""

import numpy as np
import pytest

from meshrt.tensor import fuse as _fuse

_fusevm = pytest.importorskip("meshrt._fusevm")

UNARY = ("negative", "positive", "square", "sqrt", "absolute")
BINARY = ("add", "subtract", "multiply", "divide")


def random_sig(rng, t, narr, depth, counters):
    """A random expression of dtype ``t``; counters: [leaves, scalars] numbered in order."""
    r = rng.random()
    if depth == 0 or r < 0.25:
        if rng.random() < 0.2:
            counters[1] += 1
            return ("scalar", counters[1] - 1)
        counters[0] += 1
        return ("leaf", counters[0] - 1, int(rng.integers(narr)))
    if r < 0.4:
        name = UNARY[rng.integers(len(UNARY))]
        return ("ufunc", name, (t,), t, random_sig(rng, t, narr, depth - 1, counters))
    if r < 0.45:
        return ("astype", t, random_sig(rng, t, narr, depth - 1, counters))
    name = BINARY[rng.integers(len(BINARY))]
    return ("ufunc", name, (t, t), t, random_sig(rng, t, narr, depth - 1, counters),
            random_sig(rng, t, narr, depth - 1, counters))


NP = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
      "negative": np.negative, "positive": np.positive, "square": np.square, "sqrt": np.sqrt,
      "absolute": np.absolute}


def numpy_value(sig, read, scalars):
    """``sig`` by numpy's ufuncs, leaf ``k`` of array ``a`` given by ``read(k, a)``."""
    kind = sig[0]
    if kind == "leaf":
        return read(sig[1], sig[2])
    if kind == "scalar":
        return scalars[sig[1]]
    if kind == "astype":
        return numpy_value(sig[2], read, scalars).astype(sig[1])
    with np.errstate(all="ignore"):
        return NP[sig[1]](*(numpy_value(c, read, scalars) for c in sig[4:])).astype(sig[3])


def same_bits(x, y):
    """Equal bit for bit, NaNs anywhere equal (their payload is the hardware's)."""
    x, y = np.asarray(x), np.asarray(y)
    nx, ny = np.isnan(x), np.isnan(y)
    ui = {4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    return np.array_equal(nx, ny) and np.array_equal(x[~nx].view(ui), y[~ny].view(ui))


def make_case(rng, t, nd, narr, nsig_leaves, nbox, strided):
    """Arrays (each and its padded copy: another array of values), boxes, sel, offs as the fused kernel
    takes them; every leaf reads at a shift in -2..2 (the arrays carry a margin of 2)."""
    shape = tuple(int(rng.integers(3, 9)) for _ in range(nd - 1)) + (int(rng.integers(1, 700)),)
    big = tuple(s + 4 for s in shape)

    def arr():
        a = (rng.standard_normal(big if not strided else big[:-1] + (2 * big[-1],)) * 10).astype(t)
        a[rng.random(a.shape) < 0.02] = 0.0
        a[rng.random(a.shape) < 0.02] = -0.0
        return a[..., ::2] if strided else a

    arrays = [(arr(), arr()) for _ in range(narr)]
    boxes, sel, offs = [], [], []
    for _ in range(nbox):
        lo = [int(rng.integers(0, s)) for s in shape]
        hi = [int(rng.integers(l_, s + 1)) for l_, s in zip(lo, shape)]
        boxes.append([x for pair in zip(lo, hi) for x in pair])
        sel.append([int(rng.integers(2)) for _ in range(narr)])
        offs.append([[2 + int(rng.integers(-2, 3)) for _ in range(nd)] for _ in range(nsig_leaves)])
    return (shape, arrays, np.array(boxes, np.int64).reshape(nbox, 2 * nd),
            np.array(sel, np.int8).reshape(nbox, narr), np.array(offs, np.int64).reshape(nbox, nsig_leaves, nd))


def expected(sig, shape, arrays, boxes, sel, offs, oo, scalars, out):
    nd = len(shape)
    for b in range(boxes.shape[0]):
        box = [(boxes[b, 2 * d], boxes[b, 2 * d + 1]) for d in range(nd)]
        if any(hi <= lo for lo, hi in box):
            continue

        def read(k, a):
            x = arrays[a][int(sel[b, a])]
            return x[tuple(slice(lo + offs[b, k, d], hi + offs[b, k, d]) for d, (lo, hi) in enumerate(box))]

        out[tuple(slice(lo + oo[d], hi + oo[d]) for d, (lo, hi) in enumerate(box))] = numpy_value(sig, read, scalars)


def one_case(seed, t, nd, strided=False, out_strided=False, numba=False):
    rng = np.random.default_rng(seed)
    narr = int(rng.integers(1, 4))
    counters = [0, 0]
    sig = random_sig(rng, t, narr, int(rng.integers(1, 5)), counters)
    leaves = {n[1]: n[2] for n in _fuse._walk(sig) if n[0] == "leaf"}
    if not leaves:  # every expression reads at least one array: a leaf of array 0 added
        sig = ("ufunc", "add", (t, t), t, sig, ("leaf", counters[0], 0))
        counters[0] += 1
        leaves = {n[1]: n[2] for n in _fuse._walk(sig) if n[0] == "leaf"}
    narr = 1 + max(leaves.values())
    shape, arrays, boxes, sel, offs = make_case(rng, t, nd, narr, counters[0], int(rng.integers(1, 4)), strided)
    scalars = [np.dtype(t).type(rng.standard_normal() * 3) for _ in range(counters[1])]
    oo = np.array([1] * nd, np.int64)
    out_shape = tuple(s + 2 for s in shape)
    prog = _fuse.program(sig, nd, t, (t,) * narr)
    assert prog is not None, sig
    args = [x for pair in arrays for x in pair]

    def fresh():
        if out_strided:
            return np.full(out_shape[:-1] + (3 * out_shape[-1],), 7, t)[..., ::3]
        return np.full(out_shape, 7, t)

    got = fresh()
    prog(boxes, sel, offs, got, oo, *args, *scalars)
    want = fresh()
    expected(sig, shape, arrays, boxes, sel, offs, oo, scalars, want)
    assert same_bits(got, want), (sig, shape)
    if numba:
        k = _fuse.kernel(sig, nd, t, (t,) * narr)
        ref = fresh()
        k(boxes, sel, offs, ref, oo, *args, *scalars)
        assert same_bits(got, ref), (sig, shape)


@pytest.mark.parametrize("t", ["float64", "float32"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_random_expressions_equal_numpy(t, nd):
    for seed in range(40):
        one_case(1000 * nd + seed, t, nd, strided=seed % 4 == 1, out_strided=seed % 4 == 2)


@pytest.mark.parametrize("t", ["float64", "float32"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_random_expressions_equal_the_numba_kernel(t, nd):
    one_case(77 + nd, t, nd, numba=True)  # (one compile each: the kernel's bits, against the chains')


def test_stencil_chain_with_reversed_operands():
    """Operand order kept where the chain is the right operand (x - acc, x / acc), and two chains meet."""
    t = "float64"
    lf = [("leaf", k, 0) for k in range(4)]
    add = ("ufunc", "add", (t, t), t, lf[0], lf[1])
    sub = ("ufunc", "subtract", (t, t), t, ("scalar", 0), add)          # c - (a + b)
    div = ("ufunc", "divide", (t, t), t, lf[2], sub)                    # x / (c - (a + b))
    both = ("ufunc", "subtract", (t, t), t, div, ("ufunc", "multiply", (t, t), t, lf[3], lf[0]))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 1000))
    out = np.zeros_like(a)
    boxes = np.array([[1, 4, 1, 999]], np.int64)
    offs = np.array([[[-1, 0], [1, 0], [0, -1], [0, 1]]], np.int64)
    _fuse.program(both, 2, t, (t,))(boxes, np.zeros((1, 1), np.int8), offs, out, np.zeros(2, np.int64), a, a, 0.7)
    x = a[1:4, 1:999]
    want = a[1:4, 0:998] / (0.7 - (a[0:3, 1:999] + a[2:5, 1:999])) - a[1:4, 2:1000] * a[0:3, 1:999]
    assert same_bits(out[1:4, 1:999], want) and x.size


def test_what_the_interpreter_leaves_to_numba():
    t = "float64"
    lf = ("leaf", 0, 0)
    assert _fuse.program(("ufunc", "add", ("int64", "int64"), "int64", lf, lf), 2, "int64", ("int64",)) is None
    mixed = ("ufunc", "add", (t, t), t, ("astype", t, ("leaf", 0, 0)), ("leaf", 1, 1))
    assert _fuse.program(mixed, 2, t, ("float32", t)) is None  # one dtype throughout, or Numba
    cmp = ("ufunc", "less", (t, t), "bool", lf, lf)
    assert _fuse.program(("where", t, cmp, lf, ("scalar", 0)), 2, t, (t,)) is None
    assert _fuse.program(("ufunc", "add", (t, t), t, lf, lf), 2, t, (t,)) is not None


def test_runner_switch(monkeypatch):
    t = "float64"
    sig = ("ufunc", "multiply", (t, t), t, ("leaf", 0, 0), ("scalar", 0))
    monkeypatch.setattr(_fuse, "_EVALUATORS", {})
    monkeypatch.setenv("MESHRT_FUSE_INTERP", "1")
    ev = _fuse.runner(sig, 2, t, (t,))
    assert isinstance(ev, _fuse.Evaluator) and isinstance(ev.fn, _fusevm.Program)
    assert _fuse.runner(sig, 2, t, (t,)) is ev  # one per expression structure
    monkeypatch.setenv("MESHRT_FUSE_INTERP", "0")
    assert not isinstance(_fuse.runner(sig, 2, t, (t,)), (_fuse.Evaluator, _fusevm.Program))  # Numba's
    isig = ("ufunc", "multiply", ("int64", "int64"), "int64", ("leaf", 0, 0), ("scalar", 0))
    monkeypatch.setenv("MESHRT_FUSE_INTERP", "1")
    assert not isinstance(_fuse.runner(isig, 2, "int64", ("int64",)), _fuse.Evaluator)
    monkeypatch.setenv("MESHRT_FUSE_INTERP", "yes")
    with pytest.raises(ValueError, match="MESHRT_FUSE_INTERP: 'yes'"):
        _fuse.runner(sig, 2, t, (t,))
    monkeypatch.setenv("MESHRT_FUSE_INTERP", "1")
    monkeypatch.setenv("MESHRT_FUSE_SWITCH_S", "-1")
    monkeypatch.setattr(_fuse, "_EVALUATORS", {})
    with pytest.raises(ValueError, match="MESHRT_FUSE_SWITCH_S: '-1'"):
        _fuse.runner(sig, 2, t, (t,))


def test_evaluator_switches_to_the_numba_kernel(monkeypatch):
    """After MESHRT_FUSE_SWITCH_S seconds in the interpreter the Numba kernel is loaded on a thread and
    takes over, with the same bits; before, the interpreter alone (no thread)."""
    t = "float32"
    sig = ("ufunc", "divide", (t, t), t, ("scalar", 0), ("ufunc", "add", (t, t), t, ("leaf", 0, 0), ("leaf", 1, 0)))
    a = np.random.default_rng(2).standard_normal((6, 300)).astype(t)
    args = (np.array([[0, 5, 0, 300]], np.int64), np.zeros((1, 1), np.int8),
            np.array([[[0, 0], [1, 0]]], np.int64))
    want = (np.float32(3) / (a[:5] + a[1:]))
    monkeypatch.setattr(_fuse, "_EVALUATORS", {})
    monkeypatch.setenv("MESHRT_FUSE_SWITCH_S", "inf")
    ev = _fuse.runner(sig, 2, t, (t,))
    out = np.zeros_like(a)
    ev(*args, out, np.zeros(2, np.int64), a, a, np.float32(3))
    assert ev.thread is None and ev.fn is ev.program and same_bits(out[:5], want)
    monkeypatch.setattr(_fuse, "_EVALUATORS", {})
    monkeypatch.setenv("MESHRT_FUSE_SWITCH_S", "0")
    ev = _fuse.runner(sig, 2, t, (t,))
    ev(*args, out, np.zeros(2, np.int64), a, a, np.float32(3))
    ev.thread.join(120)
    assert ev.error is None and ev.fn is _fuse.kernel(sig, 2, t, (t,))
    out[...] = 0
    ev(*args, out, np.zeros(2, np.int64), a, a, np.float32(3))
    assert same_bits(out[:5], want)


def test_bad_arguments_are_named():
    t = "float64"
    p = _fuse.program(("ufunc", "add", (t, t), t, ("leaf", 0, 0), ("scalar", 0)), 2, t, (t,))
    a = np.zeros((3, 4))
    ok = [np.array([[0, 3, 0, 4]], np.int64), np.zeros((1, 1), np.int8), np.zeros((1, 1, 2), np.int64), a,
          np.zeros(2, np.int64), a, a, 1.0]
    p(*ok)
    with pytest.raises(TypeError, match="expected 8 arguments, got 7"):
        p(*ok[:-1])
    with pytest.raises(TypeError, match="out must be 2-d float64, got 2-d float32"):
        p(*ok[:3], a.astype(np.float32), *ok[4:])
    with pytest.raises(TypeError, match="boxes must be a C-contiguous 2-d int64"):
        p(ok[0].astype(np.int32), *ok[1:])
    with pytest.raises(ValueError, match="of the wrong shape"):
        p(ok[0], np.zeros((1, 2), np.int8), *ok[2:])
    ro = a.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        p(*ok[:3], ro, *ok[4:])
    with pytest.raises(ValueError, match="dtype: expected 'float64' or 'float32', got 'int64'"):
        _fusevm.Program(np.zeros((1, 2), np.int64), np.array([-1]), 0, np.zeros(1, np.int64), 1, 0, 2, "int64")
