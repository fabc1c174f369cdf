"""Deferred, fused numpy expressions on DistributedTensors (meshrt.tensor.lazy): numpy stencils written as
slices and rolls give numpy's bits at any process count, take the fused path, and keep eager semantics
(pending expressions never see a later write; an exception leaves the target unchanged)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

import meshrt
from meshrt import DistributedTensor as DT, Mesh, Sharding
from meshrt.tensor import lazy as _lazy

MPI_NPROCS = (1, 2, 3, 4)

comm = MPI.COMM_WORLD


@pytest.fixture(autouse=True)
def hot(monkeypatch):
    """Fuse from the first run, so every case here takes the fused path (meshrt's default; pinned here so a
    change of the default does not make these tests check less).  Small writes read where they are written
    take the fused kernel here too, not numpy on the blocks (tests/mpi/test_loop_programs.py checks that)."""
    monkeypatch.setattr(_lazy, "HOT", 1)
    monkeypatch.setattr(_lazy, "_LOCAL_MAX", -1)


@pytest.fixture(scope="module")
def mesh2():
    m = {"1d": Mesh((-1,), ("x",)), "2d": Mesh((-1, -1), ("x", "y"))}
    yield m
    for v in m.values():
        v.free()


def layouts(mesh2, ndim):
    """(name, sharding) of ndim-d tensors: rows split, both dims split, with and without halos."""
    m1, m2 = mesh2["1d"], mesh2["2d"]
    rest = [[]] * (ndim - 1)
    out = [("rows", Sharding(m1, [["x"]] + rest)),
           ("rows+halo", Sharding(m1, [["x"]] + rest, halo_sizes=[1, 1])),
           ("2d", Sharding(m2, [["x"], ["y"]] + rest[1:]))]
    if ndim >= 2:
        out.append(("cols", Sharding(m1, [[], ["x"]] + rest[1:])))
    return out


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    return (rng.random(shape) * 4 - 1).astype(dtype)


def same(got, want, what):
    g = got.gather() if isinstance(got, DT) else got
    assert g.dtype == want.dtype, (what, g.dtype, want.dtype)
    assert g.shape == want.shape, (what, g.shape, want.shape)
    np.testing.assert_array_equal(g.view(np.uint8) if g.dtype.kind == "f" else g,
                                  want.view(np.uint8) if want.dtype.kind == "f" else want, err_msg=what)


def jacobi_np(u):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def roll_np(u):
    return 0.25 * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_jacobi_slice_form_fused_bitwise(mesh2, dtype):
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        for shape in ((13, 11), (comm.size * 4 + 3, 9)):
            a = data(shape, dtype, k)
            u = DT.from_global(a, s)
            before = _lazy.stats["fused_writes"]
            for _ in range(3):
                jacobi_np(a)
                jacobi_np(u)
            assert _lazy.stats["fused_writes"] == before + 3, name
            same(u, a, f"jacobi {name} {shape} {dtype}")


def test_roll_form_fused_bitwise(mesh2):
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        a = data((comm.size * 3 + 5, 10), "float64", k)
        u = DT.from_global(a, s)
        before = _lazy.stats["fused_new"]
        for _ in range(3):
            a = roll_np(a)
            u = roll_np(u)
        same(u, a, f"roll {name}")
        assert _lazy.stats["fused_new"] == before + 3, name


def laplacian_np(p):
    return 4.0 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_new_value_from_shifted_slices_fused_bitwise(mesh2, dtype):
    """A new array from shifted slices (a CG's ``q = 4 p[1:-1, 1:-1] - p[:-2, 1:-1] - ...``, a 1-D
    ``u[:-2] - 2 u[1:-1] + u[2:]``): one fused kernel into a new tensor laid out as the operands, the value its
    middle region (lined up with ``p[1:-1, 1:-1]``, so their products and updates need no exchange); no
    slice is evaluated on its own."""
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        for shape in ((13, 11), (comm.size * 4 + 3, 9)):
            a = data(shape, dtype, k)
            p = DT.from_global(a, s)
            before = dict(_lazy.stats)
            q = laplacian_np(p)
            same(q, laplacian_np(a), f"laplacian {name} {shape} {dtype}")
            assert _lazy.stats["fused_new"] == before["fused_new"] + 1, name
            assert _lazy.stats["eager_leaves"] == before["eager_leaves"], name
            mid = p[1:-1, 1:-1]
            same(q * mid + mid, laplacian_np(a) * a[1:-1, 1:-1] + a[1:-1, 1:-1], f"q with p's middle {name}")
    s1 = Sharding(mesh2["1d"], [["x"]])
    a = data((comm.size * 5 + 2,), dtype, 9)
    u = DT.from_global(a, s1)
    same(u[:-2] - 2 * u[1:-1] + u[2:], a[:-2] - 2 * a[1:-1] + a[2:], "1-d second difference")
    same(u[3:] + u[:-3], a[3:] + a[:-3], "two slices, an even count of starts")


def test_3d_seven_point_and_int(mesh2):
    for k, (name, s) in enumerate(layouts(mesh2, 3)):
        a = data((comm.size * 2 + 4, 6, 5), "float64", k)
        u = DT.from_global(a, s)
        for x in (a, u):
            c = x[1:-1, 1:-1, 1:-1]
            x[1:-1, 1:-1, 1:-1] = c + 0.1 * (x[:-2, 1:-1, 1:-1] + x[2:, 1:-1, 1:-1] + x[1:-1, :-2, 1:-1]
                                             + x[1:-1, 2:, 1:-1] + x[1:-1, 1:-1, :-2] + x[1:-1, 1:-1, 2:] - 6 * c)
        same(u, a, f"7-point {name}")
        i = data((comm.size * 2 + 4, 7), "int32", k)
        t = DT.from_global(i, Sharding(s.mesh, [s.split_axes[0], []]))
        for x in (i, t):
            x[1:-1, 1:] = 3 * x[2:, :-1] - x[:-2, 1:] * 7 + 2
        same(t, i, f"int32 {name}")


def test_where_astype_comparison(mesh2):
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        a = data((comm.size * 2 + 6, 8), "float64", k)
        u = DT.from_global(a, s)
        for x in (a, u):
            x[1:-1, 1:-1] = np.where(x[2:, 1:-1] > 0.5, x[:-2, 1:-1] * 2.0, -1.0)
        same(u, a, f"where {name}")
        f = (u[1:, :] * 0.3 + np.float32(2)).astype(np.float32)
        same(f, (a[1:, :] * 0.3 + np.float32(2)).astype(np.float32), f"astype {name}")


def test_compiled_the_second_time(mesh2, monkeypatch):
    monkeypatch.setattr(_lazy, "HOT", 2)
    u = DT.from_global(data((comm.size * 3 + 7, 5), "float64"), layouts(mesh2, 2)[0][1])
    before = _lazy.stats["fused_writes"]
    u[1:-1, :] = u[:-2, :] * 0.5 - u[2:, :]
    assert _lazy.stats["fused_writes"] == before  # a one-off runs eagerly: nothing compiled
    u[1:-1, :] = u[:-2, :] * 0.5 - u[2:, :]
    assert _lazy.stats["fused_writes"] == before + 1


def test_explain(mesh2):
    s = layouts(mesh2, 2)[0][1]
    u = DT.zeros((comm.size * 4, 8), s)
    text = meshrt.explain_fused(0.25 * (u[:-2, 1:-1] + u[2:, 1:-1]), u, (slice(1, -1), slice(1, -1)))
    assert "ghost widths {0: (1, 1)}" in text and "second buffer" in text, text
    want = 2 * 8 * 8 if 0 < comm.rank < comm.size - 1 else 8 * 8 if comm.size > 1 else 0  # whole rows
    assert f"bytes received per step: {want}" in text, text
    assert meshrt.explain_op(0.25 * (u[:-2, 1:-1] + u[2:, 1:-1]), u, (slice(1, -1), slice(1, -1))) == text
    r = meshrt.explain_fused(0.5 * (np.roll(u, 1, 0) + np.roll(u, -1, 1)))
    assert "periodic [0]" in r, r


# -- aliasing and exceptions ------------------------------------------------------------------------------
def test_write_after_pending_read(mesh2):
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        a = data((comm.size * 2 + 5, 7), "float64", k)
        u = DT.from_global(a, s)
        e = u[1:, :] * 2.0 + u[:-1, :]           # pending: reads u
        r = np.roll(u, 1, 0)                       # pending copy
        view = u[1:, :]                            # a view: sees later writes, as numpy's does
        u[...] = 0.0                               # a write: the pending ones are evaluated first
        same(e, a[1:, :] * 2.0 + a[:-1, :], f"pending expr {name}")
        same(r, np.roll(a, 1, 0), f"pending roll {name}")
        same(view, np.zeros_like(a[1:, :]), f"view {name}")
        u2 = DT.from_global(a, s)
        held = 0.5 * (u2[:-2] + u2[2:])           # named: assigned, then read again
        u2[1:-1] = held
        b = a.copy()
        hb = 0.5 * (b[:-2] + b[2:])
        b[1:-1] = hb
        same(u2, b, f"named root {name}")
        same(held, hb, f"named root value {name}")
        u3 = DT.from_global(a, s)
        e3 = u3 + 1.0
        u3.interior[...] = 5.0                      # a write through the buffer
        same(e3, a + 1.0, f"interior write {name}")


def test_inplace_shifted_self_read(mesh2):
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        a = data((comm.size * 2 + 5, 7), "float64", k)
        u = DT.from_global(a, s)
        keep = u.local                              # held: the fused write copies back instead of swapping
        u += 0.5 * np.roll(u, 1, 0) - u[::1, ::1]
        b = a + (0.5 * np.roll(a, 1, 0) - a)
        same(u, b, f"+= roll {name}")
        assert keep is u.local
        u2 = DT.from_global(a, s)
        u2[1:, :] = u2[:-1, :] * 1.0 + u2[1:, :]    # reads the rows being overwritten: numpy's value semantics
        c = a.copy()
        c[1:, :] = c[:-1, :] * 1.0 + c[1:, :]
        same(u2, c, f"shifted self {name}")
        t = DT.from_global(a, s).T                  # a strided target and operands: copies, same plan
        t[1:-1, 1:-1] = 0.5 * (t[:-2, 1:-1] + t[2:, 1:-1])
        d = a.T.copy()
        d[1:-1, 1:-1] = 0.5 * (d[:-2, 1:-1] + d[2:, 1:-1])
        same(t, d, f"transposed {name}")
        assert bool(u2[0, 0] == u2[0, 0])           # 0-d: eager (the owner's block is a view, others' not)


@pytest.mark.parametrize("small", [True, False])
def test_small_and_large_blocks_take_their_paths(mesh2, monkeypatch, small):
    """A small block: one kernel call after the exchange, a shifted target read from a copy (no second buffer);
    a large one (``_SMALL`` lowered): the kernel overlaps the exchange and writes a second buffer."""
    monkeypatch.setattr(_lazy, "_SMALL", 1 << 30 if small else 0)
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        a = data((comm.size * 3 + 6 + small, 17), "float64", k)  # shapes of their own: plans built here
        u = DT.from_global(a, s)
        b = a.copy()
        swaps = _lazy.stats["swaps"] + _lazy.stats["copies"]
        for _ in range(3):
            jacobi_np(u)
            jacobi_np(b)
            u[1:, :] = u[:-1, :] * 0.5 + u[1:, :]
            b[1:, :] = b[:-1, :] * 0.5 + b[1:, :]
        same(u, b, f"{name} small={small}")
        second = _lazy.stats["swaps"] + _lazy.stats["copies"] - swaps
        assert (second == 0) if small else (second == 6), (name, small, second)
        text = meshrt.explain_fused(0.25 * (u[:-2, 1:-1] + u[2:, 1:-1]), u, (slice(1, -1), slice(1, -1)))
        assert ("read from a copy" in text) == small, text


def test_small_block_one_compiled_call(mesh2):
    """A small block's fused write is one compiled call (`meshrt._fusevm.SmallRun`: the slabs, the ghost
    exchange, the copy of a target read with a shift, the interpreter) at every layout and dtype, with
    numpy's bits; an operand sharing the target's memory takes the plan's Python path (which copies it)."""
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        for dt in ("float64", "float32"):
            shape = (comm.size * 2 + 5, 7 + k)
            a, b = data(shape, dt, k), data(shape, dt, k + 7)
            u, v = DT.from_global(a, s), DT.from_global(b, s)
            c = np.dtype(dt).type(0.25)
            before = _lazy.stats["one_call"]
            for _ in range(3):
                for x, y in ((a, b), (u, v)):
                    x[1:-1, 1:-1] = 0.5 * (x[:-2, 1:-1] + y[2:, 1:-1]) - x[1:-1, :-2] * c + y[1:-1, 1:-1] / 3.0
            # (a shape's first run is one call where its plan lasts from it: a small tensor split on rows alone;
            # elsewhere it is planned for once, with no persistent state)
            assert _lazy.stats["one_call"] == before + (3 if name.startswith("rows") else 2), (name, dt)
            same(u, a, f"one call {name} {dt}")
    s = layouts(mesh2, 2)[0][1]
    a = data((comm.size * 2 + 5, 6), "float64", 9)
    u = DT.from_global(a, s)
    w = DT(u.local, s, u.global_shape)  # another tensor on u's buffer
    before = dict(_lazy.stats)
    for _ in range(2):
        a[1:-1, :] = a[:-2, :] + a[2:, :] * 0.5
        u[1:-1, :] = w[:-2, :] + w[2:, :] * 0.5
    same(u, a, "operand on the target's buffer")
    assert _lazy.stats["fused_writes"] == before["fused_writes"] + 2
    assert _lazy.stats["one_call"] == before["one_call"]


