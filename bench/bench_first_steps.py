"""The first steps of a fused numpy stencil, each run a fresh pair of processes (issue 47's goals).

    python bench/bench_first_steps.py                      # 2 processes, 4096^2, 4 runs per path and form
    python bench/bench_first_steps.py --n 1024 --runs 3 --np 2

For each form of the 5-point Jacobi (slice form ``u[1:-1, 1:-1] = 0.25 * (...)`` and the periodic
``np.roll`` form) it starts ``mpiexec -n NP`` afresh per run, all runs of a form sharing one new kernel
cache folder (``MESHRT_CACHE_DIR``, removed at the end), in this order:

1. ``interp``: the defaults, the fused expression on the interpreter (``meshrt._fusevm``: nothing to
   compile or load, no Numba); then one run with ``MESHRT_WARMUP=1`` (Numba's start-up on a thread beside
   the first steps, as the default was before the interpreter);
2. ``numba``, ``MESHRT_FUSE_INTERP=0`` (the behaviour before the interpreter): the first run finds the
   cache empty and compiles the kernel during the first step, the later ones load it from the cache; and
   one more run with ``MESHRT_WARMUP=0`` (Numba's start-up not overlapped with the program's set-up).

Inside each run (ms, the slowest process): ``setup`` (from the mesh to the tensor built), ``first``
(step 1), ``first10`` (steps 1-10 together), ``steady`` (the median of steps 11-30), ``new`` (step 1 on a
new tensor of the same shape, an equal new `Sharding`), ``kernel`` (time inside
``meshrt.tensor.fuse.runner``, the slowest process: the compile or the cache load, and any part of
Numba's start-up still running; the interpreter's program is built in well under a millisecond),
``stencil`` (a steady `apply_stencil` step of the same stencil, same run), ``compiled``/``loaded``
(Numba kernels compiled / loaded from the cache, all processes), ``interp`` (expressions run on the
interpreter, all processes), ``ready`` (1: the warm-up thread, where it ran, had finished on every
process when step 1 began); with ``--steps N`` (> 30) also ``total`` (all N steps) and ``last`` (the
median of the last 20: the Numba kernel's, where the run switched to it). Printed: per run, then the
goals as ratios of numbers measured in the same run, the median over the runs of each path, and the
interpreter's steady step over the Numba kernel's.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
STEPS = [30]


def child(form, n, nsteps=30):
    import numpy as np
    from mpi4py import MPI

    from meshrt import DistributedTensor, Mesh, Sharding, apply_stencil
    from meshrt.tensor import fuse as _fuse

    comm = MPI.COMM_WORLD
    spent = []
    real = _fuse.runner

    def timed_runner(*args):
        t0 = time.perf_counter()
        try:
            return real(*args)
        finally:
            spent.append(time.perf_counter() - t0)

    _fuse.runner = timed_runner

    def timed(fn):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        comm.Barrier()
        return comm.allreduce((time.perf_counter() - t0) * 1e3, op=MPI.MAX)

    comm.Barrier()
    t0 = time.perf_counter()
    mesh = Mesh((-1,), ("x",))
    g = np.random.default_rng(1).random((n, n))
    periodic = form == "roll"
    u = [DistributedTensor.from_global(g, Sharding(mesh, [["x"]]), periodic=periodic)]
    comm.Barrier()
    setup = comm.allreduce((time.perf_counter() - t0) * 1e3, op=MPI.MAX)

    def step(box):
        if form == "slice":
            x = box[0]
            x[1:-1, 1:-1] = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
        else:
            x = box[0]
            box[0] = 0.25 * (np.roll(x, 1, 0) + np.roll(x, -1, 0) + np.roll(x, 1, 1) + np.roll(x, -1, 1))
            box[0].local  # noqa: B018  (evaluated inside the timing)

    from meshrt.runtime import warmup

    ready = comm.allreduce(int(warmup.wait(0)), op=MPI.MIN)  # Numba's start-up done before step 1, everywhere
    steps = [timed(lambda: step(u)) for _ in range(nsteps)]
    kernel_ms = sum(spent) * 1e3
    v = [DistributedTensor.from_global(g * 0.5, Sharding(mesh, [["x"]]), periodic=periodic)]
    new = timed(lambda: step(v))
    kernel_ms = comm.allreduce(kernel_ms, op=MPI.MAX)
    from numba import njit  # (imported here: a program's own first Numba import would hide the warm-up's)

    @njit(cache=True)
    def jacobi(lo, hi, v, u):
        for i in range(lo[0], hi[0]):
            for j in range(lo[1], hi[1]):
                v[i, j] = 0.25 * (((u[i - 1, j] + u[i + 1, j]) + u[i, j - 1]) + u[i, j + 1])

    halo = Sharding(mesh, [["x"]], halo_sizes=[1, 1])
    sw = [DistributedTensor.from_global(g, halo, periodic=periodic) for _ in range(2)]
    where = (slice(1, -1), slice(1, -1)) if form == "slice" else None

    def stencil():
        apply_stencil(jacobi, sw[1], sw[0], reads=[sw[0]], where=where)
        sw.reverse()

    for _ in range(3):
        stencil()
    st = statistics.median(timed(stencil) for _ in range(10))
    compiled, loaded, interp = (comm.allreduce(_fuse.stats[k]) for k in ("compiled", "loaded", "interpreted"))
    if comm.rank == 0:
        print("RESULT " + json.dumps({
            "setup": setup, "first": steps[0], "first10": sum(steps[:10]), "steady": statistics.median(steps[10:30]),
            "total": sum(steps), "last": statistics.median(steps[-20:]),
            "new": new, "kernel": kernel_ms, "stencil": st,
            "compiled": compiled, "loaded": loaded, "interp": interp, "ready": ready}), flush=True)


def run_once(nproc, form, n, cache, warmup=None, interp=True):
    """One fresh job; ``warmup`` None: MESHRT_WARMUP unset (its default), else set to 1 or 0."""
    env = dict(os.environ, MESHRT_CACHE_DIR=cache, MESHRT_FUSE_INTERP="1" if interp else "0")
    for k in ("MESHRT_FUSE_CACHE", "MESHRT_WARMUP", "MESHRT_FUSE_SWITCH_S"):
        env.pop(k, None)
    if warmup is not None:
        env["MESHRT_WARMUP"] = "1" if warmup else "0"
    cmd = ["mpiexec", "-n", str(nproc), sys.executable, HERE, "--child", form, "--n", str(n), "--steps", str(STEPS[0])]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")][0]
    return json.loads(line[7:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--runs", type=int, default=4, help="runs per form (the first on an empty cache)")
    ap.add_argument("--forms", default="slice,roll")
    ap.add_argument("--steps", type=int, default=30, help="steps per run (>= 30; 'total' and 'last' show "
                    "where a long run switches from the interpreter to the Numba kernel)")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.n, args.steps)
        return
    STEPS[0] = max(30, args.steps)
    print(f"{args.np} processes, {args.n}^2 float64, a fresh mpiexec per run; ms (slowest process)")
    cols = ("setup", "kernel", "first", "first10", "steady", "new", "stencil", "compiled", "loaded", "interp",
            "ready") + (("total", "last") if STEPS[0] > 30 else ())
    for form in args.forms.split(","):
        cache = tempfile.mkdtemp(prefix="meshrt-bench-cache-")
        try:
            # the interpreter's runs first (they compile nothing), then the Numba kernel's on the same cache
            rows = [("interp", [run_once(args.np, form, args.n, cache) for _ in range(args.runs - 1)])]
            rows.append(("interp, MESHRT_WARMUP=1", [run_once(args.np, form, args.n, cache, warmup=True)]))
            numba = [run_once(args.np, form, args.n, cache, interp=False) for _ in range(args.runs)]
            rows.append(("numba, clean cache", numba[:1]))
            rows.append(("numba", numba[1:]))
            rows.append(("numba, MESHRT_WARMUP=0", [run_once(args.np, form, args.n, cache, warmup=False,
                                                             interp=False)]))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print(f"\n{form} form")
        print(f"  {'run':<24s}" + "".join(f"{c:>9s}" for c in cols))
        for name, rs in rows:
            for r in rs:
                print(f"  {name:<24s}" + "".join(f"{r[c]:9.1f}" if isinstance(r[c], float) else f"{r[c]:>9}"
                                                for c in cols))
        clean = rows[2][1][0]
        for name, warm in (("interpreter (the default)", rows[0][1]),
                           ("Numba kernel from the disk cache (MESHRT_FUSE_INTERP=0: as before)", rows[3][1])):

            def med(f):
                return statistics.median(f(r) for r in warm) if warm else float("nan")

            print(f"  goals, {name}: the median over its runs; each ratio inside one run")
            for label, f, goal in (
                    ("first step / steady step", lambda r: r["first"] / r["steady"], 3),
                    ("first 10 steps / 10 steady steps", lambda r: r["first10"] / (10 * r["steady"]), 1.5),
                    ("new tensor's first step / steady step", lambda r: r["new"] / r["steady"], 2),
                    ("steady step / apply_stencil", lambda r: r["steady"] / r["stencil"], 1.25)):
                print(f"    {label:<42s}{med(f):6.2f}   (<= {goal})")
            print(f"    compiles                                  {sum(r['compiled'] for r in warm)}")
        print(f"  Numba, clean cache: first step / (kernel + 2 steady)  "
              f"{clean['first'] / (clean['kernel'] + 2 * clean['steady']):6.2f}   (<= 1)")
        ratio = (statistics.median(r["steady"] for r in rows[0][1])
                 / statistics.median(r["steady"] for r in rows[3][1]))
        print(f"  steady step, interpreter / Numba kernel (medians over runs)  {ratio:6.2f}")


if __name__ == "__main__":
    main()
