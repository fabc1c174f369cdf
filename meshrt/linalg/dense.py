"""numpy's and SciPy's dense matrix functions on split `DistributedTensor`s, never gathered.

Each function takes the matrix into the 2-D block-cyclic layout (`meshrt.linalg.cyclic`: each element
sent once), runs the distributed algorithm there (`meshrt.linalg.factor`), and brings the result back in
the sharding numpy's semantics give it: a factor or inverse like the input, a solution like the
right-hand side, a determinant as a number on every process. A replicated matrix (every process holds
all of it) is computed where it is, by numpy. Errors are numpy's (``LinAlgError("Singular matrix")``,
``"Matrix is not positive definite"``), raised on every process alike.

``block`` and ``grid`` choose the layout (default: `meshrt.linalg.blockcyclic.default_block` and
``default_grid``; ``MESHRT_LINALG_BLOCK`` sets the default block size).

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> a = DistributedTensor.from_global(np.array([[4.0, 2.0], [2.0, 3.0]]), Sharding(Mesh((-1,)), [[0]]))
>>> np.round(solve(a, np.array([2.0, 1.0])).gather(), 6).tolist()
[0.5, 0.0]
>>> round(float(det(a)), 9)
8.0
"""

from __future__ import annotations

import os

import numpy as np

from ..runtime import mpi as _mpi
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor
from . import eigen, factor
from .blockcyclic import BlockCyclic
from .cyclic import CyclicMatrix, lazy_zeros, to_cyclic, zero_across
from .tall import is_tall_row_split, tsqr

__all__ = ["cholesky", "lu", "solve", "inv", "det", "slogdet", "matrix_power", "qr", "lstsq", "eigh", "eigvalsh",
           "is_distributable"]

LinAlgError = np.linalg.LinAlgError


def _env_block():
    v = os.environ.get("MESHRT_LINALG_BLOCK")
    if not v:
        return None
    try:
        b = int(v)
    except ValueError:
        b = 0
    if b < 1:
        raise ValueError(f"MESHRT_LINALG_BLOCK: expected a positive int, got {v!r}")
    return b


def is_distributable(x) -> bool:
    """A 2-D tensor that is split (not replicated): the distributed algorithms take it."""
    if not isinstance(x, DistributedTensor) or x.ndim != 2:
        return False
    s = x.sharding
    return any(s.split_axes) or s.is_partial


def _work_dtype(name, dt) -> np.dtype:
    dt = np.dtype(dt)
    if dt.kind in "biu":
        return np.dtype(np.float64)
    if dt in (np.float32, np.float64, np.complex64, np.complex128):
        return dt
    raise TypeError(f"{name}: array type {dt} is unsupported in linalg")


def _square(name, a: DistributedTensor):
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")


def _plain(s: Sharding) -> Sharding:
    return s.replace(partial_axes=(), halo_sizes=None) if s.is_partial or s.halo_sizes else s


def _cyclic(a: DistributedTensor, name, block, grid, triangle=None) -> CyclicMatrix:
    return to_cyclic(a, block=block if block is not None else _env_block(), grid=grid,
                     dtype=_work_dtype(name, a.dtype), triangle=triangle)


def _lower_triangle(a: DistributedTensor, name, block, grid, upper: bool) -> CyclicMatrix:
    """The Hermitian matrix numpy reads from ``a``'s lower triangle (``upper``: from its upper one, the
    lower one of ``a^H``: the transposed view enters, conjugated there), in the layout; only the triangle
    moves (`to_cyclic`'s ``triangle``)."""
    c = _cyclic(a.T if upper else a, name, block, grid, triangle="lower")
    if upper and c.dtype.kind == "c":
        np.conjugate(c.local, out=c.local)
    return c


def _replicated_result(values, mesh) -> DistributedTensor:
    values = np.ascontiguousarray(values)
    return DistributedTensor._fast(values, values, Sharding(mesh, []), values.shape,
                                   tuple(slice(0, n) for n in values.shape), None)


