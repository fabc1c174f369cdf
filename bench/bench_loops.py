"""Loop programs, meshrt against one numpy process (issue 53).

    mpiexec -n 2 python bench/bench_loops.py [--reps 3] [--scale 1.0] [names...]

Each program of `meshrt.bench.loops` (a triangular solve, Cholesky and LU by rows and by slices,
Gram-Schmidt, Levinson-Durbin, CRC-16, a trace by index, a row recurrence, CG on a 96 x 96
grid, 200 iterations) runs at its ``bench`` size (``--scale`` multiplies it; CG stays 96 x 96), where numpy on one
process takes 0.05-0.2 s: the same code on numpy arrays (every process runs it at once, so both sides
load the machine alike) and on tensors split on dim 0 over all processes.  Warm: one untimed run of each
at its small size first (kernels compiled or loaded, collectives' plans made), then per side the best of
``--reps`` runs of the slowest process, fresh inputs each.  The results are checked equal to numpy's
(``np.allclose``) on every run.  Prints seconds per side and the ratio meshrt / numpy.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

from meshrt import DistributedTensor, Mesh, Sharding  # noqa: E402  (before mpi4py: meshrt.runtime.mpich)
from mpi4py import MPI  # noqa: E402, I001
from meshrt.bench.loops import PROGRAMS  # noqa: E402

comm = MPI.COMM_WORLD


def _copy(inputs):
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    return all(np.allclose(a.gather() if isinstance(a, DistributedTensor) else a, b, rtol=1e-9, atol=1e-12)
               for a, b in zip(got, want))


def _timed(fn):
    comm.Barrier()
    t0 = time.perf_counter()
    r = fn()
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(PROGRAMS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0)
    o = ap.parse_args()
    mesh = Mesh((-1,))
    s = Sharding(mesh, [[0]])

    def tensors(p, g):
        return {k: DistributedTensor.from_global(v, s) if k in p.split else v for k, v in g.items()}

    if comm.rank == 0:
        print(f"# {comm.size} processes; seconds, best of {o.reps}; meshrt / numpy on one process")
        print(f"{'program':16s} {'n':>6s} {'numpy':>8s} {'meshrt':>8s} {'ratio':>7s}  statement")
    ratios = []
    for name in o.names:
        p = PROGRAMS[name]
        warm = p.make(p.small, np.random.default_rng(0))
        p.run(**tensors(p, warm))
        n = p.bench if name == "cg_96" else max(p.small, int(p.bench * o.scale))
        g = p.make(n, np.random.default_rng(1))
        t_np, t_mr, ok = [], [], True
        for _ in range(o.reps):
            t, want = _timed(lambda: p.run(**_copy(g)))
            t_np.append(t)
            inputs = tensors(p, g)
            t, got = _timed(lambda: p.run(**inputs))
            t_mr.append(t)
            ok = ok and _same(got, want)
        a, b = min(t_np), min(t_mr)
        ratios.append(b / a)
        if comm.rank == 0:
            print(f"{name:16s} {n:6d} {a:8.3f} {b:8.3f} {b / a:7.1f}  {p.note}{'' if ok else '  WRONG RESULT'}",
                  flush=True)
        if not ok:
            sys.exit(f"{name}: meshrt's result differs from numpy's")
    if comm.rank == 0:
        print(f"# geometric mean of the ratios: {float(np.exp(np.mean(np.log(ratios)))):.1f}")


if __name__ == "__main__":
    main()