def test_plans_freed_alike_with_memoized_ones(mesh2, monkeypatch):
    """Past _MAX_PLANS every process frees its plans at the same statement, also when a statement finds its
    plan memoized on its signature (no _get_plan call): later builds agree instead of hanging."""
    monkeypatch.setattr(_lazy, "_MAX_PLANS", 3)
    s = layouts(mesh2, 1)[0][1]
    arrays = [data((comm.size * 2 + 4 + k,), "float64", k) for k in range(6)]
    us = [DT.from_global(a, s) for a in arrays]
    gen = _lazy._GEN[0]
    def step(x):
        x[1:-1] = 0.5 * (x[:-2] + x[2:])

    for _ in range(2):
        for xs in (us, arrays):  # the tensors, then numpy on the global arrays
            for k in range(len(xs)):
                step(xs[k])
                step(xs[0])  # memoized after its first run
    for u, a in zip(us, arrays):
        same(u, a, "after the plans were freed")
    assert _lazy._GEN[0] > gen


def test_exception_leaves_target_unchanged(mesh2, monkeypatch):
    monkeypatch.setattr(_lazy, "_SMALL", 0)  # the plan's Python path (a small block's one call cannot fail midway)
    s = layouts(mesh2, 2)[0][1]
    a = data((comm.size * 3 + 4, 6), "float64", 3)
    u = DT.from_global(a, s)
    jacobi_np(u)  # plan built and compiled
    before = u.gather()
    calls = []

    def boom(self, *args):
        calls.append(1)
        raise RuntimeError("injected")

    monkeypatch.setattr(_lazy._FusedPlan, "_call", boom)
    with pytest.raises(RuntimeError, match="injected"):
        jacobi_np(u)
    monkeypatch.undo()
    same(u, before, "unchanged after an exception")
    assert calls


