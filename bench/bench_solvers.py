"""Multigrid-preconditioned CG against plain CG and a baseline, Poisson with Dirichlet walls.

    mpiexec -n 2 python bench/bench_solvers.py [--sizes 511,1023,2047,4095] [--ndim 2] [--rtol 1e-8]

Per grid size (``n^2`` unknowns, or ``n^3`` with ``--ndim 3``; ``n + 1`` a power
of 2 nests every level for both meshrt and PETSc): meshrt's MG-CG (V-cycle,
red-black Gauss-Seidel 2+2, coarse grids merged onto fewer processes) to a
relative residual of ``rtol``: setup time, first and steady solve times,
iterations; multigrid alone (V-cycles); plain CG's time per iteration (over
``--cg-iters`` iterations, not to convergence); the multigrid hierarchy's memory
(levels below the fine one) over the fine level's.

Baselines, in the same job on the same processes: the plainest mpi4py + numpy
CG (rows split, Sendrecv ghost rows, slices, Allreduce) per iteration; and
petsc4py when importable — KSPCG + PCMG on a DMDA with the same levels
(Galerkin or rediscretized coarse operators, each with PETSc's default
Chebyshev/SOR smoother or with one SSOR sweep pair; the fastest solve is the
baseline), KSPCG + PCJACOBI, plain KSPCG per iteration; every CG
stops on the true residual, as meshrt's.
Otherwise SciPy on one process (rank 0, the others wait):
``scipy.sparse.linalg.cg`` without preconditioner (time per iteration) and
``spsolve`` (SuperLU) for sizes up to ``--spsolve-max`` (32 in 3-D).  Ratios are
meshrt / baseline (below 1: meshrt faster); SciPy is serial, so against it the
ratios compare one process with ``comm.size``.
"""

import argparse
import json
import time

import numpy as np
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.solvers import Laplacian, Multigrid, cg, multigrid

comm = MPI.COMM_WORLD


def say(*a):
    if comm.rank == 0:
        print(*a, flush=True)


CPU = {}  # the last timed call's CPU seconds (slowest process): on a shared, loaded machine wall time is not


def timed(fn):
    comm.Barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    CPU["last"] = comm.allreduce(time.process_time() - c0, op=MPI.MAX)
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX), out


def meshrt_runs(n, nd, rtol, cg_iters):
    mesh = Mesh((-1,) * nd)
    shape = (n,) * nd
    s = Sharding(mesh, [[d] for d in range(nd)], halo_sizes=[1, 1] * nd)
    b = DistributedTensor.full(shape, s, 1.0)
    h = 1.0 / (n + 1)
    A = Laplacian(b, h=h)
    t_setup, M = timed(lambda: Multigrid(A))
    its = [0]
    cb = lambda xk: its.__setitem__(0, its[0] + 1)  # noqa: E731
    t_first, _ = timed(lambda: cg(A, b, rtol=rtol, M=M))  # the first solve: exchanges planned on the way
    t_mgcg, (x, info) = timed(lambda: cg(A, b, rtol=rtol, M=M, callback=cb))
    cpu_mgcg = CPU["last"]
    mgcg_its = its[0]
    its[0] = 0
    t_mg, (x2, info2) = timed(lambda: multigrid(M, b, rtol=rtol, callback=cb))
    mg_its = its[0]
    cg(A, b, rtol=0.0, maxiter=2)
    t_cg, _ = timed(lambda: cg(A, b, rtol=0.0, maxiter=cg_iters))
    cpu_cg = CPU["last"]
    t_cg_pipe, _ = timed(lambda: cg(A, b, rtol=0.0, maxiter=cg_iters, pipelined=True))
    mem = M.memory()
    fine = comm.allreduce(mem[0])
    coarse = comm.allreduce(sum(v for k, v in mem.items() if k > 0))
    levels = comm.allreduce(len(M.levels), op=MPI.MAX)  # (processes merged away hold fewer)
    out = dict(n=n, ndim=nd, procs=comm.size, levels=levels, setup_s=t_setup, mgcg_first_s=t_first, mgcg_s=t_mgcg,
               mgcg_its=mgcg_its, mgcg_info=info, mgcg_cpu_s=cpu_mgcg, cg_it_cpu_s=cpu_cg / cg_iters, mg_s=t_mg, mg_its=mg_its, mg_info=info2,
               cg_it_s=t_cg / cg_iters, cg_pipelined_it_s=t_cg_pipe / cg_iters, hierarchy_over_fine=coarse / fine,
               hierarchy=repr(M))
    M.free()
    return out


