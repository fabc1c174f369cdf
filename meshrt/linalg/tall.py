"""TSQR: the QR factorization of a tall matrix split on rows, the rows never moving.

Each process factors its block (itself a TSQR over chunks of `_CHUNK` rows), the small ``R`` factors
(``n x n`` each) are allgathered in block order and factored again, identically everywhere: only
``P * n * n`` numbers move. ``Q`` (and the SVD's ``U``) come out row-split like the input, ``R`` replicated.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> x = DistributedTensor.from_global(np.arange(12.0).reshape(6, 2), Sharding(Mesh((-1,)), [[0]]))
>>> q, r = tsqr(x)
>>> bool(np.allclose(np.asarray(q.gather()) @ r.gather(), np.arange(12.0).reshape(6, 2)))
True
"""

from __future__ import annotations

import numpy as np

from ..runtime import mpi as _mpi
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor

__all__ = ["is_tall_row_split", "tsqr_fits", "tsqr", "tsqr_svd", "tsqr_svdvals"]

# rows per local QR: LAPACK's QR of a tall block runs from memory, of a block of a few thousand rows from
# cache (4-5x faster on a 250k x 32 block), so each process factors its block as a TSQR of such chunks too
_CHUNK = 4096


def is_tall_row_split(x) -> bool:
    """A 2-D matrix split on rows only, over one group of processes, no halos, not partial, tall."""
    if not isinstance(x, DistributedTensor) or x.ndim != 2:
        return False
    s = x.sharding
    return (bool(s.dim_axes(0)) and not s.dim_axes(1) and not s.is_partial and not s.halo_sizes
            and x.shape[0] >= x.shape[1] and x.shape[1] > 0 and x.dtype.kind in "fc")


def tsqr_fits(x) -> bool:
    """`is_tall_row_split`, and tall enough that the stacked ``R`` factors (``P`` of ``n x n``) are no
    larger than the matrix: TSQR then moves less than the matrix, and its replicated ``R`` is no larger
    than a process's share (a square matrix's would be all of it: the Jacobi SVD or Householder QR take
    those)."""
    return is_tall_row_split(x) and x.shape[1] * x.sharding.dim_split_size(0) <= x.shape[0]


class _LocalQ:
    """This process's ``Q`` block of a TSQR, kept factored: ``Q = blockdiag(q_j) @ q2`` (``q2`` None: one
    chunk). `times` forms ``Q @ m`` for a small ``m`` chunk by chunk, one pass over the block."""

    __slots__ = ("qs", "q2", "rows")

    def __init__(self, qs, q2, rows):
        self.qs, self.q2, self.rows = qs, q2, rows

    def times(self, m):
        if self.q2 is None:
            return np.ascontiguousarray(self.qs[0] @ m)
        m2 = self.q2 @ m
        out = np.empty((self.rows, m.shape[1]), np.result_type(self.qs[0], m2))
        r = k = 0
        for q in self.qs:
            kk = min(q.shape[0], q.shape[1])
            np.matmul(q, m2[k:k + kk], out=out[r:r + q.shape[0]])
            r, k = r + q.shape[0], k + kk
        return out


def _local_qr(block):
    """(`_LocalQ`, r) of this process's block: one LAPACK QR, or a TSQR over chunks of `_CHUNK` rows."""
    if block.shape[0] <= 2 * _CHUNK:
        q, r = np.linalg.qr(block, mode="reduced")
        return _LocalQ([q], None, block.shape[0]), r
    qs, rs = [], []
    for i in range(0, block.shape[0], _CHUNK):
        q, r = np.linalg.qr(block[i:i + _CHUNK], mode="reduced")
        qs.append(q)
        rs.append(r)
    q2, r = np.linalg.qr(np.concatenate(rs), mode="reduced")
    return _LocalQ(qs, q2, block.shape[0]), r


def tsqr_factors(x):
    """(local, small, r): this process's ``Q`` block is ``local.times(small)`` (``small`` is ``k x n``), ``r``
    the replicated ``n x n`` factor with a non-negative diagonal (LAPACK's usual sign)."""
    comm = x.mesh.group(x.sharding.dim_axes(0))
    n = x.shape[1]
    q1, r1 = _local_qr(x.interior)
    with _mpi.internal("linalg TSQR", "the R factors of the row blocks", comm):
        sizes = comm.allgather(r1.shape[0])
        stacked = np.empty((sum(sizes), n), dtype=r1.dtype)
        comm.Allgatherv(np.ascontiguousarray(r1), [stacked, [k * n for k in sizes]])
    q2, r = np.linalg.qr(stacked, mode="reduced")
    start = sum(sizes[:comm.Get_rank()])
    d = np.sign(np.diagonal(r).real).astype(r.dtype)
    d[d == 0] = 1
    small = q2[start:start + r1.shape[0]] * d[None, :]
    return q1, small, d[:, None] * r


def _replicated(a: np.ndarray, mesh) -> DistributedTensor:
    """``a`` (the same on every process) as a replicated tensor: no communication."""
    block = np.array(a, order="C", copy=True)
    return DistributedTensor._fast(block, block, Sharding(mesh, []), a.shape, tuple(slice(0, n) for n in a.shape),
                                   None)


def tsqr(x):
    """Q (row-split like ``x``, reduced) and R (``n x n``, replicated) of a row-split tall matrix.

    Each process: ``q_i, r_i = qr(block)`` (itself a TSQR over chunks of `_CHUNK` rows); the ``r_i``
    (``k_i x n``, ``k_i = min(rows_i, n)``) are allgathered in block order and factored once more, identically
    everywhere: ``[r_i] = Q2 R``; the local ``Q`` is ``q_i @ Q2_i`` (one pass over the block: the rows never
    move).
    """
    q1, small, r = tsqr_factors(x)
    q = q1.times(small)
    return DistributedTensor.from_local(q, x.sharding, x.shape), _replicated(r, x.mesh)


def tsqr_svd(x):
    """(U, S, Vh), reduced, of a row-split tall matrix: TSQR, then the small ``R``'s SVD, ``U = Q @ U_R``
    (row-split like ``x``; ``S`` and ``Vh`` replicated)."""
    q1, small, r = tsqr_factors(x)
    ur, s, vh = np.linalg.svd(r, full_matrices=False)
    u = DistributedTensor.from_local(q1.times(small @ ur), x.sharding, x.shape)
    return u, _replicated(s, x.mesh), _replicated(vh, x.mesh)


def tsqr_svdvals(x):
    """The singular values (replicated) of a row-split tall matrix: those of TSQR's ``R``."""
    return _replicated(np.linalg.svd(tsqr_factors(x)[2], compute_uv=False), x.mesh)
