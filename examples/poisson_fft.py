"""Periodic 3-D Poisson equation by FFT: ``-lap u = f`` on [0, 2 pi)^3, checked against a manufactured solution.

    meshrt run -n 4 examples/poisson_fft.py              # 128^3 on a pencil mesh, checked

``f`` is built from a known ``u`` (a few Fourier modes plus a Gaussian-free smooth product), ``np.fft.rfftn``
takes it to wavenumber space (one all-to-all per mesh axis; the spectrum stays in the transposed layout),
the spectrum is divided by ``|k|^2`` there (the wavenumbers built in that layout with ``from_function``),
and ``np.fft.irfftn`` brings ``u`` back to ``f``'s layout.  The spectral solution of a band-limited ``f``
is exact to rounding: the check is a max error below 1e-10; exits 1 otherwise.
"""

import argparse
import sys
import time

import numpy as np

import meshrt
from meshrt import DistributedTensor, Mesh, Sharding


def exact(n):
    """The manufactured solution, zero mean, on global index arrays."""
    h = 2 * np.pi / n
    return lambda i, j, k: (np.sin(i * h) * np.cos(2 * j * h) * np.sin(3 * k * h)
                            + 0.5 * np.cos(5 * i * h + 1.0) + 0.25 * np.sin(j * h - 2 * k * h))


def rhs(n):
    """``-lap u`` of `exact`, term by term (|k|^2 = 14, 25 and 5)."""
    h = 2 * np.pi / n
    return lambda i, j, k: (14 * np.sin(i * h) * np.cos(2 * j * h) * np.sin(3 * k * h)
                            + 25 * 0.5 * np.cos(5 * i * h + 1.0) + 5 * 0.25 * np.sin(j * h - 2 * k * h))


def inverse_laplacian(shape, spectral_sharding, n):
    """``1 / |k|^2`` (0 for k = 0) on the rfftn spectrum's layout: each process builds its own block."""
    def fn(i, j, k):
        ki = np.where(i <= n // 2, i, i - n)
        kj = np.where(j <= n // 2, j, j - n)
        k2 = (ki * ki + kj * kj + k * k).astype(np.float64)
        return np.divide(1.0, k2, out=np.zeros(np.broadcast(ki, kj, k).shape), where=k2 > 0)
    return DistributedTensor.from_function(fn, shape, spectral_sharding, sparse=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=128, help="grid points per side (default 128)")
    p.add_argument("--mesh", choices=["1d", "2d"], default="2d", help="slab (1d) or pencil (2d) decomposition")
    args = p.parse_args(argv)
    n = args.n
    mesh = Mesh((-1,) if args.mesh == "1d" else (-1, -1))
    sharding = Sharding(mesh, [[0]] if args.mesh == "1d" else [[0], [1]])
    f = DistributedTensor.from_function(rhs(n), (n,) * 3, sharding, sparse=True)

    mesh.comm.Barrier()
    t0 = time.perf_counter()
    f_hat = np.fft.rfftn(f)
    inv_k2 = inverse_laplacian(f_hat.shape, f_hat.sharding, n)  # planned once; a time loop would reuse it
    u = np.fft.irfftn(f_hat * inv_k2, s=f.shape, axes=(0, 1, 2))
    mesh.comm.Barrier()
    elapsed = time.perf_counter() - t0

    want = DistributedTensor.from_function(exact(n), (n,) * 3, sharding, sparse=True)
    err = float(np.max(np.abs(u - want)))
    ok = err < 1e-10 and u.sharding == f.sharding
    if mesh.rank == 0:
        print(meshrt.explain_op(np.fft.rfftn, f))
        print(f"poisson_fft: {n}^3 on mesh {mesh.shape}: solve {elapsed * 1e3:.1f} ms, "
              f"u back in f's layout: {u.sharding == f.sharding}")
        print(f"poisson_fft: manufactured-solution check: max error {err:.3e} {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
