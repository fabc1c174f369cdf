"""2-D wave equation, leapfrog, a user's Numba kernel run by `apply_stencil` (halo exchange hidden).

    meshrt run -n 4 examples/wave2d.py                   # 256x256, 300 steps, checked
    meshrt run -n 4 examples/wave2d.py --n 4096 --steps 100 --bc periodic
    meshrt run -n 4 examples/wave2d.py --output out --every 20    # ParaView: out/wave.pvd; xarray: out/wave.nc
    meshrt run -n 2 examples/wave2d.py --restart out/restart.zarr --steps 100   # go on from there
    meshrt run --hosts a:2,b:2 --restarts 3 examples/wave2d.py --output out --checkpoint out/ckpt  # survives a lost host

``u_tt = c^2 (u_xx + u_yy)`` on ``n x n`` cells, ``u_new = 2 u - u_old + C lap(u)``
with ``C = (c dt / h)^2`` (stable up to 0.5). The kernel writes ``u_new`` over
``u_old`` in place (it reads ``u_old`` only at the cell it writes), so two
buffers suffice and a step moves three arrays (read ``u``, read and write
``u_old``). Boundaries: zero Dirichlet ghost cells, Neumann mirror, or
periodic. The result is compared bit for bit with a serial numpy run of the
same scheme in the same order of operations (``--check``, default for
n <= 512; after ``--restart``, the serial run covers every step since step 0); exits 1 on a mismatch.

``--output DIR --every N`` writes ``u`` every N steps as a ParaView time
series (``DIR/wave.pvd``, one ``.vti`` piece per process, `meshrt.io.write_vtk`),
as one netCDF-4 time series xarray opens (``DIR/wave.nc``,
`meshrt.io.open_series`: ``xr.open_dataset("out/wave.nc").u`` is
``(time, x, y)`` with cell-centre coordinates) and, at every output, a Zarr
restart ``DIR/restart.zarr`` (both time levels and the step; any process count
reads it back with ``--restart``; with ``--output`` too, the series goes on
from that step).

``--checkpoint DIR`` saves both time levels and the step every ``--checkpoint-every``
steps (`meshrt.io.Checkpointer`, atomic) and, when DIR holds one, goes on from it (on any
process count): ``--steps`` is then the last step, so the same command line, started again
by ``meshrt run --restarts``, finishes the same run; the series continues the same store and
the result is bitwise that of a run without the interruption.
"""

import argparse
import os
import sys
import time

import numpy as np
from numba import njit

from meshrt import DistributedTensor, Dirichlet, Mesh, Neumann, Sharding, apply_stencil, t_eff
from meshrt.io import Checkpointer, open_series, write_vtk


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


def progress(first, stop, rank, off):
    try:
        from tqdm import tqdm
    except ImportError:
        return range(first, stop)
    return tqdm(range(first, stop), disable=off or rank != 0, desc="wave2d", unit="step", mininterval=0.5)


def output(directory, series, u, old, step, h):
    """One ParaView step (its time is the step number), one step of the series and the restart;
    returns the seconds spent."""
    t0 = time.perf_counter()
    write_vtk(os.path.join(directory, "wave"), {"u": u}, step=step, time=step, spacing=(h, h))
    series.write(step=step, time=float(step), fields={"u": u})
    restart = os.path.join(directory, "restart.zarr")
    u.to_zarr(restart, name="u")
    old.to_zarr(restart, name="u_old")
    if u.mesh.rank == 0:  # the step lives in the group's attributes, written once by rank 0
        import zarr
        zarr.open_group(restart, mode="r+").attrs["step"] = step
    u.mesh.comm.Barrier()
    return time.perf_counter() - t0


def checkpoint(ck, step, u, old, always=False):
    """Both time levels at ``step`` if due (``always``: at the end); returns the seconds spent."""
    t0 = time.perf_counter()
    if always and ck.last_saved != step:
        ck.save(step, {"u": u, "u_old": old})
    else:
        ck.maybe_save(step, {"u": u, "u_old": old})
    return time.perf_counter() - t0


