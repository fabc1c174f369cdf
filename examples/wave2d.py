"""2-D wave equation, leapfrog, a user's Numba kernel run by `apply_stencil` (halo exchange hidden).

    meshrt run -n 4 examples/wave2d.py                   # 256x256, 300 steps, checked
    meshrt run -n 4 examples/wave2d.py --n 4096 --steps 100 --bc periodic

``u_tt = c^2 (u_xx + u_yy)`` on ``n x n`` cells, ``u_new = 2 u - u_old + C lap(u)``
with ``C = (c dt / h)^2`` (stable up to 0.5). The kernel writes ``u_new`` over
``u_old`` in place (it reads ``u_old`` only at the cell it writes), so two
buffers suffice and a step moves three arrays (read ``u``, read and write
``u_old``). Boundaries: zero Dirichlet ghost cells, Neumann mirror, or
periodic. The result is compared bit for bit with a serial numpy run of the
same scheme in the same order of operations (``--check``, default for
n <= 512); exits 1 on a mismatch.
"""

import argparse
import sys
import time

import numpy as np
from numba import njit

from meshrt import DistributedTensor, Dirichlet, Mesh, Neumann, Sharding, apply_stencil, t_eff


@njit(cache=True, nogil=True)
def leapfrog(lo, hi, old, u, C):
    """``old = (2 c - old) + C (((n + s) + (w + e)) - 4 c)`` on the box; ``old`` becomes ``u_new``."""
    for i in range(lo[0], hi[0]):
        north, row, south, out = u[i - 1], u[i], u[i + 1], old[i]  # rows: lets LLVM vectorize
        for j in range(lo[1], hi[1]):
            c = row[j]
            out[j] = (2.0 * c - out[j]) + C * (((north[j] + south[j]) + (row[j - 1] + row[j + 1])) - 4.0 * c)


def initial(n):
    """A Gaussian pulse off the centre, at rest; a function of global index arrays."""
    h = 1.0 / n
    return lambda i, j: np.exp(-120.0 * (((i + 0.5) * h - 0.45) ** 2 + ((j + 0.5) * h - 0.5) ** 2))


def pad(u, bc):
    if bc == "periodic":
        return np.pad(u, 1, mode="wrap")
    if bc == "neumann":
        return np.pad(u, 1, mode="symmetric")
    return np.pad(u, 1, mode="constant")


def serial(n, steps, C, bc):
    u = np.fromfunction(initial(n), (n, n), dtype=np.intp)
    old = u.copy()
    for _ in range(steps):
        P = pad(u, bc)
        c = P[1:-1, 1:-1]
        new = (2.0 * c - old) + C * (((P[:-2, 1:-1] + P[2:, 1:-1]) + (P[1:-1, :-2] + P[1:-1, 2:])) - 4.0 * c)
        old, u = u, new
    return u


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=256, help="cells per side (default 256)")
    p.add_argument("--steps", type=int, default=300, help="time steps (default 300)")
    p.add_argument("--C", type=float, default=0.25, help="(c dt / h)^2, stable up to 0.5 (default 0.25)")
    p.add_argument("--bc", choices=("dirichlet", "neumann", "periodic"), default="dirichlet")
    p.add_argument("--mesh", choices=("2d", "1d"), default="2d", help="split both dims, or rows only")
    p.add_argument("--check", dest="check", action="store_true", default=None,
                   help="compare with a serial numpy run bit for bit (default: on for n <= 512)")
    p.add_argument("--no-check", dest="check", action="store_false")
    p.add_argument("--no-overlap", action="store_true", help="wait for the halos before computing")
    args = p.parse_args(argv)
    check = args.n <= 512 if args.check is None else args.check
    n = args.n

    mesh = Mesh((-1, -1) if args.mesh == "2d" else (-1, 1))
    sharding = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    periodic = args.bc == "periodic"
    boundary = {"dirichlet": Dirichlet(0.0), "neumann": Neumann(), "periodic": None}[args.bc]
    u = DistributedTensor.from_function(initial(n), (n, n), sharding, periodic=periodic)
    old = u.copy()
    leapfrog((1, 1), (2, 2), np.zeros((3, 3)), np.zeros((3, 3)), args.C)  # compile (or load) before timing
    mesh.comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        apply_stencil(leapfrog, old, u, args.C, reads=[u], boundary=boundary, overlap=not args.no_overlap)
        u, old = old, u
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0
    if mesh.rank == 0 and args.steps:
        per = elapsed / args.steps
        print(f"wave2d: {n}x{n}, {args.steps} steps, C={args.C}, {args.bc}, mesh {mesh.shape}: "
              f"{per * 1e3:.3f} ms/step, T_eff {t_eff(per, updated=[old], read=[u]):.2f} GB/s")
    ok = True
    if check:
        full = u.gather(root=0)
        same = None
        if mesh.rank == 0:
            ref = serial(n, args.steps, args.C, args.bc)
            same = bool(np.array_equal(full, ref))
            print(f"wave2d: serial check: {'bit-for-bit identical' if same else 'MISMATCH'} "
                  f"(max |diff| = {float(np.max(np.abs(full - ref))):.3e})")
        ok = mesh.comm.bcast(same, root=0)
    u.free()
    old.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
