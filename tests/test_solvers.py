"""meshrt.solvers in one process: the grid transfers' algebra, symmetry of the cycles, argument parsing."""

import numpy as np
import pytest

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.solvers import Laplacian, Multigrid, cg, multigrid
from meshrt.solvers.grid import normalize_boundary
from meshrt.solvers.multigrid import _pweight
from meshrt.stencil import Dirichlet, Neumann


def _prolongation(n, s, bc):
    nc = (n + 1 - s) // 2
    return np.array([[_pweight(i, j, n, nc, s, bc) for j in range(nc)] for i in range(n)])


@pytest.mark.parametrize("n", [5, 6, 9, 12])
@pytest.mark.parametrize("bc", ["dirichlet", "neumann", "periodic", "dirichlet-neumann", "neumann-dirichlet"])
def test_prolongation_is_linear_interpolation(n, bc):
    pair = tuple(bc.split("-")) if "-" in bc else (bc, bc)
    s = 0 if bc == "periodic" else 1
    P = _prolongation(n, s, pair)
    # every fine point takes weights summing to 1, except next to a Dirichlet wall (on that side only)
    sums = P.sum(axis=1)
    low_wall = pair[0] == "dirichlet"
    high_wall = pair[1] == "dirichlet" and (n - 1 - s) % 2 == 1  # the last fine point: between a coarse one and the wall
    expect = np.ones(n)
    if low_wall:
        expect[0] = 0.5
    if high_wall:
        expect[-1] = 0.5
    assert np.allclose(sums, expect), (sums, expect)
    # coarse points are fine points: injection there
    for j in range(P.shape[1]):
        assert P[2 * j + s, j] == 1.0


@pytest.mark.parametrize("shape", [(9, 9), (10, 7), (12, 12)])
@pytest.mark.parametrize("boundary", ["dirichlet", "neumann", "periodic"])
@pytest.mark.parametrize("smoother", ["rbgs", "jacobi", "chebyshev"])
@pytest.mark.parametrize("cycle", ["V", "W"])
def test_cycle_is_symmetric(shape, boundary, smoother, cycle):
    """Restriction = P^T / 2^d and adjoint smoothing make V and W cycles symmetric (CG needs it)."""
    s = Sharding(Mesh((-1, -1)), [[0], [1]], halo_sizes=[1, 1, 1, 1])
    rng = np.random.default_rng(1)
    u = DistributedTensor.from_global(rng.standard_normal(shape), s)
    v = DistributedTensor.from_global(rng.standard_normal(shape), s)
    A = Laplacian(u, boundary=boundary, shift=0.0 if boundary == "dirichlet" else 1.0,
                  coeff=lambda i, j: 1.0 + 0.5 * np.sin(i + 2.0 * j))
    M = Multigrid(A, smoother=smoother, cycle=cycle, coarse_size=4)
    a = float(np.vdot(M(u).gather(), v.gather()))
    b = float(np.vdot(u.gather(), M(v).gather()))
    assert abs(a - b) <= 1e-12 * max(abs(a), 1.0)


def test_normalize_boundary():
    assert normalize_boundary("Neumann", 2) == (("neumann", "neumann"),) * 2
    assert normalize_boundary([Dirichlet(0.0), Neumann(), "periodic"], 3) == (
        ("dirichlet",) * 2, ("neumann",) * 2, ("periodic",) * 2)
    assert normalize_boundary([("dirichlet", Neumann()), "periodic"], 2) == (
        ("dirichlet", "neumann"), ("periodic", "periodic"))
    with pytest.raises(ValueError, match=r"boundary\[0\]: \('periodic', 'neumann'\); periodic is both sides"):
        normalize_boundary([("periodic", "neumann"), "dirichlet"], 2)
    with pytest.raises(ValueError, match=r"boundary\[1\]: .*a \(low, high\) pair"):
        normalize_boundary(["dirichlet", ("dirichlet", "neumann", "neumann")], 2)
    with pytest.raises(ValueError, match="homogeneous"):
        normalize_boundary(Dirichlet(1.0), 2)
    with pytest.raises(ValueError, match="robin"):
        normalize_boundary("robin", 2)


def test_hierarchy_levels_and_memory():
    s = Sharding(Mesh((-1, -1)), [[0], [1]], halo_sizes=[1, 1, 1, 1])
    b = DistributedTensor.full((255, 255), s, 1.0)
    A = Laplacian(b, h=1.0 / 256)
    M = Multigrid(A)
    shapes = [lvl.grid.shape for lvl in M.levels]
    assert shapes == [(255, 255), (127, 127), (63, 63), (31, 31), (15, 15), (7, 7)]
    mem = M.memory()
    # the coarse levels' u and b: a geometric series, 1/4 + 1/16 + ... of the fine level's (2-D); their
    # residuals share one buffer the size of level 1's; the fine level holds u, b and r
    coarse = sum(v for k, v in mem.items() if k > 0)
    assert coarse <= mem[0] / 3, (coarse / mem[0])
    x, info = cg(A, b, rtol=1e-8, M=M)
    assert info == 0


@pytest.mark.parametrize("smoother", ["rbgs", "jacobi", "chebyshev"])
def test_hierarchy_memory_3d_and_shared_residuals(smoother):
    s = Sharding(Mesh((-1, -1, -1)), [[0], [1], [2]], halo_sizes=[1] * 6)
    b = DistributedTensor.full((127, 127, 127), s, 1.0)
    A = Laplacian(b, h=1.0 / 128)
    M = Multigrid(A, smoother=smoother, cycle="W")
    mem = M.memory()
    assert sum(v for k, v in mem.items() if k > 0) <= mem[0] / 7, sum(v for k, v in mem.items() if k > 0) / mem[0]
    bases = {id(lvl.r.base) for lvl in M.levels[1:]}
    assert len(bases) == 1 and M.levels[0].r.base is None
    x, info = multigrid(M, b, rtol=1e-8)  # every level's residual in one buffer: still converges
    assert info == 0
