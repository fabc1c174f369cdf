"""heat2d's T_eff against the copy bandwidth the same processes reach, in one run.

    mpiexec -n 2 python bench/bench_heat2d.py [--n 4096] [--steps 20]

T_eff (ParallelStencil's metric) = bytes that must move per step (read u,
write v: 2 * 8 * n^2) / time per step, for the overlapped step of
examples/heat2d.py (start the halo update, compute the inner block, wait,
compute the rim).  The references are every process copying a block of its
own size at the same time (read + write bytes over the slowest process's
time): with ``np.copyto`` (memcpy: non-temporal stores, no write-allocate
traffic) and with a compiled loop ``b[i] = a[i]`` (stores like the stencil's,
which also read each destination line first: ParallelStencil's T_peak kernel).
"""

import argparse
import time

import numpy as np
from mpi4py import MPI
from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding

try:
    from meshrt.kernels.stencils import heat2d_box, inner_and_rim, interior_box
except ImportError:  # a source checkout without an install
    from kernels.stencils import heat2d_box, inner_and_rim, interior_box


@njit(cache=True, nogil=True)
def loop_copy(dst, src):
    for i in range(src.size):
        dst[i] = src[i]


def slowest(comm, seconds):
    return comm.allreduce(seconds, op=MPI.MAX)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    n = args.n
    mesh = Mesh((-1, 1), comm=comm)
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    u = DistributedTensor.from_function(lambda i, j: np.sin(i * 0.01) * np.cos(j * 0.02), (n, n), s, sparse=True)
    v = DistributedTensor.zeros((n, n), s)
    inner, rims = inner_and_rim(interior_box(u), 1)
    heat2d_box(u.local, v.local, 0.2, inner)  # compile (or load the cache) before timing

    def step(a, b):
        handle = a.update_halo(wait=False)
        heat2d_box(a.local, b.local, 0.2, inner)
        handle.wait()
        for box in rims:
            heat2d_box(a.local, b.local, 0.2, box)

    src = np.random.default_rng(comm.rank).random(u.interior.size)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    loop_copy(dst, src)
    for _ in range(2):
        step(u, v)
        step(v, u)

    stencil, copy, loop = [], [], []
    for _ in range(args.reps):
        comm.Barrier()
        t0 = time.perf_counter()
        for k in range(args.steps):
            step(u, v) if k % 2 == 0 else step(v, u)
        stencil.append(slowest(comm, time.perf_counter() - t0) / args.steps)
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            np.copyto(dst, src)
        copy.append(slowest(comm, time.perf_counter() - t0) / args.steps)
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            loop_copy(dst, src)
        loop.append(slowest(comm, time.perf_counter() - t0) / args.steps)

    t_step, t_copy = float(np.median(stencil)), float(np.median(copy))
    t_eff = 2 * 8 * n * n / t_step / 1e9
    copy_bw = 2 * 8 * comm.allreduce(src.size) / t_copy / 1e9
    loop_bw = 2 * 8 * comm.allreduce(src.size) / float(np.median(loop)) / 1e9
    if comm.rank == 0:
        print(f"# heat2d {n}x{n} on {comm.size} processes, overlapped halo update, median of {args.reps}")
        print(f"time per step      {t_step * 1e3:8.2f} ms")
        print(f"T_eff              {t_eff:8.2f} GB/s")
        print(f"memcpy bandwidth   {copy_bw:8.2f} GB/s  (np.copyto on all processes at once)")
        print(f"loop copy          {loop_bw:8.2f} GB/s  (compiled b[i] = a[i] on all processes at once)")
        print(f"T_eff / memcpy     {t_eff / copy_bw:8.2f}")
        print(f"T_eff / loop copy  {t_eff / loop_bw:8.2f}")
    u.free()
    v.free()


if __name__ == "__main__":
    main()