def cholesky(a: DistributedTensor, *, upper: bool = False, block=None, grid=None,
             overwrite_a: bool = False) -> DistributedTensor:
    """The Cholesky factor of Hermitian positive definite ``a`` (lower, or upper with ``upper=True``), in
    ``a``'s sharding, read from the lower (``upper``: upper) triangle of ``a`` as numpy reads it.
    ``LinAlgError`` on every process if ``a`` is not positive definite.

    ``overwrite_a`` (as SciPy's): the lower factor may be written into ``a``'s own blocks, as ScaLAPACK's
    ``pdpotrf`` works in place: no second matrix is allocated, and the call costs no first touches of
    fresh memory. It is, where ``a`` is a plain split tensor (no halos, not partial, not deferred) of the
    factor's dtype; then the tensor returned shares ``a``'s blocks, and ``a`` holds the factor (or, after a
    `LinAlgError`, whatever the factorization left). Elsewhere (``upper``, another dtype) ``a`` is not
    touched.

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> a = DistributedTensor.from_global(np.array([[4.0, 2.0], [2.0, 5.0]]), Sharding(Mesh((-1,)), [[0]]))
    >>> L = cholesky(a, overwrite_a=True)
    >>> L.gather().tolist(), a.gather().tolist()
    ([[2.0, 0.0], [1.0, 2.0]], [[2.0, 0.0], [1.0, 2.0]])
    """
    _square("cholesky", a)
    if not is_distributable(a):
        return _replicated_result(np.linalg.cholesky(a.gather(), upper=upper), a.mesh)
    c = _lower_triangle(a, "cholesky", block, grid, upper)  # (the factor leaves as a triangle too)
    sharding = _plain(a.sharding)
    # (after the entry: ``a`` has been read, and a deferred ``a`` evaluated; ``interior`` evaluates the deferred
    # expressions that read ``a`` before it is written, as numpy would have)
    into = a if overwrite_a and not upper and type(a) is DistributedTensor and a.sharding == sharding \
        and a.dtype == c.dtype and a.interior.flags.writeable else None
    if c.layout.grid[0] == 1:  # every panel reaches every process: each writes its part as it comes
        if into is not None:
            rs, cs = into.shard_slices
            zero_across(into._interior, rs.start, cs.start, "lower")
            out = into
        else:
            out = DistributedTensor.from_local(lazy_zeros(sharding.local_shape(a.shape), c.dtype), sharding,
                                               a.shape)
        info = factor.cholesky(c, zero_upper=False, emit=_lower_panel_writer(out))
    else:
        out, info = None, factor.cholesky(c, zero_upper=False)
    if info:
        raise LinAlgError("Matrix is not positive definite")
    if out is None:
        out = c.to_tensor(sharding, triangle="lower", consume=True, out=into)
    del c
    return out.T.conj().reshard(sharding) if upper else out


def _lower_panel_writer(out: DistributedTensor):
    """`factor.cholesky`'s ``emit`` writing a lower triangular factor into ``out`` (zeros, no halos): each
    finished block column's rows that ``out``'s block holds, the strict upper part of the diagonal block
    left zero."""
    rs, cs = out.shard_slices
    block = out._interior

    def emit(g0, g1, panel):
        c0, c1 = max(g0, cs.start), min(g1, cs.stop)
        r0 = max(g0, rs.start)
        if c1 <= c0 or r0 >= rs.stop:
            return
        below = max(r0, min(g1, rs.stop))  # (rows from here on are below the diagonal block: whole)
        for i in range(r0, below):  # the diagonal block's rows: up to the diagonal
            j1 = min(c1, i + 1)
            if j1 > c0:
                block[i - rs.start, c0 - cs.start:j1 - cs.start] = panel[i - g0, c0 - g0:j1 - g0]
        if below < rs.stop:
            block[below - rs.start:rs.stop - rs.start, c0 - cs.start:c1 - cs.start] = \
                panel[below - g0:rs.stop - g0, c0 - g0:c1 - g0]

    return emit


def _lu(a: DistributedTensor, name, block, grid):
    c = _cyclic(a, name, block, grid)
    perm, info = factor.lu(c)
    return c, perm, info


