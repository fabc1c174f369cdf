"""meshrt.solvers against scipy.sparse.linalg.spsolve of the assembled matrix; any comm.size.

Every solver, with and without a multigrid preconditioner, on 2-D and 3-D
grids with Dirichlet, Neumann and periodic boundaries, constant and variable
coefficients, even and uneven splits; info > 0 and argument errors alike on
every process; multigrid iteration counts that do not grow with the grid.
"""

import re

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from mpi4py import MPI
from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.solvers import (Laplacian, LinearOperator, Multigrid, StencilOperator, bicgstab, cg, gmres, minres,
                            multigrid)

MPI_NPROCS = (1, 2, 3, 4)
comm = MPI.COMM_WORLD
RTOL = 1e-8


# -- the reference: the assembled matrix of -div(k grad u) + c u, as the docs define it ------------------

def _assemble(shape, bcs, h, k=None, c=0.0):
    """Cell i couples to i +- e_d through (k_i + k_nb) / 2 / h^2; Dirichlet: a zero cell outside whose
    coefficient mirrors the boundary cell's; Neumann: no flux through the boundary; periodic: wrap.
    ``bcs``: per dim a name or a (low, high) pair."""
    nd = len(shape)
    bcs = [(b, b) if isinstance(b, str) else tuple(b) for b in bcs]
    k = np.ones(shape) if k is None else k
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    rows, cols, vals = [], [], []
    diag = np.zeros(shape) + c
    for d in range(nd):
        n = shape[d]
        for lo in range(n):
            hi = lo + 1
            a = np.take(k, lo, axis=d)
            ia = np.take(idx, lo, axis=d)
            if hi < n:
                b, ib = np.take(k, hi, axis=d), np.take(idx, hi, axis=d)
            elif bcs[d][0] == "periodic":
                b, ib = np.take(k, 0, axis=d), np.take(idx, 0, axis=d)
            else:
                continue
            f = 0.5 * (a + b) / h[d] ** 2
            rows += [ia.ravel(), ib.ravel()]
            cols += [ib.ravel(), ia.ravel()]
            vals += [-f.ravel(), -f.ravel()]
            sl = [slice(None)] * nd
            sl[d] = lo
            diag[tuple(sl)] += f
            sl[d] = hi % n
            diag[tuple(sl)] += f
        for side, end in ((0, 0), (1, n - 1)):
            if bcs[d][side] == "dirichlet":
                sl = [slice(None)] * nd
                sl[d] = end
                diag[tuple(sl)] += np.take(k, end, axis=d) / h[d] ** 2
    rows.append(idx.ravel())
    cols.append(idx.ravel())
    vals.append(diag.ravel())
    N = idx.size
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(N, N)).tocsc()


def _all_ok(ok, what):
    errors = [e for e in comm.allgather(None if ok is True else f"rank {comm.rank}: {ok}") if e]
    assert not errors, f"{what}: " + "; ".join(errors[:4])


def _same_everywhere(value):
    vals = comm.allgather(value)
    assert all(v == vals[0] for v in vals), f"differs across processes: {vals}"


_MESHES = {}


def _mesh(nd):
    if nd not in _MESHES:
        _MESHES[nd] = Mesh((-1,) * nd)
    return _MESHES[nd]


