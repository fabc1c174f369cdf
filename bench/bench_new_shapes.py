"""The fused stencil on shapes never seen, its expression's structure known (issue 53's first calls).

    mpiexec -n 2 python bench/bench_new_shapes.py [--shapes 100] [--n 1000]

Ten warm-up shapes first (the structure's program made, kernels loaded); then, for each of ``--shapes`` new
tensors of ``n, n + 1, ...`` float64 elements split on dim 0 with one halo cell a side, the statement
``c[1:-1] = 0.5 * (c[:-2] + c[2:])`` three times, each timed on the slowest process after a barrier.
Prints the mean and median of the first, second and third calls in microseconds, and the steady call's.
Then the same on new slice lengths of one tensor of ``n`` elements: ``c[1:m - 1] = 0.5 * (c[:m - 2] + c[2:m])``
for ``--shapes`` lengths ``m`` never written before (the halo plan of the tensor is known; the fused
plan of each length is new).
"""

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

from meshrt import DistributedTensor, Mesh, Sharding  # noqa: E402  (before mpi4py: meshrt.runtime.mpich)
from mpi4py import MPI  # noqa: E402, I001

comm = MPI.COMM_WORLD


def stencil(c):
    c[1:-1] = 0.5 * (c[:-2] + c[2:])


def sliced_stencil(c, m):
    c[1:m - 1] = 0.5 * (c[:m - 2] + c[2:m])


def timed(c, m=None):
    comm.Barrier()
    t0 = time.perf_counter()
    if m is None:
        stencil(c)
    else:
        sliced_stencil(c, m)
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)


def report(title, runs, steady):
    if comm.rank == 0:
        print(title)
        for name, r in zip(("first", "second", "third", "fourth"), runs):
            print(f"{name:7s} call: mean {np.mean(r) * 1e6:6.0f}  median {np.median(r) * 1e6:6.0f}")
        print(f"steady  call: best {steady * 1e6:6.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", type=int, default=100)
    ap.add_argument("--n", type=int, default=1000)
    o = ap.parse_args()
    s = Sharding(Mesh((-1,)), [[0]], halo_sizes=[1, 1])
    rng = np.random.default_rng(0)
    for n in range(o.n // 2, o.n // 2 + 10):
        c = DistributedTensor.from_global(rng.random(n), s)
        for _ in range(3):
            stencil(c)
    runs = [[], [], [], []]
    tensors = [DistributedTensor.from_global(rng.random(n), s) for n in range(o.n, o.n + o.shapes)]
    for c in tensors:
        for r in runs:
            r.append(timed(c))
    steady = min(timed(tensors[-1]) for _ in range(200))
    report(f"# {o.shapes} new shapes of {o.n}-{o.n + o.shapes - 1} elements on {comm.size} processes; us", runs,
           steady)
    c = DistributedTensor.from_global(rng.random(o.n), s)
    for m in range(o.n // 2, o.n // 2 + 10):  # (this tensor's halo plan and buffers, once)
        sliced_stencil(c, m)
    lengths = range(o.n, o.n - o.shapes, -1)
    runs = [[], [], [], []]
    for m in lengths:
        for r in runs:
            r.append(timed(c, m))
    steady = min(timed(c, lengths[-1]) for _ in range(200))
    report(f"# {o.shapes} new slice lengths {lengths[-1]}-{o.n} of one tensor of {o.n} elements; us", runs, steady)


if __name__ == "__main__":
    main()
