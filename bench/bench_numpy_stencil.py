"""numpy stencils on DistributedTensors (fused, meshrt.tensor.lazy) against apply_stencil, plain numpy and mpi4py.

    mpiexec -n 2 python bench/bench_numpy_stencil.py                  # the issue's sizes
    mpiexec -n 2 python bench/bench_numpy_stencil.py --n 1024 --n3 64 --reps 3

Cases (rows split over the processes; ms per step, the median of ``--reps``
repetitions, each the mean of ``--iters`` steps, every rank reporting the
slowest rank's time):

1. 5-point Jacobi in slice form at n^2 float64,
   ``u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])``:
   fused (this code on a DistributedTensor), eager (the same with deferral off:
   the code before fusion), `apply_stencil` with a 6-line Numba kernel (with and
   without ``where=``), plain numpy on one process, and hand-written mpi4py
   (``Sendrecv`` of the halo rows) plus numpy on the local block.
2. The periodic form ``0.25 * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + ...)``
   against `apply_stencil` with periodic halos.
3. 3-D 7-point at n3^3 in slice form against `apply_stencil`.
4. 64^2 Jacobi (latency: per-step overhead) fused against `apply_stencil`.

Every variant of a case runs in the same repetition loop, interleaved, so
load from other programs on the machine moves them together: read the ratios.
The fused results are checked bitwise against apply_stencil's at the end.
"""

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI
from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding, apply_stencil
from meshrt.tensor import lazy as _lazy

comm = MPI.COMM_WORLD


@njit(cache=True)
def jacobi(lo, hi, v, u):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            v[i, j] = 0.25 * (((u[i - 1, j] + u[i + 1, j]) + u[i, j - 1]) + u[i, j + 1])


@njit(cache=True)
def seven(lo, hi, v, u):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            for k in range(lo[2], hi[2]):
                c = u[i, j, k]
                v[i, j, k] = c + 0.1 * ((((((u[i - 1, j, k] + u[i + 1, j, k]) + u[i, j - 1, k]) + u[i, j + 1, k])
                                         + u[i, j, k - 1]) + u[i, j, k + 1]) - 6.0 * c)


def step_jacobi(u):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def step_roll(u):
    return 0.25 * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1))


def step_seven(u):
    c = u[1:-1, 1:-1, 1:-1]
    u[1:-1, 1:-1, 1:-1] = c + 0.1 * (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
                                     + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - 6.0 * c)


def run(variants, iters, reps):
    """{name: [ms per step per repetition]}; the variants interleaved, order rotating."""
    names = list(variants)
    out = {k: [] for k in names}
    for r in range(reps):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            fn = variants[k]
            fn()  # warm (the kernel compiled or loaded from the disk cache, the plan built: steady steps timed)
            fn()
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            comm.Barrier()
            out[k].append(comm.allreduce((time.perf_counter() - t0) / iters * 1e3, op=MPI.MAX))
    return {k: statistics.median(v) for k, v in out.items()}


def report(title, med, base):
    if comm.rank:
        return
    print(f"\n{title}  (ms/step, median; ratio to {base})")
    for k, v in med.items():
        print(f"  {k:<34s} {v:9.3f}   {v / med[base]:6.2f}x")


