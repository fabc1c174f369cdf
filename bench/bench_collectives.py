"""meshrt collectives against the same operation written directly with mpi4py.

    mpiexec -n 2 python bench/bench_collectives.py [--sizes 8,64K,1M,16M] [--ops all_reduce,...]

Per op and size: the mean time per call (max over processes, best of several
rounds that alternate meshrt and raw) of meshrt and of raw mpi4py buffer methods on the same
buffers, and their ratio; then a generic (user function) all_reduce of 1 MiB
float64 against ``MPI.Op.Create`` with a Python callback.

Rows named ``op(out=)`` write into a preallocated result like the raw call
does; the plain rows allocate a new result each call.  With MPICH here a
fresh receive buffer of 1 MiB or more costs about a millisecond per call even
for raw mpi4py, so compare the ``out=`` rows for the runtime's own overhead.
"""

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import meshrt.collectives as C
from meshrt import Mesh

comm = MPI.COMM_WORLD


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1].upper()] if text[-1].upper() in mult else int(text)


def timeit(fn, iters):
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    dt = (time.perf_counter() - t) / iters
    return comm.allreduce(dt, op=MPI.MAX)


def compare(f_meshrt, f_raw, nbytes, rounds=None):
    """Best-of-rounds time per call of each, timed in alternating order round by round
    (short rounds, many of them for small messages: the best of them filters out
    other load on the machine)."""
    iters = max(3, min(1000, int(2e8 // max(nbytes, 1) // 40)))
    if rounds is None:
        rounds = 20 if nbytes <= 1 << 16 else 6
    f_meshrt(), f_raw()  # warm-up: plans, communicators, first-touch pages
    best_m = best_r = float("inf")
    for k in range(rounds):
        if k % 2:
            best_r = min(best_r, timeit(f_raw, iters))
            best_m = min(best_m, timeit(f_meshrt, iters))
        else:
            best_m = min(best_m, timeit(f_meshrt, iters))
            best_r = min(best_r, timeit(f_raw, iters))
    return best_m, best_r


def cases(mesh, nbytes):
    """(name, meshrt call, raw mpi4py call) on the same buffers for ``nbytes`` of float64 per process."""
    g = mesh.group(None)
    n, me = g.Get_size(), g.Get_rank()
    count = max(1, nbytes // 8)
    x = np.random.RandomState(me).rand(count)
    out = np.empty_like(x)
    big = np.empty(count * n)
    piece = np.empty(count // n if count >= n else 1)
    xs = np.tile(x, n)
    other = (me + 1) % n, (me - 1) % n
    byte = MPI.BYTE
    yield "all_reduce", lambda: C.all_reduce(x, mesh), lambda: g.Allreduce(x, out, MPI.SUM)
    yield "all_reduce(out=)", lambda: C.all_reduce(x, mesh, out=out), lambda: g.Allreduce(x, out, MPI.SUM)
    yield "reduce", lambda: C.reduce(x, mesh, None, "sum", 0), lambda: g.Reduce(x, out if me == 0 else None, MPI.SUM, 0)
    yield "broadcast", lambda: C.broadcast(x if me == 0 else out, mesh, None, 0), \
        lambda: g.Bcast(x if me == 0 else out, 0)
    yield "all_gather", lambda: C.all_gather(x, mesh, None, 0, sizes=count), lambda: g.Allgather(x, big)
    yield "all_gather(auto)", lambda: C.all_gather(x, mesh, None, 0), lambda: g.Allgather(x, big)
    yield "all_gather(out=)", lambda: C.all_gather(x, mesh, None, 0, sizes=count, out=big), \
        lambda: g.Allgather(x, big)
    yield "gather", lambda: C.gather(x, mesh, None, 0, 0, sizes=count), \
        lambda: g.Gather([x, x.nbytes, byte], [big, x.nbytes, byte] if me == 0 else None, 0)
    if count >= n:
        yield "scatter", lambda: C.scatter(xs, mesh, None, 0, 0), \
            lambda: g.Scatter([xs, x.nbytes, byte] if me == 0 else None, [out, x.nbytes, byte], 0)
        yield "reduce_scatter", lambda: C.reduce_scatter(x, mesh, None, "sum", 0), \
            lambda: g.Reduce_scatter_block(x, piece, MPI.SUM)
        yield "reduce_scatter(out=)", lambda: C.reduce_scatter(x, mesh, None, "sum", 0, out=piece), \
            lambda: g.Reduce_scatter_block(x, piece, MPI.SUM)
        pb = x.nbytes // n
        yield "all_to_all", lambda: C.all_to_all(x, mesh, None, 0, 0), \
            lambda: g.Alltoall([x, pb, byte], [out, pb, byte])
    yield "shift", lambda: C.shift(x, mesh, None, 0, 1, rotate=True), \
        lambda: g.Sendrecv(x, other[0], 0x3E5, out, other[1], 0x3E5)
    yield "all_reduce(wait=False)", lambda: C.all_reduce(x, mesh, wait=False).wait(), \
        lambda: g.Iallreduce(x, out, MPI.SUM).Wait()


def absmax(a, b):
    return max(abs(a), abs(b))


def bench_generic(mesh, nbytes=1 << 20):
    """meshrt's native op for the elementwise ``absmax`` against two Python callbacks:
    one applying that same elementwise function (what a user has without meshrt),
    one hand-vectorized with numpy (the best a user can write for this function)."""
    g = mesh.group(None)
    x = np.random.RandomState(g.Get_rank()).rand(nbytes // 8) - 0.5
    out, res = np.empty_like(x), np.empty_like(x)  # both sides reuse their result buffers
    elementwise = np.frompyfunc(absmax, 2, 1)

    def applied(inbuf, inoutbuf, datatype):
        a = np.frombuffer(inbuf, np.float64)
        b = np.frombuffer(inoutbuf, np.float64)
        b[...] = elementwise(a, b)

    def vectorized(inbuf, inoutbuf, datatype):
        a = np.frombuffer(inbuf, np.float64)
        b = np.frombuffer(inoutbuf, np.float64)
        np.maximum(np.abs(a), np.abs(b), out=b)

    ops = [MPI.Op.Create(applied, commute=True), MPI.Op.Create(vectorized, commute=True)]
    try:
        want = np.empty_like(x)
        g.Allreduce(x, want, ops[1])
        assert np.array_equal(C.all_reduce(x, mesh, None, absmax), want)
        def native():
            return C.all_reduce(x, mesh, None, absmax, out=res)

        t_m, t_applied = compare(native, lambda: g.Allreduce(x, out, ops[0]), nbytes, rounds=2)
        _, t_vectorized = compare(native, lambda: g.Allreduce(x, out, ops[1]), nbytes)
    finally:
        for op in ops:
            op.Free()
    return t_m, t_applied, t_vectorized


def fmt_size(b):
    for unit, m in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= m:
            return f"{b // m} {unit}"
    return f"{b} B"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,64K,1M,16M")
    ap.add_argument("--ops", default="")
    ap.add_argument("--no-generic", action="store_true")
    args = ap.parse_args(argv)
    mesh = Mesh((-1,))
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    ops = set(filter(None, args.ops.split(",")))
    rows = []
    for nbytes in sizes:
        for name, fm, fr in cases(mesh, nbytes):
            if ops and name not in ops:
                continue
            tm, tr = compare(fm, fr, nbytes)
            rows.append((name, nbytes, tm, tr))
    if comm.rank == 0:
        print(f"# meshrt vs raw mpi4py, {comm.size} processes, float64, {MPI.Get_library_version().splitlines()[0]}")
        print(f"{'op':<24}{'size':>9}{'meshrt us':>12}{'mpi4py us':>12}{'added us':>10}{'ratio':>8}")
        for name, nbytes, tm, tr in rows:
            print(f"{name:<24}{fmt_size(nbytes):>9}{tm * 1e6:12.2f}{tr * 1e6:12.2f}{(tm - tr) * 1e6:10.2f}{tm / tr:8.3f}")
    if not args.no_generic:
        tm, ta, tv = bench_generic(mesh)
        if comm.rank == 0:
            print(f"\ngeneric all_reduce, 1 MiB float64, f(a, b) = max(|a|, |b|): native op {tm * 1e3:.3f} ms")
            print(f"  MPI.Op.Create, Python callback applying f elementwise:  {ta * 1e3:8.3f} ms  "
                  f"(native {ta / tm:.1f}x faster)")
            print(f"  MPI.Op.Create, Python callback hand-vectorized in numpy: {tv * 1e3:8.3f} ms  "
                  f"(native {tv / tm:.1f}x faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
