"""The per-operation cost of small operations: meshrt against numpy on one process's array and against
the raw MPI call the operation needs (issue 48).

    mpiexec -n 2 python bench/bench_small_ops.py [--n 1000] [--reps 7] [--iters 2000]

A float64 tensor of ``n`` elements split on dim 0 over the processes (``halo_sizes=[1, 1]`` for the
stencil).  Per row, three columns, each its own loop (sides alternate going first; per side the best
repetition of the slowest process, in microseconds per call):

- ``meshrt``: the operation as a numpy program writes it, on the tensor;
- ``numpy``: the same line on a plain numpy array of ``n`` elements on one process (no communication);
- ``raw``: the hand-written mpi4py + numpy code doing the same job on this process's block (the MPI call
  the operation needs and nothing else): ``x + 1.0``; a halo ``Sendrecv`` pair and the local update;
  one ``Bcast`` of 8 bytes from the owner; a local ``np.dot`` and one ``Allreduce`` of 8 bytes.

Rows: ``a + 1.0`` (deferred, as written, and used: ``(a + 1.0).interior``), the fused stencil
assignment ``a[1:-1] = 0.5 * (a[:-2] + a[2:])``, ``float(a[500])``, ``float(np.dot(a, a))``, and
``a[idx]`` with ``idx`` a tensor of 100 random ints split on dim 0 (raw: an ``Alltoall`` of the counts,
an ``Alltoallv`` of the indices and one of the values back, each process's part of ``idx`` routed by
hand; the gather of ``a`` it replaced is the row ``gather + numpy``).  Last, the first calls: one
element's read (the process's first; the median over 50 new indices of one tensor, and over 50 tensors
of new shapes) and the stencil on a tensor of a new
shape (its plan built), then the stencil's second call
(the first stencil of the process: its expression's structure is new too), and the median over 50 more
new shapes of the stencil's first, second and third calls.
"""

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

from meshrt import DistributedTensor, Mesh, Sharding  # noqa: E402  (before mpi4py: meshrt.runtime.mpich)
from mpi4py import MPI  # noqa: E402, I001
from _timing import compare  # noqa: E402  (bench/_timing.py, beside this script)

comm = MPI.COMM_WORLD


