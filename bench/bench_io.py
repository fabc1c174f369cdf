"""Parallel output against the I/O floor: every process writing its bytes with ``np.save``.

    mpiexec -n 2 python bench/bench_io.py [--n 4096] [--reps 5] [--dir /tmp]

A float64 ``n x n`` field split on dim 0 (with one-wide halos, as a stencil
code holds it) is written with `DistributedTensor.to_zarr` (default chunks:
one per process, uncompressed), `DistributedTensor.to_hdf5` (per-process block
files + a virtual dataset in the master file) and, for reference,
`DistributedTensor.save` (one ``.npy`` through MPI-IO). The floor is each
process writing the same bytes (its owned block) with ``np.save`` to a file
of its own. Every write replaces the previous one, as a time series or a
restart does. For reference, "np.save new file + rename" is the floor made
crash-safe the way the formats are (a new file renamed over the old one).
``to_zarr`` removes the superseded array in a background thread (in a time
series that overlaps the next steps' computation); "to_zarr + its removals"
waits for it, so it pays its deletions as the floors do inside
``np.save``/``os.replace``. ``to_hdf5`` rewrites the older of two block
generations and removes nothing in the background. The methods take turns
within each repetition, in an order that rotates, so they see the same
state of the page cache and of the disk's write-back (on a shared machine
that state, not the format, dominates single timings). Times are the median
over ``--reps`` of the slowest process; the ratio is format / floor (the
goal is <= 1.5). No data are fsynced by the floor or the formats;
``save`` syncs through MPI-IO.
"""

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.io.formats import wait_for_removals


def timed_in_turns(fns, comm, reps):
    """Median, min and max seconds (slowest process) of each function, run in turns.

    The order rotates each repetition: work one method leaves running in the
    background (zarr removing the superseded array) then slows each of the
    others in turn, not always the one after it."""
    for fn in fns:
        fn()  # warm-up: plans, imports, files created once
    samples = [[] for _ in fns]
    for rep in range(reps):
        for k in range(len(fns)):
            i = (k + rep) % len(fns)
            comm.Barrier()
            t0 = time.perf_counter()
            fns[i]()
            samples[i].append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    return [(float(np.median(s)), float(min(s)), float(max(s))) for s in samples]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--dir", default=None, help="where to write (default: a new folder in the temp dir)")
    args = p.parse_args(argv)
    comm = MPI.COMM_WORLD
    d = comm.bcast(tempfile.mkdtemp(prefix="bench-io-", dir=args.dir) if comm.rank == 0 else None)
    mesh = Mesh((comm.size,), comm=comm)
    s = Sharding(mesh, [[0]], halo_sizes=[1, 1])
    n = args.n
    t = DistributedTensor.from_function(lambda i, j: np.sin(i * 0.01) * np.cos(j * 0.013), (n, n), s)
    block = np.ascontiguousarray(t.interior)  # the floor writes exactly these bytes
    mib = block.nbytes / 2**20

    def save_new_then_rename():
        dst = os.path.join(d, f"safe-{comm.rank}.npy")
        np.save(dst + ".tmp.npy", block)
        os.replace(dst + ".tmp.npy", dst)

    def zarr_and_its_removals():
        t.to_zarr(os.path.join(d, "v.zarr"))
        wait_for_removals()  # the superseded array, removed in the background, paid here

    names = ["np.save new file + rename", "to_zarr", "to_zarr + its removals", "to_hdf5", "save (.npy, MPI-IO)"]
    floor, *times = timed_in_turns([
        lambda: np.save(os.path.join(d, f"floor-{comm.rank}.npy"), block),
        save_new_then_rename,
        lambda: t.to_zarr(os.path.join(d, "u.zarr")),
        zarr_and_its_removals,
        lambda: t.to_hdf5(os.path.join(d, "u.h5"), "u"),
        lambda: t.save(os.path.join(d, "u.npy")),
    ], comm, args.reps)
    rows = list(zip(names, times))
    if comm.rank == 0:
        print(f"bench_io: {n}x{n} float64 on {comm.size} processes, {mib:.0f} MiB per process, "
              f"median of {args.reps} (min-max), in {d}")
        print(f"  {'np.save per process (floor)':28s} {floor[0] * 1e3:8.1f} ms  ({floor[1] * 1e3:.1f}-"
              f"{floor[2] * 1e3:.1f})  {mib * comm.size / floor[0] / 1024:.2f} GiB/s")
        for name, (med, lo, hi) in rows:
            print(f"  {name:28s} {med * 1e3:8.1f} ms  ({lo * 1e3:.1f}-{hi * 1e3:.1f})  "
                  f"{mib * comm.size / med / 1024:.2f} GiB/s  ratio {med / floor[0]:.2f}")
    t.free()
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