def test_fallbacks_keep_eager_results(mesh2):
    s = layouts(mesh2, 2)[0][1]
    a = data((comm.size * 2 + 5, 7), "float64", 4)
    u = DT.from_global(a, s)
    same(np.exp(u[1:, :]) + u[:-1, :], np.exp(a[1:, :]) + a[:-1, :], "exp (not fused)")
    for _ in range(2):  # a slice at offset 0 is not the whole tensor: no new value of the tensor's layout
        same(u[:1, :] * 2.0 + u[:1, :], a[:1, :] * 2.0 + a[:1, :], "first row")
    same((u[1:, :] + u[:-1, :]) ** 2, (a[1:, :] + a[:-1, :]) ** 2, "power")
    with pytest.raises(OverflowError):
        DT.from_global(a.astype(np.int8), s)[1:] + 1000
    with np.errstate(divide="raise", invalid="ignore"):
        with pytest.raises(FloatingPointError):
            _ = (u[1:, :] * 0.0) / 0.0 + 1 / (u[:-1, :] * 0.0)
    v = DT.from_global(a[:-1], s)
    with pytest.raises(meshrt.ShardingError):
        (u[1:, :] + 1.0) + v[:, :-1]


@pytest.mark.parametrize("use", ["gather", "write", "local write"])
def test_deferred_values_warn_by_their_statements_errstate(mesh2, monkeypatch, use):
    """``r = a / b`` under ``np.errstate(all="ignore")`` and used after the block: numpy's eager value warned
    (or not) inside the block, so the deferred one, evaluated later by numpy (whole tensors: numpy's loop on
    the blocks; a small write read where it is written: numpy on the blocks) prints nothing; made under
    numpy's default state, numpy's loop warns as numpy's statement does (a fused loop raises none)."""
    s = layouts(mesh2, 1)[0][1]
    a = np.arange(comm.size * 3 + 4, dtype=np.float64) - 3
    u, z = DT.from_global(a, s), DT.from_global(np.zeros_like(a), s)
    if use == "local write":
        monkeypatch.setattr(_lazy, "_LOCAL_MAX", 1 << 20)  # numpy on the blocks where the target is written

    def make():
        return u / z if use == "gather" else u[1:-1] / z[1:-1]

    def value(r):
        if use == "gather":
            return r.gather()
        out = DT.from_global(np.full_like(a, 7.0), s)
        out[1:-1] = r
        return out.gather()[1:-1]

    with np.errstate(all="ignore"):
        want = a / np.zeros_like(a)
        r = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the old behaviour: RuntimeWarning here, on every process)
        got = value(r)
    same_bits = np.array_equal(got, want if use == "gather" else want[1:-1], equal_nan=True)
    assert comm.allreduce(not same_bits) == 0
    if use == "gather":  # numpy's loop under the default state warns, as numpy's statement does (a fused
        with pytest.warns(RuntimeWarning):  # loop raises no warnings: docs/numpy.md)
            value(make())