def assemble(n, nd):
    import scipy.sparse as sp
    h = 1.0 / (n + 1)
    e = np.ones(n)
    T = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1]) / h ** 2
    eye = sp.identity(n)
    if nd == 2:
        return (sp.kron(T, eye) + sp.kron(eye, T)).tocsr()
    return (sp.kron(sp.kron(T, eye), eye) + sp.kron(sp.kron(eye, T), eye) + sp.kron(sp.kron(eye, eye), T)).tocsr()


def scipy_runs(n, nd, cg_iters, spsolve_max):
    out = {}
    if comm.rank == 0:
        import scipy.sparse.linalg as sla
        A = assemble(n, nd)
        b = np.ones(A.shape[0])
        t0, c0 = time.perf_counter(), time.process_time()
        sla.cg(A, b, rtol=0.0, atol=0.0, maxiter=cg_iters)
        out["scipy_cg_it_s"] = (time.perf_counter() - t0) / cg_iters
        out["scipy_cg_it_cpu_s"] = (time.process_time() - c0) / cg_iters
        if n <= spsolve_max:
            Ac = A.tocsc()
            t0, c0 = time.perf_counter(), time.process_time()
            sla.spsolve(Ac, b)
            out["scipy_spsolve_s"] = time.perf_counter() - t0
            out["scipy_spsolve_cpu_s"] = time.process_time() - c0
    comm.Barrier()
    return comm.bcast(out, root=0)


def petsc_runs(n, nd, rtol, levels, cg_iters):
    """petsc4py on the same job: KSPCG + PCMG on a DMDA (rediscretized coarse levels, the same count as
    meshrt's), with two smoothers (PETSc's default Chebyshev/SOR, and one SSOR sweep pair: the
    closest to meshrt's 2+2 red-black Gauss-Seidel), KSPCG + PCJACOBI, and plain KSPCG's iteration.

    The DMDA holds the ``n + 2`` points of each dim with the Dirichlet walls (rows of the diagonal
    alone, no column coupling to them: the matrix stays symmetric), as PETSc's own examples set up a
    vertex grid; its interior is meshrt's ``n^d`` unknowns, and coarsening nests (``n + 1`` a power of 2).
    """
    from petsc4py import PETSc
    N = n + 2
    da = PETSc.DMDA().create([N] * nd, stencil_width=1, stencil_type=PETSc.DMDA.StencilType.STAR,
                             comm=PETSc.COMM_WORLD)

    def operator(ksp, J, P):
        dm = ksp.getDM()
        m = dm.getSizes()[0]
        hh = 1.0 / (m - 1)
        own = dm.getRanges()
        ghost = dm.getGhostCorners()
        gstart, gsize = ghost[0], ghost[1]
        axes = [np.arange(a, b) for a, b in own]
        grids = np.meshgrid(*axes, indexing="ij")  # (x, y[, z]) of every owned point
        strides = [1, gsize[0], gsize[0] * gsize[1]][:nd]
        loc = sum((g - s) * st for g, s, st in zip(grids, gstart, strides)).ravel()
        wall = np.zeros(loc.shape, bool)
        for g in grids:
            wall |= (g.ravel() == 0) | (g.ravel() == m - 1)
        # scaled by h^d, as PETSc's own examples assemble it: with the restriction the interpolation's
        # transpose (PCMG's default), rediscretized coarse operators then match the Galerkin ones
        scale = hh ** nd
        cols = [loc]
        vals = [np.full(loc.shape, 2.0 * nd / hh ** 2 * scale)]
        for d in range(nd):
            for step in (-1, 1):
                nb = grids[d].ravel() + step
                c = loc + step * strides[d]
                c = np.where(wall | (nb <= 0) | (nb >= m - 1), -1, c)  # no coupling to a wall point
                cols.append(c)
                vals.append(np.full(loc.shape, -1.0 / hh ** 2 * scale))
        C = np.stack(cols, axis=1).astype(PETSc.IntType)
        V = np.stack(vals, axis=1)[:, None, :]
        for mat in ((P,) if J.handle == P.handle else (J, P)):  # a level's Amat may be its own matrix
            mat.zeroEntries()
            mat.setValuesLocalRCV(loc[:, None].astype(PETSc.IntType), C, V)
            mat.assemble()

    def rhs(dm):
        b = dm.createGlobalVec()
        arr = dm.getVecArray(b)
        idx = np.meshgrid(*[np.arange(a, c) for a, c in dm.getRanges()], indexing="ij")
        wall = np.zeros(idx[0].shape, bool)
        for g in idx:
            wall |= (g == 0) | (g == N - 1)
        arr[:] = np.where(wall, 0.0, (1.0 / (N - 1)) ** nd)  # (the h^d scaling)
        return b

    def solver(pc, options):
        ksp = PETSc.KSP().create()
        ksp.setDM(da)
        ksp.setComputeOperators(operator)
        ksp.setType("cg")
        ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)  # ||b - A x|| <= rtol ||b||, as meshrt's
        ksp.getPC().setType(pc)
        opts = PETSc.Options()
        for k, v in options.items():
            opts[k] = v
        ksp.setTolerances(rtol=rtol, atol=0.0, max_it=100000)
        ksp.setFromOptions()
        ksp.setUp()  # (the levels' smoothers read their options here)
        for k in options:
            del opts[k]
        return ksp

    out = {}
    b = rhs(da)
    x = da.createGlobalVec()
    galerkin = {"pc_mg_levels": levels, "pc_mg_galerkin": "both"}
    runs = (("petsc_mgcg", "mg", galerkin),
            ("petsc_mgcg_ssor", "mg", dict(galerkin, mg_levels_ksp_type="richardson", mg_levels_pc_type="sor",
                                           mg_levels_ksp_max_it=1, mg_levels_ksp_norm_type="none")),
            ("petsc_mgcg_redisc", "mg", {"pc_mg_levels": levels, "pc_mg_galerkin": "none"}),
            ("petsc_mgcg_redisc_ssor", "mg", {"pc_mg_levels": levels, "pc_mg_galerkin": "none",
                                              "mg_levels_ksp_type": "richardson", "mg_levels_pc_type": "sor",
                                              "mg_levels_ksp_max_it": 1, "mg_levels_ksp_norm_type": "none"}),
            ("petsc_jacobi_cg", "jacobi", {}))
    for name, pc, options in runs:
        if name == "petsc_jacobi_cg" and n ** nd > JACOBI_MAX:
            continue
        t_setup, ksp = timed(lambda: solver(pc, options))
        x.set(0.0)
        t_first, _ = timed(lambda: ksp.solve(b, x))
        x.set(0.0)
        t, _ = timed(lambda: ksp.solve(b, x))
        out[name + "_s"] = t
        out[name + "_first_s"] = t_first
        out[name + "_setup_s"] = t_setup
        out[name + "_its"] = ksp.getIterationNumber()
        ksp.destroy()
    ksp = solver("none", {})
    ksp.setTolerances(rtol=0.0, atol=0.0, max_it=cg_iters)
    ksp.setConvergenceTest(lambda *a: 0)
    x.set(0.0)
    ksp.solve(b, x)
    x.set(0.0)
    t, _ = timed(lambda: ksp.solve(b, x))
    out["petsc_cg_it_s"] = t / cg_iters
    ksp.destroy()
    for v in (b, x, da):
        v.destroy()
    return out


