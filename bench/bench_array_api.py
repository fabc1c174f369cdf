"""scikit-learn on a row-sharded DistributedTensor (meshrt.array_api, issue 44) against one numpy process
and a hand-written mpi4py + numpy TSQR.

    mpiexec -n 2 python bench/bench_array_api.py [--rows 2000000] [--cols 32] [--reps 5]

Cases, an ``rows x cols`` float64 matrix split on rows over the processes, scikit-learn with
``array_api_dispatch=True`` and ``SCIPY_ARRAY_API=1``:
- ``PCA(svd_solver="full").fit``, ``StandardScaler().fit_transform``, ``Ridge(solver="svd").fit``: each against
  the same call on one numpy process holding the whole matrix (rank 0, the others waiting), and PCA against a
  hand-written TSQR-then-SVD (column means by one ``Allreduce``, a local QR, the R factors by ``Allgather``,
  their QR and the small SVD);
- the bound on this machine: scikit-learn on numpy, every process fitting its own block at once (no
  communication, no merge of results): what the cores and the shared memory bandwidth give any distributed
  code (memory-bound calls such as StandardScaler stay above 0.5x one process even there);
- peak memory per process of each meshrt call (``tracemalloc``: numpy's buffers) against scikit-learn's own
  peak on a numpy array of the local block's size.
Median of ``--reps`` runs per side (slowest process), sides alternating; first calls stay out. BLAS runs one
thread per process, as the goals count cores.
"""

import argparse
import os
import statistics
import time
import tracemalloc

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ["SCIPY_ARRAY_API"] = "1"
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import sklearn  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import meshrt.array_api as xp  # noqa: E402
from meshrt import DistributedTensor  # noqa: E402

comm = MPI.COMM_WORLD


def timed(fn, root_only=False):
    comm.Barrier()
    t0 = time.perf_counter()
    if not root_only or comm.rank == 0:
        fn()
    dt = time.perf_counter() - t0
    return comm.allreduce(dt, op=MPI.MAX)


def hand_tsqr_pca(block, rows, n_components):
    """PCA's components and singular values by hand: mean, local QR, allgathered R, QR, SVD."""
    mean = np.empty(block.shape[1])
    comm.Allreduce(block.sum(axis=0), mean)
    mean /= rows
    _, r = np.linalg.qr(block - mean, mode="reduced")
    rs = np.empty((comm.size * r.shape[0], r.shape[1]))
    comm.Allgather(np.ascontiguousarray(r), rs)
    _, r2 = np.linalg.qr(rs, mode="reduced")
    _, s, vh = np.linalg.svd(r2)
    return vh[:n_components], s


def peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    p = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return comm.allreduce(p, op=MPI.MAX)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--cols", type=int, default=32)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    rows, cols = a.rows, a.cols
    t = xp.zeros((rows, cols))
    sl = t.shard_slices[0]
    rng = np.random.default_rng(comm.rank)
    block = rng.standard_normal((sl.stop - sl.start, cols)) * np.linspace(1, 3, cols) + 0.5
    t.interior[...] = block
    coef = np.linspace(-1, 1, cols)
    yt = xp.zeros(rows)
    yt.interior[...] = block @ coef
    full = comm.gather(block, root=0)
    X = np.concatenate(full) if comm.rank == 0 else None
    y = X @ coef if comm.rank == 0 else None
    del full

    cases = {
        "PCA(full).fit": (lambda: PCA(svd_solver="full").fit(t), lambda: PCA(svd_solver="full").fit(X)),
        "StandardScaler.fit_transform": (lambda: StandardScaler().fit_transform(t),
                                         lambda: StandardScaler().fit_transform(X)),
        "Ridge(svd).fit": (lambda: Ridge(solver="svd").fit(t, yt), lambda: Ridge(solver="svd").fit(X, y)),
    }
    with sklearn.config_context(array_api_dispatch=True):
        rows_out = []
        for name, (mine, ref) in cases.items():
            first = timed(mine)
            timed(ref, root_only=True)
            local = np.ascontiguousarray(block)
            local_y = np.ascontiguousarray(yt.interior)
            ref_local = {"PCA(full).fit": lambda: PCA(svd_solver="full").fit(local),
                         "StandardScaler.fit_transform": lambda: StandardScaler().fit_transform(local),
                         "Ridge(svd).fit": lambda: Ridge(solver="svd").fit(local, local_y)}[name]

            def blocks_at_once():
                with sklearn.config_context(array_api_dispatch=False):
                    ref_local()

            ms, rs, hs, bs = [], [], [], []
            for rep in range(a.reps):
                order = [0, 1] if rep % 2 == 0 else [1, 0]
                for k in order:
                    (ms if k == 0 else rs).append(timed(mine) if k == 0 else timed(ref, root_only=True))
                bs.append(timed(blocks_at_once))
                if name.startswith("PCA"):
                    hs.append(timed(lambda: hand_tsqr_pca(block, rows, cols)))
            mem_mine = peak(mine)
            with sklearn.config_context(array_api_dispatch=False):
                mem_ref = peak(ref_local)
            rows_out.append((name, first, statistics.median(ms), statistics.median(rs),
                             statistics.median(hs) if hs else None, statistics.median(bs), mem_mine, mem_ref))
        # agreement with one numpy process, checked once
        comps = PCA(n_components=4, svd_solver="full").fit(t).components_.gather()
        if comm.rank == 0:
            want = PCA(n_components=4, svd_solver="full").fit(X).components_
            assert np.allclose(np.abs(comps), np.abs(want), atol=1e-8), "PCA components differ from numpy's"
    if comm.rank == 0:
        print(f"{rows} x {cols} float64 on {comm.size} processes, median of {a.reps} (seconds, slowest process)")
        print(f"{'case':30s} {'first':>8s} {'meshrt':>8s} {'numpy 1p':>9s} {'ratio':>6s} {'hand TSQR':>9s} "
              f"{'ratio':>6s} {'blocks':>7s} {'ratio':>6s} {'peak MB':>8s} {'sk local':>8s} {'ratio':>6s}")
        for name, first, m, r, h, b, pm, pr in rows_out:
            hcol = f"{h:9.3f} {m / h:6.2f}" if h else f"{'':9s} {'':6s}"
            print(f"{name:30s} {first:8.3f} {m:8.3f} {r:9.3f} {m / r:6.2f} {hcol} {b:7.3f} {m / b:6.2f} "
                  f"{pm / 2**20:8.1f} {pr / 2**20:8.1f} {pm / pr:6.2f}")
        print("blocks: scikit-learn on numpy, each process its own block at once (no communication): the "
              "bound; its ratio is meshrt / blocks")


if __name__ == "__main__":
    main()
