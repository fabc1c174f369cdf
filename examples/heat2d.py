"""2-D heat equation, explicit 5-point Jacobi, halo exchange overlapped with compute.

    meshrt run -n 4 examples/heat2d.py                  # 512x512, 500 steps, checked
    meshrt run -n 4 examples/heat2d.py --n 4096 --steps 200 --png heat.png

The unit square with zero boundary values holds ``n x n`` unknowns split over
a 2-D mesh (``--mesh 1d`` splits rows only); every local buffer carries a
one-cell halo, which on the domain boundary is the zero ghost cell.  Each step
starts the halo exchange, updates the cells that read no halo while the
messages travel, waits, then updates the rim.

The start field is the lowest Fourier mode, an eigenvector of the discrete
scheme, so the exact discrete answer is ``g**steps * u0``; with ``--check``
(default for n <= 512) a serial numpy run of the same scheme, in the same
order of operations, must agree bit for bit.  Exits 1 on a mismatch.
"""

import argparse
import sys
import time

import numpy as np

from meshrt.mesh import Mesh
from meshrt.sharding.spec import Sharding
from meshrt.tensor.distributed_tensor import DistributedTensor

try:
    from meshrt.kernels.stencils import heat2d_box, inner_and_rim, interior_box
except ImportError:  # a source checkout: kernels/ becomes meshrt.kernels when installed
    from kernels.stencils import heat2d_box, inner_and_rim, interior_box


def initial(h, kind="mode"):
    """The start field at ``x = (i + 1) h``, a function of global index arrays: the lowest mode
    ``sin(pi x) sin(pi y)``, or three hot spots (``kind="spots"``, no analytic answer)."""
    if kind == "mode":
        return lambda i, j: np.sin(np.pi * ((i + 1) * h)) * np.sin(np.pi * ((j + 1) * h))

    def spots(i, j):
        x, y = (i + 1) * h, (j + 1) * h
        return (np.exp(-300.0 * ((x - 0.3) ** 2 + (y - 0.3) ** 2))
                + np.exp(-200.0 * ((x - 0.7) ** 2 + (y - 0.55) ** 2))
                + 0.5 * np.exp(-500.0 * ((x - 0.35) ** 2 + (y - 0.75) ** 2)))
    return spots


def serial(n, steps, r, kind="mode"):
    """The same scheme on one process with numpy (zero-padded array), same operation order."""
    u = np.zeros((n + 2, n + 2))
    u[1:-1, 1:-1] = np.fromfunction(initial(1.0 / (n + 1), kind), (n, n), dtype=np.intp)
    v = np.zeros_like(u)
    for _ in range(steps):
        c = u[1:-1, 1:-1]
        v[1:-1, 1:-1] = c + r * (((u[:-2, 1:-1] + u[2:, 1:-1]) + (u[1:-1, :-2] + u[1:-1, 2:])) - 4.0 * c)
        u, v = v, u
    return u[1:-1, 1:-1]


def progress(steps, rank):
    try:
        from tqdm import tqdm
    except ImportError:
        return range(steps)
    return tqdm(range(steps), disable=rank != 0, desc="heat2d", unit="step", mininterval=0.5)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=512, help="unknowns per side (default 512)")
    p.add_argument("--steps", type=int, default=500, help="time steps (default 500)")
    p.add_argument("--r", type=float, default=0.2, help="dt / h^2, stable up to 0.25 (default 0.2)")
    p.add_argument("--mesh", choices=("2d", "1d"), default="2d", help="split both dims, or rows only")
    p.add_argument("--init", choices=("mode", "spots"), default="mode",
                   help="start field: the lowest Fourier mode (analytic answer known) or hot spots")
    p.add_argument("--check", dest="check", action="store_true", default=None,
                   help="compare with a serial numpy run bit for bit (default: on for n <= 512)")
    p.add_argument("--no-check", dest="check", action="store_false")
    p.add_argument("--no-overlap", action="store_true", help="wait for the halos before computing")
    p.add_argument("--png", metavar="FILE", help="write the final field as a PNG (needs matplotlib)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    check = args.n <= 512 if args.check is None else args.check

    mesh = Mesh((-1, -1) if args.mesh == "2d" else (-1, 1))
    rank = mesh.rank
    sharding = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    n, h = args.n, 1.0 / (args.n + 1)
    u = DistributedTensor.from_function(initial(h, args.init), (n, n), sharding, sparse=True)
    v = DistributedTensor.zeros((n, n), sharding)
    if rank == 0:
        print(f"heat2d: {n}x{n}, {args.steps} steps, r={args.r}, mesh {mesh.shape}, "
              f"{'overlapped' if not args.no_overlap else 'blocking'} halo exchange")

    heat2d_box(np.zeros((3, 3)), np.zeros((3, 3)), args.r, [(1, 2), (1, 2)])  # compile (or load) before timing
    inner, rims = inner_and_rim(interior_box(u), 1)
    everything = interior_box(u)
    steps = range(args.steps) if args.no_progress else progress(args.steps, rank)
    mesh.comm.Barrier()
    t0 = time.perf_counter()
    for _ in steps:
        if args.no_overlap:
            u.update_halo()
            heat2d_box(u.local, v.local, args.r, everything)
        else:
            handle = u.update_halo(wait=False)
            heat2d_box(u.local, v.local, args.r, inner)
            handle.wait()
            for box in rims:
                heat2d_box(u.local, v.local, args.r, box)
        u, v = v, u
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0
    if rank == 0 and args.steps:
        per_step = elapsed / args.steps
        # T_eff (ParallelStencil): bytes that must move per step (read u, write v) / time per step.
        t_eff = 2 * n * n * 8 / per_step / 1e9
        print(f"heat2d: {per_step * 1e6:.1f} us/step, T_eff {t_eff:.2f} GB/s")

    ok = True
    if args.init == "mode":
        # The mode is an eigenvector of the scheme: each step multiplies it by g.
        g = (1.0 + args.r * 2 * (2.0 * np.cos(np.pi * h) - 2.0)) ** args.steps
        exact = DistributedTensor.from_function(initial(h), (n, n), sharding, sparse=True) * g
        err = float(np.abs(u - exact).max())
        tol = 1e-12 * (1 + args.steps)
        ok &= err <= tol
        if rank == 0:
            print(f"heat2d: analytic check: max |u - g^steps u0| = {err:.3e} (tol {tol:.1e}) "
                  f"{'OK' if err <= tol else 'MISMATCH'}", flush=True)

    full = u.gather(root=0) if check or args.png else None
    if check:
        same = None
        if rank == 0:
            ref = serial(n, args.steps, args.r, args.init)
            same = bool(np.array_equal(full, ref))
            diff = float(np.max(np.abs(full - ref))) if full.size else 0.0
            print(f"heat2d: serial check: {'bit-for-bit identical' if same else 'MISMATCH'} "
                  f"(max |diff| = {diff:.3e})", flush=True)
        ok &= mesh.comm.bcast(same, root=0)
    if args.png and rank == 0:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("heat2d: matplotlib is not installed; no PNG written")
        else:
            fig, ax = plt.subplots(figsize=(5, 4.2))
            im = ax.imshow(full.T, origin="lower", extent=(0, 1, 0, 1), cmap="inferno")  # x across, y up
            ax.set_xlabel("x")
            ax.set_ylabel("y")
            fig.colorbar(im, ax=ax)
            ax.set_title(f"heat2d {n}x{n} after {args.steps} steps")
            fig.savefig(args.png, dpi=120, bbox_inches="tight")
            print(f"heat2d: wrote {args.png}")
    u.free()
    v.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
