"""``a @ b`` on DistributedTensors against the same job written by hand with numpy + mpi4py, same run.

    mpiexec -n 2 python bench/bench_matmul.py [--n 2048] [--reps 7] [--dtype float64]

``a`` (n x n) split on rows, ``b`` (n x n) replicated:

1. row-split result: ``a @ b`` vs the local ``np.matmul`` alone (meshrt moves nothing);
2. replicated result: ``meshrt.matmul(a, b, out_sharding=replicated)`` vs the local
   ``np.matmul`` + one ``Allgather`` into a new array (the natural hand-written code).

Both sides allocate their results each call, as user code does.  The two sides
alternate within each repetition (the order flips every repetition), so noise from
other jobs hits both; each sample is the slowest process's time.  Reported: median
and minimum per side and their ratios meshrt / hand-written (below 1 is faster).
BLAS runs one thread per process (``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``
default to 1 here) so processes do not fight over cores.
"""

import argparse
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import meshrt  # noqa: E402
from meshrt import DistributedTensor, Mesh, Sharding  # noqa: E402


def sample(fn, comm):
    comm.Barrier()
    t0 = time.perf_counter()
    fn()
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)


def compare(ours, plain, comm, reps):
    ours(), plain()  # warm-up: plans, caches, BLAS
    a, b = [], []
    for r in range(reps):
        if r % 2:
            b.append(sample(plain, comm))
            a.append(sample(ours, comm))
        else:
            a.append(sample(ours, comm))
            b.append(sample(plain, comm))
    return (float(np.median(a)), min(a)), (float(np.median(b)), min(b))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--dtype", default="float64")
    args = p.parse_args(argv)
    comm = MPI.COMM_WORLD
    n, dt = args.n, np.dtype(args.dtype)
    mesh = Mesh((-1,), ("x",), comm=comm)
    rows, rep = Sharding(mesh, [["x"]]), Sharding(mesh, [])
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(dt)
    B = rng.standard_normal((n, n)).astype(dt)
    a, b = DistributedTensor.from_global(A, rows), DistributedTensor.from_global(B, rep)
    a_loc, b_loc = a.interior, b.interior
    counts = [rows.shard_shape((n, n), d)[0] * n for d in range(mesh.size)]
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()

    def plain_rows():
        return a_loc @ b_loc

    def plain_replicated():
        c = a_loc @ b_loc
        full = np.empty((n, n), dt)
        comm.Allgatherv(c, [full, (counts, displs)])
        return full

    def ours_rows():
        return a @ b

    def ours_replicated():
        return meshrt.matmul(a, b, out_sharding=rep)

    assert np.array_equal(ours_rows().interior, plain_rows())
    assert np.array_equal(ours_replicated().interior, plain_replicated())
    results = []
    for name, ours, plain in (("row-split result (no communication)", ours_rows, plain_rows),
                              ("replicated result (+ all_gather)", ours_replicated, plain_replicated)):
        (om, omin), (pm, pmin) = compare(ours, plain, comm, args.reps)
        results.append((name, om, pm, om / pm, omin / pmin))
    if comm.rank == 0:
        print(f"matmul {n}x{n} {dt} row-split x replicated on {comm.size} processes, {args.reps} reps")
        print(meshrt.explain_matmul(a, b, out_sharding=rep))
        print(f"{'case':40s} {'meshrt ms':>10s} {'by hand ms':>10s} {'ratio(med)':>11s} {'ratio(min)':>11s}")
        for name, om, pm, rm, rmin in results:
            print(f"{name:40s} {om * 1e3:10.2f} {pm * 1e3:10.2f} {rm:11.3f} {rmin:11.3f}")
    mesh.free()


if __name__ == "__main__":
    main()
