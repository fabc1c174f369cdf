"""``meshrt bench stencil``: weak scaling of a stencil step, T_eff and parallel efficiency.

    mpiexec -n 8 meshrt bench stencil                       # 2-D wave, 2048^2 per process
    mpiexec -n 8 meshrt bench stencil --ndim 3 --local 128  # 3-D heat, 128^3 per process
    mpiexec -n 8 meshrt bench stencil --procs 1,2,4,8 --json scaling.json

One job measures every process count: for each count ``p`` in ``--procs``
(default 1, 2, 4, ... up to the job's size, and the size itself), the first
``p`` processes form a communicator and a ``Mesh((-1,) * ndim)`` on it, each
process holds a ``--local`` block (weak scaling: the global problem grows
with ``p``), and the step runs through `apply_stencil` (halo exchange hidden
behind the inner box). The other processes wait. Printed per count: time per
step (the slowest process; median over ``--reps`` loops), T_eff
(ParallelStencil's effective memory throughput, `meshrt.t_eff`: the bytes a
step must read and write once, over the whole grid) in total and per
process, and the parallel efficiency ``t(1) / t(p)``. Across nodes, run it
under the cluster's launcher like any meshrt program (docs/multinode.md):
the counts above one node's cores then include inter-node halos.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from ..runtime import mpi as _mpi
from ..mesh import Mesh
from ..sharding.spec import Sharding
from .apply import apply_stencil, clear_stencil_cache, t_eff
from ..tensor.distributed_tensor import DistributedTensor

__all__ = ["main", "default_counts"]


def default_counts(size: int) -> list:
    """1, 2, 4, ... below ``size``, then ``size``."""
    out, p = [], 1
    while p < size:
        out.append(p)
        p *= 2
    return out + [size]


def _kernels():
    try:
        from ..kernels.stencils import heat3d_7pt, wave2d_leapfrog
    except ImportError:  # a source checkout: kernels/ becomes meshrt.kernels when installed
        from kernels.stencils import heat3d_7pt, wave2d_leapfrog
    return wave2d_leapfrog, heat3d_7pt


def _measure(comm, ndim, local, steps, reps, overlap):
    """Seconds per step (slowest process, median over reps) on this communicator, and the global shape."""
    wave, heat = _kernels()
    mesh = Mesh((-1,) * ndim, comm=comm)
    shape = tuple(n * m for n, m in zip(local, mesh.shape))
    s = Sharding(mesh, [[d] for d in range(ndim)], halo_sizes=[1, 1] * ndim)
    u = DistributedTensor.from_function(lambda *ix: np.sin(0.01 * sum(ix)), shape, s)
    v = u.copy()
    kernel, arg = (wave, 0.25) if ndim == 2 else (heat, 0.125)
    try:
        def step():
            nonlocal u, v
            apply_stencil(kernel, v, u, arg, reads=[u], overlap=overlap)
            u, v = v, u

        step(), step()  # compile or load the kernel, build plans and exchanges
        times = []
        for _ in range(reps):
            with _mpi.internal("meshrt bench stencil", "barrier before timing", comm):
                comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            with _mpi.internal("meshrt bench stencil", "barrier and slowest time", comm):
                comm.Barrier()
                times.append(comm.allreduce((time.perf_counter() - t0) / steps, op=_max()))
        return statistics.median(times), shape, mesh.shape, u.dtype.itemsize
    finally:
        clear_stencil_cache()  # the prepared calls hold the tensors
        u.free()
        v.free()
        mesh.free()


def _max():
    from mpi4py import MPI

    return MPI.MAX


def _parse(argv):
    p = argparse.ArgumentParser(prog="meshrt bench stencil", description=__doc__.splitlines()[0])
    p.add_argument("--ndim", type=int, choices=(2, 3), default=2,
                   help="2: wave equation, 5-point leapfrog; 3: heat equation, 7-point (default 2)")
    p.add_argument("--local", type=int, default=None,
                   help="cells per side of each process's block (default 2048 in 2-D, 128 in 3-D)")
    p.add_argument("--steps", type=int, default=20, help="steps per timed loop (default 20)")
    p.add_argument("--reps", type=int, default=3, help="timed loops per count; the median is kept (default 3)")
    p.add_argument("--procs", default=None, help="process counts, e.g. 1,2,4,8 (default: powers of 2 and all)")
    p.add_argument("--no-overlap", action="store_true", help="blocking halo exchange before the kernel")
    p.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    return p.parse_args(argv)


def main(argv=None) -> int:
    """The driver; an exception on any process ends the whole job (the others would wait forever)."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    args = _parse(argv)
    try:
        return _run(args, world)
    except Exception:
        if world.Get_size() == 1:
            raise
        import traceback

        sys.stderr.write("".join(f"[rank {world.Get_rank()}] {line}\n"
                                 for line in traceback.format_exc().splitlines()))
        sys.stderr.flush()
        world.Abort(1)


