"""The symmetric/Hermitian eigensolver on block-cyclic matrices: reduction to real tridiagonal form by
Householder reflectors, the tridiagonal's eigenvalues and eigenvectors where they are needed,
back-transformation of the eigenvectors.

ScaLAPACK's ``PDSYEVX`` in outline: ``PDSYTRD`` / ``PZHETRD`` (blocked as LAPACK's ``latrd``), the
tridiagonal's eigenvalues everywhere and its eigenvectors by bisection and inverse iteration where they
are needed, ``PDORMTR``:

1. `tridiagonalize`: panels of `PANEL` columns (never crossing a block column). The panel's columns are
   summed over their process column and broadcast along the process rows once; for each column the
   current column (the panel-start one corrected by the panel's earlier ``V W^H + W V^H``) gives every
   process the same reflector (``larfg``), and ``y = A v`` is one local GEMV per process plus one
   ``Allreduce`` (the one message per column); the panel's ``V`` and ``W`` (``n x PANEL``) are kept on
   every process, so the corrections cost no messages. After the panel the trailing matrix gets
   ``A -= V W^H + W V^H`` as one local rank-``2 PANEL`` GEMM. The reflectors stay in ``A`` below the
   subdiagonal (LAPACK's storage); each block column's ``T`` (``larft``, ``nb`` wide, for the
   back-transformation) is formed on every process from the replicated ``V``. The tridiagonal (``n + n-1``
   real numbers, ``e`` real also for a complex Hermitian matrix, as ``zhetrd``'s) ends up on every
   process.
2. Eigenvalues: ``dstemr`` (MRRR's dqds) on every process (``O(n^2)``, ascending as numpy's).
3. Eigenvectors: the eigenvector matrix ``Z`` of the tridiagonal is laid out with ``A``'s row blocks and
   one contiguous block of ``ceil(n / Pc)`` columns per process column, so each process column computes
   its own columns' eigenvectors for that index range (``n x n/Pc`` numbers per process, once), and keeps
   its rows: by bisection and inverse iteration (``dstebz``, ``dstein``, ScaLAPACK's ``PDSYEVX`` way:
   ``dstemr`` on an index subset is less accurate, and two MRRR calls choose different representations),
   clusters kept on one process column (`vector_ranges`); one process column (``Pc = 1``) uses MRRR.
   Then ``Z = Q Z`` block column by block column in reverse order, ``Q``'s block reflectors broadcast
   along the process rows from ``A``'s storage and applied as in `factor.form_q` (``V^H Z`` summed over
   the process column).

Per process, with ``N`` the order and ``P = Pr Pc``: ``2/3 N^3 / P`` flops in GEMV (memory bound, as in
every one-stage reduction; the whole trailing matrix is read, twice what a one-triangle ``symv`` reads)
and ``4/3 N^3 / P`` in the trailing GEMMs (both triangles updated, twice LAPACK's ``syr2k``, for one GEMM
per panel); ``2 N^3 / P`` in the back-transformation; ``O(N^2 / Pc)`` for the tridiagonal's vectors.
Messages: one ``Allreduce`` of ``N - j`` words per column ``j`` over all processes (``N^2 / 2`` words in
all; ScaLAPACK moves ``N / Pr`` and ``N / Pc`` pieces along rows and columns instead), one panel broadcast
per panel, and in the back-transformation one ``N/Pr x nb`` broadcast and one ``nb x N/Pc`` column
``Allreduce`` per block column.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> from meshrt.linalg.cyclic import to_cyclic
>>> a = to_cyclic(DistributedTensor.from_global(np.array([[2.0, 1.0], [1.0, 2.0]]), Sharding(Mesh((-1,)), [[0]])))
>>> d, e, panels = tridiagonalize(a)
>>> np.round(lapack.stemr(d, e, vectors=False)[0], 12).tolist()
[1.0, 3.0]
"""

from __future__ import annotations

import numpy as np

from ..runtime import mpi as _mpi
from . import lapack
from .blockcyclic import BlockCyclic, local_index
from .cyclic import CyclicMatrix, lazy_zeros
from .factor import _apply_block_reflector, _bcast, _column_chunks, _mpi_in_place

__all__ = ["hermitian_from_lower", "tridiagonalize", "eigenvalues", "eigenvectors", "vector_ranges", "subset_ranges",
           "PANEL"]

