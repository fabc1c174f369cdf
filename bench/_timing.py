"""The timing loop the numpy, indexing and small-operation benchmarks share.

Each side is timed as the slowest process's mean per call over ``iters`` calls, the sides taking
turns going first, best of ``reps``; ``warmup`` calls of each side first keep plans, kernels and
communicators out of the timed loops.
"""

import time

from mpi4py import MPI


def loop(fn, iters, comm=MPI.COMM_WORLD):
    """The slowest process's mean time of one ``fn()`` over ``iters`` calls."""
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return comm.allreduce((time.perf_counter() - t0) / iters, op=MPI.MAX)


def compare(sides, iters, reps, warmup=1):
    """Best per-call time of each side ({name: fn}); the sides take turns going first."""
    for fn in sides.values():
        for _ in range(warmup):
            fn()
    best = {k: float("inf") for k in sides}
    names = list(sides)
    for rep in range(reps):
        for k in names if rep % 2 == 0 else names[::-1]:
            best[k] = min(best[k], loop(sides[k], iters))
    return best