JACOBI_MAX = 2100 ** 2  # Jacobi-CG needs O(n) iterations: beyond this it is minutes, and 0.3x is plain


def numpy_cg_it(n, nd, cg_iters):
    """The plainest fast mpi4py + numpy CG a user would write: rows split, ghost rows by Sendrecv, the
    stencil by slices, one Allreduce per dot product.  Time per iteration."""
    p, r = comm.size, comm.rank
    lo, hi = n * r // p, n * (r + 1) // p
    m = hi - lo
    shape = (m + 2,) + (n + 2,) * (nd - 1)
    h2 = 1.0 / (n + 1) ** 2
    up, down = (r - 1 if r > 0 else MPI.PROC_NULL), (r + 1 if r < p - 1 else MPI.PROC_NULL)
    inner = (slice(1, -1),) * nd

    def matvec(u, out):
        comm.Sendrecv(u[1], dest=up, recvbuf=u[-1], source=down)
        comm.Sendrecv(u[-2], dest=down, recvbuf=u[0], source=up)
        acc = 2.0 * nd * u[inner]
        for d in range(nd):
            for k in (0, 2):
                sl = list(inner)
                sl[d] = slice(k, k + u.shape[d] - 2)
                acc -= u[tuple(sl)]
        out[...] = acc / h2

    def dot(a, b):
        return comm.allreduce(float(np.vdot(a, b)))

    b = np.ones((m,) + (n,) * (nd - 1))
    x = np.zeros_like(b)
    rr = b.copy()
    pbuf = np.zeros(shape)
    pbuf[inner] = rr
    q = np.empty_like(b)
    rho = dot(rr, rr)
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(cg_iters):
        matvec(pbuf, q)
        pv = pbuf[inner]
        alpha = rho / dot(pv, q)
        x += alpha * pv
        rr -= alpha * q
        rho_new = dot(rr, rr)
        pv *= rho_new / rho
        pv += rr
        rho = rho_new
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX) / cg_iters


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="511,1023,2047")
    p.add_argument("--ndim", type=int, default=2, choices=(2, 3))
    p.add_argument("--rtol", type=float, default=1e-8)
    p.add_argument("--cg-iters", type=int, default=50)
    p.add_argument("--spsolve-max", type=int, default=1024,
                   help="largest n for spsolve (2-D; 3-D: at most 32, SuperLU fill-in)")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    try:
        import petsc4py  # noqa: F401
        baseline = "petsc"
    except ImportError:
        baseline = "scipy"
    say(f"bench_solvers: {comm.size} processes, {args.ndim}-D Poisson, Dirichlet, rtol {args.rtol}, "
        f"baseline {baseline}")
    rows = []
    for n in (int(v) for v in args.sizes.split(",")):
        r = meshrt_runs(n, args.ndim, args.rtol, args.cg_iters)
        r["numpy_cg_it_s"] = numpy_cg_it(n, args.ndim, args.cg_iters)
        r["cg_it_over_numpy"] = r["cg_it_s"] / r["numpy_cg_it_s"]
        if baseline == "petsc":
            r.update(petsc_runs(n, args.ndim, args.rtol, r["levels"], args.cg_iters))
            variants = ("petsc_mgcg", "petsc_mgcg_ssor", "petsc_mgcg_redisc", "petsc_mgcg_redisc_ssor")
            best = min(variants, key=lambda v: r[v + "_s"])
            r["petsc_best"] = best
            r["mgcg_over_petsc_mgcg"] = r["mgcg_s"] / r[best + "_s"]
            r["mgcg_first_over_petsc_first"] = r["mgcg_first_s"] / min(r[v + "_first_s"] for v in variants)
            r["mg_setup_and_solve_over_petsc"] = (r["setup_s"] + r["mgcg_s"]) / min(
                r[v + "_setup_s"] + r[v + "_s"] for v in variants)
            if "petsc_jacobi_cg_s" in r:
                r["mgcg_over_petsc_jacobi_cg"] = r["mgcg_s"] / r["petsc_jacobi_cg_s"]
            r["cg_it_over_petsc"] = r["cg_it_s"] / r["petsc_cg_it_s"]
        else:
            r.update(scipy_runs(n, args.ndim, args.cg_iters,
                                args.spsolve_max if args.ndim == 2 else min(args.spsolve_max, 32)))
            r["cg_it_over_scipy"] = r["cg_it_s"] / r["scipy_cg_it_s"]
            r["cg_it_cpu_over_scipy"] = r["cg_it_cpu_s"] / r["scipy_cg_it_cpu_s"]
            if "scipy_spsolve_s" in r:
                r["mgcg_over_spsolve"] = r["mgcg_s"] / r["scipy_spsolve_s"]
                r["mgcg_cpu_over_spsolve"] = r["mgcg_cpu_s"] / r["scipy_spsolve_cpu_s"]
        rows.append(r)
        say(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()}))
    if comm.rank == 0:
        print("\n| n | levels | MG-CG its | MG-CG s (CPU s) | MG (V) its | MG s | setup s | CG ms/it (CPU) "
              "| pipelined ms/it | hierarchy/fine | baseline (wall; CPU) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            base = (f"CG/it vs SciPy {r['cg_it_over_scipy']:.2f}; {r['cg_it_cpu_over_scipy']:.2f}"
                    + (f", MG-CG vs spsolve {r['mgcg_over_spsolve']:.3f}; {r['mgcg_cpu_over_spsolve']:.3f}"
                       if "mgcg_over_spsolve" in r else "")
                    if baseline == "scipy" else
                    f"vs PCMG {r['mgcg_over_petsc_mgcg']:.2f} (first {r['mgcg_first_over_petsc_first']:.2f})"
                    + (f", vs CG+Jacobi {r['mgcg_over_petsc_jacobi_cg']:.3f}" if "mgcg_over_petsc_jacobi_cg" in r
                       else "") + f", CG it vs KSPCG {r['cg_it_over_petsc']:.2f}")
            base += f", CG it vs mpi4py+numpy {r['cg_it_over_numpy']:.2f}"
            print(f"| {r['n']} | {r['levels']} | {r['mgcg_its']} | {r['mgcg_s']:.3f} ({r['mgcg_cpu_s']:.3f}) | "
                  f"{r['mg_its']} | {r['mg_s']:.3f} | {r['setup_s']:.3f} | "
                  f"{r['cg_it_s'] * 1e3:.2f} ({r['cg_it_cpu_s'] * 1e3:.2f}) | "
                  f"{r['cg_pipelined_it_s'] * 1e3:.2f} | {r['hierarchy_over_fine']:.3f} | {base} |")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