def first_call(fn):
    comm.Barrier()
    t0 = time.perf_counter()
    fn()
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--iters", type=int, default=2000)
    o = p.parse_args()
    n = o.n
    mesh = Mesh((-1,))
    g = np.random.default_rng(0).random(n)
    a = DistributedTensor.from_global(g, Sharding(mesh, [[0]]))
    h = DistributedTensor.from_global(g, Sharding(mesh, [[0]], halo_sizes=[1, 1]))
    x = g.copy()  # numpy: the whole array on one process
    sl = a.shard_slices[0]
    blk = g[sl].copy()  # raw: this process's block, with one ghost cell each side for the stencil
    ghost = np.zeros(blk.size + 2)
    ghost[1:-1] = blk
    left = comm.rank - 1 if comm.rank > 0 else MPI.PROC_NULL
    right = comm.rank + 1 if comm.rank < comm.size - 1 else MPI.PROC_NULL
    lo, hi = (1 if comm.rank == 0 else 0), (1 if comm.rank == comm.size - 1 else 0)
    owner = next(r for r in range(comm.size) if a.sharding.shard_slices((n,), r)[0].start <= n // 2
                 < a.sharding.shard_slices((n,), r)[0].stop)
    one = np.empty(1)
    acc = np.empty(1)

    def raw_stencil():
        comm.Sendrecv(ghost[1:2], left, 0, ghost[-1:], right, 0)
        comm.Sendrecv(ghost[-2:-1], right, 1, ghost[0:1], left, 1)
        ghost[1 + lo:len(ghost) - 1 - hi] = 0.5 * (ghost[lo:len(ghost) - 2 - hi] + ghost[2 + lo:len(ghost) - hi])

    def raw_read():
        if comm.rank == owner:
            one[0] = blk[n // 2 - sl.start]
        comm.Bcast(one, owner)
        return float(one[0])

    def raw_dot():
        acc[0] = np.dot(blk, blk)
        comm.Allreduce(MPI.IN_PLACE, acc)
        return float(acc[0])

    def mesh_stencil():
        h[1:-1] = 0.5 * (h[:-2] + h[2:])

    def np_stencil():
        x[1:-1] = 0.5 * (x[:-2] + x[2:])

    ig = np.random.default_rng(1).integers(0, n, 100)
    idx = DistributedTensor.from_global(ig, Sharding(mesh, [[0]]))
    mine = ig[idx.shard_slices[0]]
    starts = np.array([a.sharding.shard_slices((n,), r)[0].start for r in range(comm.size)] + [n])
    fetched = np.empty(mine.size)

    def raw_take():
        shard = np.searchsorted(starts, mine, side="right") - 1
        order = np.argsort(shard, kind="stable")
        counts = np.bincount(shard, minlength=comm.size)
        got = np.empty_like(counts)
        comm.Alltoall(counts, got)
        sd, rd = np.concatenate(([0], np.cumsum(counts)[:-1])), np.concatenate(([0], np.cumsum(got)[:-1]))
        asked = np.empty(got.sum(), np.int64)
        comm.Alltoallv([mine[order] - starts[shard[order]], (counts, sd)], [asked, (got, rd)])
        out = np.empty(mine.size)
        comm.Alltoallv([blk[asked], (got, rd)], [out, (counts, sd)])
        fetched[order] = out
        return fetched

    assert np.array_equal(raw_take(), g[mine]) and np.array_equal(a[idx].gather(), g[ig])
    assert float(a[n // 2]) == raw_read() == g[n // 2]
    assert np.isclose(float(np.dot(a, a)), raw_dot())
    rows = {
        "a + 1.0 (deferred)": {"meshrt": lambda: a + 1.0, "numpy": lambda: x + 1.0, "raw": lambda: blk + 1.0},
        "(a + 1.0) used": {"meshrt": lambda: (a + 1.0).interior, "numpy": lambda: x + 1.0, "raw": lambda: blk + 1.0},
        "a[1:-1] = 0.5*(..)": {"meshrt": mesh_stencil, "numpy": np_stencil, "raw": raw_stencil},
        "float(a[n//2])": {"meshrt": lambda: float(a[n // 2]), "numpy": lambda: float(x[n // 2]), "raw": raw_read},
        "float(np.dot(a, a))": {"meshrt": lambda: float(np.dot(a, a)), "numpy": lambda: float(np.dot(x, x)),
                                "raw": raw_dot},
        "a[idx]": {"meshrt": lambda: a[idx], "numpy": lambda: x[ig], "raw": raw_take},
        "a[idx] gather + numpy": {"meshrt": lambda: a.gather()[idx.gather()], "numpy": lambda: x[ig],
                                  "raw": raw_take},
    }
    firsts = {}
    b = DistributedTensor.from_global(g, Sharding(mesh, [[0]], sharded_dims_offsets=None))
    firsts["float(b[n//2 + 1]) first call (the process's first element read)"] = first_call(lambda: float(b[n // 2 + 1]))
    firsts["an element read at a new index (median of 50 indices)"] = float(np.median(
        [first_call(lambda i=i: float(b[i])) for i in range(n // 2 + 2, n // 2 + 102, 2)]))
    news = [DistributedTensor.from_global(np.arange(float(n + k)), Sharding(mesh, [[0]])) for k in range(2, 52)]
    firsts["an element read on a new layout (median of 50 shapes)"] = float(np.median(
        [first_call(lambda t=t: float(t[len(t) // 2 + 1])) for t in news]))
    # a shape of its own: the plan (ghost buffer, persistent requests, the one-call run) is built here
    c = DistributedTensor.from_global(np.random.default_rng(2).random(n + 1), Sharding(mesh, [[0]], halo_sizes=[1, 1]))

    def c_stencil():
        c[1:-1] = 0.5 * (c[:-2] + c[2:])

    firsts["the stencil's first call (its plan built)"] = first_call(c_stencil)
    firsts["the stencil's second call"] = first_call(c_stencil)
    firsts["the stencil's third call"] = first_call(c_stencil)
    # the same statement on shapes never seen (its expression's structure known): median of 50 shapes
    runs = [[], [], []]
    for k in range(50):
        d = DistributedTensor.from_global(np.random.default_rng(3).random(n + 2 + k),
                                          Sharding(mesh, [[0]], halo_sizes=[1, 1]))

        def d_stencil():
            d[1:-1] = 0.5 * (d[:-2] + d[2:])

        for r in runs:
            r.append(first_call(d_stencil))
    for name, r in zip(("first", "second", "third"), runs):
        firsts[f"the stencil on a new shape, its {name} call (median of 50 shapes)"] = float(np.median(r))
    if comm.rank == 0:
        print(f"# {n} float64 elements on {comm.size} processes; us per call (best of {o.reps} x {o.iters})")
        print(f"{'operation':22s} {'meshrt':>8s} {'numpy':>8s} {'raw':>8s} {'/numpy':>7s} {'/raw':>6s}")
    for name, sides in rows.items():
        best = compare(sides, o.iters, o.reps, warmup=20)
        if comm.rank == 0:
            m, q, r = (best[k] * 1e6 for k in ("meshrt", "numpy", "raw"))
            print(f"{name:22s} {m:8.2f} {q:8.2f} {r:8.2f} {m / q:7.1f} {m / r:6.1f}", flush=True)
    if comm.rank == 0:
        for k, v in firsts.items():
            print(f"# {k}: {v * 1e6:.0f} us")


if __name__ == "__main__":
    main()
