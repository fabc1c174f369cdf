"""What MESHRT_CHECK=1 costs: collectives with the cross-process argument check on and off.

    mpiexec -n 2 python bench/bench_check.py

The check is one small allgather of (op, attributes, shape, dtype) before each
collective, so it costs about one small-message latency per call.
"""

import time

import numpy as np
from mpi4py import MPI

from meshrt import Mesh, all_gather, all_reduce, broadcast
from meshrt.collectives import set_check

comm = MPI.COMM_WORLD


def best(fn, iters):
    fn()
    times = []
    for _ in range(7):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append(comm.allreduce((time.perf_counter() - t0) / iters, op=MPI.MAX))
    return min(times)


def main():
    mesh = Mesh((-1,), comm=comm)
    rows = []
    for nbytes in (8, 64 << 10, 1 << 20):
        x = np.ones(nbytes // 8)
        out = np.empty_like(x)
        big = np.empty(x.size * comm.size)
        iters = max(10, min(2000, (100 << 20) // max(nbytes, 1) // 20))
        for name, fn in (("all_reduce", lambda: all_reduce(x, mesh, out=out)),
                         ("all_gather", lambda: all_gather(x, mesh, None, 0, sizes=x.size, out=big)),
                         ("broadcast", lambda: broadcast(x, mesh, None, 0))):
            set_check(False)
            off = best(fn, iters)
            set_check(True)
            on = best(fn, iters)
            set_check(False)
            rows.append((name, nbytes, off, on))
    if comm.rank == 0:
        print(f"# MESHRT_CHECK cost on {comm.size} processes (best of 7, slowest process)")
        print(f"{'op':12s} {'size':>8s} {'off us':>9s} {'on us':>9s} {'added us':>9s} {'ratio':>6s}")
        for name, nbytes, off, on in rows:
            print(f"{name:12s} {nbytes:8d} {off * 1e6:9.2f} {on * 1e6:9.2f} {(on - off) * 1e6:9.2f} {on / off:6.2f}")
    mesh.free()


if __name__ == "__main__":
    main()
