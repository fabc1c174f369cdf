"""Distributed FFTs: meshrt's np.fft vs mpi4py-fft vs serial numpy/scipy, in one run.

    mpiexec -n 2 python bench/bench_fft.py [--n3 256] [--n2 4096] [--reps 7] [--small]

mpi4py-fft (FFTW under a slab decomposition) is compared when it is installed:

    apt-get install -y libfftw3-dev            # FFTW from the system package
    pip install --no-build-isolation mpi4py-fft

Cases (issue 45): an n3^3 complex128 ``fftn`` + ``ifftn``, an n3^3 float64 ``rfftn`` + ``irfftn`` and an
n2^2 complex128 ``fft2`` + ``ifft2``, each on a slab (dim 0 split over the processes), the meshrt transform
leaving its transposed output (as mpi4py-fft's does) and the inverse coming back.  Times are the median of
``--reps`` calls after one warm-up (the slowest process's time per call); "first" is the very first call,
planning included (meshrt's plans; mpi4py-fft's FFTW_MEASURE planning happens in its constructor, reported
as "plan").  Serial numpy/scipy run on rank 0 while the other ranks sleep (not spin) in an ``Ibarrier``.
"pipelined": the same with ``MESHRT_FFT_CHUNK_BYTES=4 MiB`` (off by default).
Peak memory: tracemalloc's peak over one forward call, in units of the local input block (numpy's buffers;
the FFT library's own scratch is not traced).  Every column comes from the same run: compare ratios.
"""

import argparse
import statistics
import time
import tracemalloc

import numpy as np
from mpi4py import MPI

import meshrt
import meshrt.tensor.fft as mfft
from meshrt import DistributedTensor, Mesh, Sharding

try:
    import scipy.fft as sfft
except ImportError:  # pragma: no cover
    sfft = None
try:
    from mpi4py_fft import PFFT, newDistArray
except ImportError:  # pragma: no cover
    PFFT = None

comm = MPI.COMM_WORLD


def sleep_barrier():
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(0.005)


def timed(fn, reps):
    """(first call, median of ``reps`` later calls): the slowest process's seconds."""
    comm.Barrier()
    t0 = time.perf_counter()
    fn()
    first = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    times = []
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    return first, statistics.median(times)


def serial(fn, reps):
    """Median seconds of ``fn`` on rank 0 alone (the others sleep)."""
    out = None
    if comm.rank == 0:
        fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        out = statistics.median(times)
    sleep_barrier()
    return comm.bcast(out)


def peak_ratio(fn, block_bytes):
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return comm.allreduce(peak, op=MPI.MAX) / block_bytes


