"""numpy forms on DistributedTensors against the plain mpi4py + numpy code doing the same job.

    mpiexec -n 2 python bench/bench_numpy.py [--n 4096] [--reps 5] [--iters 10]

Cases (issue 20), an n x n float64 tensor split over the processes on dim 0:
- ``a + r`` with ``r`` replicated: against ``x + y[rows]`` on the local block (no communication either way);
- ``a + b`` with ``b`` split on dim 1: against ``b.reshard(rows)`` + a local add (the reshard by hand);
- ``np.std(a)``: against one two-moment ``Allreduce`` (sum and sum of squares) of the local block;
- ``np.roll(a, 1, axis=0)``: against one ``Sendrecv`` of the boundary row to the next process and a copy.
Each side in its own loop; sides alternate going first; per side the best repetition of the slowest
process.  Ratios are meshrt / hand-written.
"""

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # np.dot's BLAS threads would fight the MPI processes
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from meshrt import DistributedTensor, Mesh, Sharding
from _timing import compare  # noqa: E402  (bench/_timing.py, beside this script)

comm = MPI.COMM_WORLD


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--iters", type=int, default=10)
    o = p.parse_args()
    n = o.n
    mesh = Mesh((-1,))
    rows, cols, rep = Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]]), Sharding(mesh, [])
    g = np.random.default_rng(0).random((n, n))
    a = DistributedTensor.from_global(g, rows)
    r = DistributedTensor.from_global(g, rep)
    b = DistributedTensor.from_global(g, cols)
    x = a.interior
    sl = a.shard_slices[0]
    y = r.interior
    left, right = (comm.rank - 1) % comm.size, (comm.rank + 1) % comm.size

    def std_by_hand():
        m = np.array([x.sum(), np.dot(x.ravel(), x.ravel())])
        comm.Allreduce(MPI.IN_PLACE, m)
        mean = m[0] / (n * n)
        return np.sqrt(m[1] / (n * n) - mean * mean)

    def roll_by_hand():
        out = np.empty_like(x)
        out[1:] = x[:-1]
        comm.Sendrecv(x[-1], dest=right, recvbuf=out[0], source=left)
        return out

    cases = {
        "a + replicated": {"meshrt": lambda: a + r, "by hand": lambda: x + y[sl]},
        "a + other split": {"meshrt": lambda: a + b, "by hand": lambda: b.reshard(rows).interior + x},
        "np.std(a)": {"meshrt": lambda: np.std(a), "by hand": std_by_hand},
        "np.roll(a, 1, 0)": {"meshrt": lambda: np.roll(a, 1, axis=0), "by hand": roll_by_hand},
    }
    assert np.isclose(np.std(a), std_by_hand()) and np.array_equal(np.roll(a, 1, axis=0).interior, roll_by_hand())
    if comm.rank == 0:
        print(f"# {n}x{n} float64 on {comm.size} processes; ms per call (best of {o.reps} x {o.iters})")
        print(f"{'case':18s} {'meshrt':>9s} {'by hand':>9s} {'ratio':>6s}")
    for name, sides in cases.items():
        best = compare(sides, o.iters, o.reps, warmup=1)
        if comm.rank == 0:
            print(f"{name:18s} {best['meshrt'] * 1e3:9.2f} {best['by hand'] * 1e3:9.2f} "
                  f"{best['meshrt'] / best['by hand']:6.2f}", flush=True)


if __name__ == "__main__":
    main()
