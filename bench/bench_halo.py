"""Halo exchange: meshrt vs plain mpi4py + numpy, and face packing vs numpy.

    mpiexec -n 2 python bench/bench_halo.py [--n 4096] [--n3 256] [--reps 7] [--iters 200]

Cases (issue 4): a 2-D n x n float64 array split over the processes on dim 0
(contiguous rows) and on dim 1 (strided columns), halo width 1, non-periodic;
compared with (a) tuned plain mpi4py: persistent requests on preallocated
buffers, numpy copies in and out, and (b) naive ``Sendrecv`` with temporaries.
Then packing one face on the last axis of an n3**3 float64 block (GB/s of
face bytes). Times are per update: the slowest process's mean over
``--iters`` updates, best of ``--reps`` repetitions, after an untimed warm-up.
"""

import argparse
import time

import numpy as np
from mpi4py import MPI

from meshrt.halo import HaloExchange
from meshrt.mesh import Mesh
from meshrt.sharding.spec import Sharding

try:
    from meshrt._halo import CopyTable
except ImportError:  # pragma: no cover
    CopyTable = None

comm = MPI.COMM_WORLD


def timeit(fn, iters, reps, warmup=50):
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        t = (time.perf_counter() - t0) / iters
        best = min(best, comm.allreduce(t, op=MPI.MAX))
    return best


def plain_tuned(x, dim, dtype):
    """Persistent requests on preallocated contiguous buffers; numpy copies."""
    r, p = comm.rank, comm.size
    n = x.shape[dim]
    faces = []  # (send view, recv view, peer, send tag, recv tag)
    if r > 0:
        faces.append((np.take(x, [1], dim), (r - 1, 1, 0), 1, 0))
    if r < p - 1:
        faces.append((np.take(x, [n - 2], dim), (r + 1, 0, 1), n - 2, n - 1))
    idx = [slice(None)] * x.ndim
    reqs, copies_in, copies_out = [], [], []
    for buf, (peer, stag, rtag), src, dst in faces:
        sbuf = np.empty_like(buf)
        rbuf = np.empty_like(buf)
        s_ix = list(idx); s_ix[dim] = slice(src, src + 1)
        d_ix = list(idx); d_ix[dim] = slice(dst, dst + 1)
        reqs.append(comm.Recv_init(rbuf, peer, rtag))
        reqs.append(comm.Send_init(sbuf, peer, stag))
        copies_in.append((sbuf, x[tuple(s_ix)]))
        copies_out.append((x[tuple(d_ix)], rbuf))

    def run():
        for d, s in copies_in:
            np.copyto(d, s)
        MPI.Prequest.Startall(reqs)
        MPI.Request.Waitall(reqs)
        for d, s in copies_out:
            np.copyto(d, s)

    return run, reqs


def plain_naive(x, dim):
    r, p = comm.rank, comm.size
    n = x.shape[dim]
    idx = [slice(None)] * x.ndim

    def ix(i):
        t = list(idx); t[dim] = slice(i, i + 1)
        return tuple(t)

    down = r - 1 if r > 0 else MPI.PROC_NULL
    up = r + 1 if r < p - 1 else MPI.PROC_NULL

    def run():
        recv = np.empty_like(x[ix(0)])
        comm.Sendrecv(np.ascontiguousarray(x[ix(1)]), down, 0, recv, up, 0)
        if up != MPI.PROC_NULL:
            x[ix(n - 1)] = recv
        recv = np.empty_like(x[ix(0)])
        comm.Sendrecv(np.ascontiguousarray(x[ix(n - 2)]), up, 1, recv, down, 1)
        if down != MPI.PROC_NULL:
            x[ix(0)] = recv

    return run


def bench_2d(n, dim, iters, reps):
    mesh = Mesh((-1,))
    split = [[0]] if dim == 0 else [[], [0]]
    s = Sharding(mesh, split, halo_sizes=[1, 1])
    shape = (n, n)
    x = np.random.default_rng(comm.rank).random(s.local_shape(shape))
    rows = {}
    with HaloExchange(x, s, shape) as ex:
        rows["meshrt"] = timeit(ex, iters, reps)
    if dim != 0:
        with HaloExchange(x, s, shape, method="datatype") as ex:
            rows["meshrt datatype"] = timeit(ex, iters, reps)
    if dim == 0:
        # The floor: raw mpi4py persistent requests on the rows themselves, no copies.
        r, p = comm.rank, comm.size
        raw = []
        if r > 0:
            raw += [comm.Recv_init(x[0], r - 1, 0), comm.Send_init(x[1], r - 1, 1)]
        if r < p - 1:
            raw += [comm.Recv_init(x[-1], r + 1, 1), comm.Send_init(x[-2], r + 1, 0)]

        def run_raw():
            MPI.Prequest.Startall(raw)
            MPI.Request.Waitall(raw)

        rows["raw mpi4py zero-copy"] = timeit(run_raw, iters, reps)
        for q in raw:
            q.Free()
    run, reqs = plain_tuned(x, dim, x.dtype)
    rows["plain tuned"] = timeit(run, iters, reps)
    for q in reqs:
        q.Free()
    rows["plain naive Sendrecv"] = timeit(plain_naive(x, dim), iters, reps)
    mesh.free()
    return rows


def bench_pack(n3, iters, reps):
    x = np.random.default_rng(0).random((n3, n3, n3))
    face = x[:, :, 1:2]
    buf = np.empty(face.shape)
    rows = {}
    rows["numpy copyto"] = timeit(lambda: np.copyto(buf, face), iters, reps, warmup=5)
    if CopyTable is not None:
        t = CopyTable([(buf, face)])
        rows["meshrt CopyTable"] = timeit(t.run, iters, reps, warmup=5)
    return rows, face.nbytes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--n3", type=int, default=256)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()
    out = []
    for dim, what in ((0, "rows, contiguous"), (1, "columns, strided")):
        rows = bench_2d(a.n, dim, a.iters, a.reps)
        base = rows["plain tuned"]
        out.append(f"2-D {a.n}x{a.n} float64, split dim {dim} ({what}), width 1, {comm.size} procs")
        for k, t in rows.items():
            out.append(f"  {k:24s} {t * 1e6:9.1f} us   {t / base:5.2f}x tuned")
    rows, nbytes = bench_pack(a.n3, max(20, a.iters // 10), a.reps)
    base = rows["numpy copyto"]
    out.append(f"pack face [:, :, 1:2] of {a.n3}^3 float64 ({nbytes / 1e6:.2f} MB), {comm.size} procs at once")
    for k, t in rows.items():
        out.append(f"  {k:24s} {t * 1e6:9.1f} us   {nbytes / t / 1e9:6.2f} GB/s   {base / t:5.2f}x numpy")
    if comm.rank == 0:
        print("\n".join(out), flush=True)


if __name__ == "__main__":
    main()
