"""The standard's ``linalg`` extension on `DistributedTensor`: the namespace's entry points, calling into
`meshrt.linalg` for the distributed algorithms.

A tall-skinny matrix split on rows only (``m >= n P`` rows, the usual ``n_samples x n_features``) gets
``qr`` and ``svd``/``svdvals`` by TSQR (`meshrt.linalg.tall`): each process factors its block, the small
``R`` factors (``n x n`` each) are allgathered and factored again, so only ``P * n * n`` numbers move and
the rows never do; ``Q`` and ``U`` come out row-split like the input. Any other split matrix goes to the
block-cyclic algorithms of `meshrt.linalg.dense` (``cholesky``, ``solve``, ``inv``, ``det``, ``slogdet``,
``matrix_power``, ``qr`` of any shape and mode, ``eigh``, ``eigvalsh``), and ``svd``, ``svdvals``,
``pinv`` and ``matrix_rank`` of any other shape or split to the one-sided Jacobi SVD of
`meshrt.linalg.svd`. Replicated matrices are computed where they are; a split operand of the others
(a stack of matrices, ...) is gathered first, and `GATHERS` / ``explain_op`` say so.

>>> import meshrt.array_api as xp
>>> x = xp.reshape(xp.arange(12.0), (6, 2))
>>> q, r = xp.linalg.qr(x)
>>> bool(xp.all(xp.abs(q @ r - x) < 1e-9))
True
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..linalg import dense as _dense, svd as _svd
from ..linalg.numpy_linalg import (each_matrix as _each_matrix, matrix_split as _matrix_split,
                                   per_matrix as _per_matrix, stack_split as _stack_split)
from ..tensor import numpy_misc as _numpy_misc
from ..linalg.tall import is_tall_row_split as _row_split, tsqr, tsqr_fits, tsqr_svd, tsqr_svdvals
from ._device import GATHERS, is_replicated, wrap  # noqa: F401  (GATHERS: explain_op's table)
from ._funcs import _call, _gathered, _need_array, matmul, matrix_transpose, tensordot, vecdot  # noqa: F401
from ._funcs import decide as _decide

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]

QRResult = namedtuple("QRResult", "Q R")
SVDResult = namedtuple("SVDResult", "U S Vh")


#: the one case left that gathers: an operand that is no matrix (numpy's own error, raised from its global array)
_SQUARE = "not a matrix or a stack of matrices"


def _stacked_or_gathered(name, fn, args, why, each=None):
    """``fn`` per process on its matrices where ``args[0]`` is a stack split on its stack dims
    (`_stack_split`); ``each`` (this namespace's function on one matrix) on each split matrix in turn
    where it is a stack split on the matrices' dims (`_matrix_split`); else the gathered route (``why`` its
    reason)."""
    x = args[0]
    if _stack_split(x, *args[1:]):
        return _per_matrix(fn, *args)
    if each is not None and _matrix_split(x):
        return _each_matrix(each, *args)
    return _gathered(name, fn, args, {}, why)


def qr(x, /, *, mode="reduced"):
    """QR factorization; TSQR for a row-split tall matrix (``mode='reduced'`` or ``'r'``... via reduced)."""
    _need_array("qr", x)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode: expected 'reduced' or 'complete', got {mode!r}")
    if mode == "reduced" and _row_split(x) and x.shape[1] * x.sharding.dim_split_size(0) <= x.shape[0]:
        return QRResult(*tsqr(x))
    if _dense.is_distributable(x):
        return QRResult(*_dense.qr(x, mode))
    return _stacked_or_gathered("linalg.qr", lambda a: np.linalg.qr(a, mode=mode), (x,),
                                "not a tall matrix split on rows only (or mode='complete')",
                                lambda a: qr(a, mode=mode))


def svd(x, /, *, full_matrices=True):
    """Singular value decomposition; for a row-split tall matrix with ``full_matrices=False``:
    TSQR, then the small ``R``'s SVD, ``U = Q @ U_R`` (row-split like ``x``)."""
    _need_array("svd", x)
    if not full_matrices and tsqr_fits(x):
        return SVDResult(*tsqr_svd(x))
    if _dense.is_distributable(x):
        return SVDResult(*_svd.svd(x, full_matrices=full_matrices))
    return _stacked_or_gathered("linalg.svd", lambda a: np.linalg.svd(a, full_matrices=full_matrices), (x,),
                                _SQUARE,
                                lambda a: svd(a, full_matrices=full_matrices))


def svdvals(x, /):
    """Singular values (TSQR first for a row-split tall matrix)."""
    _need_array("svdvals", x)
    if tsqr_fits(x):
        return tsqr_svdvals(x)
    if _dense.is_distributable(x):
        return _svd.svdvals(x)
    return _stacked_or_gathered("linalg.svdvals", np.linalg.svdvals, (x,),
                                _SQUARE, svdvals)


