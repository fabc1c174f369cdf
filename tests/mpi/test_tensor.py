"""DistributedTensor on a real communicator, valid at any process count.

Oracle: plain numpy on the global array, built identically on every rank.
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import CollectiveError, PerformanceWarning, ShardingError
from meshrt.sharding import Sharding
from meshrt.tensor import DistributedTensor as DT

comm = MPI.COMM_WORLD
N = comm.size


def cases(meshes):
    """(name, sharding, global shape) covering replicated, 1-, 2-dim splits, a dim on two axes,
    halos and uneven offsets; shapes large enough for every process count."""
    m1, m2, m3 = meshes["1d"], meshes["2d"], meshes["3d"]
    a, b = m2.shape
    offs = [0] + [2 + 3 * k for k in range(1, N)] + [3 * N + 4]  # uneven widths 5, 3, 3, ..., 5
    offs[-2] = min(offs[-2], offs[-1] - 1)
    return [
        ("replicated", Sharding(m2, []), (5, 6)),
        ("1d rows", Sharding(m1, [[0]]), (2 * N + 3, 5)),
        ("1d cols halo", Sharding(m1, [[], [0]], halo_sizes=[1, 2]), (3, 2 * N + 5)),
        ("2d halo", Sharding(m2, [[0], [1]], halo_sizes=[1, 1, 2, 1]), (2 * a + 5, 2 * b + 3)),
        ("2d swapped", Sharding(m2, [[1], [0]]), (2 * b + 1, 2 * a + 2)),
        ("2d half replicated", Sharding(m2, [[], [1]], halo_sizes=[1, 0]), (4, 2 * b + 3)),
        ("dim on two axes", Sharding(m2, [[0, 1]], halo_sizes=[1, 1]), (2 * N + 1, 3)),
        ("offsets + halo", Sharding(m1, [[0]], halo_sizes=[1, 1], sharded_dims_offsets=offs), (offs[-1], 4)),
        ("3d", Sharding(m3, [[0], [1], [2]], halo_sizes=[1] * 6), tuple(2 * s + 2 for s in m3.shape)),
    ]


def global_array(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) * 100 - 30).astype(dtype)


def padded_window(g, t, periodic=False):
    """What ``t.local`` holds after update_halo: the global array around the owned block."""
    s = t.sharding
    widths = [s.halo_widths(d) for d in range(g.ndim)]
    p = np.pad(g, widths, mode="wrap" if periodic else "constant")
    return p[tuple(slice(sl.start, sl.stop + lo + hi) for sl, (lo, hi) in zip(t.shard_slices, widths))]


def same(t, want):
    """``t`` holds ``want`` (a global array): checked on this process's block, no communication."""
    return t.global_shape == want.shape and t.dtype == want.dtype and np.array_equal(t.interior, want[t.shard_slices])


# -- creation and gather ----------------------------------------------------------------------------
def test_creation_paths_and_gather(meshes):
    root = N - 1
    for name, s, shape in cases(meshes):
        g = global_array(shape)
        for t in (DT.from_global(g, s), DT.from_global(g if comm.rank == root else None, s, root=root)):
            assert t.local.flags.c_contiguous and t.local.shape == s.local_shape(shape), name
            assert np.shares_memory(t.interior, t.local)
            assert np.array_equal(t.interior, g[t.shard_slices]), name
            assert np.array_equal(t.gather(), g), name
            r = t.gather(root=0)
            assert np.array_equal(r, g) if comm.rank == 0 else r is None
        assert t.shape == t.global_shape == shape and t.dtype == g.dtype and t.ndim == len(shape)
        assert t.mesh is s.mesh and t.sharding == s
        assert np.array_equal(DT.zeros(shape, s).gather(), np.zeros(shape)), name
        assert np.array_equal(DT.full(shape, s, 7, dtype=np.int16).gather(), np.full(shape, 7, np.int16))
        e = DT.empty(shape, s, np.float32)
        assert e.dtype == np.float32 and e.local.shape == s.local_shape(shape)
        f = DT.from_function(lambda *ix: sum(10 ** k * i for k, i in enumerate(ix)), shape, s, np.int64)
        assert np.array_equal(f.gather(), np.fromfunction(lambda *ix: sum(10 ** k * i for k, i in enumerate(ix)),
                                                          shape, dtype=np.int64)), name
        f2 = DT.from_function(lambda *ix: sum(ix), shape, s, np.int32, sparse=True)
        assert np.array_equal(f2.gather(), f.gather() * 0 + np.indices(shape).sum(0)), name
        buf = np.zeros(s.local_shape(shape))
        w = DT.from_local(buf, s, shape)
        assert w.local is buf
        w.interior[...] = g[w.shard_slices]
        assert np.array_equal(w.gather(), g), name


