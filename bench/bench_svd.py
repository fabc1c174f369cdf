"""meshrt's SVD of a split matrix (one-sided block Jacobi) against the plain mpi4py + numpy way and numpy.

    mpiexec -n 2 python bench/bench_svd.py [--sizes 500,1000,2000] [--reps 3]

Per size ``n`` (an ``n x n`` float64 matrix, split on rows): ``np.linalg.svd`` (U, S, Vh) and
``np.linalg.svd(compute_uv=False)`` on the `DistributedTensor`, first call and the median of
``--reps`` steady calls; against, in the same job:

- the plainest mpi4py + numpy code a user would write for a split matrix: ``Allgatherv`` the rows onto
  every process and call ``np.linalg.svd`` there (every process holds the whole matrix and its
  factors: ``3 n^2`` numbers, where meshrt holds ``3 n^2 / P``);
- numpy on one process (rank 0, the others wait; its BLAS threads as configured).

Also the sweeps the Jacobi method ran.  Ratios are meshrt / baseline (below 1: meshrt faster).
"""

import argparse
import json
import statistics
import time

import numpy as np
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.linalg import svd as jacobi

comm = MPI.COMM_WORLD


def timed(fn):
    comm.Barrier()
    t0 = time.perf_counter()
    out = fn()
    comm.Barrier()
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX), out


def gathered_svd(block, n, compute_uv):
    counts = comm.allgather(block.size)
    whole = np.empty((n, n))
    comm.Allgatherv(np.ascontiguousarray(block), [whole, counts])
    return np.linalg.svd(whole, compute_uv=compute_uv)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="500,1000,2000")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args()
    mesh = Mesh((-1,))
    rows = []
    sweeps = {}
    run = jacobi._sweeps

    def counting(*a):
        sweeps["n"] = run(*a)
        return sweeps["n"]
    jacobi._sweeps = counting
    for n in (int(v) for v in args.sizes.split(",")):
        a = np.random.default_rng(n).standard_normal((n, n))
        t = DistributedTensor.from_global(a, Sharding(mesh, [[0]]))
        block = np.ascontiguousarray(np.asarray(t.interior))
        r = {"n": n, "procs": comm.size}
        for name, uv in (("svd", True), ("svdvals", False)):
            first, _ = timed(lambda: np.linalg.svd(t, compute_uv=uv))
            steady = statistics.median(timed(lambda: np.linalg.svd(t, compute_uv=uv))[0] for _ in range(args.reps))
            plain = statistics.median(timed(lambda: gathered_svd(block, n, uv))[0] for _ in range(args.reps))
            one = None
            if comm.rank == 0:
                t0 = time.perf_counter()
                np.linalg.svd(a, compute_uv=uv)
                one = time.perf_counter() - t0
            one = comm.bcast(one)
            r.update({f"{name}_first_s": first, f"{name}_s": steady, f"{name}_plain_s": plain,
                      f"{name}_numpy1_s": one, f"{name}_over_plain": steady / plain,
                      f"{name}_first_over_plain": first / plain, f"{name}_over_numpy1": steady / one,
                      f"{name}_sweeps": sweeps.get("n")})
        rows.append(r)
        if comm.rank == 0:
            print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
    if comm.rank == 0:
        print(f"\n{comm.size} processes, float64, row-split n x n:")
        print("| n | sweeps | svd s steady (first) | vs Allgatherv + numpy | vs numpy, 1 process "
              "| svdvals s | vs Allgatherv + numpy | vs numpy, 1 process |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['n']} | {r['svd_sweeps']} | {r['svd_s']:.3f} ({r['svd_first_s']:.3f}) | "
                  f"{r['svd_over_plain']:.2f} (first {r['svd_first_over_plain']:.2f}) | {r['svd_over_numpy1']:.2f} | "
                  f"{r['svdvals_s']:.3f} | {r['svdvals_over_plain']:.2f} | {r['svdvals_over_numpy1']:.2f} |")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