# -- random expression trees ------------------------------------------------------------------------------
OPS2 = ["add", "subtract", "multiply", "divide"]
OPS1 = ["negative", "absolute", "square"]


def trees(depth):
    leaf = st.one_of(
        st.tuples(st.just("slice"), st.integers(-2, 2), st.integers(-2, 2)),
        st.tuples(st.just("roll"), st.integers(-3, 3), st.integers(0, 1)),
        st.tuples(st.just("scalar"), st.sampled_from([0.5, -1.25, 3, 2.0])),
    )
    if depth == 0:
        return leaf
    sub = trees(depth - 1)
    return st.one_of(leaf, st.tuples(st.sampled_from(OPS2), sub, sub), st.tuples(st.sampled_from(OPS1), sub))


def build(spec, x, mode):
    """The expression ``spec`` on x (numpy or DT); ``mode`` "slice": leaves are shifted slices of the
    inner region [2:-2, 2:-2]; "roll": rolls of the whole array (a slice leaf reads x itself)."""
    kind = spec[0]
    if kind == "slice":
        if mode == "roll":
            return x[:, :] if isinstance(x, np.ndarray) else x
        di, dj = spec[1], spec[2]
        n, m = x.shape
        return x[2 + di:n - 2 + di, 2 + dj:m - 2 + dj]
    if kind == "roll":
        if mode == "slice":
            return x[2:-2, 2:-2]
        return np.roll(x, spec[1], spec[2])
    if kind == "scalar":
        return spec[1]
    args = [build(c, x, mode) for c in spec[1:]]
    return getattr(np, kind)(*args)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(spec=trees(3), mode=st.sampled_from(["slice", "roll"]), lay=st.integers(0, 3),
       dtype=st.sampled_from(["float64", "float32"]))
