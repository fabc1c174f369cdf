"""Multigrid-preconditioned CG against plain CG and a baseline, Poisson with Dirichlet walls.

    mpiexec -n 2 python bench/bench_solvers.py [--sizes 512,1024,2048,4096] [--ndim 2] [--rtol 1e-8]

Per grid size (``n^2``, or ``n^3`` with ``--ndim 3``): meshrt's MG-CG (V-cycle,
red-black Gauss-Seidel 2+2, coarse grids gathered) to a relative residual of
``rtol``: setup time, solve time, iterations; multigrid alone (V-cycles);
plain CG's time per iteration (over ``--cg-iters`` iterations, not to
convergence); the multigrid hierarchy's memory (levels below the fine one)
over the fine level's.

Baseline: petsc4py when importable (KSPCG + PCMG on a DMDA, red-black
smoothing replaced by PETSc's SOR, the same levels; KSPCG + PCJACOBI), run in
the same job on the same processes.  Otherwise SciPy on one process (rank 0,
the others wait): ``scipy.sparse.linalg.cg`` without preconditioner (time per
iteration) and ``spsolve`` (SuperLU) for sizes up to ``--spsolve-max`` (32 in 3-D).
Ratios are meshrt / baseline (below 1: meshrt faster); SciPy is serial, so
against it the ratios compare one process with ``comm.size``.
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
    cg(A, b, rtol=rtol, M=M, maxiter=2)  # first calls: kernels loaded, exchanges planned
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
    out = dict(n=n, ndim=nd, procs=comm.size, levels=len(M.levels), setup_s=t_setup, mgcg_s=t_mgcg,
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
    """KSPCG + PCMG (Galerkin-free: DMDA rediscretization via interpolation) and KSPCG + PCJACOBI."""
    from petsc4py import PETSc
    da = PETSc.DMDA().create([n] * nd, stencil_width=1, stencil_type=PETSc.DMDA.StencilType.STAR,
                             comm=PETSc.COMM_WORLD)
    h = 1.0 / (n + 1)

    def operator(ksp, J, P):
        dm = ksp.getDM()
        (xs, xe), (ys, ye) = dm.getRanges()[:2]
        m = dm.getSizes()[0]
        hh = 1.0 / (m + 1)
        P.zeroEntries()
        row, col = PETSc.Mat.Stencil(), PETSc.Mat.Stencil()
        for j in range(ys, ye):
            for i in range(xs, xe):
                row.index = (i, j)
                row.field = 0
                P.setValueStencil(row, row, 4.0 / hh ** 2)
                for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                    ii, jj = i + di, j + dj
                    if 0 <= ii < m and 0 <= jj < m:
                        col.index = (ii, jj)
                        P.setValueStencil(row, col, -1.0 / hh ** 2)
        P.assemble()

    if nd != 2:
        raise NotImplementedError("the petsc baseline here is 2-D")
    out = {}
    for name, pc in (("petsc_mgcg", "mg"), ("petsc_jacobi_cg", "jacobi")):
        ksp = PETSc.KSP().create()
        ksp.setDM(da)
        ksp.setComputeOperators(operator)
        ksp.setType("cg")
        ksp.getPC().setType(pc)
        opts = PETSc.Options()
        if pc == "mg":
            opts["pc_mg_levels"] = levels
            opts["pc_mg_galerkin"] = "none"
            opts["mg_levels_ksp_type"] = "richardson"
            opts["mg_levels_pc_type"] = "sor"
            opts["mg_levels_ksp_max_it"] = 2
        ksp.setTolerances(rtol=rtol, atol=0.0, max_it=100000)
        ksp.setFromOptions()
        x = da.createGlobalVec()
        b = da.createGlobalVec()
        b.set(1.0)
        ksp.setUp()
        t, _ = timed(lambda: ksp.solve(b, x))
        out[name + "_s"] = t
        out[name + "_its"] = ksp.getIterationNumber()
    ksp = PETSc.KSP().create()
    ksp.setDM(da)
    ksp.setComputeOperators(operator)
    ksp.setType("cg")
    ksp.getPC().setType("none")
    ksp.setTolerances(rtol=0.0, atol=0.0, max_it=cg_iters)
    ksp.setConvergenceTest(lambda *a: 0)
    ksp.setUp()
    t, _ = timed(lambda: ksp.solve(b, x))
    out["petsc_cg_it_s"] = t / cg_iters
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="512,1024,2048")
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
        if baseline == "petsc":
            r.update(petsc_runs(n, args.ndim, args.rtol, r["levels"], args.cg_iters))
            r["mgcg_over_petsc_mgcg"] = r["mgcg_s"] / r["petsc_mgcg_s"]
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
                    f"vs PCMG {r['mgcg_over_petsc_mgcg']:.2f}, vs CG+Jacobi {r['mgcg_over_petsc_jacobi_cg']:.2f}, "
                    f"CG it {r['cg_it_over_petsc']:.2f}")
            print(f"| {r['n']} | {r['levels']} | {r['mgcg_its']} | {r['mgcg_s']:.3f} ({r['mgcg_cpu_s']:.3f}) | "
                  f"{r['mg_its']} | {r['mg_s']:.3f} | {r['setup_s']:.3f} | "
                  f"{r['cg_it_s'] * 1e3:.2f} ({r['cg_it_cpu_s'] * 1e3:.2f}) | "
                  f"{r['cg_pipelined_it_s'] * 1e3:.2f} | {r['hierarchy_over_fine']:.3f} | {base} |")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
