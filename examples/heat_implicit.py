"""2-D heat equation, backward Euler: one multigrid-preconditioned CG solve per step, checked against SciPy.

    meshrt run -n 4 examples/heat_implicit.py                     # 128x128, 20 steps, checked
    meshrt run -n 4 examples/heat_implicit.py --n 1024 --steps 10 --variable --no-check

Each step solves ``(I / dt - div(k grad)) u_new = u / dt`` on the unit square
with zero walls: an implicit step is stable at any ``dt``, here 400 times
the explicit limit.  The operator is `meshrt.solvers.Laplacian` (the
5-point stencil, ``shift = 1 / dt``), the preconditioner one V-cycle of
`Multigrid`; with ``--variable`` the conductivity varies by a factor of
e^2 across the square (a porous medium).  With ``--check`` (default for
n <= 256) rank 0 runs the same steps serially with the assembled
``scipy.sparse`` matrix (one LU factorization, ``splu``) and the results
must agree to ``1e-8`` relative.  Exits 1 on a mismatch or a failed solve.
"""

import argparse
import sys
import time

import numpy as np

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.solvers import Laplacian, Multigrid, cg


def conductivity(h, variable):
    """k at cell (i, j), a function of global index arrays (cell centres at ``(i + 1) h``)."""
    if not variable:
        return 1.0
    return lambda i, j: np.exp(np.sin(2 * np.pi * (i + 1) * h) * np.cos(3 * np.pi * (j + 1) * h))


def initial(h):
    def f(i, j):
        x, y = (i + 1) * h, (j + 1) * h
        return np.exp(-200.0 * ((x - 0.35) ** 2 + (y - 0.4) ** 2)) + 0.5 * np.exp(-300.0 * ((x - 0.7) ** 2
                                                                                           + (y - 0.65) ** 2))
    return f


def assemble(n, h, k, shift):
    """The same operator as a scipy.sparse matrix: faces (k_i + k_j) / 2 / h^2, zero walls one cell out."""
    import scipy.sparse as sp
    kk = np.ones((n, n)) if np.isscalar(k) else np.fromfunction(k, (n, n))
    kp = np.pad(kk, 1, mode="edge")  # the wall face takes the boundary cell's k, as Laplacian does
    fx = 0.5 * (kp[1:, 1:-1] + kp[:-1, 1:-1]) / h ** 2   # (n+1, n): face between rows i-1 and i
    fy = 0.5 * (kp[1:-1, 1:] + kp[1:-1, :-1]) / h ** 2   # (n, n+1)
    diag = fx[:-1] + fx[1:] + fy[:, :-1] + fy[:, 1:] + shift
    north = -fx[1:-1].ravel()                              # couples (i, j) and (i+1, j): offset n
    east = -fy[:, 1:-1]                                     # couples (i, j) and (i, j+1): offset 1
    east = np.concatenate([east, np.zeros((n, 1))], axis=1).ravel()[:-1]
    return sp.diags([diag.ravel(), north, north, east, east], [0, n, -n, 1, -1], format="csc")


def serial(n, steps, dt, variable):
    from scipy.sparse.linalg import splu
    h = 1.0 / (n + 1)
    lu = splu(assemble(n, h, conductivity(h, variable), 1.0 / dt))
    u = np.fromfunction(initial(h), (n, n))
    for _ in range(steps):
        u = lu.solve((u / dt).ravel()).reshape(n, n)
    return u


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=128, help="unknowns per side (default 128)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--cfl", type=float, default=100.0, help="dt / h^2 (explicit Euler needs <= 0.25; default 100)")
    p.add_argument("--variable", action="store_true", help="a conductivity varying across the square")
    p.add_argument("--rtol", type=float, default=1e-10)
    p.add_argument("--check", dest="check", action="store_true", default=None)
    p.add_argument("--no-check", dest="check", action="store_false")
    args = p.parse_args(argv)
    check = args.n <= 256 if args.check is None else args.check

    mesh = Mesh((-1, -1))
    rank = mesh.rank
    n, h = args.n, 1.0 / (args.n + 1)
    dt = args.cfl * h * h
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    u = DistributedTensor.from_function(initial(h), (n, n), s)
    A = Laplacian(u, coeff=conductivity(h, args.variable), shift=1.0 / dt, h=h, boundary="dirichlet")
    M = Multigrid(A)
    if rank == 0:
        print(f"heat_implicit: {n}x{n}, {args.steps} steps of dt = {dt:.2e} ({args.cfl} h^2), mesh {mesh.shape}, "
              f"{'variable' if args.variable else 'constant'} conductivity; {M}")
    ok = True
    its = []
    mesh.comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        count = [0]
        u, info = cg(A, u / dt, x0=u, rtol=args.rtol, M=M, callback=lambda xk: count.__setitem__(0, count[0] + 1))
        ok &= info == 0
        its.append(count[0])
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print(f"heat_implicit: {elapsed / max(args.steps, 1) * 1e3:.1f} ms/step, MG-CG iterations per step "
              f"{min(its, default=0)}-{max(its, default=0)}, all converged: {ok}")
    full = u.gather(root=0) if check else None
    if check:
        good = None
        if rank == 0:
            ref = serial(n, args.steps, dt, args.variable)
            err = float(np.abs(full - ref).max() / np.abs(ref).max())
            good = err <= 1e-8
            print(f"heat_implicit: serial SciPy check: max relative difference {err:.2e} "
                  f"{'OK' if good else 'MISMATCH'}", flush=True)
        ok &= mesh.comm.bcast(good, root=0)
    M.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