def test_random_trees_bitwise(mesh2, spec, mode, lay, dtype):
    name, s = layouts(mesh2, 2)[lay]
    a = data((comm.size * 3 + 6, 9), dtype, lay)
    u = DT.from_global(a, s)
    with np.errstate(all="ignore"):
        want = build(spec, a, mode)
        got = build(spec, u, mode)
        if not isinstance(want, np.ndarray) or want.ndim != 2:
            return
        if mode == "slice" and want.shape == a[2:-2, 2:-2].shape and want.dtype == a.dtype:
            a[2:-2, 2:-2] = want
            u[2:-2, 2:-2] = got
            same(u, a, f"assigned {spec} {name}")
        else:
            same(got, want, f"value {spec} {name}")


def test_first_run_of_a_shape_is_planned_once(mesh2):
    """A shape's first fused run (a loop over k: ``y[1:k] = ...`` is a new shape each time) builds no
    persistent request and agrees on nothing (no allreduce).  A small tensor whose ghosts are whole rows
    (split on dim 0 alone) keeps its plan from that first run: its plain ghost messages are posted by the
    compiled run, so a repeat makes nothing and runs as the steady state does.  Any other is planned for
    once (`_OnceExchange`) and kept, upgraded, from its second run.  Every run gives numpy's bits, at every
    layout, with periodic rolls too."""
    import meshrt.halo as _halo

    for name, s in layouts(mesh2, 2):
        lasting = name.startswith("rows")  # (dim 1 is read with a shift too: split, it has ghosts of its own)
        g = data((comm.size * 3 + 6, 8), "float64", 11)
        a, u = g.copy(), DT.from_global(g, s)
        for k in range(3, g.shape[0]):
            once, plans, live = _lazy.stats["once"], _lazy.stats["plans"], len(_halo._LIVE)
            for x in (a, u):
                x[1:k, 1:-1] = 0.5 * (x[:k - 1, 1:-1] + x[2:k + 1, 1:-1]) + x[1:k, 2:] * 0.25
            if lasting:
                assert _lazy.stats["once"] == once and _lazy.stats["plans"] == plans + 1, (name, k)
            else:
                assert _lazy.stats["once"] == once + 1 and _lazy.stats["plans"] == plans, (name, k)
            assert len(_halo._LIVE) == live, (name, k)  # no persistent exchange made for it
            same(u, a, f"once {name} k={k}")
        for run in range(3):  # the last shape again: the plan kept (made from the once-plan's)
            one_call = _lazy.stats["one_call"]
            for x in (a, u):
                x[1:k, 1:-1] = 0.5 * (x[:k - 1, 1:-1] + x[2:k + 1, 1:-1]) + x[1:k, 2:] * 0.25
            assert _lazy.stats["plans"] == plans + 1
            if lasting:  # the one compiled call from the second run, and never a persistent request
                assert _lazy.stats["one_call"] == one_call + 1 and len(_halo._LIVE) == live, (name, run)
            same(u, a, f"kept {name} run {run}")
        r = DT.from_global(g, s, periodic=True)
        for k in range(2):
            got = np.roll(r, 1, axis=0) * 2.0 + np.roll(r, -1, axis=1)
            same(got, np.roll(g, 1, axis=0) * 2.0 + np.roll(g, -1, axis=1), f"roll {name} {k}")