def _sharding(nd, shape, uneven=False, halo=1):
    mesh = _mesh(nd)
    offsets = None
    if uneven:  # shards as unequal as the sizes allow: the first shard of every split dim is small
        offsets = []
        for d in range(nd):
            p = mesh.shape[d]
            if p == 1:
                offsets += [0, shape[d]]
                continue
            first = max(2, shape[d] // (3 * p))
            rest = np.linspace(first, shape[d], p).astype(int).tolist()
            offsets += [0] + rest
    return Sharding(mesh, [[d] for d in range(nd)], halo_sizes=[halo, halo] * nd, sharded_dims_offsets=offsets)


def _problem(shape, bcs, *, var=False, c=0.0, uneven=False, seed=0):
    nd = len(shape)
    h = tuple(1.0 / (n + 1) for n in shape)
    rng = np.random.default_rng(seed)
    bg = rng.standard_normal(shape)
    kg = np.exp(rng.uniform(-1.0, 1.0, shape)) if var else None
    s = _sharding(nd, shape, uneven)
    b = DistributedTensor.from_global(bg, s)
    coeff = DistributedTensor.from_global(kg, s) if var else 1.0
    A = Laplacian(b, boundary=bcs, h=h, coeff=coeff, shift=c)
    bc_t = (bcs,) * nd if isinstance(bcs, str) else tuple(bcs)
    ref = sla.spsolve(_assemble(shape, bc_t, h, kg, c), bg.ravel()).reshape(shape)
    return A, b, ref


def _close(x, ref, what, rtol=RTOL):
    full = x.gather(root=0)
    ok = True
    if comm.rank == 0:
        err = np.abs(full - ref).max() / np.abs(ref).max()
        ok = True if err <= rtol else f"relative error {err:.2e} > {rtol:.0e}"
    _all_ok(comm.bcast(ok, root=0), what)


SOLVERS = {"cg": (cg, {}), "cg_pipelined": (cg, {"pipelined": True}), "bicgstab": (bicgstab, {}),
           "gmres": (gmres, {"restart": 30}), "minres": (minres, {})}
CASES = [((15, 12), "dirichlet", 0.0), ((14, 11), "neumann", 10.0), ((16, 12), "periodic", 10.0),
         ((7, 6, 9), "dirichlet", 0.0), ((8, 6, 7), "neumann", 10.0), ((6, 8, 6), "periodic", 10.0),
         # a boundary per side: a wall on one side, zero flux on the other
         ((15, 12), (("dirichlet", "neumann"), "periodic"), 0.0),
         ((9, 7, 8), (("neumann", "dirichlet"), ("dirichlet", "neumann"), "neumann"), 0.0)]


def _bc_id(bcs):
    if isinstance(bcs, str):
        return bcs
    return ",".join(b if isinstance(b, str) else "/".join(b) for b in bcs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{len(c[0])}d-{_bc_id(c[1])}")
@pytest.mark.parametrize("solver", list(SOLVERS))
@pytest.mark.parametrize("precond", [False, True], ids=["plain", "mg"])
def test_solution_equals_spsolve(case, solver, precond):
    shape, bcs, c = case
    A, b, ref = _problem(shape, bcs, c=c)
    fn, kw = SOLVERS[solver]
    M = Multigrid(A, coarse_size=8, min_block=1) if precond else None
    x, info = fn(A, b, rtol=1e-12, maxiter=3000, M=M, **kw)
    _same_everywhere(info)
    assert info == 0
    _close(x, ref, f"{solver} {shape} {bcs}")


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("cycle", ["V", "W", "F"])
@pytest.mark.parametrize("smoother", ["rbgs", "jacobi", "chebyshev"])
def test_multigrid_alone_variable_coefficients_uneven(nd, cycle, smoother):
    shape = (21, 18) if nd == 2 else (11, 9, 10)
    bcs = (("neumann", "dirichlet"), "neumann") if nd == 2 else ("dirichlet", "periodic", "neumann")
    A, b, ref = _problem(shape, bcs, var=True, c=1.0, uneven=True, seed=nd)
    x, info = multigrid(A, b, rtol=1e-12, maxiter=100, cycle=cycle, smoother=smoother, coarse_size=8,
                        min_block=1)
    _same_everywhere(info)
    assert info == 0
    _close(x, ref, f"multigrid {cycle} {smoother}")


@pytest.mark.parametrize("bcs", ["dirichlet", "neumann", "periodic"])
def test_mg_cg_variable_coefficients(bcs):
    A, b, ref = _problem((24, 19), bcs, var=True, c=0.0 if bcs == "dirichlet" else 5.0, uneven=True)
    x, info = cg(A, b, rtol=1e-12, M=Multigrid(A, min_block=2))
    assert info == 0
    _close(x, ref, f"mg-cg variable {bcs}")


def test_singular_neumann_consistent():
    """Pure Neumann, no shift: singular; b with zero mean has a solution, MG-CG finds one (up to a constant)."""
    shape = (16, 16)
    s = _sharding(2, shape)
    bg = np.random.default_rng(3).standard_normal(shape)
    bg -= bg.mean()
    b = DistributedTensor.from_global(bg, s)
    A = Laplacian(b, boundary="neumann")
    x, info = cg(A, b, rtol=1e-10, M=Multigrid(A, coarse_size=16))
    assert info == 0
    res = (b - A(x)).gather()
    assert np.abs(res).max() <= 1e-8 * np.abs(bg).max()


def test_iterations_do_not_grow_with_the_grid():
    its = []
    for n in (31, 63, 127):
        s = _sharding(2, (n, n))
        b = DistributedTensor.full((n, n), s, 1.0)
        A = Laplacian(b, h=1.0 / (n + 1))
        count = [0]
        x, info = cg(A, b, rtol=1e-8, M=Multigrid(A), callback=lambda xk: count.__setitem__(0, count[0] + 1))
        assert info == 0
        its.append(count[0])
    _same_everywhere(its)
    assert max(its) - min(its) <= 2, its


# -- operator forms ------------------------------------------------------------------------------

@njit(cache=True)
def _lap5(lo, hi, out, u, c):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            out[i, j] = (4.0 + c) * u[i, j] - (u[i - 1, j] + u[i + 1, j]) - (u[i, j - 1] + u[i, j + 1])


def test_operator_forms():
    shape = (12, 10)
    s = _sharding(2, shape)
    bg = np.random.default_rng(5).standard_normal(shape)
    b = DistributedTensor.from_global(bg, s)
    ref_d = sla.spsolve(_assemble(shape, ("dirichlet",) * 2, (1.0, 1.0), None, 0.5), bg.ravel()).reshape(shape)
    forms = {
        "stencil": StencilOperator(_lap5, 0.5),
        "numpy-pad": lambda u: (lambda p: 4.5 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2]
                                - p[1:-1, 2:])(np.pad(u, 1)),
        "linear-operator": LinearOperator((b.size, b.size), Laplacian(b, shift=0.5).matvec),
    }
    for name, A in forms.items():
        x, info = cg(A, b, rtol=1e-12)
        assert info == 0, name
        _close(x, ref_d, name)
    # periodic, in the np.roll form
    bp = DistributedTensor.from_global(bg, s, periodic=True)
    ref_p = sla.spsolve(_assemble(shape, ("periodic",) * 2, (1.0, 1.0), None, 0.5), bg.ravel()).reshape(shape)
    roll = lambda u: 4.5 * u - np.roll(u, 1, 0) - np.roll(u, -1, 0) - np.roll(u, 1, 1) - np.roll(u, -1, 1)
    x, info = bicgstab(roll, bp, rtol=1e-12)
    assert info == 0
    _close(x, ref_p, "np.roll form")


def test_split_matrix():
    n = 24
    rng = np.random.default_rng(7)
    q = rng.standard_normal((n, n))
    a = q @ q.T + n * np.eye(n)
    bg = rng.standard_normal(n)
    mesh = _mesh(1)
    A = DistributedTensor.from_global(a, Sharding(mesh, [[0]]))
    b = DistributedTensor.from_global(bg, Sharding(mesh, [[0]]))
    ref = np.linalg.solve(a, bg)
    for fn in (cg, bicgstab, gmres, minres):
        x, info = fn(A, b, rtol=1e-13, maxiter=500)
        assert info == 0, fn.__name__
        _close(x, ref, f"matrix {fn.__name__}")


# -- info > 0, alike everywhere ------------------------------------------------------------------

def test_info_positive():
    A, b, _ = _problem((15, 12), "dirichlet")
    for fn in (cg, bicgstab, minres):
        x, info = fn(A, b, rtol=1e-14, maxiter=3)
        _same_everywhere(info)
        assert info == 3, (fn.__name__, info)
    x, info = gmres(A, b, rtol=1e-14, restart=2, maxiter=2)
    _same_everywhere(info)
    assert info > 0
    x, info = cg(A, b, rtol=1e-14, maxiter=3, pipelined=True)
    assert info == 3
    A2, b2, _ = _problem((33, 30), "dirichlet")
    x, info = multigrid(A2, b2, rtol=1e-14, maxiter=2)
    _same_everywhere(info)
    assert info == 2
    neg = LinearOperator(A.shape, lambda u: -1.0 * A(u))
    for kw in ({}, {"pipelined": True}):
        x, info = cg(neg, b, **kw)  # not SPD
        _same_everywhere(info)
        assert info > 0
    x, info = cg(A, b, M=neg)  # preconditioner not SPD
    _same_everywhere(info)
    assert info > 0
    zero = LinearOperator(A.shape, lambda u: 0.0 * u)
    x, info = bicgstab(zero, b)  # breakdown
    _same_everywhere(info)
    assert info > 0
    x, info = minres(A, b, M=neg)
    _same_everywhere(info)
    assert info > 0


# -- bad arguments raise on every process ---------------------------------------------------------

def test_every_operator_form_has_a_matvec():
    from meshrt.solvers.operator import aslinearoperator

    A, b, _ = _problem((10, 9), "dirichlet")
    with pytest.raises(TypeError, match="matvec is required"):
        LinearOperator(A.shape)
    ref = A.matvec(b).gather()
    for form in (aslinearoperator(lambda u: A(u)), LinearOperator(A.shape, A.matvec)):
        assert np.allclose(form.matvec(b).gather(), ref)
    dense = DistributedTensor.from_global(np.eye(b.size) * 2.0, Sharding(b.mesh, [list(b.sharding.dim_axes(0))]))
    v = b.reshape(b.size)
    assert np.allclose(aslinearoperator(dense).matvec(v).gather(), 2.0 * v.gather())


def test_bad_arguments():
    A, b, _ = _problem((10, 9), "dirichlet")
    other = DistributedTensor.zeros((9, 10), b.sharding)
    bad = [
        (ValueError, lambda: cg(A, b, rtol=-1.0)),
        (ValueError, lambda: cg(A, b, atol=float("nan"))),
        (ValueError, lambda: bicgstab(A, b, maxiter=0)),
        (ValueError, lambda: gmres(A, b, restart=0)),
        (ValueError, lambda: cg(A, b, x0=other)),
        (ValueError, lambda: cg(A, other)),
        (TypeError, lambda: cg(A, np.ones((10, 9)))),
        (TypeError, lambda: cg("A", b)),
        (TypeError, lambda: cg(A, b, M=3)),
        (ValueError, lambda: cg(LinearOperator((5, 5), lambda u: u), b)),
        (ValueError, lambda: Multigrid(A, cycle="X")),
        (ValueError, lambda: Multigrid(A, smoother="sor")),
        (ValueError, lambda: Multigrid(A, presmooth=-1)),
        (TypeError, lambda: Multigrid(LinearOperator(A.shape, lambda u: u))),
        (ValueError, lambda: Laplacian(b, boundary="robin")),
        (ValueError, lambda: Laplacian(b, boundary=["dirichlet"])),
        (ValueError, lambda: Laplacian(b, coeff=-1.0)),
        (ValueError, lambda: Laplacian(b, h=0.0)),
    ]
    if comm.size > 1:  # a layout that differs from the operator's
        bad.append((ValueError, lambda: cg(A, DistributedTensor.zeros((10, 9), _sharding(2, (10, 9), uneven=True)))))
    for i, (exc, call) in enumerate(bad):
        try:
            call()
        except exc:
            got = True
        except Exception as e:  # noqa: BLE001
            got = f"case {i}: {type(e).__name__}: {e}"
        else:
            got = f"case {i}: no error"
        _all_ok(got, "bad arguments")


@pytest.mark.parametrize("layout", ["rows", "columns", "replicated"])
def test_unsplit_dims_and_replicas(layout):
    """Dims split over no mesh axis (their ghosts are domain ghosts) and tensors replicated over mesh axes."""
    mesh = _mesh(2)
    split = {"rows": [[0]], "columns": [[], [1]], "replicated": []}[layout]
    halo = None if layout == "replicated" else [1, 1]
    shape = (13, 10)
    bg = np.random.default_rng(4).standard_normal(shape)
    b = DistributedTensor.from_global(bg, Sharding(mesh, split, halo_sizes=halo))
    for bc, c in (("dirichlet", 0.0), ("periodic", 2.0)):
        A = Laplacian(b, boundary=bc, shift=c)
        ref = sla.spsolve(_assemble(shape, (bc, bc), (1.0, 1.0), None, c), bg.ravel()).reshape(shape)
        x, info = cg(A, b, rtol=1e-12, M=Multigrid(A, coarse_size=4, min_block=1))
        _same_everywhere(info)
        assert info == 0
        _close(x, ref, f"{layout} {bc}")


MERGE_CASES = {
    "2d-on-a-row-of-processes": ((127, 41), (-1,), [[0]], ("dirichlet", "neumann"), "V"),
    "2d-on-a-2d-mesh": ((63, 70), (-1, -1), [[0], [1]], ("neumann", "dirichlet"), "W"),
    "3d-on-a-row-of-processes": ((61, 13, 10), (-1,), [[0]], ("dirichlet", "periodic", "neumann"), "F"),
}


@pytest.mark.parametrize("case", list(MERGE_CASES))
def test_merged_coarse_levels_equal_one_process(case):
    """Coarse blocks merged onto fewer processes (two per axis, then one): the same hierarchy, the same
    iterations and the same answer as on one process; processes merged away hold no coarse grid."""
    shape, mesh_shape, split, bcs, cycle = MERGE_CASES[case]
    rng = np.random.default_rng(11)
    bg = rng.standard_normal(shape)
    kg = np.exp(rng.uniform(-1.0, 1.0, shape))
    results = {}
    with Mesh(mesh_shape) as mesh, Mesh((1,) * len(mesh_shape), comm=MPI.COMM_SELF) as alone:
        for name, m in (("split", mesh), ("alone", alone)):
            s = Sharding(m, split, halo_sizes=[1, 1] * len(split))
            b = DistributedTensor.from_global(bg, s)
            A = Laplacian(b, boundary=bcs, coeff=DistributedTensor.from_global(kg, s), shift=0.5)
            M = Multigrid(A, cycle=cycle, min_block=8)
            count = [0]
            x, info = cg(A, b, rtol=1e-10, M=M, callback=lambda xk: count.__setitem__(0, count[0] + 1))
            results[name] = (x.gather(), info, count[0], repr(M), [lvl.grid.shape for lvl in M.levels])
            M.free()
    x, info, its, text, shapes = results["split"]
    x1, info1, its1, text1, shapes1 = results["alone"]
    assert info == info1 == 0 and abs(its - its1) <= 1, (its, its1)
    assert np.abs(x - x1).max() <= 1e-8 * np.abs(x1).max()
    assert shapes == shapes1[:len(shapes)]
    sizes = [int(k) for k in re.findall(r"@(\d+)", text)]
    p = comm.size
    if comm.rank == 0:  # the root of every merge: it holds every level, on ever fewer processes
        assert shapes == shapes1 and sizes[0] == mesh.size and sizes[-1] == 1, text
        assert sizes == sorted(sizes, reverse=True), text
        if len(mesh_shape) == 1 and p >= 3:
            assert any(1 < k < p for k in sizes), f"no level on a merged mesh of fewer processes: {text}"
    elif p > 1 and comm.rank == p - 1:  # merged away before the coarsest level
        assert text.endswith("(merged onto another process) (@ processes)>") and len(shapes) < len(shapes1), text
