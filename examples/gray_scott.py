"""Gray-Scott reaction-diffusion on a periodic square: two fields, a ParaView time series and Zarr output.

    meshrt run -n 4 examples/gray_scott.py --output gs                 # 256x256, 10000 steps
    meshrt run -n 4 examples/gray_scott.py --output gs --png docs/gray_scott.png
    meshrt run --hosts a:4,b:4 --restarts 3 examples/gray_scott.py --output gs --checkpoint gs/ckpt

``u_t = Du lap(u) - u v^2 + F (1 - u)``, ``v_t = Dv lap(v) + u v^2 - (F + k) v``
(Pearson 1993), explicit Euler with ``dt = 1`` and the 5-point Laplacian on a
unit grid, periodic in both dims. The default ``F = 0.037, k = 0.06`` grows
the classic labyrinth of stripes from a noisy square in the middle; try
``--F 0.03 --k 0.062`` for spots. Both fields go to ``OUT/gs.pvd`` every
``--every`` steps (ParaView: colour by ``v``) and to the time series
``OUT/gs.zarr`` (`meshrt.io.open_series`; ``xr.open_zarr("OUT/gs.zarr")``
gives ``u`` and ``v`` as ``(time, y, x)``), and, at the end, to the Zarr
group ``OUT/fields.zarr`` (arrays ``u`` and ``v``). ``--png`` renders ``v``
from that Zarr group with matplotlib (one process reads the file; any
tool could). For small grids (``--check``, default n <= 128) the result is
compared bit for bit with a serial numpy run of the same scheme.

``--checkpoint DIR`` saves ``u``, ``v`` and the step every ``--checkpoint-every`` steps
(`meshrt.io.Checkpointer`) and goes on from the last one there, on any process count:
started again by ``meshrt run --restarts`` after a lost host, the same command line
finishes the run, the series holding each step once.
"""

import argparse
import os
import sys
import time

import numpy as np
from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding, apply_stencil
from meshrt.io import Checkpointer, open_series, write_vtk


@njit(cache=True, nogil=True)
def gray_scott(lo, hi, un, vn, u, v, Du, Dv, F, k):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            c, d = u[i, j], v[i, j]
            lap_u = ((u[i - 1, j] + u[i + 1, j]) + (u[i, j - 1] + u[i, j + 1])) - 4.0 * c
            lap_v = ((v[i - 1, j] + v[i + 1, j]) + (v[i, j - 1] + v[i, j + 1])) - 4.0 * d
            uvv = c * d * d
            un[i, j] = c + (Du * lap_u - uvv + F * (1.0 - c))
            vn[i, j] = d + (Dv * lap_v + uvv - (F + k) * d)


