"""Are `meshrt bench`'s raw mpi4py sides as fast as the plainest inline mpi4py loop?

    mpiexec -n 2 python bench/bench_baseline.py [--size 8] [--ops all_gather,...] [--json F]
    mpiexec -n 2 python bench/bench_baseline.py --inject-us 2 --inject-op all_gather   # must fail

For each collective, in one job: the raw case of ``meshrt bench OP`` (``Case.raw``,
a closure the bench calls), a minimal inline loop of the same mpi4py call (``for _ in
range(N): g.Allgather(x, np.empty(count * n))``, no function around it) and meshrt's
call, float64, 1-D mesh over all processes.  Each is a tight loop of ``--iters`` calls
after a barrier (IMB's method); the three loops rotate order round by round, a round's
time is the max over processes, and the result is the minimum over ``--rounds``
rounds (the run least disturbed by other jobs on the machine).

The bench calls every case through one Python call (``fn()``), meshrt's too; that call
is the method's, not the baseline's, so ``raw`` is reported less the time of calling a
no-op the same way (``call_us``).  ``ratio = (raw - call) / inline``; above ``--limit``
(1.1) the raw side does work the plain code does not, and the exit status is 1.

``--inject-us T --inject-op OP`` adds T us of busy work to OP's raw case, to show the
check catches a baseline that slow (``tests/test_bench.py`` runs both).
"""

import argparse
import json
import sys
import time

import numpy as np
from mpi4py import MPI

import meshrt.bench as B
from meshrt import Mesh

comm = MPI.COMM_WORLD
OPS = tuple(op for op in B.COLLECTIVES)


def inline_loops(op, g, count, dtype):
    """``loop(iters) -> seconds``: ``iters`` inline calls of OP's plain mpi4py code."""
    n, k = g.Get_size(), g.Get_rank()
    x = np.ones(count, dtype)
    cn = count * n
    clock = time.perf_counter
    SUM = MPI.SUM
    if op == "all_reduce":
        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Allreduce(x, np.empty(count, dtype), SUM)
            return clock() - t
    elif op == "reduce":
        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Reduce(x, np.empty(count, dtype) if k == 0 else None, SUM, 0)
            return clock() - t
    elif op == "reduce_scatter":
        m = count // n

        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Reduce_scatter_block(x, np.empty(m, dtype), SUM)
            return clock() - t
    elif op == "broadcast":
        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Bcast(x if k == 0 else np.empty(count, dtype), 0)
            return clock() - t
    elif op == "all_gather":
        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Allgather(x, np.empty(cn, dtype))
            return clock() - t
    elif op == "gather":
        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Gather(x, np.empty(cn, dtype) if k == 0 else None, 0)
            return clock() - t
    elif op == "scatter":
        xs = np.ones(cn, dtype) if k == 0 else None

        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Scatter(xs, np.empty(count, dtype), 0)
            return clock() - t
    elif op == "all_to_all":
        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Alltoall(x, np.empty(count, dtype))
            return clock() - t
    elif op == "all_slice":
        m = count // n

        def loop(iters):
            t = clock()
            for _ in range(iters):
                x[k * m:(k + 1) * m]
            return clock() - t
    elif op == "shift":
        dst, src = (k + 1) % n, (k - 1) % n

        def loop(iters):
            t = clock()
            for _ in range(iters):
                g.Sendrecv(x, dst, 0x7B1, np.empty(count, dtype), src, 0x7B1)
            return clock() - t
    elif op == "send_recv":
        peer = k ^ 1
        if peer >= n:
            def loop(iters):
                t = clock()
                for _ in range(iters):
                    pass
                return clock() - t
        elif k % 2 == 0:
            def loop(iters):
                t = clock()
                for _ in range(iters):
                    g.Send(x, peer, 0x7B2)
                    g.Recv(np.empty(count, dtype), peer, 0x7B2)
                return (clock() - t) / 2  # half the round trip, as the bench
        else:
            def loop(iters):
                t = clock()
                for _ in range(iters):
                    g.Recv(np.empty(count, dtype), peer, 0x7B2)
                    g.Send(x, peer, 0x7B2)
                return (clock() - t) / 2
    else:
        raise ValueError(f"--ops: {op!r} is not a collective; choose from {', '.join(OPS)}")
    return loop


