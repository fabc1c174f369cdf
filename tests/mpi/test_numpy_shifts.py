"""np.roll/flip/diff/gradient/pad/broadcast_to/sort, 1-D products and small linear algebra on
DistributedTensors, against numpy on the global array, at any process count (test_tensor's layouts)."""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Sharding, ShardingError
from test_tensor import cases, global_array

MPI_NPROCS = (1, 2, 3, 4)  # the counts; 8 oversubscribed adds a minute for no new case

comm = MPI.COMM_WORLD


def check(got, want, what, exact=True):
    if isinstance(got, DT):
        assert got.global_shape == want.shape, (what, got.global_shape, want.shape)
        got = got.gather()
    assert np.asarray(got).dtype == np.asarray(want).dtype, (what, np.asarray(got).dtype, np.asarray(want).dtype)
    if exact:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=what)


def test_roll_flip_diff(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, seed=k)
        for data in (g, g.astype(np.int64), g > 0):
            t = DT.from_global(data, s)
            for ax in range(len(shape)):
                for shift in (1, -2, shape[ax] + 3):
                    check(np.roll(t, shift, axis=ax), np.roll(data, shift, axis=ax), f"roll {name} {shift} {ax}")
                check(np.flip(t, ax), np.flip(data, ax), f"flip {name} {ax}")
                for n in (1, 2):
                    if shape[ax] > n:
                        check(np.diff(t, n=n, axis=ax), np.diff(data, n=n, axis=ax), f"diff {name} n={n} {ax}")
            check(np.roll(t, 3), np.roll(data, 3), f"roll flat {name}")
            check(np.flip(t), np.flip(data), f"flip all {name}")
        if len(shape) > 1:
            t = DT.from_global(g, s)
            check(np.roll(t, (1, -1), axis=(0, 1)), np.roll(g, (1, -1), axis=(0, 1)), f"roll 2 axes {name}")


def test_gradient_edge_orders(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, seed=k + 3)
        t = DT.from_global(g, s)
        for order in (1, 2):
            got, want = np.gradient(t, edge_order=order), np.gradient(g, edge_order=order)
            got, want = (got, want) if len(shape) > 1 else ([got], [want])
            for d, (x, y) in enumerate(zip(got, want)):
                check(x, y, f"gradient {name} order {order} dim {d}", exact=False)
        check(np.gradient(t, 0.5, axis=0), np.gradient(g, 0.5, axis=0), f"gradient spacing {name}", exact=False)
        ti = DT.from_global(g.astype(np.int64), s)
        check(np.gradient(ti, axis=-1), np.gradient(g.astype(np.int64), axis=-1), f"gradient int {name}", exact=False)


@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "reflect"])
def test_pad_modes(meshes, mode):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, seed=k + 7)
        t = DT.from_global(g, s)
        widths = [(1, 2)] + [(2, 0)] * (len(shape) - 1)
        kw = {"constant_values": 4.5} if mode == "constant" else {}
        check(np.pad(t, widths, mode=mode, **kw), np.pad(g, widths, mode=mode, **kw), f"pad {mode} {name}")
        check(np.pad(t, 1, mode=mode), np.pad(g, 1, mode=mode), f"pad 1 {mode} {name}")


def test_broadcast_to_and_sort(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, seed=k + 11)
        t = DT.from_global(g, s)
        check(np.broadcast_to(t, (3,) + shape), np.broadcast_to(g, (3,) + shape), f"broadcast_to {name}")
        for ax in range(len(shape)):
            if s.dim_axes(ax) and len(shape) == 1:
                with pytest.raises(TypeError, match="gather"):
                    np.sort(t, axis=ax)
                continue
            check(np.sort(t, axis=ax), np.sort(g, axis=ax), f"sort {name} {ax}")
            check(np.argsort(t, axis=ax, kind="stable"), np.argsort(g, axis=ax, kind="stable"), f"argsort {name}")


def test_products_and_linear_algebra(meshes):
    m1, m2 = meshes["1d"], meshes["2d"]
    n = 2 * m1.size + 3
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    for sx, sy in ((Sharding(m1, [[0]]), Sharding(m1, [])), (Sharding(m2, [[0, 1]]), Sharding(m2, [[1]]))):
        a, b = DT.from_global(x, sx), DT.from_global(y, sy)
        assert np.vdot(a, b) == pytest.approx(np.vdot(x, y)) and np.inner(a, b) == pytest.approx(np.inner(x, y))
        assert float(np.dot(a, b)) == pytest.approx(np.dot(x, y))
        check(np.outer(a, b), np.outer(x, y), "outer", exact=False)
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    for s in (Sharding(m2, [[0], [1]]), Sharding(m1, [[], [0]], halo_sizes=[1, 1])):
        t = DT.from_global(A, s)
        for off in (0, 1, -2):
            assert np.trace(t, offset=off) == pytest.approx(np.trace(A, offset=off))
        check(np.linalg.inv(t), np.linalg.inv(A), "inv", exact=False)
        assert np.linalg.det(t) == pytest.approx(np.linalg.det(A))
        v = DT.from_global(x, Sharding(s.mesh, [[0]]))
        check(np.linalg.solve(t, v), np.linalg.solve(A, x), "solve", exact=False)
        check(t @ v, A @ x, "matrix @ vector", exact=False)
        sym = DT.from_global(A + A.T, s)
        w, vecs = np.linalg.eigh(sym)
        check(w, np.linalg.eigh(A + A.T)[0], "eigh values", exact=False)
        np.testing.assert_allclose(np.abs(vecs.gather()), np.abs(np.linalg.eigh(A + A.T)[1]), atol=1e-8)


def test_nonzero_and_one_argument_where(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, seed=k + 13) > 20
        t = DT.from_global(g, s)
        for got, want in ((np.where(t), np.where(g)), (np.nonzero(t), np.nonzero(g))):
            assert len(got) == len(want), name
            for x, y in zip(got, want):
                check(x, y, f"nonzero {name}")
        check(np.argwhere(t), np.argwhere(g), f"argwhere {name}")
        check(np.flatnonzero(t), np.flatnonzero(g), f"flatnonzero {name}")
    with pytest.raises(ValueError, match="0d"):
        np.nonzero(DT.from_global(np.array(1.0), Sharding(meshes["1d"], [])))


def test_bad_shift_arguments(meshes):
    t = DT.from_global(global_array((5, 4)), Sharding(meshes["1d"], [[0]]))
    with pytest.raises(ShardingError, match="axis 2 is out of range"):
        np.roll(t, 1, axis=2)
    with pytest.raises(ValueError, match="non-negative"):
        np.diff(t, n=-1)
    with pytest.raises(TypeError, match="mode 'median'"):
        np.pad(t, 1, mode="median")
    with pytest.raises(ValueError, match="negative"):
        np.pad(t, -1)
    with pytest.raises(TypeError, match="coordinate arrays"):
        np.gradient(t, np.arange(5.0))
    with pytest.raises(ValueError, match="cannot broadcast"):
        np.broadcast_to(t, (3, 5))
