"""Reshard benchmarks against the plain mpi4py + numpy code doing the same job, same run.

    mpiexec -n 2 python bench/bench_reshard.py [--n 4096] [--reps 9]

1. A float64 n x n matrix split on dim 0 -> split on dim 1 (all_to_all):
   meshrt's `DistributedTensor.reshard` vs numpy packing + one ``Alltoall``
   (the receive side needs no unpack: the pieces arrive in row order).
2. A partial-sum tensor -> split (reduce_scatter), 16 MiB per process:
   meshrt vs one plain ``Reduce_scatter_block``.

Both sides reuse their result buffers (``reshard(..., out=)``): on this
machine first-touch page faults of a fresh 16 MiB result cost more than the
transfer itself.  Times are the median over ``--reps`` of the slowest process; the ratio is
meshrt / plain (below 1 is faster).
"""

import argparse
import time

import numpy as np
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding


def timed(fn, comm, reps):
    fn()  # warm-up: plans, caches, first-touch of buffers
    samples = []
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        samples.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    return float(np.median(samples))


def bench_all_to_all(comm, n, reps):
    p = comm.size
    mesh = Mesh((p,), comm=comm)
    rows, cols = Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]])
    t = DistributedTensor.from_function(lambda i, j: i * n + j, (n, n), rows, np.float64)
    local = t.interior
    r, c = n // p, n // p
    recv = np.empty((p, r, c))

    def plain():
        send = np.ascontiguousarray(local.reshape(r, p, c).transpose(1, 0, 2))
        comm.Alltoall(send, recv)
        return recv.reshape(n, c)

    dst = DistributedTensor.empty((n, n), cols)

    def ours():
        return t.reshard(cols, out=dst)

    check = ours().interior
    np.testing.assert_array_equal(check, plain())
    return timed(ours, comm, reps), timed(plain, comm, reps)


def bench_reduce_scatter(comm, nbytes, reps):
    p = comm.size
    mesh = Mesh((p,), comm=comm)
    n = nbytes // 8 // p * p
    partial = Sharding(mesh, [], partial_axes=[0])
    split = Sharding(mesh, [[0]])
    x = np.full(n, float(comm.rank + 1))
    t = DistributedTensor.from_local(x, partial, (n,))
    recv = np.empty(n // p)

    def plain():
        comm.Reduce_scatter_block(x, recv, MPI.SUM)
        return recv

    dst = DistributedTensor.empty((n,), split)

    def ours():
        return t.reshard(split, out=dst)

    np.testing.assert_array_equal(ours().interior, plain())
    return timed(ours, comm, reps), timed(plain, comm, reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--bytes", type=int, default=16 << 20)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rows = [
        (f"{args.n}^2 float64 split dim 0 -> dim 1", *bench_all_to_all(comm, args.n, args.reps)),
        (f"partial sum -> split, {args.bytes >> 20} MiB", *bench_reduce_scatter(comm, args.bytes, args.reps)),
    ]
    if comm.rank == 0:
        print(f"# reshard on {comm.size} processes (median of {args.reps}, slowest process)")
        print(f"{'case':42s} {'meshrt ms':>10s} {'plain ms':>10s} {'ratio':>7s}")
        for name, ours, plain in rows:
            print(f"{name:42s} {ours * 1e3:10.2f} {plain * 1e3:10.2f} {ours / plain:7.2f}")


if __name__ == "__main__":
    main()