# -- ints in keys: a length-1 slice whose dim is dropped -----------------------------------------------------
def column_statements(p, pn, b):
    """A periodic channel's column updates (CFD step 12), a row, negative ints, a self read across the
    periodic column; plain numpy."""
    p[1:-1, -1] = (((pn[1:-1, 0] + pn[1:-1, -2]) * 0.3 + (pn[2:, -1] + pn[0:-2, -1]) * 0.7) / 2.5
                   - 0.125 * b[1:-1, -1])
    p[1:-1, 0] = (((pn[1:-1, 1] + pn[1:-1, -1]) * 0.3 + (pn[2:, 0] + pn[0:-2, 0]) * 0.7) / 2.5
                  - 0.125 * b[1:-1, 0])
    p[2:-1, 3] = pn[1:-2, 2] * 0.5 + pn[3:, 4]
    p[-2, 1:-1] = pn[-1, 1:-1] * 2.0 - pn[-3, :-2]
    p[1:-1, -2] = 0.5 * (p[1:-1, -1] + p[1:-1, -3])      # the target read across columns: values before the write
    p[..., 1] = b[..., 2] - p[..., 1] * 0.25              # an Ellipsis before the int


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_int_keys_fused_bitwise(mesh2, dtype):
    """``p[1:-1, -1] = ... pn[2:, -1] ...`` (an int on one dim, slices on the others) is one fused write, with
    numpy's bits, at every layout: an int on a whole dim or on a split one, negative ints, an Ellipsis."""
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        for shape in ((13, 11), (comm.size * 3 + 5, 9)):
            g = [data(shape, dtype, k + j) for j in range(3)]
            ts = [DT.from_global(x, s) for x in g]
            before = _lazy.stats["fused_writes"]
            for _ in range(3):
                for p, pn, b in (g, ts):
                    column_statements(p, pn.copy(), b)
            fused = _lazy.stats["fused_writes"] - before
            # (from a statement's second run, `_fused_write`; "cols": a column of its split dim is read as the
            # owner's piece, eagerly; "2d": a periodic column read across a split dim is a shift past the
            # neighbour's block, eager)
            if name != "cols":
                assert fused >= 2 * 4, (name, shape, fused)
            same(ts[0], g[0], f"columns {name} {shape} {dtype}")


def test_int_keys_on_split_and_whole_dims_3d(mesh2):
    """3-D: ints on a split dim (rows split, 2-D mesh), on whole dims, two ints; dropped dims that differ
    between the target and an operand (the same shapes) run eagerly, as numpy's values."""
    for k, (name, s) in enumerate(layouts(mesh2, 3)):
        g = data((comm.size * 2 + 5, 6, 6), "float64", k)
        u = DT.from_global(g, s)
        before = _lazy.stats["fused_writes"]
        for x in (g, u, g, u):  # (twice: an int's write fuses from its second run)
            x[1:-1, 2, 1:-1] = x[2:, 2, 1:-1] + x[:-2, 1, :-2] * 0.5
            x[1:-1, -1, -1] = x[1:-1, 0, 0] - x[2:, -2, 1]
            x[3, 1:-1, 1:-1] = x[2, 1:-1, 1:-1] * 0.25 + x[4, :-2, 2:]
            x[-3, :, 0] = x[-2, :, 1] + x[-4, :, 2]
            x[1:-1, 2, 1:4] = x[1:-1, 1:4, 2] * 2.0 + 1.0   # dims dropped differently: eager
        same(u, g, f"3-D ints {name}")
        assert _lazy.stats["fused_writes"] > before, name


def test_int_key_reads_and_inplace(mesh2):
    """An int key's deferred view: numpy's values read, written in place, out of range raising, a scalar
    written; a column of a row-split matrix in a product of vectors."""
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        g = data((comm.size * 3 + 4, 7), "float64", k)
        u = DT.from_global(g, s)
        same(u[1:-1, -1], g[1:-1, -1].copy(), f"read {name}")
        same(u[..., 2] * 3.0 + u[:, -3], g[..., 2] * 3.0 + g[:, -3], f"value {name}")
        u[1:-1, 2] += u[1:-1, 3] * 2.0
        g[1:-1, 2] += g[1:-1, 3] * 2.0
        u[2:, -1] = 7.5
        g[2:, -1] = 7.5
        same(u, g, f"in place {name}")
        with pytest.raises(IndexError):
            u[1:-1, 7]
        with pytest.raises(IndexError):
            u[1:-1, -8] = u[1:-1, 0] * 2.0
        x = DT.from_global(g[:, 0].copy(), Sharding(s.mesh, [s.split_axes[0]]))
        for j in (0, 3, 6):
            np.testing.assert_allclose(float(u[:, j] @ x), g[:, j] @ g[:, 0], rtol=1e-12)
            np.testing.assert_allclose(float(u[:5, j] @ u[:5, 1]), g[:5, j] @ g[:5, 1], rtol=1e-12)


