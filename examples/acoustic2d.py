"""2-D acoustic waves on a staggered grid (ImplicitGlobalGrid's acoustic2D), velocity-pressure form.

    meshrt run -n 4 examples/acoustic2d.py                # 128x96 cells, 200 steps, checked

Pressure ``P`` lives on ``nx x ny`` cells; the velocities on faces: ``Vx`` is
``(nx+1) x ny`` (face ``i`` between cells ``i-1`` and ``i``), ``Vy`` is
``nx x (ny+1)``. `staggered` lays the faces out on the cells' shards, so one
local index names the face below the cell of the same index on every
process. Walls: the boundary faces keep ``V = 0`` (``where`` leaves them
out). Per step, as in IGG::

    Vx[1:-1, :] -= dt/rho * diff(P, axis=0)/dx      # reads P's low halo
    Vy[:, 1:-1] -= dt/rho * diff(P, axis=1)/dy
    P           -= dt*k * (diff(Vx, axis=0)/dx + diff(Vy, axis=1)/dy)   # reads Vx, Vy high halos

The first update exchanges ``P`` behind its inner box; the second reuses
those halos; the third exchanges ``Vx`` and ``Vy`` together (one message per
neighbour direction for both). Checked bit for bit against serial numpy
(``--check``, default for nx*ny <= 2**18); exits 1 on a mismatch.
"""

import argparse
import sys
import time

import numpy as np
from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding, apply_stencil, staggered, t_eff


@njit(cache=True, nogil=True)
def update_vx(lo, hi, vx, p, a):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            vx[i, j] = vx[i, j] - a * (p[i, j] - p[i - 1, j])


@njit(cache=True, nogil=True)
def update_vy(lo, hi, vy, p, b):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            vy[i, j] = vy[i, j] - b * (p[i, j] - p[i, j - 1])


@njit(cache=True, nogil=True)
def update_p(lo, hi, p, vx, vy, kx, ky):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            p[i, j] = p[i, j] - (kx * (vx[i + 1, j] - vx[i, j]) + ky * (vy[i, j + 1] - vy[i, j]))


def coefficients(nx, ny, lx=10.0, ly=10.0, rho=1.0, k=1.0):
    dx, dy = lx / nx, ly / ny
    dt = min(dx, dy) / np.sqrt(k / rho) / 4.1
    return dt / rho / dx, dt / rho / dy, dt * k / dx, dt * k / dy


def initial(nx, ny, lx=10.0, ly=10.0):
    dx, dy = lx / nx, ly / ny
    return lambda i, j: np.exp(-((i + 0.5) * dx - lx / 2) ** 2 - ((j + 0.5) * dy - ly / 2) ** 2)


def serial(nx, ny, steps):
    a, b, kx, ky = coefficients(nx, ny)
    P = np.fromfunction(initial(nx, ny), (nx, ny), dtype=np.intp)
    Vx, Vy = np.zeros((nx + 1, ny)), np.zeros((nx, ny + 1))
    for _ in range(steps):
        Vx[1:-1, :] = Vx[1:-1, :] - a * (P[1:, :] - P[:-1, :])
        Vy[:, 1:-1] = Vy[:, 1:-1] - b * (P[:, 1:] - P[:, :-1])
        P = P - (kx * (Vx[1:, :] - Vx[:-1, :]) + ky * (Vy[:, 1:] - Vy[:, :-1]))
    return P, Vx, Vy


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nx", type=int, default=128, help="cells along x (default 128)")
    p.add_argument("--ny", type=int, default=96, help="cells along y (default 96)")
    p.add_argument("--steps", type=int, default=200, help="time steps (default 200)")
    p.add_argument("--check", dest="check", action="store_true", default=None,
                   help="compare P, Vx, Vy with a serial numpy run bit for bit (default: on for small grids)")
    p.add_argument("--no-check", dest="check", action="store_false")
    p.add_argument("--no-overlap", action="store_true", help="wait for the halos before computing")
    args = p.parse_args(argv)
    nx, ny = args.nx, args.ny
    check = nx * ny <= 2 ** 18 if args.check is None else args.check

    mesh = Mesh((-1, -1))
    cells = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    sx, gx = staggered(cells, (nx, ny), [0])
    sy, gy = staggered(cells, (nx, ny), [1])
    P = DistributedTensor.from_function(initial(nx, ny), (nx, ny), cells)
    Vx, Vy = DistributedTensor.zeros(gx, sx), DistributedTensor.zeros(gy, sy)
    a, b, kx, ky = coefficients(nx, ny)
    overlap = not args.no_overlap
    inner_x, inner_y = (slice(1, -1),), (slice(None), slice(1, -1))  # walls: boundary faces stay 0
    z = np.zeros((3, 3))
    update_vx((1, 1), (2, 2), z, z, a), update_vy((1, 1), (2, 2), z, z, b)  # compile (or load) before timing
    update_p((1, 1), (2, 2), z.copy(), z, z, kx, ky)
    mesh.comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        apply_stencil(update_vx, Vx, P, a, reads=[P], where=inner_x, overlap=overlap)
        apply_stencil(update_vy, Vy, P, b, where=inner_y)  # P's halos are current
        apply_stencil(update_p, P, Vx, Vy, kx, ky, reads=[Vx, Vy], overlap=overlap)
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0
    if mesh.rank == 0 and args.steps:
        per = elapsed / args.steps
        print(f"acoustic2d: {nx}x{ny} cells, {args.steps} steps, mesh {mesh.shape}: {per * 1e3:.3f} ms/step, "
              f"T_eff {t_eff(per, updated=[P, Vx, Vy]):.2f} GB/s")
    ok = True
    if check:
        got = [t.gather(root=0) for t in (P, Vx, Vy)]
        same = None
        if mesh.rank == 0:
            ref = serial(nx, ny, args.steps)
            same = all(np.array_equal(g, r) for g, r in zip(got, ref))
            diff = max(float(np.max(np.abs(g - r))) for g, r in zip(got, ref))
            print(f"acoustic2d: serial check of P, Vx, Vy: {'bit-for-bit identical' if same else 'MISMATCH'} "
                  f"(max |diff| = {diff:.3e})")
        ok = mesh.comm.bcast(same, root=0)
    for t in (P, Vx, Vy):
        t.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