#: columns per panel of the reduction (``latrd``'s block): the rank of the trailing GEMM is twice this;
#: the replicated corrections inside a panel cost ``O(N PANEL)`` per column
PANEL = 32


def _allreduce(comm, buf, what):
    if comm.Get_size() > 1:
        with _mpi.internal("eigh", what, comm):
            comm.Allreduce(_mpi_in_place(), buf)
    return buf


def _larfg(x: np.ndarray):
    """LAPACK's ``larfg`` on ``x = [alpha, rest]``: ``(beta, tau, v_rest)`` with
    ``(I - tau v v^H)^H x = beta e_1``, ``v = [1, v_rest]``, ``beta`` real."""
    alpha, rest = x[0], x[1:]
    xnorm = float(np.linalg.norm(rest)) if rest.size else 0.0
    alphr = float(alpha.real)
    alphi = float(alpha.imag) if np.iscomplexobj(x) else 0.0
    if xnorm == 0.0 and alphi == 0.0:
        return alphr, x.dtype.type(0), np.zeros_like(rest)
    beta = -np.copysign(float(np.linalg.norm([alphr, alphi, xnorm])), alphr)
    if np.iscomplexobj(x):
        tau = x.dtype.type(complex((beta - alphr) / beta, -alphi / beta))
    else:
        tau = x.dtype.type((beta - alphr) / beta)
    return beta, tau, rest * x.dtype.type(1.0 / (alpha - beta))


