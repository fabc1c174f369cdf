"""The SVD of a split matrix of any shape, never gathered: one-sided block Jacobi on a column split.

Hestenes' method: rotate the columns of ``W = A`` (of ``A^H`` when ``A`` is wide) by orthogonal
transforms until they are mutually orthogonal; then ``sigma_j = ||w_j||``, ``u_j = w_j / sigma_j``, and
``V`` is the product of the transforms.  The ``n`` columns are cut into ``2 P`` blocks, two per
process; each round a process orthogonalizes its pair of blocks against each other and within
(``G = [W_a W_b]^H [W_a W_b]``, ``G = Q L Q^H``, ``[W_a W_b] <- [W_a W_b] Q``: two matrix products and a
small ``eigh``, all local), then passes one block to each ring neighbour (Brent and Luk's
round robin: block 0 stays, the other ``2 P - 1`` move one seat), so that a sweep of ``2 P - 1``
rounds meets every pair of blocks once.  Sweeps repeat until no pair's columns are further from
orthogonal than `_tolerance` (one allreduce per sweep); 5 to 10 sweeps is usual.  Each process
sends two blocks a round and holds its ``n / P`` columns of ``W`` and of ``V``: per process the
memory is its share and the messages go to two neighbours, at any ``P``.

Singular values come out with the absolute accuracy of LAPACK's ``gesdd`` (``eps * ||A||``); columns
whose singular value is below that are completed to an orthonormal basis by a Householder QR
(`meshrt.linalg.dense.qr`), as is ``U`` with ``full_matrices=True``.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> a = DistributedTensor.from_global(np.array([[3.0, 0.0], [4.0, 5.0]]), Sharding(Mesh((-1,)), [[0]]))
>>> u, s, vh = svd(a)
>>> np.round(s.gather(), 6).tolist()
[6.708204, 2.236068]
>>> bool(np.allclose((u.gather() * s.gather()) @ vh.gather(), [[3.0, 0.0], [4.0, 5.0]]))
True
"""

from __future__ import annotations

import numpy as np

from ..runtime import mpi as _mpi
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor

__all__ = ["svd", "svdvals", "pinv", "matrix_rank", "seat_block", "MAX_SWEEPS"]

MAX_SWEEPS = 40


