"""The block-cyclic layout's exchanges (`meshrt.linalg.cyclic`), against numpy's global matrix: entering
from row, column, 2-D, uneven and replicated shardings, leaving to another sharding, whole or one
triangle, into a new tensor or a given one; every process's block equal to the global matrix's at its
rows and columns.  Small and quick: CI runs it under every MPI (the exchanges are point-to-point
messages posted while the kept part is copied)."""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Mesh, Sharding
from meshrt.linalg.cyclic import to_cyclic
from test_linalg import rand

MPI_NPROCS = (1, 2, 3, 4, 8)
comm = MPI.COMM_WORLD
P = comm.size


@pytest.fixture(scope="module")
def meshes():
    ms = Mesh((-1,)), Mesh((-1, -1))
    yield ms
    for m in ms:
        m.free()


def _shardings(mesh, mesh2, n):
    offs = [0] + [min(n, 1 + 4 * k) for k in range(P - 1)] + [n]  # (uneven, some blocks empty at 8)
    return [Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]]), Sharding(mesh2, [[0], [1]]),
            Sharding(mesh, [[0]], sharded_dims_offsets=offs), Sharding(mesh, [])]


@pytest.mark.parametrize("dt", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("shape", [(13, 9), (9, 14), (1, 1), (33, 33)])
def test_round_trip_every_sharding_and_grid(meshes, dt, shape):
    g = rand(shape, dt, shape[0] * 7 + shape[1])
    grids = {(1, P), (P, 1), None}
    for s in _shardings(*meshes, shape[0]):
        for block in (2, 5):
            for grid in grids:
                c = to_cyclic(DT.from_global(g, s), block=block, grid=grid)
                assert c.local.dtype == g.dtype and c.local.flags.f_contiguous
                assert np.array_equal(c.local, g[np.ix_(c.rows(), c.cols())]), (s, block, grid)
                rows_split = bool(s.split_axes and s.split_axes[0])
                other = Sharding(meshes[0], [[], [0]] if rows_split else [[0]])
                back = c.to_tensor(other)
                assert back.sharding == other and np.array_equal(back.gather(), g), (s, block, grid)


@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_one_triangle_in_and_out(meshes, dt):
    """``triangle``: that triangle arrives (the other holds junk, which may come with a round's diagonal
    square but is never read); leaving, the rest is zero, also in a given tensor (``out``) that held
    values there."""
    n = 31
    g = rand((n, n), dt, 3)
    for s in _shardings(*meshes, n):
        for tri, keep in (("lower", np.tril), ("upper", np.triu)):
            other_side = np.triu(np.full((n, n), 99.0), 1) if tri == "lower" else np.tril(np.full((n, n), 99.0), -1)
            junk = keep(g) + other_side
            c = to_cyclic(DT.from_global(junk.astype(dt), s), block=4, triangle=tri)
            r, k = c.rows()[:, None], c.cols()[None, :]
            mine = (r >= k) if tri == "lower" else (r <= k)
            assert np.array_equal(c.local[mine], g[np.ix_(c.rows(), c.cols())][mine]), (s, tri)
            out = c.to_tensor(s.replace(halo_sizes=None) if s.halo_sizes else s, triangle=tri)
            assert np.array_equal(out.gather(), keep(g)), (s, tri)
            given = DT.from_global(np.full((n, n), 5.0).astype(dt), out.sharding)
            block = given.local
            res = c.to_tensor(out.sharding, triangle=tri, out=given)
            assert res is given and np.array_equal(given.gather(), keep(g)), (s, tri)
            assert np.shares_memory(given.local, block) or not block.size


def test_out_of_another_kind_is_refused_on_every_process(meshes):
    g = rand((8, 8), np.float64, 4)
    s = Sharding(meshes[0], [[0]])
    c = to_cyclic(DT.from_global(g, s), block=2)
    for bad in (DT.zeros((8, 8), Sharding(meshes[0], [[], [0]])), DT.zeros((8, 7), s),
                DT.zeros((8, 8), s, np.float32)):
        with pytest.raises(ValueError, match="out: a tensor of shape"):
            c.to_tensor(s, out=bad)
