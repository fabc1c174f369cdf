"""apply_stencil against the hand-written overlapped loop, and several fields in one halo exchange.

    mpiexec -n 2 python bench/bench_stencil.py                 # 4096^2, the issue's sizes
    mpiexec -n 2 python bench/bench_stencil.py --n 1024 --reps 5

1. wave2d (leapfrog, 5-point): the same Numba kernel run by `apply_stencil`
   and by the loop examples/heat2d.py writes by hand (start the exchange,
   inner box, wait, rim boxes). Ratio = library / hand, per step.
2. Three fields' halos: `update_halos(a, b, c)` (one message per neighbour
   direction) against ``a.update_halo(); b.update_halo(); c.update_halo()``,
   with rows split (contiguous faces: separate exchanges send them in place,
   the grouped one packs) and with columns split (both pack).

Each repetition times both sides in their own loop, alternating which goes
first; printed: the median of the per-repetition ratios with its range, and
the ratio of the minimum times, so a noisy shared machine shows as spread,
not as bias.
"""

import argparse
import statistics
import sys
import time

import numpy as np
from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding, apply_stencil, t_eff, update_halos


@njit(cache=True, nogil=True)
def leapfrog(lo, hi, old, u, C):
    for i in range(lo[0], hi[0]):
        north, row, south, out = u[i - 1], u[i], u[i + 1], old[i]
        for j in range(lo[1], hi[1]):
            c = row[j]
            out[j] = (2.0 * c - out[j]) + C * (((north[j] + south[j]) + (row[j - 1] + row[j + 1])) - 4.0 * c)


def boxes(t):
    """Inner box and rim boxes of the owned block, by hand (one-cell reach)."""
    s = t.sharding
    own = [(s.halo_widths(d)[0], s.halo_widths(d)[0] + n) for d, n in enumerate(t.interior.shape)]
    inner = [(lo + 1, hi - 1) for lo, hi in own]
    (a, b), (c, d) = own
    rims = [((a, a + 1), (c, d)), ((b - 1, b), (c, d)), ((a + 1, b - 1), (c, c + 1)), ((a + 1, b - 1), (d - 1, d))]
    return tuple(zip(*inner)), [tuple(zip(*r)) for r in rims]


def timed(fn, iters, comm):
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    comm.Barrier()
    return (time.perf_counter() - t0) / iters


def compare(a, b, iters, reps, comm):
    """Per-iteration times of ``a`` and ``b``: lists over repetitions, order alternating."""
    ta, tb = [], []
    for r in range(reps):
        if r % 2:
            tb.append(timed(b, iters, comm))
            ta.append(timed(a, iters, comm))
        else:
            ta.append(timed(a, iters, comm))
            tb.append(timed(b, iters, comm))
    # every rank reports the slowest rank's time
    ta = [comm.allreduce(x, op=max_op()) for x in ta]
    tb = [comm.allreduce(x, op=max_op()) for x in tb]
    return ta, tb


def max_op():
    from mpi4py import MPI

    return MPI.MAX


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=4096, help="global size per side (default 4096)")
    p.add_argument("--steps", type=int, default=10, help="wave2d steps per timed loop (default 10)")
    p.add_argument("--halo-iters", type=int, default=200, help="exchanges per timed loop (default 200)")
    p.add_argument("--reps", type=int, default=7, help="repetitions, order alternating (default 7)")
    args = p.parse_args(argv)
    mesh = Mesh((-1, -1))
    comm = mesh.comm
    n = args.n
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    say = print if mesh.rank == 0 else (lambda *a, **k: None)
    say(f"bench_stencil: {n}x{n} float64, mesh {mesh.shape}, {comm.size} processes, {args.reps} reps")

    # 1. wave2d: library vs hand-written overlapped loop (same kernel, same buffers)
    u = DistributedTensor.from_function(lambda i, j: np.sin(i * 0.01) * np.cos(j * 0.02), (n, n), s)
    old = u.copy()
    inner, rims = boxes(u)
    C = 0.25

    def library():
        apply_stencil(leapfrog, old, u, C, reads=[u])

    def hand():
        h = u.update_halo(wait=False)
        leapfrog(*inner, old.local, u.local, C)
        h.wait()
        for lo, hi in rims:
            leapfrog(lo, hi, old.local, u.local, C)

    library(), hand()  # compile/load, build plans and exchanges
    tl, th = compare(lambda: [library() for _ in range(args.steps)], lambda: [hand() for _ in range(args.steps)],
                     1, args.reps, comm)
    tl, th = [x / args.steps for x in tl], [x / args.steps for x in th]
    ratios = [a / b for a, b in zip(tl, th)]
    say(f"wave2d step: library {min(tl) * 1e3:.3f} ms, hand-written {min(th) * 1e3:.3f} ms (min); "
        f"ratio library/hand median {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f}), of the minima {min(tl) / min(th):.3f}; "
        f"T_eff {t_eff(min(tl), updated=[old], read=[u]):.2f} GB/s")

    # 2. three fields: one grouped exchange vs three separate ones, rows split, then columns split
    fields = []
    for name, shape in (("rows", (-1, 1)), ("columns", (1, -1))):
        m = Mesh(shape, comm=comm)
        sf = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1])
        a, b, c = (DistributedTensor.from_function(lambda i, j, k=k: i + j + k, (n, n), sf) for k in range(3))
        fields += [a, b, c]

        def together():
            update_halos(a, b, c)

        def separate():
            a.update_halo()
            b.update_halo()
            c.update_halo()

        together(), separate()
        tt, ts = compare(together, separate, args.halo_iters, args.reps, comm)
        ratios = [x / y for x, y in zip(tt, ts)]
        say(f"3-field halo exchange, {name} split (mesh {m.shape}): together {min(tt) * 1e6:.1f} us, "
            f"separate {min(ts) * 1e6:.1f} us (min); ratio together/separate median "
            f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}), of the minima "
            f"{min(tt) / min(ts):.3f}")
    for t in (u, old, *fields):
        t.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