def _run(args, world) -> int:
    from mpi4py import MPI

    size, rank = world.Get_size(), world.Get_rank()
    local = (args.local or (2048 if args.ndim == 2 else 128),) * args.ndim
    try:
        counts = default_counts(size) if args.procs is None else [int(x) for x in args.procs.split(",")]
    except ValueError:
        counts = None
    if not counts or any(not 1 <= p <= size for p in counts) or args.steps < 1 or args.reps < 1:
        if rank == 0:
            print(f"meshrt bench stencil: error: --procs {args.procs!r} must list counts between 1 and {size}; "
                  "--steps and --reps must be >= 1", file=sys.stderr)
        return 2
    problem = None
    if args.local is not None and args.local < 1:
        problem = f"--local {args.local}: expected at least 1 cell per side"
    elif args.json is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        problem = f"--json {args.json}: directory {os.path.dirname(os.path.abspath(args.json))!r} does not exist"
    if problem:  # found now, not after the sweep; the same on every process
        if rank == 0:
            print(f"meshrt bench stencil: error: {problem}", file=sys.stderr)
        return 2
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"# meshrt bench stencil: {args.ndim}-D {'wave (5-point leapfrog)' if args.ndim == 2 else 'heat (7-point)'}, "
        f"{'x'.join(map(str, local))} float64 per process, {args.steps} steps x {args.reps} reps, "
        f"{'overlapped' if not args.no_overlap else 'blocking'} halo exchange")
    say(f"# {'procs':>5} {'mesh':>12} {'global':>16} {'ms/step':>10} {'T_eff_GB/s':>11} "
        f"{'per_proc_GB/s':>14} {'efficiency':>10}")
    rows, t1 = [], None
    for p in counts:
        with _mpi.internal("meshrt bench stencil", f"communicator of {p} processes", world):
            sub = world.Split(0 if rank < p else MPI.UNDEFINED, rank)
        result = None
        if sub != MPI.COMM_NULL:
            try:
                result = _measure(sub, args.ndim, local, args.steps, args.reps, not args.no_overlap)
            finally:
                with _mpi.internal("meshrt bench stencil", "communicator free", sub):
                    sub.Free()
        with _mpi.internal("meshrt bench stencil", "result from rank 0", world):
            t, shape, mshape, itemsize = world.bcast(result, root=0)  # world rank 0 is in every group
        t1 = t if t1 is None else t1
        # wave: u read, old read and written; heat: u read, v written
        nbytes = int(np.prod(shape)) * itemsize
        te = t_eff(t, updated=[nbytes], read=[nbytes]) if args.ndim == 2 else t_eff(t, updated=[nbytes])
        rows.append(dict(procs=p, mesh=list(mshape), global_shape=list(shape), seconds_per_step=t,
                         t_eff_gbs=te, per_proc_gbs=te / p, efficiency=t1 / t))
        say(f"  {p:>5} {'x'.join(map(str, mshape)):>12} {'x'.join(map(str, shape)):>16} {t * 1e3:>10.3f} "
            f"{te:>11.2f} {te / p:>14.2f} {t1 / t:>10.3f}", flush=True)
    if counts[0] != 1:
        say(f"# efficiency is relative to {counts[0]} processes")
    if args.json and rank == 0:
        with open(args.json, "w") as f:
            json.dump(dict(ndim=args.ndim, local=list(local), steps=args.steps, reps=args.reps, rows=rows), f,
                      indent=1)
    return 0