def _row_sharding(a: DistributedTensor) -> Sharding:
    """Rows split over ``a``'s row axes (or, for a matrix split on columns only, over its column axes)."""
    s = _plain(a.sharding)
    axes = list(s.dim_axes(0)) or [ax for d in range(a.ndim) for ax in s.dim_axes(d)]
    return Sharding(a.mesh, [axes])


def lu(a: DistributedTensor, *, permute_l: bool = False, block=None, grid=None):
    """``P, L, U`` with ``a = P @ L @ U`` as ``scipy.linalg.lu`` returns them (``permute_l``: ``P @ L, U``),
    partial pivoting; each factor split on rows like ``a``."""
    if not isinstance(a, DistributedTensor) or a.ndim != 2:
        raise ValueError(f"lu: expected a 2-D matrix, got shape {getattr(a, 'shape', None)}")
    if not is_distributable(a):
        import scipy.linalg

        return tuple(_replicated_result(x, a.mesh) for x in scipy.linalg.lu(a.gather(), permute_l=permute_l))
    m, n = a.shape
    k = min(m, n)
    rows = _row_sharding(a)
    c, perm, _ = _lu(a, "lu", block, grid)
    whole = c.to_tensor(rows, consume=True)  # L below the diagonal, U on and above it (m x n)
    packed = whole._interior
    start = whole.shard_slices[0].start
    grow = np.arange(start, start + packed.shape[0])
    col = np.arange(k)
    l_t = DistributedTensor.empty((m, k), rows, packed.dtype)
    l_t._interior[...] = np.where(grow[:, None] > col[None, :], packed[:, :k], 0)
    l_t._interior[grow[:, None] == col[None, :]] = 1
    u_t = DistributedTensor.empty((m, n), rows, packed.dtype)
    u_t._interior[...] = np.triu(packed, start)  # global column >= global row
    if m > k:
        u_t = u_t[:k].reshard(Sharding(a.mesh, [list(rows.dim_axes(0))]))
    if permute_l:
        return _permute_tensor_rows(l_t, perm), u_t
    p = DistributedTensor.empty((m, m), rows, packed.dtype)
    p._interior[...] = 0
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(m)
    p._interior[np.arange(grow.size), inverse[grow]] = 1  # P[perm[i], i] = 1
    return p, l_t, u_t


def _permute_tensor_rows(t: DistributedTensor, perm) -> DistributedTensor:
    """``out[perm[i]] = t[i]``: through the block-cyclic layout's row exchange."""
    c = to_cyclic(t)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size)
    factor.permute_rows(c, inverse)
    return c.to_tensor(t.sharding, consume=True)


def _rhs(name, a: DistributedTensor, b):
    """``b`` as a 2-D tensor (a 1-D ``b`` as one column), and how to give the solution back."""
    if not isinstance(b, DistributedTensor):
        b = np.asarray(b)
        vals = b if b.ndim == 2 else b.reshape(-1, 1)
        t = _replicated_result(vals, a.mesh)
        return t, (lambda x: x.reshape(x.shape[0]) if b.ndim == 1 else x), Sharding(a.mesh, [])
    if b.ndim == 1:
        target = Sharding(b.mesh, [list(_plain(b.sharding).dim_axes(0))])
        return b.reshape(b.shape[0], 1), (lambda x: x.reshape(x.shape[0])), target
    return b, (lambda x: x), _plain(b.sharding)


def solve(a: DistributedTensor, b) -> DistributedTensor:
    """``x`` with ``a @ x = b`` (``b``: ``(n,)`` or ``(n, k)``, a tensor or a numpy array), by LU with partial
    pivoting; ``x`` split like ``b``. ``LinAlgError("Singular matrix")`` on every process for a singular
    ``a``."""
    _square("solve", a)
    n = a.shape[0]
    bt, back, target = _rhs("solve", a, b)
    if bt.shape[0] != n:
        raise ValueError(f"solve: b has {bt.shape[0]} rows, the matrix is {a.shape}")
    if not is_distributable(a) and not is_distributable(bt):
        x = np.linalg.solve(a.gather(), bt.gather())
        return back(_replicated_result(x, a.mesh))
    c, perm, info = _lu(a, "solve", None, None)
    if info:
        raise LinAlgError("Singular matrix")
    rhs = to_cyclic(bt, block=c.layout.block[0], grid=c.layout.grid, dtype=np.result_type(c.dtype, bt.dtype))
    if rhs.dtype != c.dtype:
        c = c.like(c.local.astype(rhs.dtype, order="F"))
    factor.permute_rows(rhs, perm)
    factor.triangular_solve(c, rhs, lower=True, unit=True)
    factor.triangular_solve(c, rhs, lower=False)
    return back(rhs.to_tensor(target, consume=True))