def hermitian_from_lower(a: CyclicMatrix) -> None:
    """Make the diagonal blocks of ``a`` Hermitian from their lower triangles, in place: the strict upper
    triangle mirrored, the diagonal's imaginary part dropped, as numpy's ``eigh`` reads ``UPLO="L"``.
    `tridiagonalize` reads nothing else above the diagonal, so a matrix whose lower triangle holds the
    values needs no transposing exchange. No messages: each diagonal block lies on one process.

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> from meshrt.linalg.cyclic import to_cyclic
    >>> a = to_cyclic(DistributedTensor.from_global(np.array([[1.0, 9.0], [2.0, 3.0]]), Sharding(Mesh((-1,)), [])))
    >>> hermitian_from_lower(a); a.local.tolist()
    [[1.0, 2.0], [2.0, 3.0]]
    """
    lay, loc = a.layout, a.local
    n, nb = lay.shape[0], lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, a.grid.coords
    for k in range(r, -(-n // nb), pr_n):
        if k % pc_n != c:
            continue
        w = min(nb, n - k * nb)
        lr, lc = local_index(k * nb, nb, pr_n), local_index(k * nb, nb, pc_n)
        blk = loc[lr:lr + w, lc:lc + w]
        upper = np.triu_indices(w, 1)
        blk[upper] = blk.T[upper].conj()
        if blk.dtype.kind == "c":
            blk[np.diag_indices(w)] = blk.diagonal().real


def panels(n: int, nb: int, width: int = PANEL):
    """The reduction's panels ``(first column, one past the last)``: ``width`` columns at most, cut at the
    block-column boundaries so that each lies on one process column."""
    width = max(1, min(width, nb))
    out = []
    for b0 in range(0, n, nb):
        b1 = min(n, b0 + nb)
        out.extend((s, min(b1, s + width)) for s in range(b0, b1, width))
    return out


def tridiagonalize(a: CyclicMatrix, width: int = PANEL):
    """Reduce Hermitian ``a`` (square blocks; read from its lower triangle and its whole diagonal blocks,
    see `hermitian_from_lower`) to real tridiagonal ``T = Q^H A Q`` in place. Returns ``(d, e, refl)``: the
    diagonal and off-diagonal (float64, the same on every process) and, per block column, ``(first column,
    number of reflectors, T)`` for `eigenvectors` (the reflectors stay in ``a`` below the subdiagonal)."""
    lay, grid, loc = a.layout, a.grid, a.local
    if lay.block[0] != lay.block[1] or lay.shape[0] != lay.shape[1]:
        raise ValueError(f"eigh: a square matrix in square blocks expected, got {lay}")
    n, nb = lay.shape[0], lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    dt = loc.dtype
    conj = "C" if dt.kind == "c" else "T"
    rows, cols = a.rows(), a.cols()
    d = np.zeros(n, np.float64)
    e = np.zeros(max(0, n - 1), np.float64)
    refl = []
    # my block columns: (first local column, end, first global column, end)
    blocks = []
    for lb in range(0, loc.shape[1], nb):
        g = ((lb // nb) * pc_n + c) * nb
        blocks.append((lb, min(loc.shape[1], lb + nb), g, min(n, g + nb)))
    bv = bt = None  # the current block column's reflectors (all rows from its first) and taus
    for s0, s1 in panels(n, nb, width):
        b0 = (s0 // nb) * nb
        if s0 == b0:
            bv = np.zeros((n - b0, min(nb, n - b0)), dt, order="F")
            bt = np.zeros(bv.shape[1], dt)
        b, m = s1 - s0, n - s0
        ck = (s0 // nb) % pc_n
        lc = local_index(s0, nb, pc_n)  # my local column of s0 when c == ck
        vv = np.zeros((m, b), dt, order="F")
        ww = np.zeros((m, b), dt, order="F")
        taus = np.zeros(b, dt)
        # the panel's columns (rows s0 ..) as they are now, on every process: one message per panel
        pan = np.zeros((m, b), dt, order="F")
        if c == ck:
            lr = lay.row_start(s0, r)
            pan[rows[lr:] - s0] = loc[lr:, lc:lc + b]
            _allreduce(grid.col, pan, "the panel over the process column")
        _bcast(grid.row, pan, ck, "eigh")
        for i in range(b):
            j = s0 + i
            x = pan[i:, i]  # column j (rows j ..) of the current matrix: the panel's corrected
            if i:
                x -= vv[i:, :i] @ ww[i, :i].conj() + ww[i:, :i] @ vv[i, :i].conj()
            d[j] = x[0].real
            if j == n - 1:
                break
            beta, tau, vrest = _larfg(x[1:])
            e[j], taus[i] = beta, tau
            v = vv[:, i]
            v[i + 1] = 1
            v[i + 2:] = vrest
            lr1, lc1 = lay.row_start(j + 1, r), lay.col_start(j + 1, c)
            if c == ck:  # the reflector kept below the subdiagonal
                loc[lr1:, lc + i] = v[rows[lr1:] - s0]
            # y = A v on rows/cols j+1 .. from the lower triangle's blocks, summed over all processes
            y = np.zeros(m, dt)
            _hemv(a, blocks, rows, cols, v, s0, j + 1, y, conj)
            tail = y[i + 1:]
            _allreduce(grid.comm, tail, "A v")
            if i:
                vt, wt = vv[i + 1:, :i], ww[i + 1:, :i]
                vs = v[i + 1:]
                tail -= vt @ (wt.conj().T @ vs) + wt @ (vt.conj().T @ vs)
            tail *= tau
            tail += (-0.5 * tau * np.vdot(tail, v[i + 1:])) * v[i + 1:]
            ww[i + 1:, i] = tail
        bv[s0 - b0:, s0 - b0:s1 - b0] = vv
        bt[s0 - b0:s1 - b0] = taus
        nref = min(s1, n - 1) - b0
        if s1 == min(n, b0 + nb) and nref > 0:  # the block column's T, for the back-transformation
            refl.append((b0, nref, lapack.larft(np.asfortranarray(bv[1:, :nref]), bt[:nref])))
        if s1 < n:  # the trailing matrix's diagonal and lower blocks: A -= V W^H + W V^H, rank 2b GEMMs
            lr1, lc1 = lay.row_start(s1, r), lay.col_start(s1, c)
            ri, ci = rows[lr1:] - s0, cols[lc1:] - s0
            left = np.asfortranarray(np.hstack([vv[ri], ww[ri]]))
            right = np.asfortranarray(np.hstack([ww[ci], vv[ci]]))
            for cs, ce, gstart in _column_chunks(a, s1):
                rs = lay.row_start(gstart, r)
                lapack.gemm(-1.0, left[rs - lr1:], right[cs - lc1:ce - lc1], 1.0, loc[rs:, cs:ce], "N", conj)
    return d, e, refl


def _hemv(a: CyclicMatrix, blocks, rows, cols, v, s0: int, j1: int, y, conj) -> None:
    """``y += A v`` (my part, before the sum over all processes) on rows and columns ``j1 ..`` of Hermitian
    ``a`` from its diagonal and lower blocks only (the upper ones are not kept up to date): per block column
    of mine, one GEMV with the blocks on and below the diagonal and one with the adjoint of those below it.
    ``v`` and ``y`` are indexed from global row ``s0``."""
    lay, loc = a.layout, a.local
    r = a.grid.coords[0]
    nrow = loc.shape[0]
    for lcs, lce, g, gend in blocks:
        if gend <= j1:
            continue
        lca = lcs + max(0, j1 - g)
        gcols = cols[lca:lce] - s0
        lr0, lre = lay.row_start(max(g, j1), r), lay.row_start(gend, r)
        if lr0 < nrow:  # numpy's matmul: BLAS on the column-major view, without ctypes' per-call cost
            y[rows[lr0:] - s0] += loc[lr0:, lca:lce] @ v[gcols]
        if lre < nrow:  # (A^H x) = (x^H A)^H: a vector-matrix product on the same view, no copy
            x = v[rows[lre:] - s0]
            y[gcols] += np.conj(x.conj() @ loc[lre:, lca:lce]) if conj == "C" else x @ loc[lre:, lca:lce]


def eigenvalues(d: np.ndarray, e: np.ndarray) -> np.ndarray:
    """All eigenvalues of the tridiagonal, ascending (``dstemr``, the same on every process)."""
    return lapack.stemr(d, e, vectors=False)[0]


def eigenvectors(a: CyclicMatrix, d: np.ndarray, e: np.ndarray, refl, w: np.ndarray | None = None):
    """``(Z, w)``: the eigenvectors of ``a`` (reduced by `tridiagonalize`), column ``k`` for the ``k``-th
    smallest eigenvalue, as a `CyclicMatrix` with ``a``'s row layout and one block of ``ceil(n / Pc)``
    columns per process column, and the eigenvalues ``w`` (computed here unless given: on one process
    column by the same ``dstemr`` call as the vectors)."""
    lay, grid, loc = a.layout, a.grid, a.local
    n, nb = lay.shape[0], lay.block[0]
    (pr_n, pc_n), (r, c) = lay.grid, grid.coords
    dt = loc.dtype
    conj = "C" if dt.kind == "c" else "T"
    nbz = max(1, -(-n // pc_n))
    zlay = BlockCyclic((n, n), (nb, nbz), lay.grid)
    rows = a.rows()
    if pc_n == 1 and w is None:
        w, zt = lapack.stemr(d, e)
        local = _my_rows(zt, rows)
        del zt
    else:
        w = eigenvalues(d, e) if w is None else w
        local = _tridiagonal_vectors(zlay, grid, d, e, w, rows, nbz)
    # the tridiagonal's vectors are real; Q's reflectors make them complex (or float32) on the way back
    z = CyclicMatrix(zlay, grid, local.astype(dt, order="F", copy=False), a.mesh)
    del local
    # one buffer for every block column's reflectors (each a column-major prefix of it): blocks of
    # growing sizes, each allocated anew, left the heap fragmented by a third of a share
    room = np.empty(loc.shape[0] * max((nref for _, nref, _ in refl), default=0), dt)
    for s0, nref, t in reversed(refl):
        ck = (s0 // nb) % pc_n
        lr = lay.row_start(s0 + 1, r)
        vbuf = room[:(loc.shape[0] - lr) * nref].reshape((loc.shape[0] - lr, nref), order="F")
        if c == ck:
            lc = local_index(s0, nb, pc_n)
            vbuf[...] = loc[lr:, lc:lc + nref]
            mine = rows[lr:]
            units = s0 + 1 + np.arange(nref)  # each reflector's unit row; zeros above it
            for i, u in enumerate(np.searchsorted(mine, units)):  # (column by column: no temporaries of V's size)
                vbuf[:u, i] = 0
                if u < mine.size and mine[u] == units[i]:
                    vbuf[u, i] = 1
        _bcast(grid.row, vbuf, ck, "eigh")
        _apply_block_reflector(grid, vbuf, t, z.local[lr:], conj, adjoint=False)
    return z, w


def vector_ranges(w: np.ndarray, pc: int, nbz: int, onenorm: float) -> list:
    """The eigenvector index ranges ``[(lo, hi)]`` the ``pc`` process columns compute, one ``dstein`` call
    each: the even split ``[c nbz, (c+1) nbz)``, each boundary moved to the nearest gap of at least
    ``ORFAC ||T||_1`` between consecutive eigenvalues (``onenorm``). ``dstein`` reorthogonalizes the
    vectors of eigenvalues closer than that (its clusters) only within one call, so a cluster stays on one
    process column, at the price of balance (ScaLAPACK's ``PDSYEVX`` keeps clusters on one process too)."""
    n = w.size
    gmin = ORFAC * onenorm
    ok = np.ones(n + 1, bool)
    ok[1:n] = np.diff(w) >= gmin
    valid = np.flatnonzero(ok)
    bounds = [0]
    for c in range(1, pc):
        b = min(n, c * nbz)
        k = valid[np.argmin(np.abs(valid - b))]
        bounds.append(max(bounds[-1], int(k)))
    bounds.append(n)
    return [(bounds[c], bounds[c + 1]) for c in range(pc)]


#: ScaLAPACK's default ``ORFAC``: eigenvalues closer than ``ORFAC ||T||_1`` form one cluster of ``dstein``
ORFAC = 1e-3


def _onenorm(d, e) -> float:
    """``||T||_1`` of the tridiagonal (``dstein``'s scale for its clusters)."""
    if not d.size:
        return 0.0
    col = np.abs(d).copy()
    col[:-1] += np.abs(e)
    col[1:] += np.abs(e)
    return float(col.max())


#: which way the tridiagonal's eigenvectors were computed, per call on this process (tests read it)
stats = {"stein": 0, "one_column": 0, "mrrr_subsets": 0, "mrrr_refused": 0, "mrrr_range": 0}

#: the widest cluster a process column's range leaves to inverse iteration (``dstein``): a wider one goes
#: to MRRR (a spectrum of n ones plus noise: 45 s by ``dstein`` at n = 4096 on 2 processes, 7.9 s by MRRR)
STEIN_CLUSTER = 128


def widest_cluster(w: np.ndarray, gmin: float) -> int:
    """The most eigenvalues of ascending ``w`` in one cluster: a run whose consecutive gaps are below ``gmin``.

    >>> widest_cluster(np.array([0.0, 1e-9, 2e-9, 1.0, 2.0, 2.0]), 1e-3), widest_cluster(np.array([]), 1.0)
    (3, 0)
    """
    if not w.size:
        return 0
    breaks = np.flatnonzero(np.diff(w) >= gmin)
    edges = np.concatenate([[-1], breaks, [w.size - 1]])
    return int(np.diff(edges).max())


#: vectors on each side of a boundary between two process columns' MRRR subsets whose inner products are
#: checked (`_mrrr_subset`), and the largest one accepted, in units of ``eps sqrt(n)``
BOUNDARY_VECTORS = 32
BOUNDARY_TOL = 16.0


def subset_ranges(w: np.ndarray, pc: int, nbz: int) -> list:
    """The eigenvector index ranges of ``pc`` process columns when a cluster is too wide for one: the even
    split, each boundary moved to the widest gap between consecutive eigenvalues within ``nbz / 8`` of it
    (vectors of well separated eigenvalues come out most orthogonal from two MRRR calls).

    >>> subset_ranges(np.array([0.0, 1, 2, 3, 3.5, 10, 11, 12]), 2, 4)
    [(0, 5), (5, 8)]
    """
    n = w.size
    gaps = np.diff(w)
    bounds = [0]
    for c in range(1, pc):
        b = min(n, c * nbz)
        reach = max(1, nbz // 8)
        lo_b, hi_b = max(bounds[-1] + 1, b - reach), min(n - 1, b + reach)
        if 0 < b < n and lo_b <= hi_b:  # the boundary b sits in the gap w[b] - w[b - 1]
            b = lo_b + int(np.argmax(gaps[lo_b - 1:hi_b]))
        bounds.append(max(bounds[-1], min(n, b)))
    bounds.append(n)
    return [(bounds[c], bounds[c + 1]) for c in range(pc)]


def _mrrr_subset(grid, d, e, ranges, out=None):
    """This process column's eigenvectors of its index range by MRRR from the root representation every
    process builds alike (`lapack.stemr_shared`, ``n x`` the range's size: never all of them; into the
    `window` ``out`` if given), or None on
    every process when the vectors on the two sides of some boundary between process columns are not
    orthogonal to within `BOUNDARY_TOL` ``eps sqrt(n)`` (a guard: from one root they are, as in ScaLAPACK's
    ``PDSYEVR``; the check reads the `BOUNDARY_VECTORS` nearest each boundary, where the gaps are smallest)."""
    from mpi4py import MPI

    n = d.size
    c, pc_n = grid.coords[1], len(ranges)
    lo, hi = ranges[c]
    zt = lapack.stemr_shared(d, e, lo, hi, out=out)
    k = BOUNDARY_VECTORS
    head = np.ascontiguousarray(zt[:, :k].T)  # my first vectors, for the process column on my left
    right = np.zeros((min(k, ranges[c + 1][1] - ranges[c + 1][0]) if c + 1 < pc_n else 0, n))
    with _mpi.internal("eigh", "the vectors at the subsets' boundaries", grid.row):
        reqs = [grid.row.Irecv(right, c + 1, 7)] if right.size else []
        if c > 0 and head.size:
            reqs.append(grid.row.Isend(head, c - 1, 7))
        MPI.Request.Waitall(reqs)
    worst = float(np.abs(right @ zt[:, -k:]).max()) if right.size and zt.shape[1] else 0.0
    if zt.shape[1] != hi - lo:  # (dstemr found fewer than asked)
        worst = np.inf
    with _mpi.internal("eigh", "the subsets' orthogonality agreed", grid.comm):
        worst = grid.comm.allreduce(worst, op=MPI.MAX)
    if worst > BOUNDARY_TOL * np.finfo(np.float64).eps * np.sqrt(max(1, n)):
        stats["mrrr_refused"] += 1
        return None
    stats["mrrr_subsets"] += 1
    return zt


def _my_rows(zt: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``zt[rows]`` column-major: ``zt`` itself where ``rows`` are all of them (one process row), else
    copied a few columns at a time (no temporary the size of the selection)."""
    if rows.size == zt.shape[0]:
        return np.asfortranarray(zt)
    out = np.empty((rows.size, zt.shape[1]), zt.dtype, order="F")
    for j in range(0, zt.shape[1], 256):
        out[:, j:j + 256] = zt[rows, j:j + 256]
    return out


def _flat(x: np.ndarray) -> np.ndarray:
    """The column-major array ``x`` as a 1-D view (an MPI buffer without a copy)."""
    return x.reshape(-1, order="F")


def window(n: int, first: int, stop: int):
    """``(buffer, first)``: room for the eigenvectors ``first .. stop - 1`` (0-based, ascending eigenvalues)
    of an ``n x n`` tridiagonal, one column each, column-major, on a mapping of its own (`lazy_zeros`: its
    pages can go back early). `lapack.stemr` and `lapack.stemr_shared` write a range of them in place
    (``out=``), so a caller that keeps other columns of the window (its neighbours' vectors) needs no second
    matrix.

    >>> buf, first = window(6, 2, 5)
    >>> buf.shape, first, buf.flags.f_contiguous
    ((6, 3), 2, True)
    """
    return lazy_zeros((n, max(0, stop - first)), np.float64, "F", huge=True), first


def _tridiagonal_vectors(zlay: BlockCyclic, grid, d, e, w, rows, nbz) -> np.ndarray:
    """My rows of the tridiagonal's eigenvectors of my columns (``zlay``'s local matrix): this process
    column's `vector_ranges` computed by one ``dstein`` (``dstemr`` for all of them), then moved to the
    even column blocks by one ``Alltoallv`` along the process row where a boundary moved.

    On one process row (every process keeps all rows of its vectors) the vectors are computed into a
    `window` spanning both my range and my even block (a few columns more than either), and the
    ``Alltoallv`` moves only the columns on the wrong side of a boundary, within that window: one matrix
    of my vectors in all, never a second one. On several process rows each keeps its rows of the
    vectors computed whole, then they move as above."""
    n = w.size
    pc_n, c = zlay.grid[1], grid.coords[1]
    onenorm = _onenorm(d, e)
    ranges = clusters = vector_ranges(w, pc_n, nbz, onenorm)
    even = [(min(n, q * nbz), min(n, (q + 1) * nbz)) for q in range(pc_n)]
    elo, ehi = even[c]
    whole_rows = rows.size == n

    def room(lo, hi):  # (None: several process rows)
        return window(n, max(0, min(lo, elo) - 1), min(n, max(hi, ehi) + 1)) if whole_rows else None

    zt = win = None
    if max(hi - lo for lo, hi in clusters) > nbz:  # a cluster wider than one process column's share
        ranges = subset_ranges(w, pc_n, nbz)
        win = room(*ranges[c])
        zt = _mrrr_subset(grid, d, e, ranges, win)
        if zt is None:  # (not orthogonal enough across the process columns: alike on every process)
            ranges, win = clusters, None
    lo, hi = ranges[c]
    if zt is None and hi > lo:
        win = room(lo, hi)  # (no memory yet: a mapping whose pages come as they are written)
        if (lo, hi) == (0, n):  # all of them: MRRR
            zt = lapack.stemr(d, e, out=win)[1]
            stats["one_column"] += 1
        elif widest_cluster(w[lo:hi], ORFAC * onenorm) > STEIN_CLUSTER:
            # inverse iteration reorthogonalizes a cluster's k vectors at n k^2 a sweep: MRRR, one call for
            # the range (its boundaries lie in gaps of ORFAC ||T||: the other ranges' vectors are far off)
            zt = lapack.stemr(d, e, lo, hi, out=win)[1]
            stats["mrrr_range"] += 1
        else:  # bisection and inverse iteration for the range (more accurate than dstemr's subsets)
            import scipy.linalg

            zt = scipy.linalg.eigh_tridiagonal(d, e, select="i", select_range=(lo, hi - 1),
                                               lapack_driver="stebz")[1]
            stats["stein"] += 1
            if win is not None and ranges != even:  # SciPy's own matrix: into the window, a few columns at a time
                buf, first = win
                for j in range(0, hi - lo, 256):
                    buf[:, lo - first + j:lo - first + min(j + 256, hi - lo)] = zt[:, j:j + 256]
            else:
                win = None  # (SciPy's matrix is the result)
    if win is not None:  # (the vectors are in it: moved inside it where a boundary moved)
        del zt
        buf, first = win
        if ranges != even:
            _to_even_blocks(grid, buf, first, buf, first, n, ranges, even)
        return buf[:, elo - first:ehi - first]
    if zt is not None:
        mine = _my_rows(zt, rows)
        del zt
    else:
        mine = np.zeros((rows.size, 0), np.float64, order="F")
    if ranges == even:
        return mine
    local = np.empty((rows.size, ehi - elo), np.float64, order="F")
    _to_even_blocks(grid, mine, lo, local, elo, rows.size, ranges, even)
    return local


def _to_even_blocks(grid, send, sfirst: int, recv, rfirst: int, nrows: int, ranges, even) -> None:
    """One ``Alltoallv`` along the process row: each column ``k`` computed by the process column whose
    range holds it goes to the one whose even block holds it. ``send``: my computed columns, its column 0
    vector ``sfirst``; ``recv``: my even block's, from vector ``rfirst``. Both may be one `window` (the
    same array and first vector): then my own columns are in place, and the moves stay inside it. Each
    peer's columns are one contiguous range, in the order of the peers."""
    pc_n, c = len(ranges), grid.coords[1]
    lo, hi = ranges[c]
    elo, ehi = even[c]
    scount, sdisp = np.zeros(pc_n, np.int64), np.zeros(pc_n, np.int64)
    rcount, rdisp = np.zeros(pc_n, np.int64), np.zeros(pc_n, np.int64)
    for q in range(pc_n):
        if q == c and send is recv:
            continue  # (my own columns of my even block are in place already)
        a0, a1 = max(lo, even[q][0]), min(hi, even[q][1])
        if a1 > a0:
            scount[q], sdisp[q] = nrows * (a1 - a0), nrows * (a0 - sfirst)
        a0, a1 = max(elo, ranges[q][0]), min(ehi, ranges[q][1])
        if a1 > a0:
            rcount[q], rdisp[q] = nrows * (a1 - a0), nrows * (a0 - rfirst)
    send, sdisp = _from_first(_flat(send), scount, sdisp)
    recv, rdisp = _from_first(_flat(recv), rcount, rdisp)
    with _mpi.internal("eigh", "the eigenvectors to their column blocks", grid.row):
        grid.row.Alltoallv([send, (scount, sdisp)], [recv, (rcount, rdisp)])


def _from_first(flat: np.ndarray, counts, disps):
    """``flat`` from the first element a message of ``counts``/``disps`` reads, and the displacements from
    there (an empty array where none does): a window's sent and received columns are then two buffers at
    different addresses (MPI refuses one buffer passed as both, though the parts used never overlap)."""
    used = counts > 0
    if not used.any():
        return np.empty(0, flat.dtype), disps
    low = int(disps[used].min())
    return flat[low:], disps - low
