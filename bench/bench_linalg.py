"""meshrt's distributed Cholesky, solve (LU) and QR against ScaLAPACK and against numpy on one process.

    python bench/bench_linalg.py [--n 8192] [--quick] [--blocks 64,128,256] [--reps 3] [--ops cholesky,solve,qr]

Run it with the Python of meshrt's environment, not under mpiexec: it launches the runs itself.

- meshrt: ``np.linalg.cholesky(t)``, ``np.linalg.solve(t, b)`` (``b`` a row-split vector) and
  ``np.linalg.qr(t, mode="r")`` on a row-split N x N float64 `DistributedTensor`, on ``--np`` processes
  (that environment's ``mpiexec``), one BLAS thread each. The time is the whole call: entering the 2-D
  block-cyclic layout, the factorization, leaving it. The layout's share is timed on its own
  (``to_cyclic`` then ``to_tensor`` of the same matrix) and shown as "layout". ``MESHRT_LINALG_BLOCK``
  picks the block size; the default grid (1 x 2 at 2 processes).
- ScaLAPACK: ``pdpotrf``, ``pdgesv`` (1 rhs), ``pdgeqrf`` through ``bench/scalapack_driver.c``, compiled here
  at run time against Debian's ``libscalapack-mpich`` (``mpicc.mpich``, or ``gcc`` with MPICH's headers),
  on the same grid and processes, one BLAS thread each. Skipped, saying why, where the library or a
  compiler is missing. ``--blas-dir`` puts a directory first on its ``LD_LIBRARY_PATH`` (e.g. Debian's
  OpenBLAS ``libblas.so.3``/``liblapack.so.3``): ScaLAPACK on Debian's reference BLAS is not the anchor.
  The kernels that OpenBLAS picks are printed beside it: a CPU newer than the library gets generic ones
  (set ``OPENBLAS_CORETYPE``, e.g. ``SkylakeX``, for the run).
- numpy: the same routines (``qr(mode="r")``) on the whole matrix in one process with 2 BLAS threads.
- ``--ops eigh``: ``np.linalg.eigh(t)`` (values and vectors) against ``pdsyevd``.
- "in layout": meshrt's routine alone on a matrix already in the block-cyclic layout, overwriting it
  (`meshrt.linalg.factor`, `meshrt.linalg.eigen`), which is what ScaLAPACK's routines time.
- "in place" (Cholesky): the whole call writing the factor into the input's own blocks
  (``meshrt.linalg.dense.cholesky(t, overwrite_a=True)``, SciPy's ``overwrite_a``), as ``pdpotrf`` works.

Both wall time (the slowest process) and CPU time (the largest per process; numpy's over its 2 threads)
are shown: on a shared machine the wall time mostly measures the other jobs. Each side's best block
size is the one with the least median CPU time. ScaLAPACK's launcher: Debian's ``mpiexec.mpich`` where it
runs, else the Hydra ``mpiexec`` beside this Python (pip's MPICH; it starts any MPICH build's programs).
The matrices are the same on every side (entries from a hash of the global index, so no side holds or
sends more than its share to build them).

Every (side, routine, block size) runs in its own job, median of ``--reps`` calls, each on a fresh
matrix; the best block size of each side is reported. ``--rounds R`` runs R such jobs a side, the sides
taking turns, and shows beside the pooled medians the median of the rounds' own ratios (on a shared
machine a slow minute then slows both sides of a round, not one). Peak memory: the largest ``ru_maxrss`` over the
processes at the end of the job, over the process's share of the matrix (``8 N^2 / P`` bytes); the
interpreter's own resident size before the matrix exists is shown beside it ("base"). meshrt's call alone:
the most its resident size grew during the call over the size before it (Linux's peak count restarted
by ``/proc/self/clear_refs``), the output included.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ("cholesky", "solve", "qr")
ALL_OPS = OPS + ("eigh",)
SCALAPACK = {"cholesky": "potrf", "solve": "gesv", "qr": "geqrf", "eigh": "syevd"}
MIB = 1 << 20


# -- the matrices (the same as scalapack_driver.c's: a hash of the global index) -----------------------
def _hash(i, j, seed):
    import numpy as np

    k1, k2, k3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0x632BE59BD9B4E019), np.uint64(0xBF58476D1CE4E5B9)
    x = (i * k1) ^ ((j + k2) * k3) ^ np.uint64(seed)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(29)
    x *= k3
    x ^= x >> np.uint64(32)
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0) - 0.5


def rows_of(start, stop, n, spd, out=None):
    """Rows ``start:stop`` of the test matrix (SPD: symmetric plus ``n`` on the diagonal), 256 at a time."""
    import numpy as np

    out = np.empty((stop - start, n)) if out is None else out
    j = np.arange(n, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        for s in range(start, stop, 256):
            e = min(stop, s + 256)
            i = np.arange(s, e, dtype=np.uint64)[:, None]
            if spd:
                out[s - start:e - start] = _hash(np.minimum(i, j), np.maximum(i, j), 7)
                out[np.arange(s, e) - start, np.arange(s, e)] += n
            else:
                out[s - start:e - start] = _hash(i, j, 7)
    return out


def rhs_of(start, stop):
    import numpy as np

    with np.errstate(over="ignore"):
        return _hash(np.arange(start, stop, dtype=np.uint64), np.uint64(0), 11)


def _maxrss_kib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _status_kib(field):
    """``VmRSS`` or ``VmHWM`` of /proc/self/status (Linux), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak():
    """Restart the peak-RSS count (``VmHWM``) at the present size: Linux's ``clear_refs`` 5. False where
    it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# -- the workers ---------------------------------------------------------------------------------------
def worker_meshrt(op, n, block, reps):
    os.environ["MESHRT_LINALG_BLOCK"] = str(block)
    import numpy as np
    from mpi4py import MPI

    import meshrt
    from meshrt import DistributedTensor, Mesh, Sharding
    from meshrt.linalg import dense
    from meshrt.linalg.cyclic import to_cyclic

    comm = MPI.COMM_WORLD
    base = comm.allreduce(_maxrss_kib(), op=MPI.MAX)
    mesh = Mesh((-1,))
    rows = Sharding(mesh, [[0]])
    probe = DistributedTensor.empty((n, n), rows)
    rs = probe.shard_slices[0]
    del probe
    local = np.empty((rs.stop - rs.start, n))
    b = None
    if op == "solve":
        b = DistributedTensor.from_local(np.ascontiguousarray(rhs_of(rs.start, rs.stop)), Sharding(mesh, [[0]]), (n,))

    def fresh():
        rows_of(rs.start, rs.stop, n, op in ("cholesky", "eigh"), out=local)
        return DistributedTensor.from_local(local.copy(), rows, (n, n))

    call = {"cholesky": lambda t: np.linalg.cholesky(t), "solve": lambda t: np.linalg.solve(t, b),
            "qr": lambda t: np.linalg.qr(t, mode="r"), "eigh": lambda t: np.linalg.eigh(t)}[op]
    in_layout = _in_layout(op, b, block)
    times, layout, cpu, layout_cpu, call_peak, inside, inside_cpu, inplace = [], [], [], [], [], [], [], []
    # one untimed call on a small matrix first: imports, BLAS handles and the grid's communicators
    small = 4 * block * comm.size
    ws = DistributedTensor.empty((small, small), rows)
    wr = ws.shard_slices[0]
    rows_of(wr.start, wr.stop, small, op in ("cholesky", "eigh"), out=ws._interior)
    if op == "solve":
        np.linalg.solve(ws, np.ones(small))
    else:
        {"cholesky": np.linalg.cholesky, "qr": lambda x: np.linalg.qr(x, mode="r"), "eigh": np.linalg.eigh}[op](ws)
    del ws
    for _ in range(reps):
        t = fresh()
        before = _status_kib("VmRSS") if _reset_peak() else None
        comm.Barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        out = call(t)
        cpu.append(comm.allreduce(time.process_time() - c0, op=MPI.MAX))
        grew = None if before is None else _status_kib("VmHWM") - before  # the call's own peak, its output in
        call_peak.append(comm.allreduce(grew, op=MPI.MAX) if before is not None else None)
        comm.Barrier()
        times.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        del out
        comm.Barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        c = to_cyclic(t, block=block)
        back = c.to_tensor(rows)
        layout_cpu.append(comm.allreduce(time.process_time() - c0, op=MPI.MAX))
        comm.Barrier()
        layout.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        del back
        comm.Barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        in_layout(c)  # the routine alone on the matrix already in the layout, in place (as ScaLAPACK's)
        inside_cpu.append(comm.allreduce(time.process_time() - c0, op=MPI.MAX))
        comm.Barrier()
        inside.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        del c, t
        if op == "cholesky":  # the whole call writing the factor into the input's blocks, as pdpotrf does
            t = fresh()
            comm.Barrier()
            t0 = time.perf_counter()
            dense.cholesky(t, overwrite_a=True)
            comm.Barrier()
            inplace.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
            del t
    peak = comm.allreduce(_maxrss_kib(), op=MPI.MAX)
    if comm.rank == 0:
        print("RESULT " + json.dumps({"side": "meshrt", "op": op, "n": n, "block": block, "times": times, "cpu": cpu,
                                      "layout": layout, "layout_cpu": layout_cpu, "maxrss_kib": peak,
                                      "inside": inside, "inside_cpu": inside_cpu, "inplace": inplace,
                                      "call_peak_kib": call_peak, "base_kib": base,
                                      "nprocs": comm.size, "version": getattr(meshrt, "__version__", "?")}),
              flush=True)


def _in_layout(op, b, block):
    """meshrt's routine on a `CyclicMatrix` already in the layout, overwriting it, as ScaLAPACK's
    ``pd*`` routines work (``solve``: the LU and the two triangular solves of ``b``)."""
    from meshrt.linalg import eigen, factor
    from meshrt.linalg.cyclic import to_cyclic

    def solve(c):
        perm, _ = factor.lu(c)
        rhs = to_cyclic(b.reshape((b.shape[0], 1)), block=block, grid=c.layout.grid)
        factor.permute_rows(rhs, perm)
        factor.triangular_solve(c, rhs, lower=True, unit=True)
        factor.triangular_solve(c, rhs, lower=False)

    def eigh(c):
        d, e, refl = eigen.tridiagonalize(c)
        eigen.eigenvectors(c, d, e, refl)

    return {"cholesky": factor.cholesky, "solve": solve, "qr": factor.qr, "eigh": eigh}[op]


def worker_numpy(op, n, reps):
    import numpy as np

    base = _maxrss_kib()
    b = rhs_of(0, n)
    times, cpu = [], []
    small = rows_of(0, 256, 256, True)  # an untimed call first (BLAS threads, LAPACK workspace)
    np.linalg.cholesky(small), np.linalg.solve(small, small[0]), np.linalg.qr(small, mode="r")
    for _ in range(reps):
        a = rows_of(0, n, n, op in ("cholesky", "eigh"))
        t0, c0 = time.perf_counter(), time.process_time()
        if op == "cholesky":
            out = np.linalg.cholesky(a)
        elif op == "solve":
            out = np.linalg.solve(a, b)
        elif op == "eigh":
            out = np.linalg.eigh(a)
        else:
            out = np.linalg.qr(a, mode="r")
        times.append(time.perf_counter() - t0)
        cpu.append((time.process_time() - c0) / 2)  # per BLAS thread
        del out, a
    print("RESULT " + json.dumps({"side": "numpy", "op": op, "n": n, "block": 0, "times": times, "cpu": cpu,
                                  "maxrss_kib": _maxrss_kib(), "base_kib": base}), flush=True)


# -- the orchestration ----------------------------------------------------------------------------------
def _env(threads, extra=None):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    env.update(extra or {})
    return env


def _results(text):
    return [json.loads(line[7:]) for line in text.splitlines() if line.startswith("RESULT {")]


def run_meshrt(args, op, block):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(mpiexec):
        mpiexec = shutil.which("mpiexec")
    cmd = [mpiexec, "-n", str(args.np), sys.executable, os.path.abspath(__file__), "--worker", "meshrt",
           "--op", op, "--n", str(args.n), "--block", str(block), "--reps", str(args.reps)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(1), timeout=args.timeout)
    res = _results(p.stdout)
    if p.returncode or not res:
        print(f"  meshrt {op} block {block}: failed (rc {p.returncode})\n{p.stderr[-2000:]}", flush=True)
        return None
    return res[0]


def run_numpy(args, op):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "numpy", "--op", op, "--n", str(args.n),
           "--reps", str(args.reps)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(2), timeout=args.timeout)
    res = _results(p.stdout)
    if p.returncode or not res:
        print(f"  numpy {op}: failed (rc {p.returncode})\n{p.stderr[-2000:]}", flush=True)
        return None
    return res[0]


def build_scalapack(args, tmp):
    """(executable, launcher, env) of the ScaLAPACK driver, or (None, reason)."""
    lib = args.scalapack_lib
    if not os.path.exists(lib):
        return None, f"{lib} not found (Debian: apt-get install libscalapack-mpich-dev)"
    exe = os.path.join(tmp, "scalapack_driver")
    src = os.path.join(HERE, "scalapack_driver.c")
    libdir = os.path.dirname(lib)
    libs = [lib, "-L" + libdir, "-l:liblapack.so.3", "-l:libblas.so.3"]
    mpicc = args.mpicc or shutil.which("mpicc.mpich")
    if mpicc:
        cmd = [mpicc, "-O2", "-o", exe, src] + libs
    else:
        inc = args.mpich_include or "/usr/include/x86_64-linux-gnu/mpich"
        cc = shutil.which("gcc") or shutil.which("cc")
        if not cc or not os.path.exists(os.path.join(inc, "mpi.h")):
            return None, ("no mpicc.mpich, and no C compiler with MPICH's mpi.h (--mpich-include; Debian: "
                          "apt-get install libmpich-dev)")
        mpich = os.path.join(libdir, "libmpich.so.12")
        cmd = [cc, "-O2", "-o", exe, src, "-I" + inc] + libs + [mpich]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return None, f"the driver did not build: {' '.join(cmd)}\n{p.stderr[-1500:]}"
    launcher = args.scalapack_mpiexec or shutil.which("mpiexec.mpich")
    if launcher and subprocess.run([launcher, "--version"], capture_output=True).returncode:
        launcher = None  # Debian's hydra without its libraries (libslurm)
    if not launcher:  # a Hydra of the pip MPICH starts MPICH programs of any build (the same PMI)
        launcher = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    extra = {}
    if args.blas_dir:
        extra["LD_LIBRARY_PATH"] = args.blas_dir + os.pathsep + os.environ.get("LD_LIBRARY_PATH", "")
    env = _env(1, extra)
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True, env=env).stdout
    blas = re.search(r"libblas\.so\.3 => (\S+)", ldd)
    blas = os.path.realpath(blas.group(1)) if blas else "?"
    core = _openblas_core(blas, env)
    return (exe, launcher, env, blas + (f" (OpenBLAS core {core})" if core else "")), None


def _openblas_core(path, env):
    """The kernels an OpenBLAS library picks on this CPU, as the driver's processes will (their environment:
    ``OPENBLAS_CORETYPE`` overrides), or None for another BLAS. An OpenBLAS older than the CPU falls back to
    generic kernels: Debian's 0.3.21 on a Sapphire Rapids host took "Prescott", 5x slower ``pdpotrf``, until
    ``OPENBLAS_CORETYPE=SkylakeX``."""
    code = ("import ctypes, sys; f = getattr(ctypes.CDLL(sys.argv[1]), 'openblas_get_corename', None); "
            "f and setattr(f, 'restype', ctypes.c_char_p); print(f().decode() if f else '')")
    try:
        out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def run_scalapack(args, built, op, block):
    exe, launcher, env, _ = built
    pr, pc = args.grid
    cmd = [launcher, "-n", str(args.np), exe, SCALAPACK[op], str(args.n), str(block), str(pr), str(pc),
           str(args.reps)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    lines = [dict(kv.split("=") for kv in line.split()[1:]) for line in p.stdout.splitlines()
             if line.startswith("RESULT ")]
    if p.returncode or not lines or any(int(x["info"]) for x in lines):
        print(f"  ScaLAPACK {op} block {block}: failed (rc {p.returncode})\n{p.stdout[-800:]}{p.stderr[-1500:]}", flush=True)
        return None
    return {"side": "scalapack", "op": op, "n": args.n, "block": block,
            "times": [float(x["seconds"]) for x in lines], "cpu": [float(x["cpu_seconds"]) for x in lines],
            "maxrss_kib": max(int(x["maxrss_kib"]) for x in lines)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--quick", action="store_true", help="N = 2048 (a check that everything runs)")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--grid", default=None, help="PRxPC of ScaLAPACK's grid (default: meshrt's default grid)")
    ap.add_argument("--blocks", default="64,128,256")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="jobs per side and block, taking turns with the other side (each --reps calls)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"of {','.join(ALL_OPS)} (eigh: N = 8192 takes minutes)")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--scalapack-lib", default="/usr/lib/x86_64-linux-gnu/libscalapack-mpich.so")
    ap.add_argument("--mpicc", default=None)
    ap.add_argument("--mpich-include", default=None)
    ap.add_argument("--scalapack-mpiexec", default=None)
    ap.add_argument("--blas-dir", default=os.environ.get("BENCH_SCALAPACK_BLAS_DIR"),
                    help="first on ScaLAPACK's LD_LIBRARY_PATH: a libblas.so.3/liblapack.so.3 (e.g. OpenBLAS)")
    ap.add_argument("--no-numpy", action="store_true")
    ap.add_argument("--json", default=None, help="write every result here")
    ap.add_argument("--worker", choices=("meshrt", "numpy"), help=argparse.SUPPRESS)
    ap.add_argument("--op", help=argparse.SUPPRESS)
    ap.add_argument("--block", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.n = 2048
    if args.worker == "meshrt":
        return worker_meshrt(args.op, args.n, args.block, args.reps)
    if args.worker == "numpy":
        return worker_numpy(args.op, args.n, args.reps)
    from meshrt.linalg.blockcyclic import default_grid

    args.grid = tuple(int(x) for x in args.grid.split("x")) if args.grid else default_grid(args.np)
    ops = [o for o in args.ops.split(",") if o]
    unknown = sorted(set(ops) - set(ALL_OPS))
    if unknown:
        ap.error(f"--ops: unknown {','.join(unknown)} (choose from {','.join(ALL_OPS)})")
    blocks = [int(b) for b in args.blocks.split(",")]
    print(f"N = {args.n} float64, {args.np} processes (grid {args.grid[0]}x{args.grid[1]}), blocks {blocks}, "
          f"median of {args.reps}; {time.strftime('%Y-%m-%d %H:%M')}; load {os.getloadavg()[0]:.2f}", flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        built, why = build_scalapack(args, tmp)
        if built is None:
            print(f"ScaLAPACK: skipped: {why}", flush=True)
        else:
            print(f"ScaLAPACK: {args.scalapack_lib}, launched by {built[1]}, BLAS {built[3]}", flush=True)
        for op in ops:
            for block in blocks:
                merged = {}
                for _ in range(args.rounds):  # the sides take turns: a slow phase of the machine hits both
                    r = run_meshrt(args, op, block)
                    if r:
                        merged["meshrt"] = _merge(merged.get("meshrt"), r)
                        print(f"  meshrt    {op:8s} block {block:4d}: {_fmt_times(r)}", flush=True)
                    if built is not None:
                        r = run_scalapack(args, built, op, block)
                        if r:
                            merged["scalapack"] = _merge(merged.get("scalapack"), r)
                            print(f"  ScaLAPACK {op:8s} block {block:4d}: {_fmt_times(r)}", flush=True)
                results.extend(merged.values())
            if not args.no_numpy:
                r = run_numpy(args, op)
                if r:
                    results.append(r)
                    print(f"  numpy     {op:8s} 1 process : {_fmt_times(r)}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    table(args, ops, results)


def _merge(into, r):
    """``r``'s calls added to ``into`` (the same side, routine and block); each round's medians kept."""
    r = dict(r, rounds=[{k: statistics.median(r[k]) for k in ("times", "cpu", "inside", "inplace") if r.get(k)}])
    if into is None:
        return r
    out = dict(into)
    for k, v in r.items():
        if isinstance(v, list) and isinstance(into.get(k), list):
            out[k] = into[k] + v
        elif k in ("maxrss_kib", "base_kib"):
            out[k] = max(into[k], v)
    return out


def _paired(m, s, key="times"):
    """The median over rounds of meshrt's round median over ScaLAPACK's of the same round (one block size:
    the two jobs of a round ran one after the other)."""
    if not m or not s or len(m["rounds"]) != len(s["rounds"]) or len(m["rounds"]) < 2:
        return None
    if key not in m["rounds"][0]:
        return None
    return statistics.median(a[key] / b["times" if key in ("inside", "inplace") else key]
                             for a, b in zip(m["rounds"], s["rounds"]))


def _fmt_times(r):
    ts, cs = r["times"], r["cpu"]
    return (" ".join(f"{t:.3f}" for t in ts) + f"  (median {statistics.median(ts):.3f} s; CPU "
            + " ".join(f"{t:.3f}" for t in cs) + ")")


def _med(r, key="times"):
    return statistics.median(r[key]) if r else float("nan")


def _best(results, side, op):
    """The block size with the least median CPU time (wall time on a shared machine measures the load)."""
    rs = [r for r in results if r["side"] == side and r["op"] == op]
    return min(rs, key=lambda r: _med(r, "cpu")) if rs else None


def table(args, ops, results):
    share = 8 * args.n * args.n / args.np / MIB
    nan = float("nan")
    print(f"\nN = {args.n}, {args.np} processes; seconds, median of {args.reps} at each side's best block (least "
          f"CPU); wall: elapsed, the slowest process; CPU: the largest process CPU time (numpy: per thread)")
    print(f"{'':9s} {'meshrt':>15s} {'':>7s} {'ScaLAPACK':>15s} {'':>7s} {'numpy 1p':>15s} "
          f"{'meshrt/ScaL':>11s} {'meshrt/numpy':>12s}")
    print(f"{'op':9s} {'wall':>7s} {'CPU':>7s} {'block':>7s} {'wall':>7s} {'CPU':>7s} {'block':>7s} {'wall':>7s} "
          f"{'CPU':>7s} {'wall':>5s} {'CPU':>5s} {'wall':>5s} {'CPU':>6s}  layout wall/CPU  in layout wall/CPU (/ScaL)")
    for op in ops:
        m, s, n = _best(results, "meshrt", op), _best(results, "scalapack", op), _best(results, "numpy", op)
        ratio = lambda x, y, k: _med(x, k) / _med(y, k) if x and y else nan
        print(f"{op:9s} {_med(m):7.2f} {_med(m, 'cpu'):7.2f} {m['block'] if m else '-':>7} {_med(s):7.2f} "
              f"{_med(s, 'cpu'):7.2f} {s['block'] if s else '-':>7} {_med(n):7.2f} {_med(n, 'cpu'):7.2f} "
              f"{ratio(m, s, 'times'):5.2f} {ratio(m, s, 'cpu'):5.2f} {ratio(m, n, 'times'):5.2f} "
              f"{ratio(m, n, 'cpu'):6.2f}  {_med(m, 'layout'):.2f}/{_med(m, 'layout_cpu'):.2f}"
              f"        {_med(m, 'inside'):.2f}/{_med(m, 'inside_cpu'):.2f} "
              f"({_med(m, 'inside') / _med(s) if m and s else nan:.2f}, "
              f"{_med(m, 'inside_cpu') / _med(s, 'cpu') if m and s else nan:.2f})")
    for op in ops:
        for m in sorted((r for r in results if r["side"] == "meshrt" and r["op"] == op), key=lambda r: r["block"]):
            s = next((r for r in results if r["side"] == "scalapack" and r["op"] == op and r["block"] == m["block"]),
                     None)
            pairs = [_paired(m, s, k) for k in ("times", "cpu", "inside", "inplace")]
            if all(v is not None for v in pairs[:3]):
                print(f"{op:9s} block {m['block']:4d}, paired by round ({len(m['rounds'])} rounds, median of each "
                      f"round's ratio): wall {pairs[0]:.2f}, CPU {pairs[1]:.2f}, in layout {pairs[2]:.2f}"
                      + (f", in place {pairs[3]:.2f}" if pairs[3] is not None else ""))
    for op in ops:
        m, s = _best(results, "meshrt", op), _best(results, "scalapack", op)
        if m and m.get("inplace"):
            print(f"{op:9s} in place (dense.cholesky(t, overwrite_a=True): the factor into the input's blocks, as "
                  f"pdpotrf), block {m['block']}: {_med(m, 'inplace'):.2f} s"
                  + (f", /ScaL {_med(m, 'inplace') / _med(s):.2f}" if s else ""))
    print(f"\npeak RSS per process over its share of the matrix ({share:.0f} MiB): meshrt (less the interpreter's "
          f"RSS before the matrix existed) / ScaLAPACK")
    for op in ops:
        m, s = _best(results, "meshrt", op), _best(results, "scalapack", op)
        mm = f"{m['maxrss_kib'] / 1024 / share:.2f} ({(m['maxrss_kib'] - m['base_kib']) / 1024 / share:.2f})" if m else "-"
        ss = f"{s['maxrss_kib'] / 1024 / share:.2f}" if s else "-"
        peaks = [x for x in (m or {}).get("call_peak_kib") or () if x is not None]
        own = (f"; the call's own peak above its input: {max(peaks) / 1024 / share:.2f} (the output's 1.00 in it)"
               if peaks else "")
        print(f"  {op:9s} meshrt {mm}  ScaLAPACK {ss}{own}")
    print("\nevery block size (median wall / CPU seconds):")
    for op in ops:
        for side in ("meshrt", "scalapack"):
            rs = sorted((r for r in results if r["side"] == side and r["op"] == op), key=lambda r: r["block"])
            if rs:
                print(f"  {op:9s} {side:9s} " + "  ".join(f"{r['block']}: {_med(r):.2f}/{_med(r, 'cpu'):.2f}"
                                                         for r in rs))


if __name__ == "__main__":
    sys.exit(main())
