"""The standard's ``linalg`` extension on `DistributedTensor`.

A tall-skinny matrix split on rows only (``m >= n`` columns, the usual ``n_samples x n_features``) gets
``qr`` and ``svd``/``svdvals`` by TSQR: each process factors its block, the small ``R`` factors (``n x n``
each) are allgathered and factored again, so only ``P * n * n`` numbers move and the rows never do; ``Q``
and ``U`` come out row-split like the input. Small matrices (``eigh``, ``cholesky``, ``solve``, ``inv``,
``det``, ``slogdet``, ``pinv``, ``matrix_rank``, ...) are computed where they are replicated; a split
operand of those is gathered first, and `GATHERS` / ``explain_op`` say so.

>>> import meshrt.array_api as xp
>>> x = xp.reshape(xp.arange(12.0), (6, 2))
>>> q, r = xp.linalg.qr(x)
>>> bool(xp.all(xp.abs(q @ r - x) < 1e-9))
True
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..runtime import mpi as _mpi
from ..tensor.distributed_tensor import DistributedTensor
from ._device import GATHERS, from_numpy, is_replicated, replicated
from ._funcs import _call, _gathered, _need_array, matmul, matrix_transpose, tensordot, vecdot  # noqa: F401

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]

QRResult = namedtuple("QRResult", "Q R")
SVDResult = namedtuple("SVDResult", "U S Vh")


def _row_split(x) -> bool:
    """A 2-D matrix split on rows only, over one group of processes, no halos, not partial, tall."""
    if not isinstance(x, DistributedTensor) or x.ndim != 2:
        return False
    s = x.sharding
    return (bool(s.dim_axes(0)) and not s.dim_axes(1) and not s.is_partial and not s.halo_sizes
            and x.shape[0] >= x.shape[1] and x.shape[1] > 0 and x.dtype.kind in "fc")


# rows per local QR: LAPACK's QR of a tall block runs from memory, of a block of a few thousand rows from
# cache (4-5x faster on a 250k x 32 block), so each process factors its block as a TSQR of such chunks too
_CHUNK = 4096


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


def _tsqr_factors(x):
    """(local, small, r): this process's ``Q`` block is ``local.times(small)`` (``small`` is ``k x n``), ``r``
    the replicated ``n x n`` factor with a non-negative diagonal (LAPACK's usual sign)."""
    comm = x.mesh.group(x.sharding.dim_axes(0))
    n = x.shape[1]
    q1, r1 = _local_qr(x.interior)
    with _mpi.internal("array_api.linalg TSQR", "the R factors of the row blocks", comm):
        sizes = comm.allgather(r1.shape[0])
        stacked = np.empty((sum(sizes), n), dtype=r1.dtype)
        comm.Allgatherv(np.ascontiguousarray(r1), [stacked, [k * n for k in sizes]])
    q2, r = np.linalg.qr(stacked, mode="reduced")
    start = sum(sizes[:comm.Get_rank()])
    d = np.sign(np.diagonal(r).real).astype(r.dtype)
    d[d == 0] = 1
    small = q2[start:start + r1.shape[0]] * d[None, :]
    return q1, small, d[:, None] * r


def tsqr(x):
    """Q (row-split like ``x``, reduced) and R (``n x n``, replicated) of a row-split tall matrix.

    Each process: ``q_i, r_i = qr(block)`` (itself a TSQR over chunks of `_CHUNK` rows); the ``r_i``
    (``k_i x n``, ``k_i = min(rows_i, n)``) are allgathered in block order and factored once more, identically
    everywhere: ``[r_i] = Q2 R``; the local ``Q`` is ``q_i @ Q2_i`` (one pass over the block: the rows never
    move).
    """
    q1, small, r = _tsqr_factors(x)
    q = q1.times(small)
    return (DistributedTensor.from_local(q, x.sharding, x.shape), from_numpy(r, replicated(2, x.mesh)))


def qr(x, /, *, mode="reduced"):
    """QR factorization; TSQR for a row-split tall matrix (``mode='reduced'`` or ``'r'``... via reduced)."""
    _need_array("qr", x)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode: expected 'reduced' or 'complete', got {mode!r}")
    if mode == "reduced" and _row_split(x):
        return QRResult(*tsqr(x))
    return _gathered("linalg.qr", lambda a: np.linalg.qr(a, mode=mode), (x,), {},
                     "not a tall matrix split on rows only (or mode='complete')")


def svd(x, /, *, full_matrices=True):
    """Singular value decomposition; for a row-split tall matrix with ``full_matrices=False``:
    TSQR, then the small ``R``'s SVD, ``U = Q @ U_R`` (row-split like ``x``)."""
    _need_array("svd", x)
    if not full_matrices and _row_split(x):
        q1, small, r = _tsqr_factors(x)
        ur, s, vh = np.linalg.svd(r, full_matrices=False)
        u = DistributedTensor.from_local(q1.times(small @ ur), x.sharding, x.shape)
        m = x.mesh
        return SVDResult(u, from_numpy(s, replicated(1, m)), from_numpy(vh, replicated(2, m)))
    return _gathered("linalg.svd", lambda a: np.linalg.svd(a, full_matrices=full_matrices), (x,), {},
                     "full_matrices=True, or not a tall matrix split on rows only")


def svdvals(x, /):
    """Singular values (TSQR first for a row-split tall matrix)."""
    _need_array("svdvals", x)
    if _row_split(x):
        r = _tsqr_factors(x)[2]
        return from_numpy(np.linalg.svd(r, compute_uv=False), replicated(1, x.mesh))
    return _gathered("linalg.svdvals", np.linalg.svdvals, (x,), {}, "not a tall matrix split on rows only")


_SQUARE = "a square matrix: LU/eigensolvers of a split matrix are not distributed"


def _small(name, fn, doc):
    def f(x, /, *args, **kwargs):
        _need_array(name, x)
        return _gathered("linalg." + name, fn, (x, *args), kwargs,
                         "a square matrix: LU/eigensolvers of a split matrix are not distributed")
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + " Computed where replicated (a split operand is gathered first)."
    return f


def cholesky(x, /, *, upper=False):
    """Cholesky factor, computed where replicated (a split operand is gathered first)."""
    _need_array("cholesky", x)
    return _gathered("linalg.cholesky", lambda a: np.linalg.cholesky(a, upper=upper), (x,), {}, _SQUARE)


def pinv(x, /, *, rtol=None):
    """Pseudo-inverse, computed where replicated (a split operand is gathered first)."""
    _need_array("pinv", x)
    return _gathered("linalg.pinv", lambda a, r: np.linalg.pinv(a, rtol=r), (x, rtol), {}, _SQUARE)


def matrix_rank(x, /, *, rtol=None):
    """Rank, computed where replicated (a split operand is gathered first)."""
    _need_array("matrix_rank", x)
    return _gathered("linalg.matrix_rank", lambda a, r: np.asarray(np.linalg.matrix_rank(a, rtol=r)), (x, rtol), {},
                     _SQUARE)
det = _small("det", np.linalg.det, "Determinant.")
eigh = _small("eigh", np.linalg.eigh, "Eigenvalues and eigenvectors of a symmetric/Hermitian matrix.")
eigvalsh = _small("eigvalsh", np.linalg.eigvalsh, "Eigenvalues of a symmetric/Hermitian matrix.")
inv = _small("inv", np.linalg.inv, "Inverse.")
slogdet = _small("slogdet", np.linalg.slogdet, "Sign and log of the absolute determinant.")
matrix_power = _small("matrix_power", np.linalg.matrix_power, "Integer power of a square matrix.")


def solve(x1, x2, /):
    """Solve ``x1 @ x = x2`` (square ``x1``)."""
    _need_array("solve", x1), _need_array("solve", x2)
    return _gathered("linalg.solve", np.linalg.solve, (x1, x2), {}, "a square system: LU is not distributed")


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-vectors along ``axis``."""
    _need_array("cross", x1), _need_array("cross", x2)
    return _gathered("linalg.cross", lambda a, b: np.linalg.cross(a, b, axis=axis), (x1, x2), {}, "")


def diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of the last two dims."""
    _need_array("diagonal", x)
    return _gathered("linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=offset).copy(), (x,), {}, "")


def trace(x, /, *, offset=0, dtype=None):
    """Sum of the ``offset`` diagonal of the last two dims."""
    _need_array("trace", x)
    return _gathered("linalg.trace", lambda a: np.asarray(np.linalg.trace(a, offset=offset, dtype=dtype)),
                     (x,), {}, "")


def outer(x1, x2, /):
    """Outer product of two 1-D arrays."""
    _need_array("outer", x1), _need_array("outer", x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: expected 1-D arrays, got shapes {x1.shape}, {x2.shape}")
    return _gathered("linalg.outer", np.linalg.outer, (x1, x2), {}, "")


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    """Matrix norm of the last two dims."""
    _need_array("matrix_norm", x)
    return _gathered("linalg.matrix_norm",
                     lambda a: np.asarray(np.linalg.matrix_norm(a, keepdims=keepdims, ord=ord)), (x,), {}, "")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    """Vector norm over ``axis`` (None: all elements); the 2-norm of a split array as a distributed
    reduction."""
    _need_array("vector_norm", x)
    if isinstance(axis, list):
        axis = tuple(axis)
    fn = lambda a: np.asarray(np.linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=ord))  # noqa: E731
    if ord == 2 and x.size and x.dtype.kind == "f" and not is_replicated(x):
        def two(a):
            return np.sqrt(np.sum(np.abs(a) ** 2, axis=axis, keepdims=keepdims))
        return _call("linalg.vector_norm", two, (x,))
    return _gathered("linalg.vector_norm", fn, (x,), {}, "ord other than 2")
