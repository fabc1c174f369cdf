"""meshrt.tensor.fuse (generated fused kernels, box planning) and meshrt.tensor.lazy's planner pieces, serial."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meshrt import AbstractMesh, Sharding
from meshrt.tensor import fuse as _fuse, lazy as _lazy

F8 = "float64"


def leaf(k, a=0):
    return ("leaf", k, a)


def op(name, ins, out, *children):
    return ("ufunc", name, ins, out, *children)


def run(sig, arrays, offsets, box, scalars, out_dtype):
    """Run the kernel of ``sig`` on one box of a fresh output; offsets per leaf."""
    nd = arrays[0].ndim
    k = _fuse.kernel(sig, nd, out_dtype, tuple(a.dtype.name for a in arrays))
    out = np.zeros(arrays[0].shape, out_dtype)
    boxes = np.array([[x for lo_hi in box for x in lo_hi]], np.int64)
    sel = np.zeros((1, len(arrays)), np.int8)
    offs = np.array([offsets], np.int64)
    args = [x for a in arrays for x in (a, a)]
    k(boxes, sel, offs, out, np.zeros(nd, np.int64), *args, *scalars)
    return out


@pytest.mark.parametrize("dt", ["float64", "float32", "int32", "int8", "int64"])
def test_kernel_matches_numpy_bitwise(dt):
    rng = np.random.default_rng(0)
    a = (rng.random((9, 7)) * 200 - 100).astype(dt)
    b = (rng.random((9, 7)) * 200 - 100).astype(dt)
    t = np.dtype(dt).name
    # (a[:-2] * 3 + b[2:]) - a[1:-1], scalar cast as numpy casts a weak Python scalar
    sig = op("subtract", (t, t), t,
             op("add", (t, t), t, op("multiply", (t, t), t, leaf(0, 0), ("scalar", 0)), leaf(1, 1)), leaf(2, 0))
    got = run(sig, [a, b], [[-1, 0], [1, 0], [0, 0]], ((1, 8), (0, 7)), [np.dtype(dt).type(3)], t)
    want = (a[:-2] * 3 + b[2:]) - a[1:-1]
    np.testing.assert_array_equal(got[1:8], want)
    if np.dtype(dt).kind == "f":
        d = op("divide", (t, t), t, leaf(0, 0), leaf(1, 1))
        got = run(op("sqrt", (t,), t, op("absolute", (t,), t, d)), [a, b], [[0, 0], [0, 0]], ((0, 9), (0, 7)),
                  [], t)
        np.testing.assert_array_equal(got.view(np.uint8), np.sqrt(np.abs(a / b)).view(np.uint8))


def test_mixed_dtypes_follow_numpy_loops():
    a = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    i = np.arange(12, dtype=np.int64).reshape(3, 4)
    loop = np.add.resolve_dtypes((a.dtype, i.dtype, None))  # float64 loop: both cast up first
    sig = op("add", tuple(d.name for d in loop[:2]), loop[2].name, leaf(0, 0), leaf(1, 1))
    got = run(sig, [a, i], [[0, 0], [0, 0]], ((0, 3), (0, 4)), [], loop[2].name)
    np.testing.assert_array_equal(got, a + i)
    w = ("where", F8, op("less", (F8, F8), "bool", leaf(0, 0), ("scalar", 0)), leaf(1, 0), ("scalar", 1))
    b = a.astype(np.float64)
    got = run(w, [b], [[0, 0], [0, 0]], ((0, 3), (0, 4)), [np.float64(0.5), np.float64(-1.0)], F8)
    np.testing.assert_array_equal(got, np.where(b < 0.5, b, -1.0))


def test_kernel_source_and_cache(tmp_path, monkeypatch):
    sig = op("add", (F8, F8), F8, leaf(0), ("scalar", 0))
    src = _fuse.kernel_source(sig, 2, F8)
    assert "def fused(boxes, sel, offs, out, oo, a0, p0, c0):" in src
    assert "x0 = p0 if sel[b, 0] else a0" in src
    monkeypatch.setattr(_fuse, "_KERNELS", {})
    monkeypatch.setattr(_fuse, "_DIR", [None])
    monkeypatch.setenv("MESHRT_FUSE_CACHE", str(tmp_path))
    sig3 = op("multiply", (F8, F8), F8, leaf(0), ("scalar", 0))
    k = _fuse.kernel(sig3, 3, F8, (F8,))
    assert _fuse.kernel(sig3, 3, F8, (F8,)) is k
    assert _fuse.kernel(sig3, 3, F8, ("float32",)) is not k  # the arrays' dtypes are part of the key
    d = pathlib.Path(_fuse.cache_dir())
    assert d.parent == tmp_path and d.name.startswith("numba")
    assert len(list(d.glob("meshrt_fused_*.py"))) == 2 and len(list(d.glob("meshrt_fused_*.ok"))) == 2
    assert len(list((d / "__pycache__").glob("*.nbi"))) == 2  # Numba's cache: one overload per source file


def test_write_once_keeps_the_first_file(tmp_path):
    p = tmp_path / "k.py"
    _fuse._write_once(str(p), "first\n")
    stamp = p.stat().st_mtime_ns
    _fuse._write_once(str(p), "second\n")
    assert p.read_text() == "first\n" and p.stat().st_mtime_ns == stamp  # Numba's cache stamp unchanged
    assert sorted(x.name for x in tmp_path.iterdir()) == ["k.py"]  # no temporary file left


_PROGRAM = """
import numpy as np
from meshrt.tensor import fuse
sig = ("ufunc", "subtract", ("float64", "float64"), "float64", ("leaf", 0, 0), ("scalar", 0))
k = fuse.kernel(sig, 2, "float64", ("float64",))
a = np.arange(12.0).reshape(3, 4)
out = np.zeros_like(a)
boxes, sel, offs = np.array([[0, 3, 0, 4]]), np.zeros((1, 1), np.int8), np.zeros((1, 1, 2), np.int64)
k(boxes, sel, offs, out, np.zeros(2, np.int64), a, a, np.float64(0.5))  # a loaded kernel runs, right
assert np.array_equal(out, a - 0.5), out
print("STATS", fuse.stats["compiled"], fuse.stats["loaded"])
"""


def _run_programs(n, cache):
    env = dict(os.environ, MESHRT_CACHE_DIR=str(cache), MESHRT_WARMUP="0")
    env.pop("MESHRT_FUSE_CACHE", None)
    # cwd outside the source tree: `python -c` puts the cwd first on sys.path, and an installed meshrt must win
    # over the unbuilt checkout
    procs = [subprocess.Popen([sys.executable, "-c", _PROGRAM], env=env, cwd=str(cache), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for _ in range(n)]
    out = []
    for p in procs:
        text, _ = p.communicate(timeout=300)
        assert p.returncode == 0, text
        line = [x for x in text.splitlines() if x.startswith("STATS")][0]
        out.append(tuple(int(v) for v in line.split()[1:]))
    return out


def test_disk_cache_one_compile_across_processes_and_runs(tmp_path):
    """Three processes started together on an empty cache: one compiles (holding the lock), two load; a
    later run compiles nothing."""
    first = _run_programs(3, tmp_path)
    assert sorted(c for c, _ in first) == [0, 0, 1], first
    assert _run_programs(1, tmp_path) == [(0, 1)]


def test_plan_boxes_jacobi_rows():
    # rows 0..8 owned of 16, target rows 1..15, the 4 reads of the 5-point stencil
    leaves = [[[(-9, 99, s0)], [(-9, 99, s1)]] for s0, s1 in ((-1, 0), (1, 0), (0, -1), (0, 1))]
    boxes = _lazy.plan_boxes(((1, 8), (1, 11)), ((0, 8), (0, 12)), (True, False), leaves)
    cells = [b for b, _, _ in boxes]
    assert cells == [((1, 7), (1, 11)), ((7, 8), (1, 11))]
    assert [g for _, _, g in boxes] == [(False,) * 4, (False, True, False, False)]


def test_plan_boxes_roll_unsplit_dim():
    # roll by 2 on an unsplit dim of 6: cells 0,1 read 4,5 (shift +4), the rest shift -2
    boxes = _lazy.plan_boxes(((0, 6),), ((0, 6),), (False,), [[[(-9, 2, 4), (2, 99, -2)]]])
    assert boxes == [(((0, 2),), ((4,),), (False,)), (((2, 6),), ((-2,),), (False,))]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lo=st.integers(0, 5), n=st.integers(1, 9), o0=st.integers(0, 6), on=st.integers(1, 8),
       shifts=st.lists(st.integers(-3, 3), min_size=1, max_size=4), split=st.booleans())
def test_plan_boxes_partition(lo, n, o0, on, shifts, split):
    """The boxes partition the target box, and each flags exactly the reads outside the owned range."""
    box, owned = ((lo, lo + n),), ((o0, o0 + on),)
    leaves = [[[(-99, 99, s)]] for s in shifts]
    boxes = _lazy.plan_boxes(box, owned, (split,), leaves)
    covered = sorted(g for (b,), _, _ in boxes for g in range(*b))
    assert covered == list(range(lo, lo + n))
    for ((a, b),), sh, ghost in boxes:
        for s, (k,), gh in zip(shifts, sh, ghost):
            assert k == s
            outside = [g + s < owned[0][0] or g + s >= owned[0][1] for g in range(a, b)]
            assert gh == (split and any(outside))
            if split:
                assert all(outside) or not any(outside)  # one array per box: all reads in, or all ghost


@st.composite
def _box_cases(draw):
    nd = draw(st.integers(1, 3))
    box, owned, split = [], [], []
    for _ in range(nd):
        lo, n = draw(st.integers(0, 6)), draw(st.integers(0, 8))
        o0, on = draw(st.integers(0, 6)), draw(st.integers(1, 8))
        box.append((lo, lo + n))
        owned.append((o0, o0 + on))
        split.append(draw(st.booleans()))
    narr = draw(st.integers(1, 3))
    nl = draw(st.integers(1, 4))
    pieces = []
    for _ in range(nl):
        per = []
        for _ in range(nd):
            if draw(st.booleans()):
                per.append([(-99, 99, draw(st.integers(-3, 3)))])
            else:  # a roll: two pieces
                k = draw(st.integers(0, 10))
                per.append([(-99, k, draw(st.integers(-3, 6))), (k, 99, draw(st.integers(-6, 3)))])
        pieces.append(per)
    leaf_array = [draw(st.integers(0, narr - 1)) for _ in range(nl)]
    halo_lo = [[draw(st.integers(0, 2)) for _ in range(nd)] for _ in range(narr)]
    ghost_lo = [draw(st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=nd, max_size=nd)))
                for _ in range(narr)]
    return tuple(box), tuple(owned), tuple(split), pieces, leaf_array, ghost_lo, halo_lo, narr


@settings(max_examples=300, deadline=None, derandomize=True)
@given(case=_box_cases())
def test_compiled_box_cutting_equals_plan_boxes_packed(case):
    """`meshrt._fusevm.cut_boxes` (a new shape's boxes, in C) gives the arrays of `plan_boxes` packed by
    the Python reference, bit for bit, or the same error."""
    from meshrt import _fusevm

    out = []
    for fn in (_fusevm.cut_boxes, _lazy._cut_boxes_py):
        try:
            out.append(fn(*case))
        except ValueError as e:
            out.append(str(e))
    if isinstance(out[0], str) or isinstance(out[1], str):
        assert out[0] == out[1]
        return
    for got, want in zip(out[0][:3], out[1][:3]):
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    assert out[0][3] == out[1][3]


def test_region_keys():
    assert _lazy._region((6, 5), (slice(1, -1), slice(None))) == ((1, 0), (4, 5))
    assert _lazy._region((6, 5), (Ellipsis, slice(2, None))) == ((0, 2), (6, 3))
    assert _lazy._region((6, 5), slice(None, 3)) == ((0, 0), (3, 5))
    for key in ((slice(None, None, 2),), 1, (slice(1, 2), 0), None, (Ellipsis, Ellipsis), [0, 1]):
        assert _lazy._region((6, 5), key) is None, key


_BOUND = st.one_of(st.none(), st.integers(-9, 9))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(1, 7), st.integers(1, 7), _BOUND, _BOUND, st.integers(-9, 8), st.booleans())
def test_key_regions_match_numpy(n0, n1, a, b, i, column):
    """A 2-D key's region (a stencil's ``p[a:b, c:d]``, `_region`; a column's ``p[a:b, i]`` or a row's
    ``p[i, a:b]``, `_int_region`, the column by its list-free path) is where numpy's view of it lies: its
    first cell, its sizes, the dims its ints drop; an int out of range is no region (numpy raises there)."""
    shape = (n0, n1)
    cells = np.arange(n0 * n1).reshape(shape)
    key = (slice(a, b), i) if column else (i, slice(a, b))
    r = _lazy._int_region(shape, key)
    n_int = n1 if column else n0
    if not -n_int <= i < n_int:
        assert r is None
    else:
        view = cells[key]
        lo, hi, _ = slice(a, b).indices(n0 if column else n1)
        size = max(0, hi - lo)
        d = 1 if column else 0
        assert r[2] == (d,) and r[3] == view.shape == (size,)
        assert r[1] == ((size, 1) if column else (1, size))
        if size:
            assert r[0] == tuple(int(x) for x in np.unravel_index(view[0], shape))
    stencil = (slice(a, b), slice(i, None))
    view = cells[stencil]
    q = _lazy._region(shape, stencil)
    assert q[1] == view.shape
    if view.size:
        assert q[0] == tuple(int(x) for x in np.unravel_index(view.flat[0], shape))


def test_loop_dtypes_nep50():
    ins, out, _ = _lazy._loop(np.multiply, (float, np.dtype(np.float32)))
    assert out == np.float32 and ins == (np.dtype(np.float32),) * 2  # a Python float is weak
    ins, out, head = _lazy._loop(np.add, (np.dtype(np.int32), np.dtype(np.float64)))
    assert out == np.float64 and head[0] == ("ufunc", "add", ("float64", "float64"), "float64")
    assert _lazy._head("ufunc", np.add, ins, out) is head  # (its number names it in a statement's key)
    assert _lazy._head("ufunc", np.multiply, ins, out)[1] != head[1]
    assert _lazy._loop(np.sqrt, (np.dtype(np.int8),)) is False  # float16 loop: eager
    assert _lazy._loop(np.add, (np.dtype(np.uint8), int)) is False  # unsigned: eager
    assert not _lazy._scalar_ok(1000, np.dtype(np.int8)) and _lazy._scalar_ok(100, np.dtype(np.int8))


def test_lazy_off_by_environment():
    """MESHRT_LAZY=0: nothing is deferred (and the import's reference calibration still works)."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from meshrt import DistributedTensor as DT, Mesh, Sharding; "
            "u = DT.from_global(np.arange(6.0), Sharding(Mesh((-1,)), [[0]])); "
            "e = u[1:] + 1; u += 1; print(type(e).__name__, u.gather()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MESHRT_LAZY": "0"}, cwd=os.path.dirname(__file__))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["DistributedTensor", "1.0"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(nb=st.integers(1, 9), size=st.integers(1, 40), explicit=st.booleans(), draw=st.data())
def test_shift_stays_equals_the_blocks_walked(nb, size, explicit, draw):
    """`_lazy._shift_stays` (arithmetic under MLIR's uneven rule, a bisection of given offsets) says what a
    walk over the dim's block boundaries says: none strictly inside ``(lo, hi)``."""
    mesh = AbstractMesh((nb,))
    if explicit:
        cuts = sorted(draw.draw(st.lists(st.integers(0, size), min_size=nb - 1, max_size=nb - 1)))
        s = Sharding(mesh, [[0]], sharded_dims_offsets=[0, *cuts, size])
    else:
        s = Sharding(mesh, [[0]])
    lo = draw.draw(st.integers(0, size - 1))
    hi = draw.draw(st.integers(lo + 1, size))
    offs = s.dim_offsets((size, 3))[0]
    assert _lazy._shift_stays(s, (size, 3), 0, lo, hi) == (not any(lo < b < hi for b in offs)), (offs, lo, hi)


def test_shift_stays_at_a_hundred_thousand_processes():
    """By arithmetic at 10^5 blocks (10 cells each, the last three 11): no offsets made or walked."""
    s = Sharding(AbstractMesh((100_000,)), [[0]])
    n = 1_000_003
    stays = [_lazy._shift_stays(s, (n,), 0, lo, hi) for lo, hi in
             ((5, 10), (5, 11), (999_970, 999_981), (n - 11, n), (n - 12, n), (n - 22, n - 11))]
    assert stays == [True, False, True, True, False, True]
