"""3-D heat equation, explicit 7-point stencil on a 3-D mesh, halo exchange overlapped.

    meshrt run -n 8 examples/heat3d.py                  # 64^3, 100 steps, checked

``n^3`` unknowns with zero boundary values, split over ``Mesh((-1, -1, -1))``
with one-cell halos; each step overlaps the halo exchange with the inner
cells and then updates the rim.  The result is compared bit for bit with a
serial numpy run of the same scheme in the same order of operations; exits 1
on a mismatch.
"""

import argparse
import sys
import time

import numpy as np

from meshrt.mesh import Mesh
from meshrt.sharding import Sharding
from meshrt.tensor import DistributedTensor

try:
    from meshrt.kernels.stencils import heat3d_box, inner_and_rim, interior_box
except ImportError:  # a source checkout: kernels/ becomes meshrt.kernels when installed
    from kernels.stencils import heat3d_box, inner_and_rim, interior_box


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
    args = p.parse_args(argv)
    n = args.n

    mesh = Mesh((-1, -1, -1))
    sharding = Sharding(mesh, [[0], [1], [2]], halo_sizes=[1] * 6)
    u = DistributedTensor.from_function(initial(n), (n,) * 3, sharding, sparse=True)
    v = DistributedTensor.zeros((n,) * 3, sharding)
    heat3d_box(np.zeros((3, 3, 3)), np.zeros((3, 3, 3)), args.r, [(1, 2)] * 3)  # compile before timing
    inner, rims = inner_and_rim(interior_box(u), 1)
    heat0 = float(u.sum())
    mesh.comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        handle = u.update_halo(wait=False)
        heat3d_box(u.local, v.local, args.r, inner)
        handle.wait()
        for box in rims:
            heat3d_box(u.local, v.local, args.r, box)
        u, v = v, u
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0
    heat = float(u.sum())
    if mesh.rank == 0:
        print(f"heat3d: {n}^3, {args.steps} steps, mesh {mesh.shape}: "
              f"{elapsed / max(args.steps, 1) * 1e3:.2f} ms/step, total heat {heat0:.6g} -> {heat:.6g}")
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