def _bounds(n: int, parts: int) -> list:
    return [n * i // parts for i in range(parts + 1)]


def seat_block(nprocs: int, proc: int, slot: int, rnd: int) -> int:
    """The block at process ``proc``'s ``slot`` (0 top, 1 bottom) in round ``rnd`` of a sweep: O(1).

    Block 0 stays at (0, 0); the others sit on a ring of ``2 P - 1`` seats, the tops of processes
    1..P-1 then the bottoms of P-1..0, and move one seat a round.

    >>> [[seat_block(2, p, s, 0) for s in (0, 1)] for p in (0, 1)]
    [[0, 1], [2, 3]]
    >>> [[seat_block(2, p, s, 1) for s in (0, 1)] for p in (0, 1)]
    [[0, 3], [1, 2]]
    """
    if proc == 0 and slot == 0:
        return 0
    ring = 2 * nprocs - 1
    seat = proc - 1 if slot == 0 else (nprocs - 1) + (nprocs - 1 - proc)
    j = (seat - rnd) % ring
    if j < nprocs - 1:  # initially the top of process j + 1
        return 2 * (j + 1)
    return 2 * (2 * nprocs - 2 - j) + 1  # initially the bottom of process 2P - 2 - j


def _tolerance(m: int, dtype) -> float:
    return float(np.finfo(dtype).eps) * max(8.0, 4.0 * np.sqrt(m))


class _Columns:
    """This process's two blocks of columns as rows: ``[W^T | V^T]`` (``c x (m + n)``; ``V`` left out
    for singular values alone)."""

    def __init__(self, top, bottom, m):
        self.top, self.bottom, self.m = top, bottom, m


def _sweeps(cols: _Columns, comm, sizes, m: int, floor: float, tol: float):
    """Rotate until orthogonal; returns the sweeps run (``MAX_SWEEPS + 1``: did not converge)."""
    P, me = comm.Get_size(), comm.Get_rank()
    width = cols.top.shape[1]
    dtype = cols.top.dtype
    for sweep in range(1, MAX_SWEEPS + 1):
        worst = 0.0
        for rnd in range(2 * P - 1):
            ct = cols.top.shape[0]
            pair = np.concatenate([cols.top, cols.bottom]) if cols.bottom.shape[0] else cols.top
            if pair.shape[0] > 1:
                w = pair[:, :m]
                g = w.conj() @ w.T
                d = np.sqrt(np.maximum(np.abs(np.diagonal(g)), floor * floor))
                off = np.abs(g) / d[:, None] / d[None, :]
                np.fill_diagonal(off, 0.0)
                far = float(off.max())
                worst = max(worst, far)
                if far > tol:
                    pair = _orthogonalize(pair, m)
                    cols.top, cols.bottom = pair[:ct], pair[ct:]
            if P > 1:
                _pass_on(cols, comm, P, me, rnd, sizes, width, dtype)
        with _mpi.internal("linalg.svd", "sweep convergence", comm):
            worst = comm.allreduce(worst, op=_max())
        if worst <= tol:
            return sweep
    return MAX_SWEEPS + 1


def _orthogonalize(pair, m):
    """The pair's columns ``W`` (rows ``[:, :m]``) replaced by ``W Vp = U S`` from their SVD
    ``W = U S Vp^H``, and its ``V`` (rows ``[:, m:]``) by ``V Vp``.

    ``U S`` is orthogonal relative to each column's own norm (``W Vp`` as computed would be orthogonal
    only relative to the largest), so the sweeps converge to a relative tolerance.  ``Vp``'s columns are
    matched to the columns they are most like, phases made positive, so that the rotation is the one
    nearest the identity: a pair that is almost orthogonal barely moves (a sorted ``Vp`` would swap
    columns back and forth, and Jacobi converges only linearly then)."""
    c = pair.shape[0]
    u, s, vh = np.linalg.svd(pair[:, :m].T, full_matrices=m < c)
    r = s.size
    vp = vh.conj().T
    us = np.zeros((m, c), pair.dtype)
    us[:, :r] = u[:, :r] * s
    order = _nearest(np.abs(vp))
    vp, us = vp[:, order], us[:, order]
    ph = np.diagonal(vp).copy()
    ph = np.where(ph == 0, 1.0, ph / np.where(ph == 0, 1.0, np.abs(ph))).conj()
    vp *= ph[None, :]
    us *= ph[None, :]
    out = np.empty_like(pair)
    out[:, :m] = us.T
    if pair.shape[1] > m:
        out[:, m:] = vp.T @ pair[:, m:]
    return out


def _nearest(weights):
    """``order[i]``: the column of ``weights`` assigned to row ``i``, maximizing the total weight (each
    row's largest when those are distinct, as near convergence; else an optimal assignment)."""
    order = np.argmax(weights, axis=1)
    if np.unique(order).size == order.size:
        return order
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(weights, maximize=True)
    order = np.empty_like(order)
    order[rows] = cols
    return order


def _max():
    from mpi4py import MPI
    return MPI.MAX


def _pass_on(cols: _Columns, comm, P, me, rnd, sizes, width, dtype):
    """One move of the round robin: top k -> top k+1, top P-1 -> bottom P-1, bottom k -> bottom k-1,
    bottom 0 -> top 1."""
    nxt = rnd + 1
    new_top = np.empty((sizes[seat_block(P, me, 0, nxt)], width), dtype)
    new_bottom = np.empty((sizes[seat_block(P, me, 1, nxt)], width), dtype)
    sends, recvs = [], []
    if me == 0:
        new_top = cols.top
        sends.append((cols.bottom, 1, 0))
    elif me < P - 1:
        sends.append((cols.top, me + 1, 0))
    if me >= 1:
        sends.append((cols.bottom, me - 1, 1))
    if me >= 1:
        recvs.append((new_top, me - 1, 0))
    if me == P - 1:  # (P > 1 here)
        new_bottom = cols.top
    else:
        recvs.append((new_bottom, me + 1, 1))
    with _mpi.internal("linalg.svd", "round robin of column blocks", comm):
        reqs = [comm.Irecv(buf, source=src, tag=tag) for buf, src, tag in recvs]
        reqs += [comm.Isend(np.ascontiguousarray(buf), dest=dst, tag=tag) for buf, dst, tag in sends]
        from mpi4py import MPI
        MPI.Request.Waitall(reqs)
    cols.top, cols.bottom = new_top, new_bottom


def _working(a: DistributedTensor, dtype, with_v: bool):
    """This process's two blocks of ``W`` (``A``, or ``A^H`` when wide) as rows, ``V``'s identity beside."""
    m, n = a.shape
    wide = m < n
    rows, cols_n = (n, m) if wide else (m, n)  # W is rows x cols_n
    mesh = a.mesh
    comm = mesh.comm
    P, me = comm.Get_size(), comm.Get_rank()
    blocks = _bounds(cols_n, 2 * P)
    offsets = blocks[0::2]
    axes = list(range(mesh.ndim))
    split = Sharding(mesh, [axes, []] if wide else [[], axes], sharded_dims_offsets=offsets)
    t = a.reshard(split)
    local = np.asarray(t._interior, dtype=dtype)
    wt = local.conj() if wide else local.T  # the columns of W as rows
    lo, mid, hi = blocks[2 * me], blocks[2 * me + 1], blocks[2 * me + 2]
    width = rows + (cols_n if with_v else 0)
    out = []
    for s, e in ((lo, mid), (mid, hi)):
        blk = np.zeros((e - s, width), dtype)
        blk[:, :rows] = wt[s - lo:e - lo]
        if with_v:
            blk[np.arange(e - s), rows + np.arange(s, e)] = 1.0
        out.append(blk)
    sizes = [b - a_ for a_, b in zip(blocks, blocks[1:])]
    return _Columns(out[0], out[1], rows), sizes, rows, cols_n, wide


def _decompose(a: DistributedTensor, with_v: bool):
    """(sigma of this process's columns, its columns as rows, rows of W, columns, wide, comm, dtype)."""
    from .dense import _work_dtype

    if not isinstance(a, DistributedTensor) or a.ndim != 2:
        raise np.linalg.LinAlgError(f"{getattr(a, 'ndim', 0)}-dimensional array given. Array must be two-dimensional")
    dtype = _work_dtype("svd", a.dtype)
    cols, sizes, m, n, wide = _working(a, dtype, with_v)
    comm = a.mesh.comm
    rdt = np.finfo(dtype).dtype
    w_all = np.concatenate([cols.top, cols.bottom])
    with _mpi.internal("linalg.svd", "Frobenius norm", comm):
        fro = np.sqrt(comm.allreduce(float(np.sum(np.abs(w_all[:, :m]) ** 2))))
    eps = float(np.finfo(dtype).eps)
    sweeps = _sweeps(cols, comm, sizes, m, eps * fro, _tolerance(m, dtype)) if fro > 0 else 1
    if sweeps > MAX_SWEEPS:
        raise np.linalg.LinAlgError("SVD did not converge")
    rowsblk = np.concatenate([cols.top, cols.bottom])
    sigma = np.sqrt(np.sum(np.abs(rowsblk[:, :m]) ** 2, axis=1)).astype(rdt)
    return sigma, rowsblk, m, n, wide, comm, dtype, fro


def _order(sigma, comm):
    """Every process's sigma (allgathered), the global descending order, and this process's first index."""
    with _mpi.internal("linalg.svd", "singular values", comm):
        counts = comm.allgather(sigma.size)
        every = np.empty(sum(counts), sigma.dtype)
        comm.Allgatherv(np.ascontiguousarray(sigma), [every, counts])
    order = np.argsort(-every, kind="stable")
    start = sum(counts[:comm.Get_rank()])
    return every, order, counts, start


def svdvals(a: DistributedTensor) -> DistributedTensor:
    """The singular values of a split matrix, descending, replicated: the sweeps without ``V``."""
    from .dense import _replicated_result

    sigma, _, m, n, _, comm, _, _ = _decompose(a, with_v=False)
    every, order, _, _ = _order(sigma, comm)
    return _replicated_result(every[order][:min(m, n)], a.mesh)


def _redistribute(rows, positions, comm, k, width):
    """Rows of this process (``rows[i]`` for global position ``positions[i]`` < k) to the owners of
    balanced blocks of ``k`` positions: one Alltoallv; returns this process's ``(k_p x width)`` rows."""
    from mpi4py import MPI
    from mpi4py.util.dtlib import from_numpy_dtype

    P, me = comm.Get_size(), comm.Get_rank()
    bounds = np.asarray(_bounds(k, P))
    keep = positions < k
    rows, positions = rows[keep], positions[keep]
    dest = np.searchsorted(bounds, positions, side="right") - 1
    order = np.lexsort((positions, dest))
    send = np.ascontiguousarray(rows[order])
    sendpos = np.ascontiguousarray(positions[order]).astype(np.int64)
    scount = np.bincount(dest, minlength=P).astype(np.int64)
    with _mpi.internal("linalg.svd", "columns to their sorted places", comm):
        rcount = np.empty(P, np.int64)
        comm.Alltoall(scount, rcount)
        sdisp = np.concatenate([[0], np.cumsum(scount)[:-1]])
        rdisp = np.concatenate([[0], np.cumsum(rcount)[:-1]])
        recvpos = np.empty(int(rcount.sum()), np.int64)
        comm.Alltoallv([sendpos, scount, sdisp, MPI.INT64_T], [recvpos, rcount, rdisp, MPI.INT64_T])
        recv = np.empty((int(rcount.sum()), width), rows.dtype)
        mpitype = from_numpy_dtype(rows.dtype)
        comm.Alltoallv([send, scount * width, sdisp * width, mpitype],
                       [recv, rcount * width, rdisp * width, mpitype])
    out = np.empty((bounds[me + 1] - bounds[me], width), rows.dtype)
    out[recvpos - bounds[me]] = recv
    return out


def _factors(a: DistributedTensor):
    """Reduced ``(U^T rows, sigma, V^T rows, k, good)`` of the working matrix, each process holding a
    balanced block of the ``k`` sorted positions; ``good``: how many singular values are above the noise."""
    sigma, rowsblk, m, n, wide, comm, dtype, fro = _decompose(a, with_v=True)
    every, order, counts, start = _order(sigma, comm)
    k = min(m, n)
    rank_of = np.empty(every.size, np.int64)
    rank_of[order] = np.arange(every.size)
    positions = rank_of[start:start + sigma.size]
    u = rowsblk[:, :m] / np.where(sigma > 0, sigma, 1.0)[:, None]
    v = rowsblk[:, m:]
    both = np.concatenate([u, v], axis=1)
    mine = _redistribute(both, positions, comm, k, m + n)
    s = every[order][:k]
    noise = float(np.finfo(dtype).eps) * max(m, n) * (fro if fro > 0 else 1.0)
    good = int(np.count_nonzero(s > noise))
    return mine[:, :m], s, mine[:, m:], k, good, m, n, wide, dtype


def _complete(u: DistributedTensor, good: int, want: int) -> DistributedTensor:
    """``u``'s first ``good`` columns and ``want - good`` more orthonormal ones: a complete QR."""
    from .dense import qr

    m = u.shape[0]
    mesh = u.mesh
    cols = Sharding(mesh, [[], list(range(mesh.ndim))])
    if good == 0:
        base = DistributedTensor.empty((m, want), cols, u.dtype)
        rs, cs = base.shard_slices
        base._interior[...] = (np.arange(rs.start, rs.stop)[:, None] == np.arange(cs.start, cs.stop)[None, :])
        return base
    head = u[:, :good].reshard(cols)
    q, _ = qr(head, mode="complete")
    q = q.reshard(cols)
    return np.concatenate([head, q[:, good:want]], axis=1).reshard(cols)


def _tensor(rows_t, shape, sharding, dtype) -> DistributedTensor:
    """A tensor whose local block is ``rows_t``'s transpose (columns kept as rows in the sweeps)."""
    t = DistributedTensor.empty(shape, sharding, dtype)
    t._interior[...] = rows_t.T
    return t


def svd(a: DistributedTensor, full_matrices: bool = True, compute_uv: bool = True):
    """numpy's ``svd`` of a split matrix of any shape: ``(U, S, Vh)`` with ``U`` split on columns,
    ``S`` descending and replicated, ``Vh`` split on rows (``compute_uv=False``: ``S``)."""
    from .dense import _replicated_result

    if not compute_uv:
        return svdvals(a)
    ut, s, vt, k, good, m, n, wide, dtype = _factors(a)
    mesh = a.mesh
    axes = list(range(mesh.ndim))
    by_cols = Sharding(mesh, [[], axes], sharded_dims_offsets=_bounds(k, mesh.comm.Get_size()))
    # the working W = Uw S Vw^H: A = W when tall, A = W^H = Vw S Uw^H when wide
    uw = _tensor(ut, (m, k), by_cols, dtype)
    vw = _tensor(vt, (n, k), by_cols, dtype)
    if good < k or (full_matrices and m > k):  # noise columns of Uw, or the rest of a full basis
        uw = _complete(uw, good, m if full_matrices else k)
    left, right = (vw, uw) if wide else (uw, vw)
    vh = right.T.conj() if right.dtype.kind == "c" else right.T
    return left, _replicated_result(s, mesh), vh.reshard(Sharding(mesh, [axes, []]))


def pinv(a: DistributedTensor, rtol=None) -> DistributedTensor:
    """numpy's ``pinv`` of a split matrix: ``V S^+ U^H`` from the Jacobi SVD, the singular values at or
    below ``rtol * max(S)`` (default ``max(M, N) * eps``) dropped, and those below the SVD's accuracy
    (``max(M, N) * eps * ||A||_F``) too, whatever ``rtol``; ``n x m``, split on rows.  The product is SUMMA
    on the block-cyclic layout (`meshrt.linalg.factor.summa`)."""
    from . import factor
    from .blockcyclic import BlockCyclic
    from .cyclic import CyclicMatrix, to_cyclic
    from .dense import _env_block

    ut, s, vt, k, good, m, n, wide, dtype = _factors(a)
    if rtol is None:
        rtol = max(m, n) * float(np.finfo(dtype).eps)
    # below the sweeps' accuracy (the `good` count: ``max(M, N) * eps * ||A||_F``) a singular value is
    # rounding noise: numpy's default rcond of 1e-15 would invert it
    cutoff = max(float(rtol) * (float(s[0]) if s.size else 0.0), float(s[good]) if good < k else 0.0)
    mesh = a.mesh
    comm = mesh.comm
    axes = list(range(mesh.ndim))
    bounds = _bounds(k, comm.Get_size())
    mine = s[bounds[comm.Get_rank()]:bounds[comm.Get_rank() + 1]]
    inv = np.where(mine > cutoff, 1.0 / np.where(mine > 0, mine, 1.0), 0.0)
    # A^+ = L S^+ R^H: L = Vw, R = Uw (tall); L = Uw, R = Vw (wide)
    l_rows, r_rows = (ut, vt) if wide else (vt, ut)
    rows_out, cols_out = l_rows.shape[1], r_rows.shape[1]
    left = _tensor(l_rows * inv[:, None], (rows_out, k),
                   Sharding(mesh, [[], axes], sharded_dims_offsets=bounds), dtype)
    right_h = DistributedTensor.empty((k, cols_out), Sharding(mesh, [axes, []], sharded_dims_offsets=bounds), dtype)
    right_h._interior[...] = r_rows.conj()
    layout = BlockCyclic.default((rows_out, cols_out), comm.Get_size(), _env_block())
    lc = to_cyclic(left, block=layout.block[0], grid=layout.grid)
    rc = to_cyclic(right_h, block=layout.block[0], grid=layout.grid)
    out = CyclicMatrix.zeros(layout, lc.grid, dtype, mesh)
    factor.summa(lc, rc, out)
    return out.to_tensor(Sharding(mesh, [axes, []]), consume=True)


def matrix_rank(a: DistributedTensor, tol=None, rtol=None) -> int:
    """numpy's ``matrix_rank`` of a split matrix: the singular values above ``tol`` (default
    ``max(S) * max(M, N) * eps``, or ``rtol * max(S)``), from the Jacobi sweeps without ``V``."""
    s = svdvals(a)._interior
    m, n = a.shape
    if tol is None:
        if rtol is None:
            rtol = max(m, n) * float(np.finfo(s.dtype).eps)
        tol = (float(s[0]) if s.size else 0.0) * float(rtol)
    return int(np.count_nonzero(s > tol))