def test_int_key_explain(mesh2):
    s = layouts(mesh2, 2)[0][1]
    u = DT.zeros((comm.size * 4, 8), s)
    text = meshrt.explain_fused((u[2:, -1] + u[:-2, -1]) * 0.5 - u[1:-1, 0], u, (slice(1, -1), -1))
    assert "fused kernel" in text and "dropping [1]" in text and "ghost widths {0: (1, 1)}" in text, text


def test_int_key_loop_builds_no_plan_per_index(mesh2):
    """A loop over an int (``y[:, j] = ... y[:, j - 1]``) makes a new key each time: its first runs are eager
    (no plan built for one run), with numpy's bits."""
    for k, (name, s) in enumerate(layouts(mesh2, 2)):
        g, h = data((comm.size * 3 + 4, 9), "float64", k), data((comm.size * 3 + 4, 9), "float64", k + 1)
        u, v = DT.from_global(g, s), DT.from_global(h, s)
        once, plans = _lazy.stats["once"], _lazy.stats["plans"]
        for j in range(1, 9):
            for y, x in ((g, h), (u, v)):
                y[:, j] = 0.5 * x[:, j] + 0.25 * x[:, j - 1] + 0.125 * y[:, j - 1]
        # (at most one of each, for no index: "cols" reads its columns as replicated pieces, whose sums are
        # new tensors of one shape)
        assert _lazy.stats["once"] <= once + 1 and _lazy.stats["plans"] <= plans + 1, name
        same(u, g, f"recurrence {name}")


def _cut_layout(mesh2, n, cuts):
    """Rows of ``n`` split over the 1-D mesh at ``cuts`` (sorted, one fewer than the processes; blocks may be
    empty), or by MLIR's uneven rule where ``cuts`` is None."""
    m1 = mesh2["1d"]
    if cuts is None:
        return Sharding(m1, [["x"]])
    return Sharding(m1, [["x"]], sharded_dims_offsets=[0, *cuts, n])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(1, 14), form=st.integers(0, 2), local=st.booleans(), draw=st.data())
def test_shifts_past_a_neighbours_block_bitwise(mesh2, n, form, local, draw):
    """``p[a:b] = q[c:d] ...`` with any shift, also past the neighbour's block (a ghost is filled from the
    neighbour alone, so such a read takes the eager path), blocks even, uneven or empty: numpy's bits on
    the first run and the repeated ones (a plan, then its lasting form), with small writes by numpy on
    the blocks or by the fused kernel."""
    with pytest.MonkeyPatch.context() as mp:
        if local:
            mp.setattr(_lazy, "_LOCAL_MAX", 1 << 14)
        _shifted_writes(mesh2, n, form, draw)


def _shifted_writes(mesh2, n, form, draw):
    cuts = draw.draw(st.one_of(st.none(), st.lists(st.integers(0, n), min_size=comm.size - 1,
                                                     max_size=comm.size - 1).map(sorted)))
    length = draw.draw(st.integers(1, n))
    a, c = draw.draw(st.integers(0, n - length)), draw.draw(st.integers(0, n - length))
    s = _cut_layout(mesh2, n, cuts)
    g = [data((n,), "float64", j) for j in range(2)]
    p, q = (DT.from_global(x, s) for x in g)
    for _ in range(3):
        for x, y in ((g[0], g[1]), (p, q)):
            if form == 0:
                x[a:a + length] = y[c:c + length] * 2.0 + x[a:a + length]
            elif form == 1:
                x[a:a + length] = y[c:c + length]
            else:
                x[a:a + length] = x[c:c + length] - 1.0  # the target read shifted
        same(p, g[0], f"n={n} cuts={cuts} form={form} [{a}:{a + length}] <- [{c}:{c + length}]")


