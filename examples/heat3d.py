"""3-D heat equation, explicit 7-point stencil on a 3-D mesh, halo exchange overlapped by `apply_stencil`.

    meshrt run -n 8 examples/heat3d.py                  # 64^3, 100 steps, checked

``n^3`` unknowns with zero boundary values, split over ``Mesh((-1, -1, -1))``
with one-cell halos. The kernel below is plain Numba code on a box of local
indices; `apply_stencil` starts the halo exchange, runs it on the inner cells,
waits, and runs it on the rim (``--no-overlap``: exchange first, then one
call).  The result is compared bit for bit with a serial numpy run of the
same scheme in the same order of operations; exits 1 on a mismatch.
"""

import argparse
import sys
import time

import numpy as np

from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding, apply_stencil, t_eff


@njit(cache=True, nogil=True)
def heat3d(lo, hi, v, u, r):
    """``v = c + r * ((((x- + x+) + (y- + y+)) + (z- + z+)) - 6.0 * c)`` on the box."""
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            west, east = u[i - 1, j], u[i + 1, j]  # 1-D rows: lets LLVM vectorize the inner loop
            south, row, north, out = u[i, j - 1], u[i, j], u[i, j + 1], v[i, j]
            for k in range(lo[2], hi[2]):
                c = row[k]
                out[k] = c + r * ((((west[k] + east[k]) + (south[k] + north[k])) + (row[k - 1] + row[k + 1]))
                                  - 6.0 * c)


def initial(n):
    """A Gaussian bump off the centre; takes global index arrays."""
    h = 1.0 / (n + 1)
    return lambda i, j, k: np.exp(-40.0 * (((i + 1) * h - 0.4) ** 2 + ((j + 1) * h - 0.5) ** 2
                                          + ((k + 1) * h - 0.6) ** 2))


def serial(n, steps, r):
    u = np.zeros((n + 2,) * 3)
    u[1:-1, 1:-1, 1:-1] = np.fromfunction(initial(n), (n,) * 3, dtype=np.intp)
    v = np.zeros_like(u)
    I = slice(1, -1)
    lo, hi = slice(None, -2), slice(2, None)
    for _ in range(steps):
        c = u[I, I, I]
        v[I, I, I] = c + r * ((((u[lo, I, I] + u[hi, I, I]) + (u[I, lo, I] + u[I, hi, I]))
                               + (u[I, I, lo] + u[I, I, hi])) - 6.0 * c)
        u, v = v, u
    return u[I, I, I]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=64, help="unknowns per side (default 64)")
    p.add_argument("--steps", type=int, default=100, help="time steps (default 100)")
    p.add_argument("--r", type=float, default=0.125, help="dt / h^2, stable up to 1/6 (default 0.125)")
    p.add_argument("--no-check", action="store_true", help="skip the serial comparison")
    p.add_argument("--no-overlap", action="store_true", help="wait for the halos before computing")
    args = p.parse_args(argv)
    n = args.n

    mesh = Mesh((-1, -1, -1))
    sharding = Sharding(mesh, [[0], [1], [2]], halo_sizes=[1] * 6)
    u = DistributedTensor.from_function(initial(n), (n,) * 3, sharding, sparse=True)
    v = DistributedTensor.zeros((n,) * 3, sharding)
    heat3d((1, 1, 1), (2, 2, 2), np.zeros((3, 3, 3)), np.zeros((3, 3, 3)), args.r)  # compile before timing
    heat0 = float(u.sum())
    mesh.comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        # zero ghost cells: the halos of the boundary shards stay 0 (boundary=Dirichlet(0.0) would rewrite them)
        apply_stencil(heat3d, v, u, args.r, reads=[u], overlap=not args.no_overlap)
        u, v = v, u
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0
    heat = float(u.sum())
    if mesh.rank == 0:
        print(f"heat3d: {n}^3, {args.steps} steps, mesh {mesh.shape}: "
              f"{elapsed / max(args.steps, 1) * 1e3:.2f} ms/step, total heat {heat0:.6g} -> {heat:.6g}"
              + (f", T_eff {t_eff(elapsed / args.steps, updated=[u]):.2f} GB/s" if args.steps else ""))
    ok = True
    if not args.no_check:
        full = u.gather(root=0)
        same = None
        if mesh.rank == 0:
            ref = serial(n, args.steps, args.r)
            same = bool(np.array_equal(full, ref))
            print(f"heat3d: serial check: {'bit-for-bit identical' if same else 'MISMATCH'} "
                  f"(max |diff| = {float(np.max(np.abs(full - ref))) if full.size else 0.0:.3e})")
        ok = mesh.comm.bcast(same, root=0)
    u.free()
    v.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