def _small(name, fn, doc):
    def f(x, /, *args, **kwargs):
        _need_array(name, x)
        if not kwargs and _stack_split(x, *args):
            return _per_matrix(fn, x, *args)
        if not kwargs and _matrix_split(x):  # this namespace's own function, on each split matrix
            return _each_matrix(globals()[name], x, *args)
        return _gathered("linalg." + name, fn, (x, *args), kwargs, _SQUARE)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + (" Computed where replicated, per process on its matrices for a stack split on its stack "
                       "dims, matrix by matrix by the distributed form for a stack split on the matrices' dims.")
    return f


def cholesky(x, /, *, upper=False):
    """Cholesky factor: block-cyclic right-looking Cholesky for a split matrix, numpy's where replicated."""
    _need_array("cholesky", x)
    if _dense.is_distributable(x):
        return _dense.cholesky(x, upper=upper)
    return _stacked_or_gathered("linalg.cholesky", lambda a: np.linalg.cholesky(a, upper=upper), (x,), _SQUARE,
                                lambda a: cholesky(a, upper=upper))


def pinv(x, /, *, rtol=None):
    """Pseudo-inverse: from the one-sided Jacobi SVD for a split matrix (`meshrt.linalg.svd`), numpy's
    where replicated."""
    _need_array("pinv", x)
    if _dense.is_distributable(x):
        return _svd.pinv(x, rtol=rtol)
    return _stacked_or_gathered("linalg.pinv", lambda a, r: np.linalg.pinv(a, rtol=r), (x, rtol), _SQUARE,
                                lambda a, r: pinv(a, rtol=r))


def matrix_rank(x, /, *, rtol=None):
    """Rank: the singular values of a split matrix by one-sided Jacobi sweeps (`meshrt.linalg.svd`),
    numpy's where replicated."""
    _need_array("matrix_rank", x)
    if _dense.is_distributable(x):
        return wrap(np.asarray(_svd.matrix_rank(x, rtol=rtol)), x.mesh, replicate=True)
    return _stacked_or_gathered("linalg.matrix_rank",
                                lambda a, r: np.asarray(np.linalg.matrix_rank(a, rtol=r)), (x, rtol), _SQUARE,
                                lambda a, r: matrix_rank(a, rtol=r))
_eigh = _small("eigh", np.linalg.eigh, "Eigenvalues and eigenvectors of a symmetric/Hermitian matrix.")
_eigvalsh = _small("eigvalsh", np.linalg.eigvalsh, "Eigenvalues of a symmetric/Hermitian matrix.")
EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")


def eigh(x, /):
    """Eigenvalues (ascending, replicated) and eigenvectors (columns, split like ``x``) of a
    symmetric/Hermitian matrix read from its lower triangle: Householder tridiagonalization on the
    block-cyclic layout, tridiagonal eigensolvers, back-transformation for a split matrix
    (`meshrt.linalg.eigen`); numpy's where replicated."""
    _need_array("eigh", x)
    if _dense.is_distributable(x):
        return EighResult(*_dense.eigh(x))
    return _eigh(x)


def eigvalsh(x, /):
    """Eigenvalues (ascending, replicated) of a symmetric/Hermitian matrix: the distributed reduction to
    tridiagonal form for a split matrix, numpy's where replicated."""
    _need_array("eigvalsh", x)
    return _dense.eigvalsh(x) if _dense.is_distributable(x) else _eigvalsh(x)
_inv = _small("inv", np.linalg.inv, "Inverse.")
_det = _small("det", np.linalg.det, "Determinant.")
_slogdet = _small("slogdet", np.linalg.slogdet, "Sign and log of the absolute determinant.")
_matrix_power = _small("matrix_power", np.linalg.matrix_power, "Integer power of a square matrix.")
SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")


def inv(x, /):
    """Inverse: LU with partial pivoting on the block-cyclic layout for a split matrix."""
    _need_array("inv", x)
    return _dense.inv(x) if _dense.is_distributable(x) else _inv(x)


def det(x, /):
    """Determinant (a 0-d array, the same on every process): from the distributed LU for a split matrix."""
    _need_array("det", x)
    return wrap(np.asarray(_dense.det(x)), x.mesh, replicate=True) if _dense.is_distributable(x) else _det(x)


def slogdet(x, /):
    """Sign and log of the absolute determinant (0-d arrays): from the distributed LU for a split matrix."""
    _need_array("slogdet", x)
    if not _dense.is_distributable(x):
        return _slogdet(x)
    sign, logabs = _dense.slogdet(x)
    return SlogdetResult(wrap(np.asarray(sign), x.mesh, replicate=True),
                         wrap(np.asarray(logabs), x.mesh, replicate=True))