def test_repeated_gathers_match_numpy(meshes):
    # The second gather of a (sharding, shape, dtype) whose blocks are equal whole-row runs is
    # one Allgather straight into the result; every case, dtype and tensor must still be right.
    m1 = meshes["1d"]
    extra = [("1d rows even", Sharding(m1, [[0]]), (2 * N, 3)),
             ("1d rows even, row halo", Sharding(m1, [[0]], halo_sizes=[1, 1]), (3 * N, 4))]
    for name, s, shape in cases(meshes) + extra:
        for dtype in (np.float64, np.int32, np.float16):
            for seed in range(3):  # new data, new tensors, same plan
                g = global_array(shape, dtype, seed)
                t = DT.from_global(g, s)
                got = t.gather()
                assert got.dtype == g.dtype and np.array_equal(got, g), (name, dtype, seed)
                got = t.gather(root=N - 1)
                assert (got is None) == (comm.rank != N - 1) and (got is None or np.array_equal(got, g))
    g = np.round(global_array((5, 2 * N), np.float64, 7))  # whole numbers: sums in any order are exact
    for kind in ("sum", "max"):  # partial tensors reduce first, every time
        for _ in range(2):
            assert np.array_equal(partial_tensor(m1, kind, g).gather(), g), kind


def test_dtypes_roundtrip(meshes):
    s = Sharding(meshes["2d"], [[1], [0]], halo_sizes=[1, 0, 0, 1])
    shape = (2 * meshes["2d"].shape[1] + 1, 2 * meshes["2d"].shape[0] + 3)
    for dt in (np.int8, np.uint16, np.float16, np.float32, np.complex128, np.bool_):
        g = global_array(shape, np.float64, seed=3).astype(dt)
        assert np.array_equal(DT.from_global(g, s, root=0).gather(), g), dt


def test_halo_contents(meshes):
    for name, s, shape in cases(meshes):
        if not s.halo_sizes:
            continue
        g = global_array(shape)
        for periodic in (False, True):
            t = DT.from_global(g, s, periodic=periodic)
            t.update_halo()
            assert np.array_equal(t.local, padded_window(g, t, periodic)), (name, periodic)
            t.interior[...] *= 2
            h = t.update_halo(wait=False)
            h.wait()
            assert np.array_equal(t.local, padded_window(2 * g, t, periodic)), (name, periodic)
            t.free()
            t.free()


