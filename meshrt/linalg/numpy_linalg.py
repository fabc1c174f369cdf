"""``np.linalg`` functions on `DistributedTensor` (numpy's ``__array_function__`` protocol).

The matrix functions route to meshrt's distributed algorithms where they have one; the others gather
the matrix on every process (at most `MAX_GATHERED` elements) and solve there with numpy, identically
everywhere, so a singular matrix raises ``LinAlgError`` on every process alike.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> a = DistributedTensor.from_global(np.diag([2.0, 4.0, 8.0]), Sharding(Mesh((-1,)), [[0]]))
>>> round(float(np.linalg.det(a)), 9)
64.0
"""

from __future__ import annotations

import numpy as np

from ..sharding.spec import Sharding
from ..tensor.dispatch import implements
from ..tensor.distributed_tensor import DistributedTensor
from ..tensor.numpy_shifts import MAX_GATHERED

__all__ = ["MAX_GATHERED"]


def _tensor(name, t):
    if not isinstance(t, DistributedTensor):
        raise TypeError(f"{name}: expected a DistributedTensor, got {type(t).__name__}")
    return t


def _plain(t: DistributedTensor) -> Sharding:
    s = t.sharding
    return s.replace(partial_axes=(), halo_sizes=None) if s.is_partial or s.halo_sizes else s


def _gathered(name, t):
    t = _tensor(name, t)
    if t.size > MAX_GATHERED:
        raise ValueError(f"{name}: a {t.shape} matrix ({t.size} elements) is larger than meshrt.MAX_GATHERED "
                         f"({MAX_GATHERED}); np.linalg on DistributedTensors gathers the matrix on every process")
    return t.gather()


def _like(values, t):
    """``values`` (the same global array on every process) in ``t``'s sharding: each keeps its block."""
    values = np.asarray(values)
    out = DistributedTensor.empty(values.shape, _plain(t), values.dtype)
    out._interior[...] = values[out.shard_slices + (Ellipsis,)]
    return out


@implements(np.linalg.inv)
def _np_inv(a):
    return _like(np.linalg.inv(_gathered("np.linalg.inv", a)), a)


@implements(np.linalg.det)
def _np_det(a):
    return np.linalg.det(_gathered("np.linalg.det", a))


@implements(np.linalg.solve)
def _np_solve(a, b):
    A = _gathered("np.linalg.solve", a) if isinstance(a, DistributedTensor) else np.asarray(a)
    B = _gathered("np.linalg.solve", b) if isinstance(b, DistributedTensor) else np.asarray(b)
    x = np.linalg.solve(A, B)
    like = b if isinstance(b, DistributedTensor) else None
    if like is not None and like.shape == x.shape:
        return _like(x, like)
    ref = a if isinstance(a, DistributedTensor) else b
    return DistributedTensor.from_global(x, Sharding(ref.mesh, []))


@implements(np.linalg.eigh)
def _np_eigh(a, UPLO="L"):
    w, v = np.linalg.eigh(_gathered("np.linalg.eigh", a), UPLO=UPLO)
    return DistributedTensor.from_global(w, Sharding(a.mesh, [])), _like(v, a)


@implements(np.linalg.cholesky)
def _np_cholesky(a, /, **kwargs):
    a = _tensor("np.linalg.cholesky", a)
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    L = np.linalg.cholesky(a.gather(), **kwargs)  # the same matrix everywhere: the same result or error
    return _like(L, a)
