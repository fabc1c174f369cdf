"""Dense factorizations and solves on block-cyclic matrices: Cholesky, LU with partial pivoting,
triangular solves with many right-hand sides, and SUMMA products.

Right-looking blocked algorithms in ScaLAPACK's shape (``PDPOTRF``, ``PDGETRF``, ``PDTRSM``, ``PDGEMM``):
at step ``k`` the process column holding block column ``k`` factors the panel, the panel goes along the
process rows (one ``Bcast`` on each row communicator; Cholesky's and QR's an ``Ibcast`` started as soon
as the panel is ready), the matching block row of ``U`` (or the transposed panel) down the process
columns, and every process updates its part of the trailing matrix with one local GEMM per block column
(`meshrt.linalg.lapack`, BLAS on views, in place). Errors (a matrix that is not positive definite) travel
with the panel, so every process leaves the loop at the same step.

Per process and step, with ``b`` the block size and ``N`` the order: Cholesky moves ``b^2`` words down a
column and ``(N/Pr) b + (N/Pc) b`` along rows and columns; over the factorization that is
``N^2 (1/Pr + 1/Pc) / 2`` words in ``N/b`` steps of ``O(log P)`` messages, ScaLAPACK's own model.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> from meshrt.linalg.cyclic import to_cyclic
>>> a = to_cyclic(DistributedTensor.from_global(np.array([[4.0, 2.0], [2.0, 3.0]]), Sharding(Mesh((-1,)), [[0]])))
>>> cholesky(a), a.to_tensor(Sharding(a.mesh, [])).gather().round(6).tolist()
(0, [[2.0, 0.0], [1.0, 1.414214]])
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..runtime import mpi as _mpi
from . import lapack
from .blockcyclic import local_index
from .cyclic import CyclicMatrix, give_back

__all__ = ["cholesky", "lu", "qr", "form_q", "apply_qh", "triangular_solve", "permute_rows", "summa",
           "lu_diagonal", "zero_triangle"]

# local GEMMs of the trailing update cover at least this many columns (consecutive block columns
# joined; only the blocks on or below the diagonal need it, the rest is the price of fewer calls)
_MIN_GEMM_COLS = 256
# columns of each GEMM of QR's trailing update on one process row (the broadcasts in flight tested
# between them; on several process rows the update's Allreduce moves them on)
_QR_CHUNK_COLS = 1024


def _bcast(comm, buf, root, what):
    if comm.Get_size() > 1:
        with _mpi.internal(what, "a panel broadcast", comm):
            comm.Bcast(buf, root)
    return buf


class _RowBroadcasts:
    """Panels going along the process rows by ``Ibcast``, for the look-ahead of `cholesky` and `qr`: the
    panel's process column starts its broadcast as soon as the panel is factored and goes on with its
    update; the others post theirs at once and wait for it only when they need it. A blocking ``Bcast``
    of a large panel keeps its root until every receiver has entered it (0.3 s of Cholesky's 2.4 at
    N = 8192 on 2 processes). ``poll`` between local GEMMs tests them all, for MPIs that move a large
    message only while both sides are in the library."""

    def __init__(self, grid, op: str):
        self.comm, self.op, self.flying = grid.row, op, []

    def start(self, bufs, root: int) -> list:
        if self.comm.Get_size() == 1:
            return []
        with _mpi.internal(self.op, "a panel broadcast", self.comm):
            reqs = [self.comm.Ibcast(b, root) for b in bufs]
        self.flying += reqs
        return reqs

    def poll(self) -> None:
        if self.flying:
            with _mpi.internal(self.op, "a panel broadcast", self.comm):
                MPI.Request.Testall(self.flying)

    def finish(self, reqs) -> None:
        if reqs:
            with _mpi.internal(self.op, "a panel broadcast", self.comm):
                MPI.Request.Waitall(reqs)
            self.flying = [q for q in self.flying if all(q is not x for x in reqs)]

    def done(self) -> None:  # (every process calls it: a root's last broadcasts, started ones after an error)
        self.finish(self.flying)


def _check_square_blocks(a: CyclicMatrix, name: str):
    if a.layout.block[0] != a.layout.block[1]:
        raise ValueError(f"{name}: square blocks expected, got block {a.layout.block}")


def cholesky(a: CyclicMatrix, *, zero_upper: bool = True, emit=None) -> int:
    """The lower Cholesky factor of Hermitian positive definite ``a``, in place (the strict upper triangle
    zeroed, unless ``zero_upper`` is false: then it is left as it was, or partly updated, for a caller
    that reads only the lower triangle, as ``to_tensor(triangle="lower")``). Only the lower triangle of
    ``a`` is read. Returns 0, or the order of the first leading minor that is not positive definite (LAPACK's
    ``info``; ``a`` is then partly overwritten), the same on every process.

    Look-ahead of one panel: at step ``k`` the process column that holds block column ``k + 1`` updates
    that block column first, factors it and starts its broadcast before it updates the rest of its
    trailing matrix; the other process columns post theirs, update their whole trailing matrix and wait
    for the panel at step ``k + 1`` (`_RowBroadcasts`). No process waits for the panel's
    ``potrf``/``trsm``, nor its sender for the receivers.

    ``emit`` (one process row only): ``emit(g0, g1, panel)`` on every process once block column ``g0:g1``
    is final, ``panel`` its rows ``g0 ..`` (the diagonal block's strict upper part junk). On one process
    row the panel's broadcast brings every row of it to every process, so a caller can write the factor
    where it goes without moving it again; the block column's pages in ``a`` then go back to the system
    (`cyclic.give_back`: ``a`` holds no factor afterwards)."""
    _check_square_blocks(a, "cholesky")
    lay, grid, loc = a.layout, a.grid, a.local
    n, nb = lay.shape[0], lay.block[0]
    pc_n, (r, c) = lay.grid[1], grid.coords
    if emit is not None and lay.grid[0] != 1:
        raise ValueError(f"cholesky: emit needs one process row, got a {lay.grid[0]} x {pc_n} grid")
    whole = emit is not None
    conj = "C" if loc.dtype.kind == "c" else "T"
    steps = -(-n // nb)
    end = loc.shape[1]

    sent = _RowBroadcasts(grid, "cholesky")

    def take(k, ready):  # start panel k's row broadcast from its process column (``ready`` there)
        first = k * nb if whole else lay.row_start(min(n, (k + 1) * nb), r)
        w = min(n, (k + 1) * nb) - k * nb
        pbuf = ready if c == k % pc_n else np.empty((loc.shape[0] - first) * w + 1, loc.dtype)
        return pbuf, sent.start([pbuf], k % pc_n)

    def update(lo, hi):
        _cholesky_update(a, prow, pcol, g1, lr1, lc1, lo, hi, conj, sent.poll)

    pbuf, preq = take(0, _cholesky_panel(a, 0, conj, whole) if c == 0 else None) if steps else (None, [])
    for k in range(steps):
        g0, g1 = k * nb, min(n, (k + 1) * nb)
        w = g1 - g0
        lr1 = lay.row_start(g1, r)
        lc1 = lay.col_start(g1, c)
        first = g0 if whole else lr1  # (the panel's first row: the diagonal block's with emit, one process row)
        if c != k % pc_n:
            sent.finish(preq)  # (the sender's own broadcast finishes once its panel is used, below)
        info = int(pbuf[-1].real)
        if info:
            sent.done()
            return g0 + info
        panel = pbuf[:-1].reshape((loc.shape[0] - first, w), order="F")
        prow = panel[lr1 - first:]  # L[my rows >= g1, block k]
        pcol = _transposed_panel(a, prow, g1, w) if lay.grid[0] > 1 else None  # L[my cols >= g1, block k]
        nbuf, nreq = None, []
        if k + 1 == steps:
            update(lc1, end)
        elif c == (k + 1) % pc_n:  # block column k + 1 is mine: it first, then factor it and send it
            nxt = lc1 + min(n, g1 + nb) - g1
            update(lc1, nxt)
            nbuf, nreq = take(k + 1, _cholesky_panel(a, k + 1, conj, whole))
            update(nxt, end)
        else:  # the next panel's receive posted, then my whole update while it comes
            nbuf, nreq = take(k + 1, None)
            update(lc1, end)
        if whole:
            emit(g0, g1, panel)
            if c == k % pc_n:
                lc0 = lc1 - w
                give_back(loc, lc0 * loc.shape[0] * loc.itemsize, lc1 * loc.shape[0] * loc.itemsize)
        if c == k % pc_n:
            sent.finish(preq)
        pbuf, preq = nbuf, nreq
    sent.done()
    if zero_upper:
        zero_triangle(a, upper=True)
    return 0


def _cholesky_panel(a: CyclicMatrix, k: int, conj: str, diagonal: bool = False) -> np.ndarray:
    """Panel ``k`` factored by its process column (``potrf`` of the diagonal block on its owner, sent down
    the column, ``trsm`` of the blocks below it): my rows of it below the diagonal block (``diagonal``:
    from the diagonal block's first, on one process row), column-major, followed by ``info`` (the send
    buffer of the row broadcast)."""
    lay, grid, loc = a.layout, a.grid, a.local
    n, nb = lay.shape[0], lay.block[0]
    r, c = grid.coords
    g0, g1 = k * nb, min(n, (k + 1) * nb)
    w = g1 - g0
    rk = k % lay.grid[0]
    lr0, lr1 = lay.row_start(g0, r), lay.row_start(g1, r)
    lc0, lc1 = lay.col_start(g0, c), lay.col_start(g1, c)
    first = lr0 if diagonal else lr1
    pbuf = np.empty((loc.shape[0] - first) * w + 1, loc.dtype)
    dbuf = np.empty(w * w + 1, loc.dtype)
    if r == rk:
        d = loc[lr0:lr1, lc0:lc1]
        dbuf[-1] = lapack.potrf("L", d)
        dbuf[:-1] = d.ravel(order="F")
    _bcast(grid.col, dbuf, rk, "cholesky")
    info = int(dbuf[-1].real)
    panel = loc[lr1:, lc0:lc1]
    if info == 0:
        lapack.trsm_by_inverse("R", "L", conj, "N", dbuf[:-1].reshape((w, w), order="F"), panel)
    pbuf[:-1].reshape((loc.shape[0] - first, w), order="F")[...] = loc[first:, lc0:lc1]
    pbuf[-1] = info
    return pbuf


def _cholesky_update(a, prow, pcol, g1, lr1, lc1, lo, hi, conj, poll) -> None:
    """``A[i, j] -= L[i, k] L[j, k]^H`` on and below the diagonal for my local columns ``lo:hi`` (from
    global column ``g1`` on; ``prow``/``pcol``: the panel on my rows/columns from ``g1``, local ``lr1``/``lc1``).
    ``poll()`` after each GEMM.

    ``pcol`` None (one process row: ``prow`` is the whole panel from row ``g1``): one GEMM per block, whose
    panel rows are then one slice of ``prow``; joining blocks would need them copied together first."""
    lay, loc, r = a.layout, a.local, a.grid.coords[0]
    whole = pcol is None
    for cs, ce, gstart in _column_chunks(a, g1, lo, hi, lay.block[1] if whole else _MIN_GEMM_COLS):
        rs = lay.row_start(gstart, r)
        cols = prow[gstart - g1:gstart - g1 + ce - cs] if whole else pcol[cs - lc1:ce - lc1]
        lapack.gemm(-1.0, prow[rs - lr1:], cols, 1.0, loc[rs:, cs:ce], "N", conj)
        poll()


def _column_chunks(a: CyclicMatrix, g1: int, start: int | None = None, end: int | None = None,
                   cols: int = _MIN_GEMM_COLS):
    """(local start, local end, global start of the first block) of my columns from global ``g1`` on
    (local ``start:end`` of them), in runs of whole blocks at least ``cols`` wide."""
    lay, c = a.layout, a.grid.coords[1]
    nb, pc = lay.block[1], lay.grid[1]
    start = lay.col_start(g1, c) if start is None else start
    end = a.local.shape[1] if end is None else end
    per = max(1, cols // nb) * nb
    out = []
    ls = start
    while ls < end:
        le = min(end, (ls // nb) * nb + per)
        gb = (ls // nb) * pc + c  # the global block of local column ls
        out.append((ls, le, max(g1, gb * nb + ls % nb)))
        ls = le
    return out


def _transposed_panel(a: CyclicMatrix, prow: np.ndarray, g1: int, w: int) -> np.ndarray:
    """The panel rows whose global index is one of my columns from ``g1`` on, in my columns' order.

    Row ``j`` of the panel is on process row ``j``'s owner after the row broadcast; every process of my
    process column needs the same rows (those of my columns), so one ``Allgatherv`` over the column."""
    lay, grid = a.layout, a.grid
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    want = lay.global_cols(c, g1)
    if pr_n == 1:  # one process row: every panel row is here
        return np.asfortranarray(prow[want - g1])
    # each process row's panel rows that are also my process column's columns (the same for all of it)
    parts = [rows[lay.col_owner(rows) == c] for rows in (lay.global_rows(q, g1) for q in range(pr_n))]
    counts = np.array([p.size for p in parts], np.int64)
    rows_from = np.concatenate(parts)
    mine = lay.global_rows(r, g1)  # prow's rows, in order
    sbuf = np.ascontiguousarray(prow[lay.col_owner(mine) == c])
    rbuf = np.empty((int(counts.sum()), w), prow.dtype)  # rows travel as w-element rows, C-ordered
    with _mpi.internal("cholesky", "the transposed panel", grid.col):
        grid.col.Allgatherv(sbuf, [rbuf, (counts * w, np.concatenate([[0], np.cumsum(counts * w)[:-1]]))])
    recv = np.empty((int(counts.sum()), w), prow.dtype, order="F")
    recv[np.searchsorted(want, rows_from)] = rbuf
    return recv


def zero_triangle(a: CyclicMatrix, upper: bool, diagonal: bool = False) -> None:
    """Zero the strict upper (``upper``) or lower triangle of ``a`` (with the diagonal if ``diagonal``)."""
    rows = a.rows()
    nb = a.layout.block[1]
    cols = a.cols()
    for ls in range(0, cols.size, nb):
        gc = cols[ls:ls + nb]
        # my rows before the block's first column, those among its columns, those after its last
        lo, hi = np.searchsorted(rows, gc[0]), np.searchsorted(rows, gc[-1], side="right")
        part = a.local[lo:hi, ls:ls + nb]
        r = rows[lo:hi, None]
        if upper:
            a.local[:lo, ls:ls + nb] = 0
            part[r < gc[None, :] if not diagonal else r <= gc[None, :]] = 0
        else:
            a.local[hi:, ls:ls + nb] = 0
            part[r > gc[None, :] if not diagonal else r >= gc[None, :]] = 0


def _swaps_to_moves(ipiv: np.ndarray, g0: int):
    """LAPACK's row interchanges at ``g0 + i <-> g0 + ipiv[i]`` as (dest rows, source rows): after them
    row ``dest[j]`` holds what row ``src[j]`` held before."""
    content: dict = {}
    for i, p in enumerate(ipiv.tolist()):
        a, b = g0 + i, g0 + p
        if a != b:
            ca, cb = content.get(a, a), content.get(b, b)
            content[a], content[b] = cb, ca
    moved = sorted(x for x, s in content.items() if x != s)
    return np.array(moved, np.int64), np.array([content[x] for x in moved], np.int64)


def _move_rows(a: CyclicMatrix, dest: np.ndarray, src: np.ndarray, col_slices) -> None:
    """Row ``dest[j]`` of ``a`` becomes what row ``src[j]`` is, on the local columns of ``col_slices``
    (the same ``dest``/``src`` on every process): one ``Alltoallv`` over each process column."""
    if not dest.size:
        return
    lay, grid, loc = a.layout, a.grid, a.local
    pr_n, r = lay.grid[0], grid.coords[0]
    mb = lay.block[0]
    ncols = sum(s.stop - s.start for s in col_slices)
    cols = np.concatenate([np.arange(s.start, s.stop) for s in col_slices]) if col_slices else np.zeros(0, int)
    downer, sowner = lay.row_owner(dest), lay.row_owner(src)
    if pr_n == 1:
        if ncols:
            li, ls = local_index(dest, mb, 1), local_index(src, mb, 1)
            for s in col_slices:
                loc[li, s] = loc[ls, s]
        return
    # I send the rows I own (src) to the owners of their destinations, ordered by destination
    send_sel = sowner == r
    order = np.argsort(downer[send_sel], kind="stable")
    send_rows = local_index(src[send_sel][order], mb, pr_n)
    scount = np.bincount(downer[send_sel], minlength=pr_n) * ncols
    sbuf = np.ascontiguousarray(loc[np.ix_(send_rows, cols)]) if send_rows.size else np.zeros((0, ncols), loc.dtype)
    recv_sel = downer == r
    order_r = np.argsort(sowner[recv_sel], kind="stable")
    recv_dest = local_index(dest[recv_sel][order_r], mb, pr_n)
    rcount = np.bincount(sowner[recv_sel], minlength=pr_n) * ncols
    rbuf = np.empty((recv_dest.size, ncols), loc.dtype)
    sd = np.concatenate([[0], np.cumsum(scount)[:-1]])
    rd = np.concatenate([[0], np.cumsum(rcount)[:-1]])
    with _mpi.internal("lu", "the row interchanges", grid.col):
        grid.col.Alltoallv([sbuf, (scount, sd)], [rbuf, (rcount, rd)])
    if recv_dest.size:
        loc[np.ix_(recv_dest, cols)] = rbuf


def lu(a: CyclicMatrix):
    """LU with partial pivoting of ``a`` (``m x n``) in place: the unit lower ``L`` below the diagonal, ``U``
    on and above it. Returns ``(perm, info)``: ``perm`` the global row order (``A[perm] = L @ U``, the
    same array on every process) and ``info`` 0 or the 1-based index of the first exactly zero pivot
    (the factorization completes, as LAPACK's ``getrf``)."""
    _check_square_blocks(a, "lu")
    lay, grid, loc = a.layout, a.grid, a.local
    m, n = lay.shape
    nb = lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    perm = np.arange(m)
    info = 0
    kmax = min(m, n)
    for k in range(-(-kmax // nb)):
        g0, g1 = k * nb, min(kmax, (k + 1) * nb)
        w = g1 - g0
        rk, ck = k % pr_n, k % pc_n
        lr0, lr1 = lay.row_start(g0, r), lay.row_start(g1, r)
        lc0, lc1 = lay.col_start(g0, c), lay.col_start(g1, c)
        head = np.zeros(w + 1, np.int64)
        if c == ck:
            head[:] = _factor_panel(a, g0, w, lr0, lc0, lc1)
        _bcast(grid.row, head, ck, "lu")
        if head[-1] and not info:
            info = g0 + int(head[-1])
        dest, src = _swaps_to_moves(head[:-1], g0)
        if dest.size:
            perm[dest] = perm[src]
            others = [slice(0, lc0), slice(lc1, loc.shape[1])] if c == ck else [slice(0, loc.shape[1])]
            others = [s for s in others if s.stop > s.start]
            if pr_n == 1:  # every row is here: LAPACK's interchanges, a column block at a time
                for s in others:
                    lapack.laswp(loc[g0:, s], head[:-1])
            else:
                _move_rows(a, dest, src, others)
        # L[my rows >= g0, block k] along the process rows
        rows_here = loc.shape[0] - lr0
        lbuf = np.empty((rows_here, w), loc.dtype, order="F")
        if c == ck:
            lbuf[...] = loc[lr0:, lc0:lc1]
        _bcast(grid.row, lbuf, ck, "lu")
        trail = lay.col_start(g1, c) if c != ck else lc1
        ncol = loc.shape[1] - trail
        # U[block k, my cols >= g1] = L11^-1 A12 on process row rk, then down the process columns
        ubuf = np.empty((w, ncol), loc.dtype, order="F")
        if r == rk:
            u12 = loc[lr0:lr1, trail:]
            lapack.trsm_by_inverse("L", "L", "N", "U", lbuf[:w], u12)
            ubuf[...] = u12
        _bcast(grid.col, ubuf, rk, "lu")
        below = lr1 - lr0
        lapack.gemm(-1.0, lbuf[below:], ubuf, 1.0, loc[lr1:, trail:])
    return perm, info


def _factor_panel(a: CyclicMatrix, g0: int, w: int, lr0: int, lc0: int, lc1: int) -> np.ndarray:
    """LU of the panel (global rows ``g0 ..``, my columns ``lc0:lc1``) by my process column, in place:
    LAPACK's ``getrf`` on the panel, gathered over the column where it spans several process rows (every
    member factors the same rows identically and keeps its own). Returns ``ipiv`` (relative to ``g0``)
    followed by ``info``."""
    lay, grid, loc = a.layout, a.grid, a.local
    pr_n, r = lay.grid[0], grid.coords[0]
    m = lay.shape[0]
    if pr_n == 1:
        ipiv, info = lapack.getrf(loc[lr0:, lc0:lc1])
        return np.concatenate([ipiv, [info]])
    counts = np.array([lay.global_rows(q, g0).size for q in range(pr_n)], np.int64)
    where = np.concatenate([lay.global_rows(q, g0) for q in range(pr_n)]) - g0
    sbuf = np.ascontiguousarray(loc[lr0:, lc0:lc1])
    rbuf = np.empty((m - g0, w), loc.dtype)
    with _mpi.internal("lu", "the panel over the process column", grid.col):
        grid.col.Allgatherv(sbuf, [rbuf, (counts * w, np.concatenate([[0], np.cumsum(counts * w)[:-1]]))])
    full = np.empty((m - g0, w), loc.dtype, order="F")
    full[where] = rbuf
    ipiv, info = lapack.getrf(full)
    loc[lr0:, lc0:lc1] = full[lay.global_rows(r, g0) - g0]
    return np.concatenate([ipiv, [info]])


def permute_rows(b: CyclicMatrix, perm: np.ndarray) -> None:
    """Row ``i`` of ``b`` becomes row ``perm[i]`` (``b = b[perm]``), in place."""
    moved = np.flatnonzero(perm != np.arange(perm.size))
    _move_rows(b, moved, perm[moved], [slice(0, b.local.shape[1])])


def triangular_solve(t: CyclicMatrix, b: CyclicMatrix, *, lower: bool, unit: bool = False) -> None:
    """``b = T^-1 b`` in place, ``T`` the lower or upper triangle of square ``t`` (``unit``: ones on its
    diagonal), ``b`` with ``t``'s row layout and any number of columns."""
    lay, grid, tl, bl = t.layout, t.grid, t.local, b.local
    n, nb = lay.shape[0], lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    if pc_n > 1 and b.shape[1] <= b.layout.block[1]:
        return _narrow_triangular_solve(t, b, lower=lower, unit=unit)
    steps = range(-(-n // nb))
    for k in (steps if lower else reversed(steps)):
        g0, g1 = k * nb, min(n, (k + 1) * nb)
        w = g1 - g0
        rk, ck = k % pr_n, k % pc_n
        lr0, lr1 = lay.row_start(g0, r), lay.row_start(g1, r)
        lc0, lc1 = lay.col_start(g0, c), lay.col_start(g1, c)
        # the block column k of T on my rows: from g0 down (lower) or down to g1 (upper)
        lo, hi = (lr0, tl.shape[0]) if lower else (0, lr1)
        tbuf = np.empty((hi - lo, w), tl.dtype, order="F")
        if c == ck:
            tbuf[...] = tl[lo:hi, lc0:lc1]
        _bcast(grid.row, tbuf, ck, "triangular_solve")
        xbuf = np.empty((w, bl.shape[1]), bl.dtype, order="F")
        diag = tbuf[lr0 - lo:lr1 - lo]
        if r == rk:
            xk = bl[lr0:lr1]
            lapack.trsm("L", "L" if lower else "U", "N", "U" if unit else "N", 1.0, diag, xk)
            xbuf[...] = xk
        _bcast(grid.col, xbuf, rk, "triangular_solve")
        if lower:
            lapack.gemm(-1.0, tbuf[lr1 - lo:], xbuf, 1.0, bl[lr1:])
        else:
            lapack.gemm(-1.0, tbuf[:lr0], xbuf, 1.0, bl[:lr0])


def _narrow_triangular_solve(t: CyclicMatrix, b: CyclicMatrix, *, lower: bool, unit: bool) -> None:
    """`triangular_solve` for a ``b`` of at most one block of columns (all on process column 0), by fan-in:
    ``T`` never moves. Each process keeps ``z``, its columns' part of ``T x`` on its rows; at step ``k`` the
    process row of block ``k`` sums its ``z`` (less ``b``) at the diagonal block's owner (a ``Reduce`` of
    ``w x nrhs``), which solves with the diagonal block and sends ``x_k`` back along the row (into ``b`` on
    process column 0) and down its process column, whose processes add ``T[:, k] x_k`` to their ``z``.
    Per step ``O(w * nrhs)`` words instead of the block column of ``T`` (half the matrix over a solve)."""
    from mpi4py import MPI

    lay, grid, tl, bl = t.layout, t.grid, t.local, b.local
    n, nb = lay.shape[0], lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    nrhs = b.shape[1]
    z = np.zeros((tl.shape[0], nrhs), bl.dtype, order="F")
    steps = range(-(-n // nb))
    for k in (steps if lower else reversed(steps)):
        g0, g1 = k * nb, min(n, (k + 1) * nb)
        w = g1 - g0
        rk, ck = k % pr_n, k % pc_n
        lr0, lr1 = lay.row_start(g0, r), lay.row_start(g1, r)
        lc0, lc1 = lay.col_start(g0, c), lay.col_start(g1, c)
        xbuf = np.empty((w, nrhs), bl.dtype, order="F")
        if r == rk:
            part = np.array(z[lr0:lr1], order="F")
            if c == 0:
                part -= bl[lr0:lr1]
            with _mpi.internal("triangular_solve", "the fan-in of T x", grid.row):
                grid.row.Reduce(MPI.IN_PLACE if c == ck else part, part if c == ck else None, MPI.SUM, ck)
            if c == ck:
                np.negative(part, out=xbuf)
                lapack.trsm("L", "L" if lower else "U", "N", "U" if unit else "N", 1.0, tl[lr0:lr1, lc0:lc1], xbuf)
            _bcast(grid.row, xbuf, ck, "triangular_solve")
            if c == 0:
                bl[lr0:lr1] = xbuf
        if c == ck:
            _bcast(grid.col, xbuf, rk, "triangular_solve")
            if lower:
                lapack.gemm(1.0, tl[lr1:, lc0:lc1], xbuf, 1.0, z[lr1:])
            else:
                lapack.gemm(1.0, tl[:lr0, lc0:lc1], xbuf, 1.0, z[:lr0])


def summa(a: CyclicMatrix, b: CyclicMatrix, out: CyclicMatrix) -> None:
    """``out = a @ b`` (SUMMA: for each block of the inner dim, ``a``'s block column along the process rows
    and ``b``'s block row down the process columns, one local GEMM)."""
    lay, grid = a.layout, a.grid
    kdim, nb = lay.shape[1], lay.block[1]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    out.local[...] = 0
    for k in range(-(-kdim // nb)):
        g0, g1 = k * nb, min(kdim, (k + 1) * nb)
        w = g1 - g0
        abuf = np.empty((a.local.shape[0], w), a.dtype, order="F")
        if c == k % pc_n:
            lc0 = lay.col_start(g0, c)
            abuf[...] = a.local[:, lc0:lc0 + w]
        _bcast(grid.row, abuf, k % pc_n, "summa")
        bbuf = np.empty((w, b.local.shape[1]), b.dtype, order="F")
        if r == k % pr_n:
            lr0 = b.layout.row_start(g0, r)
            bbuf[...] = b.local[lr0:lr0 + w]
        _bcast(grid.col, bbuf, k % pr_n, "summa")
        if out.dtype in lapack.PREFIX:
            lapack.gemm(1.0, abuf, bbuf, 1.0, out.local)
        else:  # integer powers stay integers, as numpy's
            out.local += abuf @ bbuf


def lu_diagonal(a: CyclicMatrix) -> np.ndarray:
    """The diagonal of ``a``, the same array on every process (one ``Allgatherv`` of the owned entries)."""
    lay, grid = a.layout, a.grid
    k = min(lay.shape)
    rows, cols = a.rows(), a.cols()
    hit = np.intersect1d(rows[rows < k], cols[cols < k])
    vals = a.local[local_index(hit, lay.block[0], lay.grid[0]), local_index(hit, lay.block[1], lay.grid[1])]
    with _mpi.internal("lu", "the diagonal", grid.comm):
        parts = grid.comm.allgather((hit, np.asarray(vals)))
    out = np.empty(k, a.dtype)
    for h, v in parts:
        out[h] = v
    return out


def _gathered_panel(a: CyclicMatrix, g0: int, w: int, lr0: int, lc0: int, lc1: int) -> np.ndarray:
    """The panel (global rows ``g0 ..``, my columns ``lc0:lc1``) whole, column-major, on every process of
    my process column (one ``Allgatherv``; no communication on a one-row grid, where it is a copy)."""
    lay, grid, loc = a.layout, a.grid, a.local
    pr_n = lay.grid[0]
    m = lay.shape[0]
    if pr_n == 1:
        return np.asfortranarray(loc[lr0:, lc0:lc1])
    counts = np.array([lay.global_rows(q, g0).size for q in range(pr_n)], np.int64)
    where = np.concatenate([lay.global_rows(q, g0) for q in range(pr_n)]) - g0
    rbuf = np.empty((m - g0, w), loc.dtype)
    with _mpi.internal("qr", "the panel over the process column", grid.col):
        grid.col.Allgatherv(np.ascontiguousarray(loc[lr0:, lc0:lc1]),
                            [rbuf, (counts * w, np.concatenate([[0], np.cumsum(counts * w)[:-1]]))])
    full = np.empty((m - g0, w), loc.dtype, order="F")
    full[where] = rbuf
    return full


def _reflectors(full: np.ndarray, w: int) -> np.ndarray:
    """The unit lower trapezoid ``V`` of a factored panel (LAPACK's storage of the reflectors)."""
    v = np.tril(full, -1)
    v[np.arange(w), np.arange(w)] = 1
    return np.asfortranarray(v)


def _panel_reflectors(a: CyclicMatrix, k: int, t: np.ndarray | None):
    """(``V`` on my rows from the panel's first row down, ``T``) of panel ``k``, broadcast along the process
    rows from the process column that holds it. ``t``: the panel's ``T`` where known already."""
    lay, grid, loc = a.layout, a.grid, a.local
    nb = lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    g0 = k * nb
    w = min(min(lay.shape), g0 + nb) - g0
    ck = k % pc_n
    lr0 = lay.row_start(g0, r)
    lc0 = lay.col_start(g0, c)
    vbuf = np.empty((loc.shape[0] - lr0, w), loc.dtype, order="F")
    if c == ck:
        v = _reflectors(_gathered_panel(a, g0, w, lr0, lc0, lc0 + w), w)
        vbuf[...] = v[lay.global_rows(r, g0) - g0]
    _bcast(grid.row, vbuf, ck, "qr")
    return vbuf, t, g0, w, lr0


def qr(a: CyclicMatrix) -> list:
    """Householder QR of ``a`` (``m x n``) in place, blocked as LAPACK's ``geqrf``: ``R`` on and above the
    diagonal, the reflectors below it. Returns the ``T`` factor (``H_k = I - V_k T_k V_k^H``) of each panel,
    the same on every process.

    The panel is factored by its process column (gathered over the column where it spans several
    process rows, each member factoring the same rows identically), ``V`` and ``T`` go along the process
    rows, and the trailing columns get ``C -= V T^H (V^H C)``: one local GEMM, one ``Allreduce`` of the
    ``w x n/Pc`` product over the process column, one more GEMM. Look-ahead of one panel, as `cholesky`:
    the process column of panel ``k + 1`` updates that block column first, factors it and starts its
    broadcast, then updates the rest, while the others post theirs, update their whole trailing matrix
    and wait for it at step ``k + 1`` (`_RowBroadcasts`: the panel's ``geqrf`` is not waited for)."""
    _check_square_blocks(a, "qr")
    lay, grid, loc = a.layout, a.grid, a.local
    m, n = lay.shape
    nb = lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    conj = "C" if loc.dtype.kind == "c" else "T"
    steps = -(-min(m, n) // nb)

    sent = _RowBroadcasts(grid, "qr")

    def take(k, ready):  # start (V on my rows, T) of panel k from its process column (``ready`` there)
        g0 = k * nb
        w = min(min(m, n), g0 + nb) - g0
        bufs = ready if c == k % pc_n else (np.empty((loc.shape[0] - lay.row_start(g0, r), w), loc.dtype,
                                                     order="F"), np.empty((w, w), loc.dtype, order="F"))
        return bufs, sent.start(bufs, k % pc_n)

    def update(vbuf, tbuf, part):  # (in column chunks on one process row, the broadcasts tested between)
        step = max(1, part.shape[1] if pr_n > 1 else _QR_CHUNK_COLS)
        for j in range(0, part.shape[1], step):
            _apply_block_reflector(grid, vbuf, tbuf, part[:, j:j + step], conj, adjoint=True)
            sent.poll()

    ts = []
    (vbuf, tbuf), reqs = take(0, _qr_panel(a, 0) if c == 0 else None) if steps else ((None, None), [])
    for k in range(steps):
        if c != k % pc_n:
            sent.finish(reqs)  # (the sender's own broadcasts finish once its panel is used, below)
        ts.append(tbuf)
        g1 = min(min(m, n), (k + 1) * nb)
        lr0 = lay.row_start(k * nb, r)
        trail = lay.col_start(g1, c)
        nxt, nreqs = (None, None), []
        if k + 1 == steps:
            update(vbuf, tbuf, loc[lr0:, trail:])
        elif c == (k + 1) % pc_n:  # block column k + 1 is mine: it first, then factor it and send it
            split = trail + min(n, g1 + nb) - g1
            update(vbuf, tbuf, loc[lr0:, trail:split])
            nxt, nreqs = take(k + 1, _qr_panel(a, k + 1))
            update(vbuf, tbuf, loc[lr0:, split:])
        else:  # the next panel's receive posted, then my whole update while it comes
            nxt, nreqs = take(k + 1, None)
            update(vbuf, tbuf, loc[lr0:, trail:])
        if c == k % pc_n:
            sent.finish(reqs)
        (vbuf, tbuf), reqs = nxt, nreqs
    sent.done()
    return ts


def _qr_panel(a: CyclicMatrix, k: int):
    """Panel ``k`` factored by its process column, in place: (``V`` on my rows from the panel's first row,
    ``T``), the send buffers of the row broadcast."""
    lay, loc = a.layout, a.local
    m, n = lay.shape
    nb = lay.block[0]
    r, c = a.grid.coords
    g0 = k * nb
    w = min(min(m, n), g0 + nb) - g0
    lr0 = lay.row_start(g0, r)
    lc0, lc1 = lay.col_start(g0, c), lay.col_start(g0 + w, c)
    full = _gathered_panel(a, g0, w, lr0, lc0, lc1)
    tau = lapack.geqrf(full)
    mine = lay.global_rows(r, g0) - g0
    loc[lr0:, lc0:lc1] = full[mine]
    v = _reflectors(full, w)
    return np.asfortranarray(v[mine]), lapack.larft(v, tau)


def _apply_block_reflector(grid, v, t, c, conj, adjoint):
    """``c = H^H c`` (``adjoint``) or ``H c`` with ``H = I - V T V^H``, ``c`` my rows of the affected part:
    ``W = V^H c`` summed over the process column, then ``c -= V op(T) W``."""
    w = v.shape[1]
    ncol = c.shape[1]
    if not ncol:
        return
    prod = np.zeros((w, ncol), c.dtype, order="F")
    lapack.gemm(1.0, v, c, 0.0, prod, conj, "N")
    if grid.col.Get_size() > 1:
        with _mpi.internal("qr", "V^H C over the process column", grid.col):
            grid.col.Allreduce(_mpi_in_place(), prod)
    tw = np.zeros((w, ncol), c.dtype, order="F")
    lapack.gemm(1.0, t, prod, 0.0, tw, conj if adjoint else "N", "N")
    lapack.gemm(-1.0, v, tw, 1.0, c)


def _mpi_in_place():
    from mpi4py import MPI

    return MPI.IN_PLACE


def apply_qh(a: CyclicMatrix, ts: list, b: CyclicMatrix) -> None:
    """``b = Q^H b`` in place, ``Q`` the product of `qr`'s reflectors kept in ``a`` (``b`` with ``a``'s row
    layout)."""
    conj = "C" if a.dtype.kind == "c" else "T"
    for k, t in enumerate(ts):
        v, _, g0, w, lr0 = _panel_reflectors(a, k, t)
        _apply_block_reflector(a.grid, v, t, b.local[lr0:], conj, adjoint=True)


def form_q(a: CyclicMatrix, ts: list, q: CyclicMatrix) -> None:
    """``q`` (``m x p``, the identity's first ``p`` columns on entry; ``a``'s row layout) becomes ``Q``'s first
    ``p`` columns, ``Q = H_1 H_2 ... H_K`` (backward accumulation: ``H_k`` touches rows and columns from
    ``g0`` on only)."""
    conj = "C" if a.dtype.kind == "c" else "T"
    for k in reversed(range(len(ts))):
        v, t, g0, w, lr0 = _panel_reflectors(a, k, ts[k])
        lc0 = q.layout.col_start(g0, q.grid.coords[1])
        _apply_block_reflector(a.grid, v, t, q.local[lr0:, lc0:], conj, adjoint=False)