# -- ufuncs -------------------------------------------------------------------------------------------
def test_ufuncs(meshes):
    for name, s, shape in cases(meshes):
        g, h = global_array(shape, seed=1), global_array(shape, seed=2)
        a, b = DT.from_global(g, s), DT.from_global(h, s)
        assert same(a + b, g + h), name
        assert same(2.5 * a - b / 3, 2.5 * g - h / 3), name
        assert same(np.sqrt(np.abs(a)), np.sqrt(np.abs(g))), name
        assert same(np.maximum(a, b), np.maximum(g, h)), name
        assert same(a ** 2, g ** 2), name
        assert same(np.exp(a / 100), np.exp(g / 100)), name
        lt = a < b
        assert lt.dtype == np.bool_ and same(lt, g < h), name
        assert same(a + np.float32(1), g + np.float32(1)), name
        assert same(a * np.array(3.0), g * 3.0), name
        q, r = np.divmod(a, 7.0)
        assert same(q, g // 7.0) and same(r, g % 7.0), name
        c = a.copy()
        c += b
        c *= 2
        assert same(c, (g + h) * 2), name
        assert same(a, g), "copy() is independent"
        np.add(a, 1, out=c)
        assert same(c, g + 1), name
        i = DT.from_global(np.arange(np.prod(shape), dtype=np.int32).reshape(shape), s)
        assert (i + 1).dtype == np.int32 and (i / 2).dtype == np.float64 and (i + 1.5).dtype == np.float64


def test_ufunc_result_halos_are_zero(meshes):
    s = Sharding(meshes["1d"], [[0]], halo_sizes=[1, 1])
    shape = (3 * N, 4)
    a = DT.full(shape, s, 1.0)
    a.update_halo()
    r = a + 1
    assert np.all(r.interior == 2)
    assert np.all(r.local[0] == 0) and np.all(r.local[-1] == 0)
    with np.errstate(divide="raise"):
        (1.0 / a).gather()  # zero halos are never divided by


def test_ufunc_errors(meshes):
    m1 = meshes["1d"]
    s1 = Sharding(m1, [[0]])
    s2 = Sharding(m1, [[], [0]])
    shape = (2 * N, 2 * N)
    a, b = DT.zeros(shape, s1), DT.zeros(shape, s2)
    with pytest.raises(ShardingError, match=r"could not be broadcast together with global shapes"):
        a + DT.zeros((2 * N, 2 * N + 1), s1)
    with pytest.raises(ShardingError, match=r"could not be broadcast"):
        a + np.ones((3, 2 * N + 1))
    with pytest.raises(ShardingError, match=r"out has global shape"):
        np.add(a, np.ones(2 * N), out=DT.zeros((2 * N, 1), s2))
    with pytest.raises(TypeError, match="where="):
        np.add(a, b, where=a > 0)
    with pytest.raises(TypeError, match="reduce"):
        np.subtract.reduce(a)  # add, multiply, maximum, ... reduce: test_numpy_reductions
    with pytest.warns(PerformanceWarning, match=r"test_tensor\.py:\d+: a conversion to a numpy array"):
        assert np.asarray(a).shape == shape  # an implicit gather: tests/mpi/test_implicit_gather.py


# -- reductions ------------------------------------------------------------------------------------------
def test_full_reductions(meshes):
    for name, s, shape in cases(meshes):
        g = global_array(shape, seed=4)
        t = DT.from_global(g, s)
        assert t.sum() == pytest.approx(g.sum()), name
        assert np.sum(t) == pytest.approx(g.sum()), name
        assert t.max() == g.max() and np.max(t) == g.max() and t.min() == g.min(), name
        assert t.mean() == pytest.approx(g.mean()) and np.mean(t) == pytest.approx(g.mean()), name
        p = DT.from_global(np.where(np.abs(g) < 50, 1.01, 0.99), s)
        assert p.prod() == pytest.approx(np.where(np.abs(g) < 50, 1.01, 0.99).prod()), name
        if name not in ("1d rows", "2d halo", "dim on two axes"):
            continue  # the dtype rules below need not run on every layout
        i = DT.from_global(g.astype(np.int8), s)
        assert i.sum() == g.astype(np.int8).sum() and i.sum().dtype == np.int64, name
        assert i.max() == g.astype(np.int8).max() and i.max().dtype == np.int8, name
        b = DT.from_global(g > 0, s)
        assert b.sum() == (g > 0).sum() and b.max() == (g > 0).max() and b.min() == (g > 0).min()
    gn = global_array((2 * N + 1, 3))
    gn[N, 1] = np.nan
    t = DT.from_global(gn, Sharding(meshes["1d"], [[0]]))
    assert np.isnan(t.max()) and np.isnan(t.min()) and np.isnan(t.sum())


def test_axis_reductions(meshes):
    for name, s, shape in cases(meshes):
        g = global_array(shape, seed=5)
        t, small = DT.from_global(g, s), DT.from_global(g / 50, s)
        for axis in range(len(shape)):
            for op in ("sum", "max", "min", "mean", "prod"):
                want = getattr(g / 50 if op == "prod" else g, op)(axis=axis)
                r = getattr(small if op == "prod" else t, op)(axis=axis)
                if len(shape) == 1:
                    assert r == pytest.approx(want)
                    continue
                assert r.global_shape == want.shape and not r.sharding.is_partial, (name, op, axis)
                split = list(s.split_axes) + [()] * len(shape)
                del split[axis]
                assert r.sharding.split_axes == Sharding(s.mesh, split).split_axes, (name, op, axis)
                np.testing.assert_allclose(r.interior, want[r.shard_slices], rtol=1e-12, err_msg=f"{name} {op} {axis}")
                if op in ("min", "prod"):
                    continue  # keep_partial: sum, mean (divided first) and max cover the cases
                kp = getattr(t, op)(axis=axis, keep_partial=True)
                assert kp.sharding.partial_axes == tuple(sorted(s.dim_axes(axis))), (name, op, axis)
                if s.dim_axes(axis):
                    assert kp.sharding.partial_type == {"prod": "product", "mean": "sum"}.get(op, op)
                np.testing.assert_allclose(kp.gather(), want, rtol=1e-12, err_msg=f"{name} {op} {axis} partial")
        assert np.allclose(np.sum(t, axis=0).gather(), g.sum(axis=0)), name
        assert np.allclose(np.max(t, 0).gather(), g.max(axis=0)), name


def partial_tensor(mesh, kind, g):
    """A tensor partial over mesh axis 0 (rows split on the others) whose value is ``g``."""
    split = [[], [1]] if mesh.ndim > 1 else []
    s = Sharding(mesh, split, partial_axes=[0], partial_type=kind)
    k, n = mesh.coords[0], mesh.shape[0]
    t = DT.zeros(g.shape, s, g.dtype)
    own = g[t.shard_slices]
    if kind == "sum":
        t.interior[...] = k if k < n - 1 else own - sum(range(n - 1))
    else:
        t.interior[...] = own if k == 0 else (own - 5 if kind == "max" else own + 5)
    return t


def test_partial_tensors(meshes):
    for mesh in (meshes["1d"], meshes["2d"]):
        g = np.arange(6 * 2 * mesh.shape[-1], dtype=np.float64).reshape(6, -1) - 20
        for kind in ("sum", "max", "min"):
            t = partial_tensor(mesh, kind, g)
            assert np.array_equal(t.gather(), g), kind
            r = t.gather(root=N - 1)
            assert np.array_equal(r, g) if comm.rank == N - 1 else r is None
            assert t.sum() == g.sum() and t.max() == g.max() and t.min() == g.min(), kind
            assert t.mean() == pytest.approx(g.mean()), kind
            for axis in (0, 1):
                np.testing.assert_array_equal(t.sum(axis=axis).gather(), g.sum(axis=axis))
                np.testing.assert_array_equal(t.max(axis=axis).gather(), g.max(axis=axis))
                kp = t.sum(axis=axis, keep_partial=True)
                np.testing.assert_array_equal(kp.gather(), g.sum(axis=axis))
        v = DT.from_global(g[:, 0], Sharding(mesh, [[0]] if mesh.ndim == 1 else [[0, 1]]))
        assert v.sum(axis=0, keep_partial=True).gather() == g[:, 0].sum()  # a 0-d partial tensor
        assert v.max(axis=0, keep_partial=True).gather() == g[:, 0].max()
        ps = partial_tensor(mesh, "sum", g)
        np.testing.assert_array_equal((-(3 * ps) / 2).gather(), -(3 * g) / 2)
        np.testing.assert_array_equal((ps + ps - ps).gather(), g)
        pm = partial_tensor(mesh, "max", g)
        np.testing.assert_array_equal((pm + 1).gather(), g + 1)
        np.testing.assert_array_equal(np.maximum(pm, pm * 2).gather(), np.maximum(g, g * 2))
        with pytest.raises(ShardingError, match="partial tensor"):
            np.sqrt(ps)
        with pytest.raises(ShardingError, match="partial tensor"):
            ps + 1
        with pytest.raises(ShardingError, match="partial tensor"):
            pm * -1


# -- errors raised on every process alike ---------------------------------------------------------------------
def test_errors_everywhere(meshes):
    m1 = meshes["1d"]
    s = Sharding(m1, [[0]], halo_sizes=[1, 1])
    root = N // 2
    bad = np.zeros((N, 3, 2))
    with pytest.raises(ShardingError, match=r"does not match global_shape"):
        DT.from_global(bad if comm.rank == root else None, s, root=root, global_shape=(N, 3))
    with pytest.raises(ShardingError, match=r"splits|halo"):
        DT.from_global(np.zeros((1,)) if comm.rank == root else None, Sharding(m1, [[], [0]]), root=root)
    with pytest.raises(ShardingError, match="Python objects"):
        DT.from_global(np.array([None] * 4) if comm.rank == 0 else None, s, root=0)
    with pytest.raises(ShardingError, match="root"):
        DT.from_global(None, s, root=N)
    with pytest.raises(ShardingError, match="dtype"):
        DT.from_local(np.zeros(s.local_shape((2 * N,)), np.float32), s, (2 * N,), dtype=np.float64)
    with pytest.raises(ShardingError, match="local shape"):
        DT.from_local(np.zeros(2 * N + 7), s, (2 * N,))
    with pytest.raises(ShardingError, match="C-contiguous"):
        DT.from_local(np.zeros((s.local_shape((2 * N, 3))[0], 6))[:, ::2], s, (2 * N, 3))
    t = DT.zeros((2 * N, 3), s)
    with pytest.raises(ShardingError, match="keep_partial"):
        t.sum(keep_partial=True)
    with pytest.raises(ShardingError, match="axis"):
        t.sum(axis=2)
    with pytest.raises(CollectiveError, match="complex"):
        DT.zeros((2 * N,), s, np.complex64).max()
    with pytest.raises(ShardingError, match="zero-size"):
        DT.zeros((0, 3), Sharding(m1, []), np.float64).max()
    comm.Barrier()