def read_step(restart, mesh):
    import zarr
    step = zarr.open_group(restart, mode="r").attrs["step"] if mesh.rank == 0 else None
    return mesh.comm.bcast(step, root=0)


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
    p.add_argument("--output", metavar="DIR", help="write DIR/wave.pvd (ParaView) and DIR/restart.zarr")
    p.add_argument("--every", type=int, default=50, metavar="N", help="output every N steps (default 50)")
    p.add_argument("--restart", metavar="ZARR", help="start from a restart written by --output")
    p.add_argument("--checkpoint", metavar="DIR", help="checkpoint into DIR; go on from the last one there")
    p.add_argument("--checkpoint-every", type=int, default=20, metavar="K", help="steps between checkpoints "
                   "(default 20)")
    p.add_argument("--delay", type=float, default=0.0, metavar="S", help="sleep S seconds after every step "
                   "(a slow run, to interrupt)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    if args.every < 1:
        p.error(f"--every: {args.every} must be >= 1")
    if args.checkpoint_every < 1:
        p.error(f"--checkpoint-every: {args.checkpoint_every} must be >= 1")
    if args.checkpoint and args.restart:
        p.error("--checkpoint and --restart: give one of them")
    check = args.n <= 512 if args.check is None else args.check
    n = args.n

    mesh = Mesh((-1, -1) if args.mesh == "2d" else (-1, 1))
    sharding = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    periodic = args.bc == "periodic"
    boundary = {"dirichlet": Dirichlet(0.0), "neumann": Neumann(), "periodic": None}[args.bc]
    first = 0
    ck = Checkpointer(args.checkpoint, every=args.checkpoint_every) if args.checkpoint else None
    state = ck.load(sharding) if ck else None
    if state is not None:  # written at any process count; --steps is the last step
        u, old, first = state.tensors["u"], state.tensors["u_old"], state.step
        n = u.global_shape[0]
        if mesh.rank == 0:
            print(f"wave2d: resuming from step {first} ({args.checkpoint}, MESHRT_RESTART={ck.restart}, "
                  f"{mesh.size} processes)", flush=True)
    elif args.restart:  # any process count reads it into this run's sharding
        u = DistributedTensor.from_zarr(args.restart, sharding, name="u")
        old = DistributedTensor.from_zarr(args.restart, sharding, name="u_old")
        first = read_step(args.restart, mesh)
        n = u.global_shape[0]
        u.update_halo()
        old.update_halo()
    else:
        u = DistributedTensor.from_function(initial(n), (n, n), sharding, periodic=periodic)
        old = u.copy()
    if args.output and mesh.rank == 0:
        os.makedirs(args.output, exist_ok=True)
    h = 1.0 / n
    series = None
    if args.output:  # a restart appends to the series (it drops any steps written after the restart's)
        series = open_series(os.path.join(args.output, "wave.nc"), {"u": u}, dims=("x", "y"),
                             origin=(h / 2, h / 2), spacing=(h, h), mode="a" if args.restart or state is not None else "w",
                             attrs={"u": {"long_name": "displacement"}})
    leapfrog((1, 1), (2, 2), np.zeros((3, 3)), np.zeros((3, 3)), args.C)  # compile (or load) before timing
    mesh.comm.Barrier()
    t0 = time.perf_counter()
    spent_writing = 0.0
    last = args.steps if ck else first + args.steps
    since = 0 if ck else first  # outputs at the same steps as a run from step 0
    if mesh.rank == 0 and ck:
        print(f"wave2d: STARTED at step {first}", flush=True)
    for step in progress(first, last, mesh.rank, args.no_progress):
        if ck and step > first:
            spent_writing += checkpoint(ck, step, u, old)
        if args.output and (step - since) % args.every == 0:
            spent_writing += output(args.output, series, u, old, step, h)
        apply_stencil(leapfrog, old, u, args.C, reads=[u], boundary=boundary, overlap=not args.no_overlap)
        u, old = old, u
        if args.delay:
            time.sleep(args.delay)
    if args.output:
        spent_writing += output(args.output, series, u, old, last, h)
        series.close()
    if ck:
        spent_writing += checkpoint(ck, last, u, old, always=True)
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0 - spent_writing
    if mesh.rank == 0 and last > first:
        per = elapsed / (last - first)
        print(f"wave2d: {n}x{n}, {last - first} steps, C={args.C}, {args.bc}, mesh {mesh.shape}: "
              f"{per * 1e3:.3f} ms/step, T_eff {t_eff(per, updated=[old], read=[u]):.2f} GB/s")
    ok = True
    if check:
        full = u.gather(root=0)
        same = None
        if mesh.rank == 0:
            ref = serial(n, last, args.C, args.bc)  # a restart goes on from step `first`
            same = bool(np.array_equal(full, ref))
            print(f"wave2d: serial check: {'bit-for-bit identical' if same else 'MISMATCH'} "
                  f"(max |diff| = {float(np.max(np.abs(full - ref))):.3e})")
        ok = mesh.comm.bcast(same, root=0)
    u.free()
    old.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