def inv(a: DistributedTensor) -> DistributedTensor:
    """The inverse of square ``a``, split like ``a``; ``LinAlgError("Singular matrix")`` everywhere if it
    has none."""
    _square("inv", a)
    if not is_distributable(a):
        return _replicated_result(np.linalg.inv(a.gather()), a.mesh)
    c, perm, info = _lu(a, "inv", None, None)
    if info:
        raise LinAlgError("Singular matrix")
    eye = CyclicMatrix.identity(c.layout, c.grid, c.dtype, c.mesh)
    factor.permute_rows(eye, perm)
    factor.triangular_solve(c, eye, lower=True, unit=True)
    factor.triangular_solve(c, eye, lower=False)
    return eye.to_tensor(_plain(a.sharding), consume=True)


def _slogdet_parts(a: DistributedTensor):
    c, perm, _ = _lu(a, "det", None, None)
    d = factor.lu_diagonal(c)
    cycles = _cycle_count(perm)
    swaps_sign = -1.0 if (perm.size - cycles) % 2 else 1.0
    return d, swaps_sign


def _cycle_count(perm: np.ndarray) -> int:
    seen = np.zeros(perm.size, bool)
    count = 0
    for i in range(perm.size):
        if not seen[i]:
            count += 1
            j = i
            while not seen[j]:
                seen[j] = True
                j = perm[j]
    return count


def slogdet(a: DistributedTensor):
    """``(sign, logabsdet)`` of square ``a`` as numpy's ``slogdet`` (numbers, the same on every process)."""
    _square("slogdet", a)
    if not is_distributable(a):
        return np.linalg.slogdet(a.gather())
    d, sign = _slogdet_parts(a)
    res = np.linalg.slogdet(np.diag(d))  # numpy's own conventions for the diagonal (zero, complex phase)
    return type(res)(res.sign * sign, res.logabsdet)


def det(a: DistributedTensor):
    """The determinant of square ``a`` (a number, the same on every process)."""
    _square("det", a)
    if not is_distributable(a):
        return np.linalg.det(a.gather())
    d, sign = _slogdet_parts(a)
    return np.prod(d) * d.dtype.type(sign)


def matrix_power(a: DistributedTensor, power: int) -> DistributedTensor:
    """``a`` to the integer ``power`` (negative: of its inverse) by repeated squaring with distributed
    products (SUMMA on the block-cyclic layout), split like ``a``."""
    _square("matrix_power", a)
    if not isinstance(power, (int, np.integer)) or isinstance(power, bool):
        raise TypeError("exponent must be an integer")
    if not is_distributable(a):
        return _replicated_result(np.linalg.matrix_power(a.gather(), power), a.mesh)
    if power < 0:
        if a.dtype.kind in "biu":
            raise TypeError("For integer matrices, only non-negative powers are supported")
        a = inv(a)
        power = -power
    c = to_cyclic(a, block=_env_block())
    result = None
    base = c
    while True:
        if power & 1:
            if result is None:
                result = base.like()
            else:
                nxt = CyclicMatrix.zeros(c.layout, c.grid, c.dtype, c.mesh)
                factor.summa(result, base, nxt)
                result = nxt
        power >>= 1
        if not power:
            break
        sq = CyclicMatrix.zeros(c.layout, c.grid, c.dtype, c.mesh)
        factor.summa(base, base, sq)
        base = sq
    if result is None:
        result = CyclicMatrix.identity(c.layout, c.grid, c.dtype, c.mesh)
    return result.to_tensor(_plain(a.sharding), consume=True)