def test_a_repeated_small_write_fuses_from_its_third_run(mesh2, monkeypatch):
    """A small write read where it is written runs by numpy on the blocks for its first runs at a region (a
    loop's region is new each turn: no plan for it), then fused (one pass; numpy's ~0.5 us an operation
    before its work made a 41 x 41 statement 1.4x slower so): from the third run, an int's key (whose plan is
    made from its second offer) from the fourth.  numpy's values throughout, rows split evenly and not."""
    monkeypatch.setattr(_lazy, "_LOCAL_MAX", 1 << 14)
    monkeypatch.setattr(_lazy, "_SIGS", {})
    for n in (3 * comm.size + 2, comm.size + 1):
        s = Sharding(mesh2["1d"], [["x"]])
        g = [data((n, 7), "float64", j) for j in range(3)]
        p, q, b = (DT.from_global(x, s) for x in g)
        for form, want in (("slice", [(1, 0)] * 2 + [(0, 1)] * 3), ("int", [(1, 0)] * 3 + [(0, 1)] * 2)):
            counts = []
            for run in range(5):
                before = dict(_lazy.stats)
                for x, y, c in ((g[0], g[1], g[2]), (p, q, b)):
                    if form == "slice":
                        x[:, 5:] = ((y[:, :2] + y[:, 1:3]) * 0.25 + c[:, 5:] * 0.5 - x[:, 2:4]) / 3.0
                    else:
                        x[:, -1] = ((y[:, 0] + y[:, -2]) * 0.25 + c[:, -1] * 0.5 - x[:, 2]) / 3.0
                same(p, g[0], f"n={n} {form} run {run}")
                counts.append((_lazy.stats["local_writes"] - before["local_writes"],
                               _lazy.stats["fused_writes"] - before["fused_writes"]))
            assert counts == want, (n, form, counts)
        monkeypatch.setattr(_lazy, "_SIGS", {})


def test_stored_rows_are_written_where_they_are(mesh2, monkeypatch):
    """A row read only to be stored (``p[-1, :] = p[-2, :]``, a channel's wall) is a deferred view: where the
    row and its target are on one process it is written there by numpy (no broadcast, no plan), elsewhere
    fused or eagerly; a row read into a name first is replicated and written from its copy (no reshard).
    numpy's bits, rows split evenly and not."""
    monkeypatch.setattr(_lazy, "_LOCAL_MAX", 1 << 14)
    monkeypatch.setattr(_lazy, "_LOCAL_RUNS", 1 << 30)  # (a region's key recurs across the sizes below)
    for n in (comm.size * 3 + 2, comm.size + 1, 2):
        s = Sharding(mesh2["1d"], [["x"]])
        g = [data((n, 5), "float64", j) for j in range(2)]
        p, q = (DT.from_global(x, s) for x in g)
        for i, j in [(-1, -2), (0, 1), (n // 2, (n // 2 + 1) % n), (1, -1), (-2, 0)]:
            before = _lazy.stats["local_writes"]
            for x, y in ((g[0], g[1]), (p, q)):
                x[i, :] = x[j, :]
                x[i] = y[j] * 0.5 + x[i]
                x[i, 1:] = 2.0 * y[j, :-1]
            same(p, g[0], f"rows {i} <- {j}, n={n}")
            offs = s.dim_offsets((n, 5))[0]
            owner = [k for k in range(comm.size) if offs[k] <= i % n < offs[k + 1]]
            if owner == [k for k in range(comm.size) if offs[k] <= j % n < offs[k + 1]]:
                # (a row stored onto itself is no write at all)
                assert _lazy.stats["local_writes"] == before + 3 - (i % n == j % n), (n, i, j)
        row = p[-2, :]  # a value of its own: replicated
        assert not any(row.sharding.split_axes)
        p[-1, :] = row
        p[1:3, :] = row  # numpy broadcasts it
        g[0][-1, :] = g[0][-2, :]
        g[0][1:3, :] = g[0][-2, :]
        same(p, g[0], f"a replicated row stored, n={n}")
        with pytest.raises(meshrt.ShardingError, match=r"cannot be assigned to a selection of shape \(3,\)"):
            p[0, :3] = row


def test_power_as_numpy_arrays_take_it(mesh2):
    """``t ** 2`` is numpy's ``np.square`` (deferred: it fuses), ``** 0.5`` and ``** -1`` on floats ``np.sqrt``
    and ``np.reciprocal``, other exponents ``np.power``, in place too: numpy's arrays' bits and errors."""
    s = layouts(mesh2, 2)[0][1]
    for dtype in ("float64", "float32", "int64"):
        g = data((comm.size * 3 + 2, 5), dtype, 4)
        if dtype == "int64":
            g[g == 0] = 3
        u = DT.from_global(g, s)
        assert type(u[1:-1] ** 2).__name__ != "DistributedTensor"  # deferred
        for e in (2, 0.5, -1, 3, 2.0, 1):
            if dtype == "int64" and e == -1:
                with pytest.raises(ValueError, match="negative integer powers"):
                    u ** e
                continue
            with np.errstate(all="ignore"):
                same(u ** e, g ** e, f"{dtype} ** {e!r}")
                same((u[2:] - u[:-2]) ** e, (g[2:] - g[:-2]) ** e, f"{dtype} (difference) ** {e!r}")
        u **= 2
        g **= 2
        v = DT.from_global(g.copy(), s)
        v[1:-1, 1:] **= 2
        h = g.copy()
        h[1:-1, 1:] **= 2
        same(u, g, f"{dtype} **= 2")
        same(v, h, f"{dtype} view **= 2")
