"""Cost of the always-on creation agreement and of the operation record, per call.

    mpiexec -n 2 python bench/bench_agree.py

Times, in one run and alternating the order over repetitions, `DistributedTensor.zeros`
with the agreement (as user code calls it) and without (the undecorated body), the
agreement alone (one Allreduce of 2 int64 plus the fingerprint), and `t.sum()` with and
without the wrapper that records the operation; prints medians and the differences.
"""

import time

import numpy as np
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.runtime import check as _check

comm = MPI.COMM_WORLD
mesh = Mesh((-1,))
s = Sharding(mesh, [[0]], halo_sizes=[1, 1])
shape = (8 * comm.size, 8)
raw_zeros = DistributedTensor.__dict__["zeros"].__func__.__wrapped__
raw_sum = DistributedTensor.sum.__wrapped__
t = DistributedTensor.zeros(shape, s)
t.sum()
text = f"zeros(global_shape={shape}, sharding=<{s}>, dtype=float64, periodic=None)"


def timed(fn, n):
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


cases = {
    "zeros (agreed)": lambda: DistributedTensor.zeros(shape, s),
    "zeros (body only)": lambda: raw_zeros(DistributedTensor, shape, s),
    "agree alone": lambda: _check.agree(comm, text, "zeros"),
    "fingerprint+text alone": lambda: _check.fingerprint(
        f"zeros(global_shape={_check._norm(shape)}, sharding={_check._norm(s)}, dtype=float64, periodic=None)"),
    "t.sum() (recorded)": lambda: t.sum(),
    "t.sum() (body only)": lambda: raw_sum(t),
}
res = {k: [] for k in cases}
names = list(cases)
for rep in range(30):
    for k in (names if rep % 2 == 0 else names[::-1]):
        res[k].append(timed(cases[k], 200))
if comm.rank == 0:
    med = {k: float(np.median(v)) for k, v in res.items()}
    for k, v in med.items():
        print(f"{k:26s} {v:8.2f} us  (min {min(res[k]):.2f})")
    print(f"creation agreement adds   {med['zeros (agreed)'] - med['zeros (body only)']:8.2f} us "
          f"({med['zeros (agreed)'] / med['zeros (body only)']:.2f}x)")
    print(f"recording a method adds   {med['t.sum() (recorded)'] - med['t.sum() (body only)']:8.2f} us")