def matrix_power(x, n, /):
    """``x`` to the integer power ``n``: distributed products (SUMMA) for a split matrix."""
    _need_array("matrix_power", x)
    return _dense.matrix_power(x, n) if _dense.is_distributable(x) else _matrix_power(x, n)


def solve(x1, x2, /):
    """Solve ``x1 @ x = x2`` (square ``x1``; ``x2`` of shape ``(n,)`` is one vector): LU with partial
    pivoting on the block-cyclic layout for a split ``x1``."""
    _need_array("solve", x1), _need_array("solve", x2)
    if _dense.is_distributable(x1) and x2.ndim <= 2:
        return _dense.solve(x1, x2)
    return _stacked_or_gathered("linalg.solve", np.linalg.solve, (x1, x2),
                                "x2 laid out apart from x1 (neither a stack of x1's stack shape nor one vector)",
                                solve if x2.ndim == 1 or (x2.ndim == x1.ndim and x2.shape[:-2] == x1.shape[:-2])
                                else None)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-vectors along ``axis``: each process on its blocks where the operands have one
    shape and no mesh axis splits ``axis`` (the second resharded to the first's layout if it differs)."""
    _need_array("cross", x1), _need_array("cross", x2)
    why = _decide("linalg.cross", x1, x2, axis=axis)
    if why is None and not (is_replicated(x1) and is_replicated(x2)):
        return np.linalg.cross(x1, x2, axis=axis)
    return _gathered("linalg.cross", lambda a, b: np.linalg.cross(a, b, axis=axis), (x1, x2), {}, why or "")


def diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of the last two dims: of a 2-D tensor, each process takes the elements it owns
    and one allreduce over the other dim's mesh axes (`meshrt.tensor.numpy_misc.diagonal_2d`)."""
    _need_array("diagonal", x)
    if x.ndim == 2 and not is_replicated(x):
        return _numpy_misc.diagonal_2d(x, offset)
    return _stacked_or_gathered("linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=offset).copy(), (x,),
                                _SQUARE,
                                lambda a: diagonal(a, offset=offset))


def trace(x, /, *, offset=0, dtype=None):
    """Sum of the ``offset`` diagonal of the last two dims (a 2-D tensor: each process sums its part of the
    diagonal, one allreduce)."""
    _need_array("trace", x)
    if x.ndim == 2 and not is_replicated(x):
        return _call("linalg.trace", lambda a: np.asarray(np.trace(a, offset=offset, dtype=dtype)), (x,))
    return _stacked_or_gathered("linalg.trace",
                                lambda a: np.asarray(np.linalg.trace(a, offset=offset, dtype=dtype)), (x,),
                                _SQUARE,
                                lambda a: trace(a, offset=offset, dtype=dtype))


def outer(x1, x2, /):
    """Outer product of two 1-D arrays (split on rows like ``x1``; ``x2`` is allgathered)."""
    _need_array("outer", x1), _need_array("outer", x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: expected 1-D arrays, got shapes {x1.shape}, {x2.shape}")
    if not (is_replicated(x1) and is_replicated(x2)):
        return _call("linalg.outer", np.outer, (x1, x2))
    return _gathered("linalg.outer", np.linalg.outer, (x1, x2), {}, "")


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    """Matrix norm of the last two dims: for a split 2-D tensor, reductions ('fro', 1, inf and their
    negatives) or the singular values (2, -2, 'nuc': `meshrt.linalg.svd`)."""
    _need_array("matrix_norm", x)
    if x.ndim == 2 and not is_replicated(x) and x.size:
        from ..linalg.numpy_linalg import matrix_norm as _matrix_norm

        def norm(a):
            r = np.asarray(_matrix_norm(a, ord))
            return r.reshape(1, 1) if keepdims else r
        return _call("linalg.matrix_norm", norm, (x,))
    return _stacked_or_gathered("linalg.matrix_norm",
                                lambda a: np.asarray(np.linalg.matrix_norm(a, keepdims=keepdims, ord=ord)), (x,),
                                _SQUARE,
                                lambda a: matrix_norm(a, keepdims=keepdims, ord=ord))


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
    if x.size and not is_replicated(x) and not keepdims and (axis is None or isinstance(axis, int)) \
            and x.dtype.kind in "fc":
        def any_ord(a):  # np.linalg.norm's vector norms: reductions of |a|
            return np.asarray(np.linalg.norm(a.reshape(-1) if axis is None else a, ord=ord, axis=axis))
        return _call("linalg.vector_norm", any_ord, (x,))
    return _gathered("linalg.vector_norm", fn, (x,), {}, "a tuple of axes or keepdims with ord other than 2")