def _householder(a: DistributedTensor, name, dtype=None):
    c = to_cyclic(a, block=_env_block(), dtype=dtype or _work_dtype(name, a.dtype))
    ts = factor.qr(c)
    return c, ts


def _r_factor(c: CyclicMatrix, sharding: Sharding, shape, consume=False) -> DistributedTensor:
    """The upper trapezoid of ``c``'s leading ``shape`` part (``R``; the reflectors below stay in ``c``
    unless ``consume``): only it moves, into zeros whose pages below the diagonal are never touched."""
    return c.to_tensor(sharding, shape=shape, triangle="upper", consume=consume)


def _q_factor(c: CyclicMatrix, ts, p: int) -> CyclicMatrix:
    m = c.layout.shape[0]
    layout = BlockCyclic((m, p), c.layout.block, c.layout.grid)
    q = CyclicMatrix.identity(layout, c.grid, c.dtype, c.mesh)
    factor.form_q(c, ts, q)
    return q


def qr(a: DistributedTensor, mode: str = "reduced"):
    """numpy's ``qr`` (``mode`` ``'reduced'``, ``'complete'`` or ``'r'``) of a split matrix of any shape:
    TSQR for a row-split tall matrix whose ``R`` factors, stacked, are no larger than it (the rows never
    move), blocked Householder QR on the block-cyclic layout otherwise. ``Q`` and ``R`` come back split on
    rows like ``a`` (TSQR's ``R``: replicated)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode {mode!r} is not 'reduced', 'complete' or 'r' ('raw' has no distributed form)")
    if not isinstance(a, DistributedTensor) or a.ndim != 2:
        raise np.linalg.LinAlgError(f"{getattr(a, 'ndim', 0)}-dimensional array given. Array must be two-dimensional")
    m, n = a.shape
    k = min(m, n)
    if not is_distributable(a):
        res = np.linalg.qr(a.gather(), mode=mode)
        return _replicated_result(res, a.mesh) if mode == "r" else tuple(_replicated_result(x, a.mesh) for x in res)
    if mode != "complete" and is_tall_row_split(a) and n * a.sharding.dim_split_size(0) <= m:
        q, r = tsqr(a)
        return r if mode == "r" else (q, r)
    rows = _row_sharding(a)
    c, ts = _householder(a, "qr")
    rk = m if mode == "complete" else k
    r = _r_factor(c, Sharding(a.mesh, [list(rows.dim_axes(0))]), (rk, n), consume=mode == "r")
    if mode == "r":
        return r
    return _q_factor(c, ts, rk).to_tensor(rows, consume=True), r


def lstsq(a: DistributedTensor, b, rcond=None):
    """numpy's ``lstsq`` of a split matrix: ``(x, residuals, rank, s)``. Householder QR (of ``a``, or of
    ``a^H`` when it is wide) reduces the problem to the small triangular factor (``min(m, n)`` square,
    replicated), where numpy's own ``lstsq`` gives the minimum-norm solution, the rank and the singular
    values; ``x`` comes back split on rows."""
    if not isinstance(a, DistributedTensor) or a.ndim != 2:
        raise np.linalg.LinAlgError(f"{getattr(a, 'ndim', 0)}-dimensional array given. Array must be two-dimensional")
    m, n = a.shape
    bt, back, _ = _rhs("lstsq", a, b)
    if bt.shape[0] != m:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    if not is_distributable(a) and not is_distributable(bt):
        x, res, rank, s = np.linalg.lstsq(a.gather(), bt.gather(), rcond=rcond)
        return back(_replicated_result(x, a.mesh)), _residuals(res, b), rank, s
    rows = _row_sharding(a)
    dt = np.result_type(_work_dtype("lstsq", a.dtype), bt.dtype)
    if m >= n:
        c, ts = _householder(a, "lstsq", dt)
        y = to_cyclic(bt, block=c.layout.block[0], grid=c.layout.grid, dtype=dt)
        factor.apply_qh(c, ts, y)
        r_small = _r_factor(c, Sharding(a.mesh, []), (n, n))._interior
        y_all = y.to_tensor(Sharding(a.mesh, []))._interior  # replicated: the whole array
        x, _, rank, s = np.linalg.lstsq(r_small, y_all[:n], rcond=rcond)
        if rank == n and m > n:
            res = np.sum(np.abs(y_all[n:]) ** 2, axis=0)
        else:
            res = np.zeros(0, np.abs(y_all[:0]).dtype)
        xt = _replicated_result(x, a.mesh).reshard(Sharding(a.mesh, [list(rows.dim_axes(0))]))
        return back(xt), _residuals(res, b), rank, s
    # wide: a^H = Q R, a = R^H Q^H; the minimum-norm x is Q z with z the minimum-norm solution of R^H z = b
    ah = a.T.conj() if a.dtype.kind == "c" else a.T
    c, ts = _householder(ah, "lstsq", dt)
    r_small = _r_factor(c, Sharding(a.mesh, []), (m, m))._interior
    z, _, rank, s = np.linalg.lstsq(r_small.conj().T, bt.gather(), rcond=rcond)
    q = _q_factor(c, ts, m).to_tensor(Sharding(a.mesh, [list(rows.dim_axes(0))]), consume=True)
    x = DistributedTensor.empty((n, z.shape[1]), q.sharding, np.result_type(q.dtype, z.dtype))
    x._interior[...] = q._interior @ z
    return back(x), _residuals(np.zeros(0, np.abs(z[:0]).dtype), b), rank, s


def _residuals(res, b):
    """numpy's ``residuals``: one per column of ``b``; a 1-D ``b`` gives a shape ``(1,)`` array."""
    return np.asarray(res)


