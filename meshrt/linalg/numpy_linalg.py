"""``np.linalg`` functions on `DistributedTensor` (numpy's ``__array_function__`` protocol).

A split 2-D matrix goes to meshrt's distributed algorithms (`meshrt.linalg.dense`: ``solve``, ``inv``,
``det``, ``slogdet``, ``cholesky``, ``matrix_power``, ``qr``, ``lstsq``, ``eigh``, ``eigvalsh``;
`meshrt.linalg.svd`: ``svd``, ``svdvals``, ``pinv``, ``matrix_rank``); stacks of matrices and the functions without a
distributed form gather the matrix on every process (at most `MAX_GATHERED` elements) and solve there with
numpy, identically everywhere. Either way a singular matrix raises ``LinAlgError`` on every process alike.

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
from ..tensor import numpy_functions as _numpy_functions, numpy_misc as _numpy_misc
from ..tensor.numpy_shifts import MAX_GATHERED
from . import dense
from .cyclic import _plain as _plain_tensor

__all__ = ["MAX_GATHERED", "per_matrix", "stack_split", "each_matrix", "matrix_split"]


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


def stack_split(x, *others) -> bool:
    """Whether ``x`` is a stack of matrices (3 dims or more) split on its stack dims only, the matrices whole
    on every process, and each tensor of ``others`` a stack of the same stack shape laid out alike: then
    every matrix is where it is, and numpy's function runs on each process's block of them (`per_matrix`).

    >>> from meshrt import Mesh
    >>> s = Sharding(Mesh((-1,)), [[0]])
    >>> stack_split(DistributedTensor.zeros((4, 3, 3), s)), stack_split(DistributedTensor.zeros((4, 3), s))
    (True, False)
    """
    if not (isinstance(x, DistributedTensor) and x.ndim > 2):
        return False
    s, nb = x.sharding, x.ndim - 2
    if not (any(s.split_axes) or s.is_partial) or s.dim_axes(nb) or s.dim_axes(nb + 1) or s.halo_sizes:
        return False
    for o in others:
        if isinstance(o, DistributedTensor):
            so = o.sharding
            if (o.ndim != x.ndim or o.shape[:nb] != x.shape[:nb] or so.halo_sizes or so.mesh != s.mesh
                    or any(so.dim_axes(d) != s.dim_axes(d) for d in range(o.ndim))
                    or so.dim_offsets(o.shape)[:nb] != s.dim_offsets(x.shape)[:nb]):
                return False
    return True


def per_matrix(fn, x, *args):
    """``fn`` (numpy's, on stacks) on each process's block of the stack ``x`` (`stack_split`), the stack tensors
    among ``args`` by their blocks; each result (a stack of the same stack dims: values, vectors or matrices)
    split like ``x``'s stack dims, nothing moved.  Tuples and named tuples field by field.

    >>> from meshrt import Mesh
    >>> x = DistributedTensor.from_global(np.eye(3) * np.arange(1.0, 5.0)[:, None, None],
    ...                                   Sharding(Mesh((-1,)), [[0]]))
    >>> per_matrix(np.linalg.det, x).gather()
    array([ 1.,  8., 27., 64.])
    """
    nb = x.ndim - 2
    s = x.sharding
    split = [list(s.dim_axes(d)) for d in range(nb)]
    offs = [int(o) for d in range(nb) if s.dim_axes(d) for o in s.dim_offsets(x.shape)[d]]
    rs = Sharding(s.mesh, split, sharded_dims_offsets=offs if any(split) else None)

    def wrap(r):
        if isinstance(r, tuple):
            vals = [wrap(v) for v in r]
            return type(r)(*vals) if hasattr(r, "_fields") else type(r)(vals)
        r = np.ascontiguousarray(r)
        return DistributedTensor(r, rs, x.shape[:nb] + r.shape[nb:])

    from mpi4py import MPI

    from ..runtime import mpi as _mpi

    result, error = None, None
    try:
        result = fn(*[a._full_interior() if isinstance(a, DistributedTensor) else a for a in (x, *args)])
    except (np.linalg.LinAlgError, ValueError, TypeError) as e:  # (a singular matrix in one process's block)
        error = (type(e).__name__, str(e))
    # the first failing rank's error, on every process: an allreduce, a broadcast only on failure (O(log P))
    comm = s.mesh.comm
    with _mpi.internal("np.linalg", "the per-matrix errors shared", s.mesh):
        rank = comm.allreduce(comm.rank if error is not None else comm.size, op=MPI.MIN)
        if rank < comm.size:
            error = comm.bcast(error, root=rank)
    if rank < comm.size:
        kind, msg = error
        cls = {"LinAlgError": np.linalg.LinAlgError, "ValueError": ValueError}.get(kind, TypeError)
        raise cls(f"{msg} (a matrix of the stack on rank {rank})")
    return wrap(result)


def matrix_split(x) -> bool:
    """Whether ``x`` is a stack of matrices (3 dims or more) with a mesh axis on a matrix dim (or partial
    values): then each matrix is itself split, and `each_matrix` runs the distributed 2-D algorithm on them
    one after the other.

    >>> from meshrt import Mesh
    >>> matrix_split(DistributedTensor.zeros((4, 3, 3), Sharding(Mesh((-1,)), [[], [0]])))
    True
    """
    if not (isinstance(x, DistributedTensor) and x.ndim > 2 and x.size):  # (an empty stack: nothing to move)
        return False
    s, nb = x.sharding, x.ndim - 2
    return bool(s.dim_axes(nb) or s.dim_axes(nb + 1) or (s.is_partial and not stack_split(x)))


def _matrices_split(t: DistributedTensor, nb: int) -> DistributedTensor:
    """``t`` with its first ``nb`` (stack) dims whole on every process: the mesh axes that split them, if
    any, moved onto the rows (one all-to-all, so each process still holds its share, never a gather);
    halos and partial values resolved."""
    s = t.sharding
    stack_axes = [ax for d in range(nb) for ax in s.dim_axes(d)]
    if not stack_axes and not s.is_partial and not s.halo_sizes:
        return t
    split = [[] for _ in range(nb)] + [list(s.dim_axes(nb)) + stack_axes] + \
        [list(s.dim_axes(d)) for d in range(nb + 1, t.ndim)]
    return t.reshard(Sharding(s.mesh, split))


def each_matrix(fn, x, *args):
    """``fn`` (a numpy function, on 2-D tensors: meshrt's distributed form) on each matrix of the stack
    ``x`` in turn (`matrix_split`), with the stack arguments among ``args`` (tensors or arrays of ``x``'s
    stack shape and rank) indexed alike; the results stacked back: a result tensor keeps its sharding on its
    own dims (the stack dims whole), a number or array is the same on every process (replicated). Tuples
    and named tuples field by field. A ``LinAlgError`` in any matrix is raised on every process, as the 2-D
    algorithms raise it.

    >>> from meshrt import Mesh
    >>> x = DistributedTensor.from_global(np.eye(3) * np.arange(1.0, 5.0)[:, None, None],
    ...                                   Sharding(Mesh((-1,)), [[], [0]]))
    >>> each_matrix(np.linalg.det, x).gather()
    array([ 1.,  8., 27., 64.])
    >>> each_matrix(np.linalg.inv, x).gather()[1].diagonal().tolist()
    [0.5, 0.5, 0.5]
    """
    nb = x.ndim - 2
    stack = x.shape[:nb]
    given = _plain(x)
    x = _matrices_split(x, nb)

    def stacked(a):
        return isinstance(a, (DistributedTensor, np.ndarray)) and a.ndim == x.ndim and a.shape[:nb] == stack

    args = [_matrices_split(a, nb) if isinstance(a, DistributedTensor) and stacked(a) else a for a in args]
    outs = None
    for idx in np.ndindex(*stack):
        r = fn(x[idx], *[a[idx] if stacked(a) else a for a in args])
        leaves = [_plain_tensor(leaf) if isinstance(leaf, DistributedTensor) else leaf for leaf in _leaves(r)]
        if outs is None:
            outs = [_stack_of(leaf, stack, x.mesh) for leaf in leaves]
        for out, leaf in zip(outs, leaves):
            out_block = out._interior if isinstance(out, DistributedTensor) else out
            out_block[idx] = leaf._interior if isinstance(leaf, DistributedTensor) else leaf
    # a result shaped like the stack (inv, cholesky, ...) goes back to the stack's own sharding
    leaves = iter(dense._replicated_result(o, x.mesh) if isinstance(o, np.ndarray)
                  else o.reshard(given) if o.shape == x.shape and o.sharding != given else o for o in outs)
    return _rebuild(r, leaves)


def _leaves(r) -> list:
    if isinstance(r, tuple):
        return [leaf for v in r for leaf in _leaves(v)]
    return [r]


def _rebuild(r, leaves):
    if isinstance(r, tuple):
        vals = [_rebuild(v, leaves) for v in r]
        return type(r)(*vals) if hasattr(r, "_fields") else type(r)(vals)
    return next(leaves)


def _stack_of(leaf, stack, mesh):
    """The empty stack of ``stack`` results like ``leaf``: a tensor split as ``leaf`` on its dims, or a
    numpy array for numbers."""
    if isinstance(leaf, DistributedTensor) and any(leaf.sharding.split_axes):
        s = leaf.sharding
        split = [[] for _ in stack] + [list(s.dim_axes(d)) for d in range(leaf.ndim)]
        return DistributedTensor.empty(tuple(stack) + leaf.shape,
                                       Sharding(mesh, split, sharded_dims_offsets=s.sharded_dims_offsets), leaf.dtype)
    value = leaf._interior if isinstance(leaf, DistributedTensor) else np.asarray(leaf)
    return np.empty(tuple(stack) + value.shape, value.dtype)


def _distributed(a) -> bool:
    return isinstance(a, DistributedTensor) and dense.is_distributable(a)


@implements(np.linalg.inv)
def _np_inv(a):
    if stack_split(a):
        return per_matrix(np.linalg.inv, a)
    if matrix_split(a):
        return each_matrix(np.linalg.inv, a)
    if _distributed(a):
        return dense.inv(a)
    return _like(np.linalg.inv(_gathered("np.linalg.inv", a)), a)


@implements(np.linalg.det)
def _np_det(a):
    if stack_split(a):
        return per_matrix(np.linalg.det, a)
    if matrix_split(a):
        return each_matrix(np.linalg.det, a)
    if _distributed(a):
        return dense.det(a)
    return np.linalg.det(_gathered("np.linalg.det", a))


@implements(np.linalg.slogdet)
def _np_slogdet(a):
    if stack_split(a):
        return per_matrix(np.linalg.slogdet, a)
    if matrix_split(a):
        return each_matrix(np.linalg.slogdet, a)
    if _distributed(a):
        return dense.slogdet(a)
    return np.linalg.slogdet(_gathered("np.linalg.slogdet", a))


@implements(np.linalg.solve)
def _np_solve(a, b):
    if stack_split(a, b) and isinstance(b, DistributedTensor):
        return per_matrix(np.linalg.solve, a, b)
    if matrix_split(a) and (np.ndim(b) == 1 or (np.ndim(b) == a.ndim and np.shape(b)[:-2] == a.shape[:-2])):
        return each_matrix(np.linalg.solve, a, b)
    if _distributed(a) and (not isinstance(b, DistributedTensor) or b.ndim <= 2):
        return dense.solve(a, b)
    A = _gathered("np.linalg.solve", a) if isinstance(a, DistributedTensor) else np.asarray(a)
    B = _gathered("np.linalg.solve", b) if isinstance(b, DistributedTensor) else np.asarray(b)
    x = np.linalg.solve(A, B)
    like = b if isinstance(b, DistributedTensor) else None
    if like is not None and like.shape == x.shape:
        return _like(x, like)
    ref = a if isinstance(a, DistributedTensor) else b
    return DistributedTensor.from_global(x, Sharding(ref.mesh, []))


@implements(np.linalg.matrix_power)
def _np_matrix_power(a, n):
    if stack_split(a):
        return per_matrix(np.linalg.matrix_power, a, n)
    if matrix_split(a):
        return each_matrix(np.linalg.matrix_power, a, n)
    if _distributed(a):
        return dense.matrix_power(a, n)
    return _like(np.linalg.matrix_power(_gathered("np.linalg.matrix_power", a), n), a)


@implements(np.linalg.qr)
def _np_qr(a, mode="reduced"):
    if stack_split(a):
        return per_matrix(lambda m: np.linalg.qr(m, mode=mode), a)
    if matrix_split(a):
        return each_matrix(lambda m: np.linalg.qr(m, mode=mode), a)
    if _distributed(a):
        return dense.qr(a, mode)
    res = np.linalg.qr(_gathered("np.linalg.qr", a), mode=mode)
    return _like(res, a) if mode == "r" else tuple(DistributedTensor.from_global(np.ascontiguousarray(x),
                                                                              Sharding(a.mesh, [])) for x in res)


@implements(np.linalg.lstsq)
def _np_lstsq(a, b, rcond=None):
    if _distributed(a) or (isinstance(a, DistributedTensor) and isinstance(b, DistributedTensor)
                           and dense.is_distributable(b)):
        return dense.lstsq(_tensor("np.linalg.lstsq", a), b, rcond=rcond)
    A = _gathered("np.linalg.lstsq", a) if isinstance(a, DistributedTensor) else np.asarray(a)
    B = _gathered("np.linalg.lstsq", b) if isinstance(b, DistributedTensor) else np.asarray(b)
    x, res, rank, sv = np.linalg.lstsq(A, B, rcond=rcond)
    ref = a if isinstance(a, DistributedTensor) else b
    return DistributedTensor.from_global(np.ascontiguousarray(x), Sharding(ref.mesh, [])), res, rank, sv


@implements(np.linalg.eigh)
def _np_eigh(a, UPLO="L"):
    if stack_split(a):
        return per_matrix(lambda m: np.linalg.eigh(m, UPLO=UPLO), a)
    if matrix_split(a):
        return each_matrix(lambda m: np.linalg.eigh(m, UPLO=UPLO), a)
    if _distributed(a):
        return dense.eigh(a, UPLO)
    w, v = np.linalg.eigh(_gathered("np.linalg.eigh", a), UPLO=UPLO)
    return DistributedTensor.from_global(w, Sharding(a.mesh, [])), _like(v, a)


@implements(np.linalg.eigvalsh)
def _np_eigvalsh(a, UPLO="L"):
    if stack_split(a):
        return per_matrix(lambda m: np.linalg.eigvalsh(m, UPLO=UPLO), a)
    if matrix_split(a):
        return each_matrix(lambda m: np.linalg.eigvalsh(m, UPLO=UPLO), a)
    if _distributed(a):
        return dense.eigvalsh(a, UPLO)
    return DistributedTensor.from_global(np.linalg.eigvalsh(_gathered("np.linalg.eigvalsh", a), UPLO=UPLO),
                                         Sharding(a.mesh, []))


def matrix_norm(x, ord):
    """numpy's matrix norms of a 2-D tensor: 1/-1 (column sums), inf/-inf (row sums) as reductions;
    2/-2/'nuc' from the singular values (`meshrt.linalg.svd`, never gathered)."""
    if ord in ("fro", None):
        a = abs(x)
        return np.sqrt((a * a).sum())
    if ord in (1, -1, np.inf, -np.inf):
        a = abs(x)
        if a.dtype.kind in "biu":
            a = a.astype(np.float64)
        sums = a.sum(axis=0 if ord in (1, -1) else 1)
        return sums.max() if ord in (1, np.inf) else sums.min()
    if ord in (2, -2, "nuc"):
        from .svd import svdvals

        s = svdvals(x)._interior if dense.is_distributable(x) else np.linalg.svd(x._interior, compute_uv=False)
        return s.sum() if ord == "nuc" else (s[0] if ord == 2 else s[-1])
    raise ValueError("Invalid norm order for matrices.")


def _svd_result(u, s, vh):
    result = getattr(np.linalg, "SVDResult", None) or getattr(getattr(np.linalg, "_linalg", None), "SVDResult",
                                                              None)
    return result(u, s, vh) if result is not None else (u, s, vh)


@implements(np.linalg.svd)
def _np_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    from . import svd as _svd
    from .tall import tsqr_fits, tsqr_svd, tsqr_svdvals

    a = _tensor("np.linalg.svd", a)
    if stack_split(a):
        return per_matrix(lambda m: np.linalg.svd(m, full_matrices=full_matrices, compute_uv=compute_uv,
                                                  hermitian=hermitian), a)
    if matrix_split(a):
        return each_matrix(lambda m: np.linalg.svd(m, full_matrices=full_matrices, compute_uv=compute_uv,
                                                   hermitian=hermitian), a)
    if _distributed(a):
        if tsqr_fits(a) and (not full_matrices or not compute_uv):
            return tsqr_svdvals(a) if not compute_uv else _svd_result(*tsqr_svd(a))
        res = _svd.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
        return res if not compute_uv else _svd_result(*res)
    res = np.linalg.svd(_gathered("np.linalg.svd", a), full_matrices=full_matrices, compute_uv=compute_uv,
                        hermitian=hermitian)
    if not compute_uv:
        return DistributedTensor.from_global(res, Sharding(a.mesh, []))
    return _svd_result(*(DistributedTensor.from_global(np.ascontiguousarray(x), Sharding(a.mesh, [])) for x in res))


if hasattr(np.linalg, "svdvals"):
    @implements(np.linalg.svdvals)
    def _np_svdvals(x, /):
        return _np_svd(x, compute_uv=False)


@implements(np.linalg.pinv)
def _np_pinv(a, rcond=None, hermitian=False, **kwargs):
    from . import svd as _svd

    a = _tensor("np.linalg.pinv", a)
    missing = object()
    rtol = kwargs.pop("rtol", missing)
    if kwargs:
        raise TypeError(f"np.linalg.pinv: unexpected arguments {sorted(kwargs)}")
    if rcond is not None and rtol is not missing:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if rcond is None:  # numpy's defaults: 1e-15 when neither is given, max(M, N) * eps for rtol=None
        rcond = 1e-15 if rtol is missing else rtol
    if stack_split(a):
        return per_matrix(lambda m: np.linalg.pinv(m, rcond=rcond, hermitian=hermitian), a)
    if matrix_split(a):
        return each_matrix(lambda m: np.linalg.pinv(m, rcond=rcond, hermitian=hermitian), a)
    if _distributed(a):
        return _svd.pinv(a, rtol=rcond)
    kw = {"rcond": rcond} if rcond is not None else {"rtol": None}
    return _like(np.linalg.pinv(_gathered("np.linalg.pinv", a), hermitian=hermitian, **kw), a)


@implements(np.linalg.matrix_rank)
def _np_matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    from . import svd as _svd

    A = _tensor("np.linalg.matrix_rank", A)
    if stack_split(A):
        return per_matrix(lambda m: np.linalg.matrix_rank(m, tol=tol, hermitian=hermitian, rtol=rtol), A)
    if matrix_split(A):
        return each_matrix(lambda m: np.linalg.matrix_rank(m, tol=tol, hermitian=hermitian, rtol=rtol), A)
    if _distributed(A):
        return _svd.matrix_rank(A, tol=tol, rtol=rtol)
    return np.linalg.matrix_rank(_gathered("np.linalg.matrix_rank", A), tol=tol, hermitian=hermitian, rtol=rtol)


@implements(np.linalg.diagonal)
def _np_linalg_diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of a 2-D tensor, never gathered (`meshrt.tensor.numpy_misc.diagonal_2d`); of a
    stack split on its stack dims, each process's matrices'."""
    if stack_split(x):
        return per_matrix(lambda m: np.linalg.diagonal(m, offset=offset).copy(), x)
    if matrix_split(x):
        return each_matrix(lambda m: np.linalg.diagonal(m, offset=offset).copy(), x)
    if x.ndim != 2:
        raise TypeError("np.linalg.diagonal on a DistributedTensor: a 2-D tensor or a stack split on its stack "
                        "dims (else meshrt.array_api's linalg.diagonal)")
    return _numpy_misc.diagonal_2d(x, offset)


@implements(np.linalg.cross)
def _np_linalg_cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along ``axis`` (not split), each process on its blocks."""
    return np.cross(x1, x2, axis=axis)


@implements(np.linalg.cholesky)
def _np_cholesky(a, /, *, upper=False):
    a = _tensor("np.linalg.cholesky", a)
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if stack_split(a):
        return per_matrix(lambda m: np.linalg.cholesky(m, upper=upper), a)
    if matrix_split(a):
        return each_matrix(lambda m: np.linalg.cholesky(m, upper=upper), a)
    if _distributed(a):
        return dense.cholesky(a, upper=upper)
    L = np.linalg.cholesky(a.gather(), upper=upper)  # the same matrix everywhere: the same result or error
    return _like(L, a)


class LinalgPlan:
    """What ``np.linalg.<name>`` does with a split matrix, as `explain_op` prints it: the block-cyclic layout
    it enters, and this process's modeled communication (`meshrt.linalg.model`)."""

    def __init__(self, name, shape, layout, kind, cost, gathers, stack=None):
        self.name, self.shape, self.layout, self.kind, self.cost, self.gathers, self.stack = (
            name, shape, layout, kind, cost, gathers, stack)

    def __repr__(self):
        return f"LinalgPlan({self.name!r}, {self.layout})"

    def __str__(self):
        head = f"np.linalg.{self.name} {self.shape}: "
        if self.gathers:
            return head + "gathered on every process, solved by numpy there (no distributed form for this case)"
        if self.stack == "local":
            return head + "numpy on each process's matrices (the stack split on its stack dims; nothing moves)"
        c = self.cost
        each = (f"each of the {int(np.prod(self.shape[:-2]))} matrices in turn: " if self.stack == "each" else "")
        return (head + each + f"one all-to-all into {self.layout}, {self.kind} "
                f"({c.steps} panel steps; this process receives ~{c.words} words in ~{c.messages} tree "
                f"messages, ~{c.flops:.3g} flops of local updates), one all-to-all back")


_KINDS = {np.linalg.cholesky: "cholesky", np.linalg.solve: "lu", np.linalg.inv: "lu", np.linalg.det: "lu",
          np.linalg.slogdet: "lu", np.linalg.qr: "qr", np.linalg.lstsq: "qr", np.linalg.matrix_power: "summa",
          np.linalg.eigh: "eigh", np.linalg.eigvalsh: "eigh"}


def _explainer(func):
    def explain(a, *args, **kwargs):
        from .blockcyclic import BlockCyclic
        from .model import factorization_cost

        a = _tensor(f"np.linalg.{func.__name__}", a)
        kind = _KINDS[func]
        if stack_split(a):
            return LinalgPlan(func.__name__, a.shape, None, kind, None, False, "local")
        stack = "each" if matrix_split(a) else None
        if kind is None or (a.ndim != 2 and not stack) or not (stack or dense.is_distributable(a)):
            return LinalgPlan(func.__name__, a.shape, None, kind, None, True)
        layout = BlockCyclic.default(a.shape[-2:], a.mesh.size, dense._env_block())
        n = min(a.shape[-2:])
        coords = divmod(a.mesh.rank, layout.grid[1])
        modeled = {"summa": "lu", "eigh": "qr"}.get(kind, kind)  # eigh: its reduction moves QR's panels
        cost = factorization_cost(modeled, n, layout.block[0], layout.grid, coords)
        return LinalgPlan(func.__name__, a.shape, layout, {"lu": "LU with partial pivoting", "qr": "Householder QR",
                                                           "cholesky": "right-looking Cholesky",
                                                           "summa": "SUMMA products",
                                                           "eigh": "Householder reduction to tridiagonal form, "
                                                                   "the tridiagonal's eigenpairs, the reflectors "
                                                                   "applied back"}[kind], cost, False, stack)
    return explain


def _register_explainers():
    from ..tensor.dispatch import EXPLAINERS

    for func in _KINDS:
        EXPLAINERS[func] = _explainer(func)


_register_explainers()
_numpy_functions.MATRIX_NORM = matrix_norm
