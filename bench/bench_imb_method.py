"""What separates a Python loop of ``comm.Allreduce`` from IMB-MPI1's number at one size: the
timing (IMB's default ``-sync 1``: each call timed alone, a barrier after it, vs one loop timed
as a whole, ``-sync 0``), a new result each call vs IMB's one receive buffer, the buffers'
alignment, and the C loop itself (`meshrt._cfloor`), each variant interleaved round by round.

    mpiexec -n 2 python bench/bench_imb_method.py --size 65536 --rounds 9

Rows (us per call, median and minimum over rounds of the average over processes):

    c/sync, c/nosync          MPI_Allreduce in a compiled loop on fixed buffers (IMB-MPI1's loop)
    raw/{new,reuse}/{sync,nosync}  ``comm.Allreduce(x, y, SUM)`` from Python, ``y`` new each call
                              (``np.empty``: the bench's old raw side) or one reused array
    raw/reuse/sync/a64, .../a16  the reused buffers 64-byte aligned, or 16 bytes off a 64-byte line

IMB-MPI1's iteration count (1000, at most 40 MiB per loop) and 10 warm-up calls for every row.
"""

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

from meshrt import _cfloor


def aligned(count, offset):
    """float64 zeros of ``count`` whose data starts ``offset`` bytes past a 64-byte line."""
    raw = np.zeros(count * 8 + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + count * 8].view(np.float64)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=65536, help="bytes (default 64 KiB)")
    p.add_argument("--rounds", type=int, default=9, help="rounds (default 9)")
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    count = max(1, a.size // 8)
    iters = max(1, min(1000, (40 << 20) // max(1, a.size)))
    x, y = np.ones(count), np.zeros(count)
    xa, ya = aligned(count, 0), aligned(count, 0)
    xu, yu = aligned(count, 16), aligned(count, 16)
    xa[:] = xu[:] = 1
    dt, op = MPI._handleof(MPI.DOUBLE), MPI._handleof(MPI.SUM)
    clock, SUM, Allreduce, Barrier = time.perf_counter, MPI.SUM, comm.Allreduce, comm.Barrier

    def raw(xs, ys, new, sync):
        for _ in range(10):
            Allreduce(xs, np.empty(count) if new else ys, SUM)
            Barrier()
        total = 0.0
        if sync:
            for _ in range(iters):
                t0 = clock()
                Allreduce(xs, np.empty(count) if new else ys, SUM)
                total += clock() - t0
                Barrier()
        else:
            Barrier()
            t0 = clock()
            for _ in range(iters):
                Allreduce(xs, np.empty(count) if new else ys, SUM)
            total = clock() - t0
        return total / iters

    rows = {}
    if _cfloor.available():
        rows["c/sync"] = lambda: _cfloor.run("all_reduce", comm, x, y, dt, op, count, warmup=10, iters=iters) / iters
        rows["c/nosync"] = lambda: _cfloor.run("all_reduce", comm, x, y, dt, op, count, warmup=10, iters=iters,
                                               sync=False) / iters
    for new in (True, False):
        for sync in (True, False):
            rows[f"raw/{'new' if new else 'reuse'}/{'sync' if sync else 'nosync'}"] = \
                (lambda new=new, sync=sync: raw(x, y, new, sync))
    rows["raw/reuse/sync/a64"] = lambda: raw(xa, ya, False, True)
    rows["raw/reuse/sync/a16"] = lambda: raw(xu, yu, False, True)
    names = list(rows)
    got = {k: [] for k in names}
    for r in range(a.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            got[k].append(comm.allreduce(rows[k](), op=MPI.SUM) / comm.size * 1e6)
    if comm.rank == 0:
        lib = MPI.Get_library_version().splitlines()[0].strip()
        print(f"# {a.size} B float64 Allreduce, {comm.size} processes, {iters} calls per loop, {lib}")
        print(f"# median and minimum over {a.rounds} interleaved rounds of the average over processes, us per call")
        print(f"{'#row':<22}{'median':>10}{'min':>10}")
        for k in names:
            print(f"{k:<22}{statistics.median(got[k]):>10.2f}{min(got[k]):>10.2f}")


if __name__ == "__main__":
    main()