def called(fn, scale=1.0):
    """``loop(iters) -> seconds``: ``iters`` calls of ``fn`` the way the bench makes them."""
    clock = time.perf_counter

    def loop(iters):
        t = clock()
        for _ in range(iters):
            fn()
        return (clock() - t) * scale
    return loop


def spin(us):
    """Busy work of about ``us`` microseconds (the injected slowdown)."""
    def work():
        t = time.perf_counter() + us * 1e-6
        while time.perf_counter() < t:
            pass
    return work


def measure(op, mesh, size, iters, rounds, inject=0.0):
    """Minimum over rounds of each loop's per-call seconds (max over processes per round)."""
    dtype = np.dtype(np.float64)
    case = B._collective_case(op, mesh, None, size, dtype, "sum")
    raw = case.raw
    if inject:
        work = spin(inject)

        def raw():  # noqa: F811 - the slowed baseline
            work()
            return case.raw()
    g = mesh.group(None)
    count = max(1, size // 8)
    if op in ("reduce_scatter", "all_to_all", "all_slice"):
        count = -(-count // g.Get_size()) * g.Get_size()
    loops = {"raw": called(raw, case.scale), "inline": inline_loops(op, g, count, dtype),
             "meshrt": called(case.meshrt, case.scale), "call": called(lambda: None)}
    names = list(loops)
    best = dict.fromkeys(names, float("inf"))
    for name in names:  # first calls: plans, communicators, first-touch pages
        loops[name](max(1, iters // 10))
        comm.Barrier()
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            comm.Barrier()
            t = comm.allreduce(loops[name](iters) / iters, op=MPI.MAX)
            best[name] = min(best[name], t)
    if case.free is not None:
        case.free()
    us = {k: v * 1e6 for k, v in best.items()}
    us["ratio"] = (us["raw"] - us["call"]) / us["inline"] if us["inline"] > 0 else float("nan")
    return us


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="8", help="bytes per process (default 8)")
    p.add_argument("--ops", default=",".join(OPS), help="collectives, comma-separated (default all)")
    p.add_argument("--iters", type=int, default=100, help="calls per timed loop (default 100)")
    p.add_argument("--rounds", type=int, default=100, help="rounds; the minimum is kept (default 100)")
    p.add_argument("--limit", type=float, default=1.1, help="largest ratio that passes (default 1.1)")
    p.add_argument("--inject-us", type=float, default=0.0, help="busy work added to --inject-op's raw case")
    p.add_argument("--inject-op", default=None, help="the op whose raw case gets --inject-us")
    p.add_argument("--json", default=None, help="write {op: {raw, inline, meshrt, call, ratio}} to this file")
    a = p.parse_args(argv)
    ops = [s for s in a.ops.split(",") if s]
    for op in ops + ([a.inject_op] if a.inject_op else []):
        if op not in OPS:
            p.error(f"--ops/--inject-op: {op!r} is not a collective; choose from {', '.join(OPS)}")
    size = B.parse_size(a.size)
    mesh = Mesh((comm.Get_size(),), comm=comm)
    res = {}
    if comm.rank == 0:
        print(f"# raw case vs inline mpi4py loop, {size} B float64, {comm.size} processes, "
              f"{MPI.Get_library_version().splitlines()[0].strip()}")
        print(f"# min over {a.rounds} rounds of {a.iters} calls; ratio = (raw - call) / inline, limit {a.limit}")
        print(f"{'#op':<16}{'raw_us':>9}{'call_us':>9}{'inline_us':>11}{'meshrt_us':>11}{'ratio':>8}")
    for op in ops:
        r = measure(op, mesh, size, a.iters, a.rounds, a.inject_us if op == a.inject_op else 0.0)
        res[op] = r
        if comm.rank == 0:
            flag = "" if r["ratio"] <= a.limit else "  SLOW BASELINE"
            print(f"{op:<16}{r['raw']:>9.3f}{r['call']:>9.3f}{r['inline']:>11.3f}{r['meshrt']:>11.3f}"
                  f"{r['ratio']:>8.3f}{flag}", flush=True)
    mesh.free()
    if comm.rank == 0 and a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if all(r["ratio"] <= a.limit for r in res.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