def hand_jacobi(n, mesh_comm):
    """mpi4py + numpy on the local block with one halo row each side (the code the issue compares)."""
    p, r = mesh_comm.size, mesh_comm.rank
    rows = [n // p + (1 if i < n % p else 0) for i in range(p)]
    start = sum(rows[:r])
    a = np.zeros((rows[r] + 2, n))
    a[1:-1] = _init(n)[start:start + rows[r]]
    up, down = (r - 1 if r > 0 else MPI.PROC_NULL), (r + 1 if r < p - 1 else MPI.PROC_NULL)
    lo = 1 if r == 0 else 0  # the first/last global rows are the boundary: not updated
    hi = rows[r] + 1 - (1 if r == p - 1 else 0)

    def step():
        mesh_comm.Sendrecv(a[1], up, 0, a[-1], down, 0)
        mesh_comm.Sendrecv(a[-2], down, 1, a[0], up, 1)
        a[1 + lo:hi, 1:-1] = 0.25 * (a[lo:hi - 1, 1:-1] + a[lo + 2:hi + 1, 1:-1] + a[1 + lo:hi, :-2]
                                     + a[1 + lo:hi, 2:])
    return step


def _init(n, ndim=2):
    return np.random.default_rng(1).random((n,) * ndim)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--n3", type=int, default=256)
    ap.add_argument("--small", type=int, default=64)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    mesh = Mesh((-1,), ("x",))
    plain = Sharding(mesh, [["x"]])
    halo = Sharding(mesh, [["x"]], halo_sizes=[1, 1])
    n = args.n
    if comm.rank == 0:
        print(f"{comm.size} processes, {MPI.Get_library_version().splitlines()[0]}; shared machine: read the ratios")

    # 1. Jacobi, slice form
    g = _init(n)
    u = DistributedTensor.from_global(g, plain)
    ue = DistributedTensor.from_global(g, plain)
    a, b = DistributedTensor.from_global(g, halo), DistributedTensor.from_global(g, halo)
    c, d = DistributedTensor.from_global(g, halo), DistributedTensor.from_global(g, halo)
    inner = (slice(1, -1), slice(1, -1))
    sw = [a, b]
    sw2 = [c, d]

    def stencil_where():
        apply_stencil(jacobi, sw[1], sw[0], reads=[sw[0]], where=inner)
        sw.reverse()

    def eager():
        _lazy.ENABLED = False
        try:
            step_jacobi(ue)
        finally:
            _lazy.ENABLED = True

    one = g.copy()

    def numpy_one():
        if comm.rank == 0:
            one[1:-1, 1:-1] = 0.25 * (one[:-2, 1:-1] + one[2:, 1:-1] + one[1:-1, :-2] + one[1:-1, 2:])

    hand = hand_jacobi(n, comm)

    # the same cells without where= (periodic halos: every owned cell has neighbours), the 12.6 ms case
    e, f = (DistributedTensor.from_global(g, halo, periodic=True) for _ in range(2))
    sw3 = [e, f]

    def stencil_periodic():
        apply_stencil(jacobi, sw3[1], sw3[0], reads=[sw3[0]])
        sw3.reverse()

    variants = {"fused (numpy slices on DT)": lambda: step_jacobi(u),
                "apply_stencil where=inner": stencil_where,
                "apply_stencil periodic, no where": stencil_periodic,
                "hand-written mpi4py + numpy": hand,
                "numpy, one process": numpy_one}
    if n <= 4096:
        variants["eager (deferral off)"] = eager
    med = run(variants, args.iters, args.reps)
    report(f"5-point Jacobi, slice form, {n}^2 float64", med, "apply_stencil where=inner")
    steps = args.reps * (args.iters + 1)
    # equal steps on both: bitwise equal
    u2 = DistributedTensor.from_global(g, plain)
    for _ in range(3):
        step_jacobi(u2)
        apply_stencil(jacobi, sw2[1], sw2[0], reads=[sw2[0]], where=inner)
        sw2.reverse()
    same = np.array_equal(u2.gather(), sw2[0].gather())
    if comm.rank == 0:
        print(f"  fused == apply_stencil after 3 steps (bitwise): {same}; steps timed {steps}")

    # 2. periodic roll form
    r = [DistributedTensor.from_global(g, plain, periodic=True)]

    def fused_roll():
        r[0] = step_roll(r[0])
        r[0].local  # noqa: B018  (evaluated now, inside the timing)

    med = run({"fused np.roll form": fused_roll, "apply_stencil periodic": stencil_periodic},
              args.iters, args.reps)
    report(f"periodic np.roll form, {n}^2 float64", med, "apply_stencil periodic")

    # 3. 3-D 7-point
    n3 = args.n3
    g3 = _init(n3, 3)
    s3, h3 = Sharding(mesh, [["x"], [], []]), Sharding(mesh, [["x"], [], []], halo_sizes=[1, 1])
    u3 = DistributedTensor.from_global(g3, s3)
    p3 = [DistributedTensor.from_global(g3, h3) for _ in range(2)]
    in3 = (slice(1, -1),) * 3

    def stencil3():
        apply_stencil(seven, p3[1], p3[0], reads=[p3[0]], where=in3)
        p3.reverse()

    med = run({"fused slice form": lambda: step_seven(u3), "apply_stencil": stencil3}, args.iters, args.reps)
    report(f"3-D 7-point, {n3}^3 float64", med, "apply_stencil")

    # 4. latency
    m = args.small
    gs = _init(m)
    us = DistributedTensor.from_global(gs, plain)
    ps = [DistributedTensor.from_global(gs, halo) for _ in range(2)]
    ins = (slice(1, -1), slice(1, -1))

    def stencil_small():
        apply_stencil(jacobi, ps[1], ps[0], reads=[ps[0]], where=ins)
        ps.reverse()

    med = run({"fused": lambda: step_jacobi(us), "apply_stencil": stencil_small}, 200, args.reps)
    report(f"5-point Jacobi {m}^2 (latency)", med, "apply_stencil")


if __name__ == "__main__":
    main()