def case(label, shape, dtype, fwd, inv, reps, mesh):
    rows = Sharding(mesh, [["x"]])
    rng = np.random.default_rng(0)
    g = None
    if comm.rank == 0:
        g = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            g = g + 1j * rng.standard_normal(shape)
        g = g.astype(dtype)
    t = DistributedTensor.from_global(g, rows, root=0, global_shape=shape, dtype=dtype)
    f, i = getattr(np.fft, fwd), getattr(np.fft, inv)
    inv_kw = {"s": shape, "axes": tuple(range(len(shape)))} if inv.startswith("irfft") else {}
    res = {}
    k = [None]

    def m_fwd():
        k[0] = f(t)

    def m_inv():
        return i(k[0], **inv_kw)

    res["meshrt fwd"] = timed(m_fwd, reps)
    res["meshrt inv"] = timed(m_inv, reps)
    chunk, mfft.CHUNK_BYTES = mfft.CHUNK_BYTES, 4 << 20  # the same transforms, exchanges pipelined in 4 MiB chunks
    res["plain fwd"] = timed(m_fwd, reps)
    res["plain inv"] = timed(m_inv, reps)
    mfft.CHUNK_BYTES = chunk
    back = m_inv()
    diff = back.interior - t.interior if back.sharding == t.sharding else None
    err = comm.allreduce(float(np.abs(diff).max()) if diff is not None and diff.size else 0.0, op=MPI.MAX)
    mem = peak_ratio(m_fwd, t.interior.nbytes)
    res["mpi4py-fft"] = None
    if PFFT is not None:
        t0 = time.perf_counter()
        p = PFFT(comm, shape, axes=tuple(range(len(shape))), dtype=dtype, grid=(-1,))
        plan_s = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        u = newDistArray(p, False)
        if u.shape == t.interior.shape:
            u[...] = t.interior
        u_hat = newDistArray(p, True)
        pf = timed(lambda: p.forward(u, u_hat), reps)
        pb = timed(lambda: p.backward(u_hat, u), reps)
        res["mpi4py-fft"] = (plan_s, pf, pb)
        p.destroy()
    full = g if comm.rank == 0 else None
    ser_f = getattr(np.fft, fwd)
    ser = serial(lambda: ser_f(full), reps)
    ser_inv = None
    if comm.rank == 0:
        kk = ser_f(full)
    ser_inv = serial(lambda: i(kk, **inv_kw), reps)
    sci = None
    if sfft is not None:
        sci = serial(lambda: getattr(sfft, fwd)(full), reps) + serial(lambda: getattr(sfft, inv)(kk, **inv_kw), reps)
    return dict(label=label, res=res, numpy=ser + ser_inv, scipy=sci, err=err, mem=mem, plan=str(meshrt.explain_op(f, t)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n3", type=int, default=256)
    ap.add_argument("--n2", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--small", action="store_true", help="64^3 and 512^2, 3 reps: a smoke run")
    a = ap.parse_args()
    if a.small:
        a.n3, a.n2, a.reps = 64, 512, 3
    mesh = Mesh((-1,), ("x",))
    cases = [
        (f"{a.n3}^3 complex128 fftn+ifftn", (a.n3,) * 3, np.complex128, "fftn", "ifftn"),
        (f"{a.n3}^3 float64 rfftn+irfftn", (a.n3,) * 3, np.float64, "rfftn", "irfftn"),
        (f"{a.n2}^2 complex128 fft2+ifft2", (a.n2,) * 2, np.complex128, "fft2", "ifft2"),
    ]
    if comm.rank == 0:
        print(f"bench_fft: {comm.size} processes, local transforms by {'scipy.fft' if sfft else 'numpy.fft'} "
              f"(workers={meshrt.fft.workers()}), mpi4py-fft {'present' if PFFT else 'NOT installed'}")
    rows = []
    for label, shape, dt, fwd, inv in cases:
        r = case(label, shape, dt, fwd, inv, a.reps, mesh)
        rows.append(r)
        if comm.rank == 0:
            res = r["res"]
            (mf1, mf), (mi1, mi) = res["meshrt fwd"], res["meshrt inv"]
            line = [f"\n{label}", f"  meshrt      fwd {mf * 1e3:8.1f} ms  inv {mi * 1e3:8.1f} ms  "
                    f"pair {(mf + mi) * 1e3:8.1f} ms   first calls {mf1 * 1e3:.1f} + {mi1 * 1e3:.1f} ms "
                    f"({(mf1 + mi1) / (mf + mi):.2f}x later)  round-trip error {r['err']:.2e}  "
                    f"peak memory {r['mem']:.2f}x the local block"]
            (_, pf_), (_, pi_) = res["plain fwd"], res["plain inv"]
            line.append(f"  meshrt, exchanges pipelined in 4 MiB chunks: fwd {pf_ * 1e3:8.1f} ms  inv {pi_ * 1e3:8.1f} ms  "
                        f"pair {(pf_ + pi_) * 1e3:8.1f} ms  (pipelined / not: {(pf_ + pi_) / (mf + mi):.2f}x)")
            if res["mpi4py-fft"] is not None:
                plan_s, (pf1, pf), (pb1, pb) = res["mpi4py-fft"]
                line.append(f"  mpi4py-fft  fwd {pf * 1e3:8.1f} ms  inv {pb * 1e3:8.1f} ms  pair {(pf + pb) * 1e3:8.1f} ms"
                            f"   plan (FFTW_MEASURE) {plan_s * 1e3:.0f} ms")
                line.append(f"  meshrt / mpi4py-fft (pair): {(mf + mi) / (pf + pb):.2f}x")
            line.append(f"  numpy serial pair {r['numpy'] * 1e3:8.1f} ms   meshrt / numpy serial: "
                        f"{(mf + mi) / r['numpy']:.2f}x")
            if r["scipy"] is not None:
                line.append(f"  scipy serial pair {r['scipy'] * 1e3:8.1f} ms   meshrt / scipy serial: "
                            f"{(mf + mi) / r['scipy']:.2f}x")
            print("\n".join(line), flush=True)
    if comm.rank == 0:
        print("\nplan of the first case:\n" + rows[0]["plan"])


if __name__ == "__main__":
    main()
