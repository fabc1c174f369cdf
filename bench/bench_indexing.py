"""Global-view indexing: meshrt vs the same thing written by hand with numpy on the local block.

    mpiexec -n 2 python bench/bench_indexing.py [--n 4096] [--small 256] [--reps 9] [--iters 200]

Cases (issue 11):
- ``u[0, :] = 1`` on an n x n float64 tensor split over the processes on dim 0
  with halos, against the hand-written owner-only write
  (``if owns_row_0: u_local[h, h:-h] = 1``).  Target: ratio <= 1.2.
- ``u[1:-1, ::2]`` (a view, no data moved) at two sizes: its time must not
  grow with the array (O(1) apart from the numpy view).
Each side runs in its own loop; the order alternates over ``--reps``
repetitions; per side the best repetition of the slowest process is kept.
"""

import argparse

from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding
from _timing import compare  # noqa: E402  (bench/_timing.py, beside this script)

comm = MPI.COMM_WORLD


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--small", type=int, default=256)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    mesh = Mesh((-1,))
    s = Sharding(mesh, [[0]], halo_sizes=[1, 1])
    u = DistributedTensor.zeros((args.n, args.n), s)
    local, own = u.local, u.shard_slices[0].start == 0

    def by_hand():
        if own:
            local[1, :] = 1.0

    def meshrt_write():
        u[0, :] = 1.0

    t = compare({"hand": by_hand, "meshrt": meshrt_write}, args.iters, args.reps, warmup=5)
    u.local[...] = 0
    u[0, :] = 1.0
    assert float(u.sum()) == args.n  # the write lands once, on the owner
    rows = [("u[0, :] = 1", f"{args.n}^2", t["meshrt"], t["hand"])]

    small = DistributedTensor.zeros((args.small, args.small), s)
    views = compare({"large": lambda: u[1:-1, ::2], "small": lambda: small[1:-1, ::2],
                     "numpy": lambda: local[1:-1, ::2]}, args.iters, args.reps, warmup=5)
    rows.append(("u[1:-1, ::2]", f"{args.n}^2 vs {args.small}^2", views["large"], views["small"]))
    if comm.rank == 0:
        print(f"{comm.size} processes; best of {args.reps} reps x {args.iters} iterations, slowest process")
        print(f"{'case':16s} {'size':16s} {'meshrt_us':>10s} {'reference_us':>12s} {'ratio':>6s}")
        for name, size, a, b in rows:
            print(f"{name:16s} {size:16s} {a * 1e6:10.2f} {b * 1e6:12.2f} {a / b:6.2f}")
        print(f"(reference: the owner-only numpy write; for the view, the same view of the {args.small}^2 "
              f"tensor; numpy's own local view: {views['numpy'] * 1e6:.2f} us)")


if __name__ == "__main__":
    main()