def initial(n, which):
    """u = 1, v = 0, except a square in the middle seeded with deterministic noise
    (a hash of the global index, so every process count starts alike)."""
    def f(i, j):
        inside = (np.abs(i - n // 2) < n // 10 + 1) & (np.abs(j - n // 2) < n // 10 + 1)
        noise = ((i * 7919 + j * 104729) % 1013) / 1013.0 * 0.1
        if which == "u":
            return np.where(inside, 0.5 + noise, 1.0)
        return np.where(inside, 0.25 + noise, 0.0)
    return f


def serial(n, steps, Du, Dv, F, k):
    u = np.fromfunction(initial(n, "u"), (n, n), dtype=np.intp)
    v = np.fromfunction(initial(n, "v"), (n, n), dtype=np.intp)
    for _ in range(steps):
        U, V = np.pad(u, 1, mode="wrap"), np.pad(v, 1, mode="wrap")
        lap_u = ((U[:-2, 1:-1] + U[2:, 1:-1]) + (U[1:-1, :-2] + U[1:-1, 2:])) - 4.0 * u
        lap_v = ((V[:-2, 1:-1] + V[2:, 1:-1]) + (V[1:-1, :-2] + V[1:-1, 2:])) - 4.0 * v
        uvv = u * v * v
        u, v = u + (Du * lap_u - uvv + F * (1.0 - u)), v + (Dv * lap_v + uvv - (F + k) * v)
    return u, v


def render(zarr_path, png):
    """``v`` from the Zarr output as an image, one pixel per cell (one process)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import zarr

    plt.imsave(png, zarr.open_group(zarr_path, mode="r")["v"][...], cmap="magma")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=256, help="cells per side (default 256)")
    p.add_argument("--steps", type=int, default=10000, help="time steps (default 10000)")
    p.add_argument("--Du", type=float, default=0.2)
    p.add_argument("--Dv", type=float, default=0.1)
    p.add_argument("--F", type=float, default=0.037)
    p.add_argument("--k", type=float, default=0.06)
    p.add_argument("--output", metavar="DIR", help="write DIR/gs.pvd (ParaView) and DIR/fields.zarr")
    p.add_argument("--every", type=int, default=500, metavar="N", help="ParaView output every N steps")
    p.add_argument("--png", metavar="FILE", help="render v from DIR/fields.zarr into FILE (needs --output)")
    p.add_argument("--check", dest="check", action="store_true", default=None)
    p.add_argument("--no-check", dest="check", action="store_false")
    p.add_argument("--checkpoint", metavar="DIR", help="checkpoint into DIR; go on from the last one there")
    p.add_argument("--checkpoint-every", type=int, default=500, metavar="K", help="default 500")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.checkpoint_every < 1:
        p.error(f"--checkpoint-every: {args.checkpoint_every} must be >= 1")
    if args.every < 1:
        p.error(f"--every: {args.every} must be >= 1")
    if args.png and not args.output:
        p.error("--png renders the Zarr output: give --output DIR too")
    check = args.n <= 128 if args.check is None else args.check
    n = args.n

    mesh = Mesh((-1, -1))
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    u = DistributedTensor.from_function(initial(n, "u"), (n, n), s, periodic=True)
    v = DistributedTensor.from_function(initial(n, "v"), (n, n), s, periodic=True)
    ck = Checkpointer(args.checkpoint, every=args.checkpoint_every) if args.checkpoint else None
    state = ck.load(s) if ck else None
    first = 0
    if state is not None:
        u.free()
        v.free()
        u, v, first = state.tensors["u"], state.tensors["v"], state.step
        if mesh.rank == 0:
            print(f"gray_scott: resuming from step {first} ({args.checkpoint}, MESHRT_RESTART={ck.restart}, "
                  f"{mesh.size} processes)", flush=True)
    un, vn = u.copy(), v.copy()
    if args.output and mesh.rank == 0:
        os.makedirs(args.output, exist_ok=True)
    series = None
    if args.output:  # u and v every --every steps, one store: xr.open_zarr("OUT/gs.zarr")
        series = open_series(os.path.join(args.output, "gs.zarr"), {"u": u, "v": v}, dims=("y", "x"),
                             spacing=(1.0, 1.0), mode="w" if state is None else "a", attrs={"u": {"long_name": "substrate"}, "v": {"long_name": "catalyst"}})
    coefficients = (args.Du, args.Dv, args.F, args.k)
    steps = range(first, args.steps)
    if not args.no_progress:
        try:
            from tqdm import tqdm
            steps = tqdm(steps, disable=mesh.rank != 0, desc="gray_scott", unit="step", mininterval=0.5)
        except ImportError:
            pass
    t0 = time.perf_counter()
    for step in steps:
        if ck and step > first:
            ck.maybe_save(step, {"u": u, "v": v})
        if args.output and step % args.every == 0:
            write_vtk(os.path.join(args.output, "gs"), {"u": u, "v": v}, step=step, time=float(step))
            series.write(step=step, time=float(step), fields={"u": u, "v": v})
        apply_stencil(gray_scott, un, vn, u, v, *coefficients, reads=[u, v])
        u, un, v, vn = un, u, vn, v
    if ck and ck.last_saved != args.steps:
        ck.save(args.steps, {"u": u, "v": v})
    if args.output:
        write_vtk(os.path.join(args.output, "gs"), {"u": u, "v": v}, step=args.steps, time=float(args.steps))
        series.write(step=args.steps, time=float(args.steps), fields={"u": u, "v": v})
        series.close()
        fields = os.path.join(args.output, "fields.zarr")
        u.to_zarr(fields, name="u")
        v.to_zarr(fields, name="v")
        if args.png and mesh.rank == 0:
            render(fields, args.png)
    mesh.comm.Barrier()
    vmin, vmax = float(v.min()), float(v.max())
    if mesh.rank == 0:
        print(f"gray_scott: {n}x{n}, {args.steps} steps, mesh {mesh.shape}, F={args.F}, k={args.k}: "
              f"{(time.perf_counter() - t0):.2f} s, v in [{vmin:.3f}, {vmax:.3f}]")
        if args.png:
            print(f"gray_scott: rendered {args.png}")
    ok = True
    if check:
        fu, fv = u.gather(root=0), v.gather(root=0)
        same = None
        if mesh.rank == 0:
            ru, rv = serial(n, args.steps, *coefficients)
            same = bool(np.array_equal(fu, ru) and np.array_equal(fv, rv))
            print(f"gray_scott: serial check: {'bit-for-bit identical' if same else 'MISMATCH'}")
        ok = mesh.comm.bcast(same, root=0)
    for t in (u, v, un, vn):
        t.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
