"""meshrt collectives against the same operation written directly with mpi4py.

    mpiexec -n 2 python bench/bench_collectives.py [--sizes 8,64K,1M,16M] [--ops all_reduce,...]
    mpiexec -n 2 python bench/bench_collectives.py --fresh --sizes 1M,16M   # new result vs reused
    mpiexec -n 2 python bench/bench_collectives.py --check-cost   # an always-on agreement check
    python bench/bench_collectives.py --overhead   # Python work per call, MPI stubbed out (serial)

Per op and size: the mean time per call (max over processes, best of several
rounds that alternate meshrt and raw) of meshrt and of raw mpi4py buffer methods on the same
buffers, and their ratio; then a generic (user function) all_reduce of 1 MiB
float64 against ``MPI.Op.Create`` with a Python callback.

Each row names the meshrt call form it measures.  Rows that make a new
result each call are compared with raw code that does too (``np.empty`` then
the buffer method, as a user writes it); ``(out=)`` rows reuse a result on
both sides.  A fresh result costs page faults only if glibc returns freed
blocks to the OS, which meshrt's import prevents (``meshrt/_malloc.py``; run
with ``MESHRT_MALLOC=0`` to see the difference).
"""

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import meshrt.collectives.common as _common
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
    a, b = f_meshrt(), f_raw()  # warm-up: plans, communicators, first-touch pages
    if isinstance(b, np.ndarray) and not np.array_equal(a, b):  # (raw calls into out= return None)
        raise AssertionError("meshrt and the raw code disagree: the comparison would not be fair")
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
    """(name, meshrt call, plain mpi4py + numpy call doing the same job) for ``nbytes`` of float64
    per process, in every spelling README and SPEC show.  Where meshrt makes a new result the raw
    side makes one too (``np.empty``, as a user would); ``(out=)`` rows reuse one on both sides."""
    g = mesh.group(None)
    n, me = g.Get_size(), g.Get_rank()
    count = max(1, nbytes // 8)
    x = np.random.RandomState(me).rand(count)
    out = np.empty_like(x)
    big = np.empty(count * n)
    piece = np.empty(count // n if count >= n else 1)
    xs = np.tile(x, n)
    other = (me + 1) % n, (me - 1) % n
    empty, SUM = np.empty, MPI.SUM
    bx = x if me == 0 else np.empty_like(x)  # broadcast: the root's data, the others' shape

    def raw_allreduce():
        y = empty(count)
        g.Allreduce(x, y, SUM)
        return y

    def raw_iallreduce():
        y = empty(count)
        g.Iallreduce(x, y, SUM).Wait()
        return y

    x32 = x.astype(np.float32)

    def raw_cast_allreduce():
        y = empty(count)
        g.Allreduce(x32.astype(np.float64), y, SUM)
        return y

    def raw_average():
        y = empty(count)
        g.Allreduce(x, y, SUM)
        y /= n
        return y

    def raw_reduce():
        y = empty(count) if me == 0 else None
        g.Reduce(x, y, SUM, 0)
        return y

    def raw_bcast():
        y = bx if me == 0 else empty(count)
        g.Bcast(y, 0)
        return y

    def raw_allgather():
        y = empty(count * n)
        g.Allgather(x, y)
        return y

    def raw_gather():
        y = empty(count * n) if me == 0 else None
        g.Gather(x, y, 0)
        return y

    def raw_scatter():
        y = empty(count)
        g.Scatter(xs if me == 0 else None, y, 0)
        return y

    def raw_reduce_scatter():
        y = empty(count // n)
        g.Reduce_scatter_block(x, y, SUM)
        return y

    def raw_alltoall():
        y = empty(count)
        g.Alltoall(x, y)
        return y

    def raw_shift():
        y = empty(count)
        g.Sendrecv(x, other[0], 0x3E5, y, other[1], 0x3E5)
        return y

    peer = me ^ 1  # ping-pong between in-group ranks 0-1, 2-3, ...

    def raw_pingpong():
        if peer >= n:
            return None
        if me % 2 == 0:
            g.Send(x, peer, 0x3E5)
            y = empty(count)
            g.Recv(y, peer, 0x3E5)
        else:
            y = empty(count)
            g.Recv(y, peer, 0x3E5)
            g.Send(x, peer, 0x3E5)
        return y

    def meshrt_pingpong():
        if peer >= n:
            return None
        if me % 2 == 0:
            C.send(x, mesh, None, peer)
            return C.recv(x, mesh, None, peer)
        y = C.recv(x, mesh, None, peer)
        C.send(x, mesh, None, peer)
        return y

    yield "all_reduce(x, mesh)", lambda: C.all_reduce(x, mesh), raw_allreduce
    yield "all_reduce(x, mesh, [0], 'sum')", lambda: C.all_reduce(x, mesh, [0], "sum"), raw_allreduce
    yield "all_reduce(out=)", lambda: C.all_reduce(x, mesh, out=out), lambda: g.Allreduce(x, out, SUM)
    yield "all_reduce(wait=False)", lambda: C.all_reduce(x, mesh, wait=False).wait(), raw_iallreduce
    yield "all_reduce(x32, mesh, dtype=float64)", lambda: C.all_reduce(x32, mesh, dtype=np.float64), \
        raw_cast_allreduce
    yield "all_reduce(x, mesh, None, 'average')", lambda: C.all_reduce(x, mesh, None, "average"), raw_average
    yield "reduce(x, mesh)", lambda: C.reduce(x, mesh), raw_reduce
    yield "reduce(x, mesh, [0], 'sum', [0])", lambda: C.reduce(x, mesh, [0], "sum", [0]), raw_reduce
    yield "broadcast(x, mesh)", lambda: C.broadcast(bx, mesh), raw_bcast
    yield "broadcast(x, mesh, [0], root=[0])", lambda: C.broadcast(bx, mesh, [0], root=[0]), raw_bcast
    yield "broadcast(x, mesh, (0,), (0,))", lambda: C.broadcast(bx, mesh, (0,), (0,)), raw_bcast
    yield "all_gather(x, mesh, gather_axis=0)", lambda: C.all_gather(x, mesh, gather_axis=0), raw_allgather
    yield "all_gather(x, mesh, [0], 0)", lambda: C.all_gather(x, mesh, [0], 0), raw_allgather
    yield "all_gather(sizes=[...])", lambda: C.all_gather(x, mesh, [0], 0, sizes=[count] * n), raw_allgather
    yield "all_gather(out=)", lambda: C.all_gather(x, mesh, out=big), lambda: g.Allgather(x, big)
    yield "gather(x, mesh)", lambda: C.gather(x, mesh), raw_gather
    yield "gather(x, mesh, [0], 0, [0])", lambda: C.gather(x, mesh, [0], 0, [0]), raw_gather
    if count >= n:
        yield "scatter(x, mesh)", lambda: C.scatter(xs, mesh), raw_scatter
        yield "scatter(x, mesh, [0], 0, [0])", lambda: C.scatter(xs, mesh, [0], 0, [0]), raw_scatter
        yield "reduce_scatter(x, mesh)", lambda: C.reduce_scatter(x, mesh), raw_reduce_scatter
        yield "reduce_scatter(out=)", lambda: C.reduce_scatter(x, mesh, out=piece), \
            lambda: g.Reduce_scatter_block(x, piece, SUM)
        yield "all_to_all(x, mesh)", lambda: C.all_to_all(x, mesh), raw_alltoall
        yield "all_to_all(x, mesh, [0], 0, 0)", lambda: C.all_to_all(x, mesh, [0], 0, 0), raw_alltoall
        m = count // n
        yield "all_slice(x, mesh, [0], 0)", lambda: C.all_slice(x, mesh, [0], 0), \
            lambda: x[me * m:(me + 1) * m]
    yield "shift(x, mesh, [0], 0, 1, rotate=True)", lambda: C.shift(x, mesh, [0], 0, 1, rotate=True), raw_shift
    yield "send/recv ping-pong", meshrt_pingpong, raw_pingpong


def fresh_cases(mesh, nbytes):
    """(name, meshrt making a new result each call, the same job into a reused result): what a
    fresh result costs.  ``out=`` where meshrt has it, else raw mpi4py into a preallocated buffer;
    for reshard and DistributedTensor.gather a new tensor against ``reshard(out=)`` and a raw
    ``Allgather`` into a reused buffer."""
    from meshrt import DistributedTensor, Sharding

    g = mesh.group(None)
    n, me = g.Get_size(), g.Get_rank()
    count = max(n, nbytes // 8 // n * n)
    x = np.random.RandomState(me).rand(count)
    out, big, piece = np.empty_like(x), np.empty(count * n), np.empty(count // n)
    xs = np.tile(x, n)
    SUM = MPI.SUM
    yield "all_reduce", lambda: C.all_reduce(x, mesh), lambda: C.all_reduce(x, mesh, out=out)

    def raw_fresh_allreduce():
        y = np.empty_like(x)
        g.Allreduce(x, y, SUM)
        return y

    def raw_fresh_allgather():
        y = np.empty(count * n)
        g.Allgather(x, y)
        return y

    # what a fresh result costs plain mpi4py code: the floor for the two rows above and below
    yield "raw-mpi4py-Allreduce", raw_fresh_allreduce, lambda: g.Allreduce(x, out, SUM)
    yield "raw-mpi4py-Allgather", raw_fresh_allgather, lambda: g.Allgather(x, big)
    yield "all_gather", lambda: C.all_gather(x, mesh, gather_axis=0), lambda: C.all_gather(x, mesh, out=big)
    yield "reduce_scatter", lambda: C.reduce_scatter(x, mesh), lambda: C.reduce_scatter(x, mesh, out=piece)
    yield "reduce", lambda: C.reduce(x, mesh), lambda: g.Reduce(x, out if me == 0 else None, SUM, 0)
    yield "broadcast", lambda: C.broadcast(x, mesh), lambda: g.Bcast(x if me == 0 else out, 0)
    yield "gather", lambda: C.gather(x, mesh), lambda: g.Gather(x, big if me == 0 else None, 0)
    yield "scatter", lambda: C.scatter(xs, mesh), lambda: g.Scatter(xs if me == 0 else None, out, 0)
    yield "all_to_all", lambda: C.all_to_all(x, mesh), lambda: g.Alltoall(x, out)
    yield "shift", lambda: C.shift(x, mesh, None, 0, 1, rotate=True), \
        lambda: g.Sendrecv(x, (me + 1) % n, 0x3E5, out, (me - 1) % n, 0x3E5)
    # a square float64 tensor of about n * nbytes in all, rows -> columns
    side = max(n, int((count * n) ** 0.5) // n * n)
    rows, cols = Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]])
    t = DistributedTensor.from_global(np.arange(side * side, dtype=np.float64).reshape(side, side), rows)
    u = DistributedTensor.empty((side, side), cols)
    yield "DistributedTensor.reshard", lambda: t.reshard(cols), lambda: t.reshard(cols, out=u)
    blk = t.interior.size
    whole = np.empty(blk * n)
    yield "DistributedTensor.gather", lambda: t.gather(), lambda: g.Allgather(t.interior, whole)


class _NoMPI:
    """A communicator of two whose every method does nothing: what is left is Python."""

    def __getattr__(self, name):
        return _nothing

    def Get_size(self):
        return 2

    def Get_rank(self):
        return 0


def _nothing(*args, **kwargs):
    return None


def python_overhead(spellings=None, reps=7, calls=20000):
    """Per-call Python work of each call form at 8 B, MPI calls replaced by no-ops on both sides
    (meshrt's group faked as two processes), in CPU time of this thread: it stays meaningful on a
    loaded machine, where wall-clock latencies of a few microseconds do not.  Serial."""
    stub = _NoMPI()
    mesh = Mesh((1,), comm=MPI.COMM_SELF)
    real_new_group = _common._new_group

    def new_group(*args):
        grp = real_new_group(*args)
        grp.comm, grp.size, grp.rank = stub, 2, 0
        return grp

    _common._new_group = new_group
    try:
        x, xs, out, big = np.ones(1), np.ones(2), np.empty(1), np.empty(2)
        empty, SUM, g = np.empty, MPI.SUM, stub

        def new1():
            y = empty(1)
            g.Allreduce(x, y, SUM)
            return y

        def new2():
            y = empty(2)
            g.Allgather(x, y)
            return y

        forms = [
            ("all_reduce(x, mesh)", lambda: C.all_reduce(x, mesh), new1),
            ("all_reduce(x, mesh, [0], 'sum')", lambda: C.all_reduce(x, mesh, [0], "sum"), new1),
            ("all_reduce(out=)", lambda: C.all_reduce(x, mesh, out=out), lambda: g.Allreduce(x, out, SUM)),
            ("reduce(x, mesh, [0], 'sum', [0])", lambda: C.reduce(x, mesh, [0], "sum", [0]), new1),
            ("broadcast(x, mesh)", lambda: C.broadcast(x, mesh), lambda: g.Bcast(x, 0)),
            ("broadcast(x, mesh, [0], root=[0])", lambda: C.broadcast(x, mesh, [0], root=[0]),
             lambda: g.Bcast(x, 0)),
            ("all_gather(x, mesh, gather_axis=0)", lambda: C.all_gather(x, mesh, gather_axis=0), new2),
            ("all_gather(x, mesh, [0], 0, sizes=[1, 1])", lambda: C.all_gather(x, mesh, [0], 0, sizes=[1, 1]),
             new2),
            ("gather(x, mesh, [0], 0, [0])", lambda: C.gather(x, mesh, [0], 0, [0]), new2),
            ("scatter(x, mesh, [0], 0, [0])", lambda: C.scatter(xs, mesh, [0], 0, [0]), new1),
            ("reduce_scatter(x, mesh)", lambda: C.reduce_scatter(xs, mesh), new1),
            ("all_to_all(x, mesh)", lambda: C.all_to_all(xs, mesh), new2),
            ("all_slice(x, mesh, [0], 0)", lambda: C.all_slice(xs, mesh, [0], 0), lambda: xs[0:1]),
            ("shift(x, mesh, [0], 0, 1, rotate=True)", lambda: C.shift(x, mesh, [0], 0, 1, rotate=True), new1),
        ]
        clock = time.thread_time
        rows = []
        for name, fm, fr in forms:
            if spellings and name.split("(")[0] not in spellings:
                continue
            fm(), fr()
            best = [float("inf"), float("inf")]
            for rep in range(reps):
                for side in ((0, 1) if rep % 2 else (1, 0)):
                    f = (fm, fr)[side]
                    t = clock()
                    for _ in range(calls):
                        f()
                    best[side] = min(best[side], (clock() - t) / calls)
            rows.append((name, best[0], best[1]))
        return rows
    finally:
        _common._new_group = real_new_group
        _common._groups.clear()
        _common._fast.clear()
        mesh.free()


def bench_check_cost(mesh):
    """What an always-on agreement check of op and reduction kind would add to each call: the
    cheapest one is a precomputed 64-bit fingerprint and its negation in one 16-byte MAX
    ``Allreduce`` (everyone agrees iff max(fp) == fp and max(-fp) == -fp).  Returns the time per
    call of ``all_reduce`` of 8 B without and with it."""
    g = mesh.group(None)
    x = np.ones(1)
    fp = np.array([0x5EED, -0x5EED], np.int64)
    seen = np.empty_like(fp)
    MAX = MPI.MAX

    def checked():
        g.Allreduce(fp, seen, MAX)
        if seen[0] != fp[0] or seen[1] != fp[1]:
            raise AssertionError("disagree")
        return C.all_reduce(x, mesh)

    return compare(lambda: C.all_reduce(x, mesh), checked, 8, rounds=30)


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

        # each ratio from its own comparison: native timed between 40 ms Python callbacks is not
        # native timed between numpy ones (the first read 2x slower here)
        t_m1, t_applied = compare(native, lambda: g.Allreduce(x, out, ops[0]), nbytes, rounds=2)
        t_m2, t_vectorized = compare(native, lambda: g.Allreduce(x, out, ops[1]), nbytes)
    finally:
        for op in ops:
            op.Free()
    return min(t_m1, t_m2), t_applied / t_m1, t_vectorized / t_m2


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
    ap.add_argument("--overhead", action="store_true",
                    help="instead: meshrt's Python work per call with MPI stubbed out (robust under load)")
    ap.add_argument("--check-cost", action="store_true",
                    help="instead: the cost of an always-on op/reduction-kind agreement check")
    ap.add_argument("--fresh", action="store_true",
                    help="instead: a new result each call against a reused one (malloc thresholds)")
    args = ap.parse_args(argv)
    mesh = Mesh((-1,))
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    ops = set(filter(None, args.ops.split(",")))
    if args.overhead:
        if comm.rank == 0:
            print("# Python work per call, MPI replaced by no-ops on both sides (CPU time, best of 7)")
            print(f"{'call':<44}{'meshrt_ns':>10}{'raw_ns':>8}{'added_ns':>9}")
            for name, tm, tr in python_overhead(ops):
                print(f"{name:<44}{tm * 1e9:10.0f}{tr * 1e9:8.0f}{(tm - tr) * 1e9:9.0f}")
        return 0
    if args.check_cost:
        plain, checked = bench_check_cost(mesh)
        if comm.rank == 0:
            print(f"all_reduce 8 B: {plain * 1e6:.2f} us; with an always-on op/kind fingerprint "
                  f"(16-byte MAX Allreduce): {checked * 1e6:.2f} us (+{(checked - plain) * 1e6:.2f} us per call)")
        return 0
    if args.fresh:
        rows = []
        for nbytes in sizes:
            for name, fm, fr in fresh_cases(mesh, nbytes):
                if not ops or name in ops:
                    rows.append((name, nbytes) + compare(fm, fr, nbytes, rounds=6))
        if comm.rank == 0:
            from meshrt.runtime import malloc as _malloc

            print(f"# new result each call vs reused, {comm.size} processes; "
                  f"malloc: {_malloc.reason} {_malloc.applied}")
            print(f"{'op':<28}{'size':>9}{'new_us':>11}{'reused_us':>11}{'ratio':>7}")
            for name, nbytes, tm, tr in rows:
                print(f"{name:<28}{fmt_size(nbytes):>9}{tm * 1e6:11.1f}{tr * 1e6:11.1f}{tm / tr:7.3f}")
        return 0
    rows = []
    for nbytes in sizes:
        for name, fm, fr in cases(mesh, nbytes):
            if ops and name.split("(")[0] not in ops and name not in ops:
                continue
            tm, tr = compare(fm, fr, nbytes)
            rows.append((name, nbytes, tm, tr))
    if comm.rank == 0:
        print(f"# meshrt vs raw mpi4py, {comm.size} processes, float64, {MPI.Get_library_version().splitlines()[0]}")
        print(f"{'call':<42}{'size':>9}{'meshrt_us':>11}{'raw_us':>9}{'added_us':>10}{'ratio':>7}")
        for name, nbytes, tm, tr in rows:
            print(f"{name:<42}{fmt_size(nbytes):>9}{tm * 1e6:11.2f}{tr * 1e6:9.2f}{(tm - tr) * 1e6:10.2f}"
                  f"{tm / tr:7.3f}")
    if not args.no_generic:
        tm, ra, rv = bench_generic(mesh)
        if comm.rank == 0:
            print(f"\ngeneric all_reduce, 1 MiB float64, f(a, b) = max(|a|, |b|): native op {tm * 1e3:.3f} ms")
            print(f"  vs MPI.Op.Create, Python callback applying f elementwise:  native {ra:.1f}x faster")
            print(f"  vs MPI.Op.Create, Python callback hand-vectorized in numpy: native {rv:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