def _eigh_prepare(name, a: DistributedTensor, UPLO, block, grid):
    """``a``'s Hermitian matrix as numpy's ``eigh`` reads it from the ``UPLO`` triangle, in the block-cyclic
    layout, reduced to tridiagonal form. The ``"U"`` triangle is the lower one of ``a^H``: the transposed
    view enters the layout (the same one exchange) and is conjugated there."""
    _square(name, a)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    dt = _work_dtype(name, a.dtype)
    c = _lower_triangle(a, name, block, grid, UPLO == "U")
    eigen.hermitian_from_lower(c)
    d, e, refl = eigen.tridiagonalize(c)
    return c, d, e, refl, np.dtype(dt).type(0).real.dtype


def eigh(a: DistributedTensor, UPLO: str = "L", *, block=None, grid=None):
    """numpy's ``eigh`` of a split Hermitian matrix (read from its ``UPLO`` triangle): ``(w, v)`` with the
    eigenvalues ``w`` ascending (replicated) and the eigenvectors ``v`` as columns, split like ``a``.
    Householder reduction to real tridiagonal form on the block-cyclic layout, the tridiagonal's
    eigenvalues on every process (``dstemr``) and its eigenvectors by each process column for its own
    columns (``dstein``), back-transformation by the reflectors
    (`meshrt.linalg.eigen`); the matrix is never gathered. ``v`` may differ from numpy's by a sign (a
    phase) per column."""
    if not is_distributable(a):
        w, v = np.linalg.eigh(a.gather(), UPLO=UPLO)
        return _replicated_result(w, a.mesh), _replicated_result(v, a.mesh)
    c, d, e, refl, wdt = _eigh_prepare("eigh", a, UPLO, block, grid)
    z, w = eigen.eigenvectors(c, d, e, refl)
    del c  # the reflectors: not needed while the vectors leave the layout
    return _replicated_result(w.astype(wdt), a.mesh), z.to_tensor(_plain(a.sharding), consume=True)


def eigvalsh(a: DistributedTensor, UPLO: str = "L", *, block=None, grid=None) -> DistributedTensor:
    """numpy's ``eigvalsh`` of a split Hermitian matrix: the eigenvalues ascending, replicated (the
    reduction of `eigh`, no eigenvectors)."""
    if not is_distributable(a):
        return _replicated_result(np.linalg.eigvalsh(a.gather(), UPLO=UPLO), a.mesh)
    _, d, e, _, wdt = _eigh_prepare("eigvalsh", a, UPLO, block, grid)
    return _replicated_result(eigen.eigenvalues(d, e).astype(wdt), a.mesh)
