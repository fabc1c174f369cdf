"""Geometric multigrid for `Laplacian`: V, W and F cycles, as a solver and as ``M=`` of the Krylov solvers.

Coarsening is vertex-based: coarse point ``j`` sits on fine point ``2 j + s``
(``s = 1`` at Dirichlet and Neumann dims, ``s = 0`` at periodic ones), so an
odd Dirichlet size ``2 m + 1`` nests exactly; other sizes coarsen too, with a
coarse boundary half a cell off, which costs a few iterations, never the
answer (the fine-level residual decides).  Restriction is full weighting,
prolongation (bi/tri)linear, one 1-D pass per dim; the coarse operator is the
same stencil with the coefficients restricted and ``h`` doubled.  Each coarse
point lives on the process that owns its fine point, so transfers need only
the one-cell halos.  Once a block would get small (``min_block``), the blocks
of neighbouring processes (two along each split mesh axis) are merged onto
the first of them, and the coarser levels run on that smaller mesh (as
PETSc's PCTELESCOPE); once the grid is ``coarse_size`` cells or fewer, or the
mesh is down to one process, the whole grid goes to one process, which runs
the remaining levels without messages, down to a dense solve.  A process
whose block was merged away sends its coarse right-hand side to its group's
root and waits for its correction to come back (a Gatherv and a Scatterv on
the group's communicator); a root of a two-per-axis merge talks to at most
``2**d - 1`` others.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..mesh import Mesh
from ..runtime import mpi as _mpi
from ..sharding.spec import Sharding
from .grid import Grid
from .operator import Laplacian, LinearOperator

__all__ = ["Multigrid", "multigrid"]

CYCLES = ("V", "W", "F")
SMOOTHERS = ("jacobi", "rbgs", "chebyshev")


class _Agglomeration:
    """The coarse blocks of a group of neighbouring processes merged onto the group's first (its root).

    ``factor[a]`` processes along mesh axis ``a`` merge (2, or the whole axis);
    a root builds the merged coarse level with `make_grid` (on the smaller mesh,
    or serial once one process holds it all); the others hold no coarse level.
    Only a root lists its group's blocks (``members``): the others know their own.
    """

    def __init__(self, fine: Grid, coffs, cshape, everything: bool):
        mesh, sharded = fine.mesh, fine.sharded
        axes = fine.sharding.split_axes
        split = {a for d in sharded for a in axes[d]}
        multi = {a for d in sharded if len(axes[d]) > 1 for a in axes[d]}
        shape, coords = mesh.shape, mesh.coords
        factor = tuple((n if (everything or a in multi) else min(2, n)) if a in split else 1
                       for a, n in enumerate(shape))
        root = tuple(c - c % f for c, f in zip(coords, factor))
        self.is_root = root == coords
        flat = [o for d in sharded for o in coffs[d]]
        before = Sharding(mesh, fine.split_axes, sharded_dims_offsets=flat)
        mine = before.shard_slices(cshape)
        self.start, self.n = tuple(x.start for x in mine), tuple(x.stop - x.start for x in mine)
        self.members = []  # on a root: (start, n) of each member's block on the coarse layout, in rank order
        if self.is_root:
            for k in itertools.product(*[range(f) for f in factor]):
                member = tuple(r + kk for r, kk in zip(root, k))
                if all(c < n for c, n in zip(member, shape)):
                    sl = before.shard_slices(cshape, device=mesh.linear_index(member))
                    self.members.append((tuple(x.start for x in sl), tuple(x.stop - x.start for x in sl)))
        key = int(np.ravel_multi_index(tuple(c % f for c, f in zip(coords, factor)), factor))
        with _mpi.internal("solvers.Multigrid", "coarse grid merge: group", fine.comm):
            self.group = fine.comm.Split(mesh.linear_index(root), key)
        sub_shape = tuple(-(-n // f) for n, f in zip(shape, factor))
        # the merged layout: every factor-th boundary of each split dim
        new_offsets = []
        for d in range(fine.ndim):
            o = list(coffs[d])
            if d in sharded and len(axes[d]) == 1 and factor[axes[d][0]] == 2:
                o = o[0::2] + ([o[-1]] if (len(o) - 1) % 2 else [])
            elif d in sharded:
                o = [o[0], o[-1]]
            new_offsets.append(tuple(o))
        self.submesh, self.subcomm = None, None
        distributed = any(sub_shape[a] > 1 for a in split)
        if distributed:
            from mpi4py import MPI
            sub_coords = tuple(c // f for c, f in zip(coords, factor))
            color = 0 if self.is_root else MPI.UNDEFINED
            with _mpi.internal("solvers.Multigrid", "coarse grid merge: mesh", fine.comm):
                self.subcomm = fine.comm.Split(color, int(np.ravel_multi_index(sub_coords, sub_shape)))
        self.grid_args = (sub_shape, new_offsets, distributed)
        self.factor = factor

    def make_grid(self, cshape, bcs, ch, wall, split_axes, axis_names):
        """The merged coarse level (roots only)."""
        sub_shape, new_offsets, distributed = self.grid_args
        if not distributed:
            return Grid(cshape, bcs, ch, wall=wall)
        self.submesh = Mesh(sub_shape, axis_names, comm=self.subcomm)
        return Grid(cshape, bcs, ch, self.submesh, split_axes, new_offsets, wall)

    def collect(self, x, out, interior_origin):
        """Root: ``out``'s merged interior receives every member's coarse block ``x``."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        if not self.is_root:
            with _mpi.internal("solvers.Multigrid", "coarse grid merge: gather", self.group):
                self.group.Gatherv(x, None, root=0)
            return
        counts = [int(np.prod(n)) for _, n in self.members]
        recv = np.empty(sum(counts))
        with _mpi.internal("solvers.Multigrid", "coarse grid merge: gather", self.group):
            self.group.Gatherv(x, (recv, counts), root=0)
        pos = 0
        for (start, n), cnt in zip(self.members, counts):
            out[tuple(slice(interior_origin + s - r, interior_origin + s - r + k)
                      for s, r, k in zip(start, self.start, n))] = recv[pos:pos + cnt].reshape(n)
            pos += cnt

    def hand_out(self, cbuf):
        """Each member's coarse block with one ghost layer around it, from the root's padded ``cbuf``."""
        patch = np.empty(tuple(k + 2 for k in self.n))
        if not self.is_root:
            with _mpi.internal("solvers.Multigrid", "coarse grid merge: scatter", self.group):
                self.group.Scatterv(None, patch, root=0)
            return patch
        parts = [np.ascontiguousarray(cbuf[tuple(slice(s - r, s - r + k + 2)
                                                 for s, r, k in zip(start, self.start, n))]).ravel()
                 for start, n in self.members]
        send = np.concatenate(parts)
        with _mpi.internal("solvers.Multigrid", "coarse grid merge: scatter", self.group):
            self.group.Scatterv((send, [p.size for p in parts]), patch, root=0)
        return patch

    def free(self):
        if self.submesh is not None:
            self.submesh.free()
        from mpi4py import MPI
        for c in (self.subcomm, self.group):
            if c is not None and c != MPI.COMM_NULL:
                with _mpi.internal("solvers.Multigrid", "communicator free", c):
                    c.Free()
        self.subcomm = self.group = self.submesh = None


class _Transfer:
    """Restriction and prolongation between a fine grid and the next coarser one.

    ``coarse`` is None on a process whose coarse block was merged onto another (``agg``'s root)."""

    def __init__(self, fine: Grid, coarse, modes, cstart, cn, agg=None, cshape=None):
        self.fine, self.coarse, self.modes, self.agg = fine, coarse, modes, agg
        self.cstart, self.cn = cstart, cn
        nd = fine.ndim
        cshape = coarse.shape if coarse is not None else cshape
        self.prolong_taps = []
        for d in range(nd):
            fs, nf, cs = fine.start[d], fine.n[d], cstart[d]
            g = np.arange(fs, fs + nf)
            if modes[d] is None:
                self.prolong_taps.append((g - cs + 1, None, None, None))
                continue
            t = g - modes[d]
            odd = t % 2
            i0 = t // 2 - cs + 1
            shape = [1] * nd
            shape[d] = nf
            w = np.where(odd == 1, 0.5, 1.0).reshape(shape)
            self.prolong_taps.append((i0, i0 + odd, w, (1.0 - w) * 1.0))
        # Restriction is P^T / 2 per coarsened dim (full weighting inside the grid), so a cycle with
        # adjoint smoothing is a symmetric preconditioner; at a boundary it folds in what prolongation
        # takes from a coarse ghost (Neumann mirror, periodic wrap) and drops fine cells that do not exist.
        self.restrict_w = []
        for d in range(nd):
            s = modes[d]
            if s is None:
                self.restrict_w.append(None)
                continue
            n, ncg, bc = fine.shape[d], cshape[d], fine.bcs[d]
            shape = [1] * nd
            shape[d] = cn[d]
            ws = []
            for k in (-1, 0, 1):
                w = np.array([0.5 * _pweight(2 * j + s + k, j, n, ncg, s, bc)
                              for j in range(cstart[d], cstart[d] + cn[d])])
                ws.append(w.reshape(shape))
            self.restrict_w.append(ws)

    def restrict(self, fine_buf, out, coefficient=False):
        """``out`` (the coarse padded buffer; None where merged away) interior = R fine; ``fine_buf``'s
        ghosts are refreshed here."""
        f, nd = self.fine, self.fine.ndim
        f.update(fine_buf, coefficient)
        x = fine_buf
        for d in range(nd):
            cs, cn, s = self.cstart[d], self.cn[d], self.modes[d]
            if s is None:
                x = x[(slice(None),) * d + (slice(1, 1 + f.n[d]),)]
                continue
            p0 = 2 * cs + s - f.start[d] + 1
            sl = [(slice(None),) * d + (slice(p0 + k, p0 + k + 2 * cn - 1, 2),) for k in (-1, 0, 1)]
            w = self.restrict_w[d]
            if coefficient:  # a cell value: a weighted mean
                w = [wk / (w[0] + w[1] + w[2]) for wk in w]
            x = w[0] * x[sl[0]] + w[1] * x[sl[1]] + w[2] * x[sl[2]]
        if self.agg is not None:
            self.agg.collect(x, out, 1)
        else:
            out[self.coarse.interior] = x

    def prolong_add(self, cbuf, fine_buf):
        """fine_buf interior += P coarse (``cbuf`` the coarse padded buffer, None where merged away; its
        ghosts are refreshed here)."""
        nd = self.fine.ndim
        if self.coarse is not None:
            self.coarse.update(cbuf)
        x = self.agg.hand_out(cbuf) if self.agg is not None else cbuf
        for d in range(nd):
            i0, i1, w0, w1 = self.prolong_taps[d]
            if w0 is None:
                x = np.take(x, i0, axis=d)
            else:
                x = np.take(x, i0, axis=d) * w0 + np.take(x, i1, axis=d) * w1
        fine_buf[self.fine.interior] += x

    def free(self):
        if self.agg is not None:
            self.agg.free()


class _Level:
    """A level's correction ``u``, right-hand side ``b`` and residual ``r`` (padded buffers).

    ``r`` is scratch: dead once restricted, recomputed before the level reads
    it again, so the coarse levels' ``r`` are views of one buffer (``shared``).
    """

    def __init__(self, grid: Grid, shared=None):
        self.grid = grid
        self.u, self.b = grid.zeros(), grid.zeros()
        self.r = grid.zeros() if shared is None else shared[:int(np.prod(grid.padded))].reshape(grid.padded)
        self.owns_r = shared is None
        self.transfer = None
        self.inverse = None

    def nbytes(self) -> int:
        return self.u.nbytes + self.b.nbytes + (self.r.nbytes if self.owns_r else 0) + self.grid.memory() + \
            (self.inverse.nbytes if self.inverse is not None else 0)


class Multigrid(LinearOperator):
    """A geometric multigrid hierarchy of a `Laplacian`; applied as an operator it is one cycle (``M ~ A^-1``).

    Parameters
    ----------
    A : Laplacian
        The fine-level operator.
    cycle : {"V", "W", "F"}, optional
        Default "V".
    smoother : {"rbgs", "jacobi", "chebyshev"}, optional
        Red-black Gauss-Seidel (default; forward before, backward after the
        coarse correction, so the cycle is symmetric), weighted Jacobi, or a
        Chebyshev polynomial in ``D^-1 A`` on ``[0.5, 2]`` (its degree the sweep count).
    presmooth, postsmooth : int, optional
        Sweeps before and after the coarse correction. Default 2 and 2.
    omega : float, optional
        Jacobi's weight; default 4/5 in 2-D, 6/7 in 3-D.
    max_levels : int, optional
        Default: as many as coarsening allows.
    coarse_size : int, optional
        A grid of at most this many cells is solved directly (dense). Default 64.
    min_block : int, optional
        Merge the coarse blocks of neighbouring processes (two along each
        split mesh axis) onto one of them once some process would own fewer
        than ``min_block`` points along a split dim, or fewer than
        ``min_block**2`` cells in all. Default 8.

    Examples
    --------
    >>> A = Laplacian(b, h=1.0 / (n + 1))                          # doctest: +SKIP
    >>> x, info = cg(A, b, M=Multigrid(A), rtol=1e-8)              # doctest: +SKIP
    >>> x, info = multigrid(A, b, rtol=1e-8, cycle="W")            # doctest: +SKIP
    """

    def __init__(self, A: Laplacian, *, cycle="V", smoother="rbgs", presmooth=2, postsmooth=2, omega=None,
                 max_levels=None, coarse_size=64, min_block=8):
        if not isinstance(A, Laplacian):
            raise TypeError(f"A: {type(A).__name__}; geometric multigrid needs a meshrt.solvers.Laplacian "
                            f"(the stencil it coarsens)")
        if cycle not in CYCLES:
            raise ValueError(f"cycle: {cycle!r}; expected one of {CYCLES}")
        if smoother not in SMOOTHERS:
            raise ValueError(f"smoother: {smoother!r}; expected one of {SMOOTHERS}")
        for name, v in (("presmooth", presmooth), ("postsmooth", postsmooth)):
            if int(v) != v or v < 0:
                raise ValueError(f"{name}: {v!r}; expected a count >= 0")
        if max_levels is not None and max_levels < 1:
            raise ValueError(f"max_levels: {max_levels!r}; expected >= 1")
        super().__init__(A.shape)
        self.A = A
        self.cycle, self.smoother = cycle, smoother
        self.presmooth, self.postsmooth = int(presmooth), int(postsmooth)
        nd = A.grid.ndim
        self.omega = float(omega) if omega is not None else (0.8 if nd == 2 else 6.0 / 7.0)
        self.levels = [_Level(A.grid)]
        self._build(max_levels or 64, int(coarse_size), int(min_block))
        for lvl in self.levels:  # the exchanges a cycle makes (smoothing and residuals of u, restriction of r)
            lvl.grid.plan(lvl.u, lvl.r)

    # -- setup ----------------------------------------------------------------------------------

    def _build(self, max_levels, coarse_size, min_block):
        k, c = self.A.coeff, self.A.shift
        self._scratch = None
        while True:
            fine = self.levels[-1].grid
            size = int(np.prod(fine.shape))
            nd = fine.ndim
            modes = [None if n < 3 else (0 if per else 1) for n, per in zip(fine.shape, fine.periodic)]
            last = size <= coarse_size or all(m is None for m in modes) or len(self.levels) >= max_levels
            if last and not fine.dist:
                break
            if last:  # merge this grid as it is onto one process, and solve it there
                modes = [None] * nd
            cshape = tuple(n if m is None else (n + 1 - m) // 2 for n, m in zip(fine.shape, modes))
            ch = tuple(hh if m is None else 2.0 * hh for hh, m in zip(fine.h, modes))
            wall = tuple(w if m is None else ((1.0 + w[0]) / 2, (1.0 + w[1]) / 2 if n % 2 else w[1] / 2)
                         for w, m, n in zip(fine.wall, modes, fine.shape))
            agg = None
            if fine.dist:
                coffs = tuple(fine.offsets[d] if m is None else tuple((o - m + 1) // 2 for o in fine.offsets[d])
                              for d, m in enumerate(modes))
                sharded = fine.sharded
                widths = [b - a for d in sharded for a, b in zip(coffs[d], coffs[d][1:])]
                everything = last or int(np.prod(cshape)) <= coarse_size
                merge = everything or (widths and min(widths) < min_block) or \
                    _min_cells(coffs, sharded, cshape) < min_block ** 2
                if merge:
                    agg = _Agglomeration(fine, coffs, cshape, everything)
                    cstart, cn = agg.start, agg.n
                    coarse = agg.make_grid(cshape, fine.bcs, ch, wall, fine.split_axes,
                                           fine.mesh.axis_names) if agg.is_root else None
                else:
                    coarse = Grid(cshape, fine.bcs, ch, fine.mesh, fine.split_axes, coffs, wall)
                    cstart, cn = coarse.start, coarse.n
            else:
                coarse = Grid(cshape, fine.bcs, ch, wall=wall)
                cstart, cn = coarse.start, coarse.n
            lvl = self.levels[-1]
            lvl.transfer = _Transfer(fine, coarse, modes, cstart, cn, agg, cshape)
            # coefficients: restricted (full weighting) as cell values of the coarse grid
            if not np.isscalar(k):
                kc = coarse.zeros() if coarse is not None else None
                lvl.transfer.restrict(k, kc, coefficient=True)
                k = kc
            if not np.isscalar(c):
                cp = fine.zeros()
                cp[fine.interior] = c
                cc = coarse.zeros() if coarse is not None else None
                lvl.transfer.restrict(cp, cc, coefficient=True)
                c = np.ascontiguousarray(cc[coarse.interior]) if coarse is not None else None
            if coarse is None:  # this process's part continues on another: its levels end here
                break
            coarse.set_coefficients(k, c)
            if self._scratch is None:  # the first coarse level is the largest
                self._scratch = np.zeros(int(np.prod(coarse.padded)))
            elif self._scratch.size < int(np.prod(coarse.padded)):  # (a merge can grow a process's block)
                self._scratch = np.zeros(int(np.prod(coarse.padded)))
                for lvl in self.levels[1:]:
                    lvl.r = self._scratch[:lvl.r.size].reshape(lvl.r.shape)
            self.levels.append(_Level(coarse, self._scratch))
            if last and not coarse.dist:
                break
        bottom = self.levels[-1]
        if bottom.transfer is None:  # this process holds the coarsest grid, whole
            mat = bottom.grid.dense()
            bottom.inverse = np.linalg.pinv(mat, rcond=1e-13) if mat.size else mat

    def memory(self) -> dict:
        """Bytes per level (buffers and coefficients) on this process; level 0 is the fine level.

        The coarse levels' shared residual buffer counts on level 1."""
        out = {i: lvl.nbytes() for i, lvl in enumerate(self.levels)}
        if self._scratch is not None:
            out[1] += self._scratch.nbytes
        return out

    def __repr__(self):
        def one(lvl):
            g = lvl.grid
            return "x".join(map(str, g.shape)) + f"@{g.mesh.size if g.dist else 1}"
        shapes = " -> ".join(one(lvl) for lvl in self.levels)
        if self.levels[-1].transfer is not None:
            shapes += " -> (merged onto another process)"
        return f"<Multigrid {self.cycle}-cycle, {self.smoother}, levels {shapes} (@ processes)>"

    # -- cycles ---------------------------------------------------------------------------------

    def _smooth(self, lvl, sweeps, forward):
        g, u, b, r = lvl.grid, lvl.u, lvl.b, lvl.r
        if sweeps == 0:
            return
        inner = g.interior
        if self.smoother == "rbgs":
            colors = (0, 1) if forward else (1, 0)
            for _ in range(sweeps):
                for col in colors:
                    g.gs(u, b, col)
        elif self.smoother == "jacobi":
            w = self.omega
            dinv = w / g.diag_owned()
            for _ in range(sweeps):
                g.residual(u, b, r)
                u[inner] += dinv * r[inner]
        else:
            lo, hi = 0.5, 2.0
            theta, delta = 0.5 * (hi + lo), 0.5 * (hi - lo)
            sigma = theta / delta
            rho = 1.0 / sigma
            dinv = 1.0 / g.diag_owned()
            g.residual(u, b, r)
            d = (dinv / theta) * r[inner]
            for it in range(sweeps):
                u[inner] += d
                if it == sweeps - 1:
                    break
                g.residual(u, b, r)
                rho_new = 1.0 / (2.0 * sigma - rho)
                d *= rho_new * rho
                d += (2.0 * rho_new / delta) * dinv * r[inner]
                rho = rho_new

    def _cycle(self, i, kind):
        lvl = self.levels[i]
        if lvl.inverse is not None:
            g = lvl.grid
            lvl.u[g.interior] = (lvl.inverse @ lvl.b[g.interior].ravel()).reshape(g.n)
            return
        self._smooth(lvl, self.presmooth, True)
        lvl.grid.residual(lvl.u, lvl.b, lvl.r)
        if i + 1 == len(self.levels):  # the coarser levels run on another process: send, wait, receive
            lvl.transfer.restrict(lvl.r, None)
            lvl.transfer.prolong_add(None, lvl.u)
            self._smooth(lvl, self.postsmooth, False)
            return
        nxt = self.levels[i + 1]
        lvl.transfer.restrict(lvl.r, nxt.b)
        nxt.u[...] = 0.0
        if kind == "V":
            self._cycle(i + 1, "V")
        elif kind == "W":
            self._cycle(i + 1, "W")
            if nxt.inverse is None:
                self._cycle(i + 1, "W")
        else:
            self._cycle(i + 1, "F")
            if nxt.inverse is None:
                self._cycle(i + 1, "V")
        lvl.transfer.prolong_add(nxt.u, lvl.u)
        self._smooth(lvl, self.postsmooth, False)

    # -- as an operator -------------------------------------------------------------------------

    def _bind(self, b):
        self.A._check_layout(b)
        return self

    def _apply(self, r, out):
        """out = one cycle on A z = r from z = 0."""
        top = self.levels[0]
        inner = top.grid.interior
        top.b[inner] = r
        top.u[...] = 0.0
        self._cycle(0, self.cycle)
        np.copyto(out, top.u[inner])

    def matvec(self, x):
        from ..tensor.distributed_tensor import DistributedTensor
        self.A._check_layout(x, "x")
        out = np.empty(self.A.grid.n)
        self._apply(np.asarray(x.interior), out)
        y = DistributedTensor.zeros(x.global_shape, x.sharding, periodic=x.periodic)
        y.interior[...] = out
        return y

    __call__ = matvec

    def free(self):
        """Free the hierarchy's MPI resources (collective): halo requests, the merged meshes' communicators."""
        for i, lvl in enumerate(self.levels):
            if i:
                lvl.grid.free()
            if lvl.transfer is not None:
                lvl.transfer.free()


def _pweight(i, j, n, nc, s, bc) -> float:
    """Prolongation's weight of coarse point ``j`` at fine point ``i`` (global), ghosts folded per side's
    boundary (``bc`` a ``(low, high)`` pair)."""
    periodic = bc[0] == "periodic"
    if periodic:
        i %= n
    elif not 0 <= i < n:
        return 0.0
    t = i - s
    j0 = t // 2
    taps = ((j0, 1.0),) if t % 2 == 0 else ((j0, 0.5), (j0 + 1, 0.5))
    total = 0.0
    for jj, w in taps:
        if not 0 <= jj < nc:
            side = bc[0] if jj < 0 else bc[1]
            if periodic:
                jj %= nc
            elif side == "neumann":
                jj = min(max(jj, 0), nc - 1)
            else:
                continue
        if jj == j:
            total += w
    return total


def _min_cells(coffs, sharded, cshape):
    """The fewest cells any process would own on a coarse layout."""
    best = int(np.prod(cshape))
    if not sharded:
        return best
    import itertools
    widths = [[b - a for a, b in zip(coffs[d], coffs[d][1:])] for d in sharded]
    other = int(np.prod([n for d, n in enumerate(cshape) if d not in sharded]))
    for combo in itertools.product(*[sorted(set(w))[:1] for w in widths]):
        best = min(best, int(np.prod(combo)) * other)
    return best


def multigrid(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, callback=None, **options):
    """Solve ``A x = b`` by multigrid cycles alone; returns ``(x, info)`` as the Krylov solvers.

    ``A`` is a `Laplacian` or a `Multigrid` built from one; ``options`` go to
    `Multigrid` (``cycle``, ``smoother``, ...).  Stops when
    ``||b - A x|| <= max(rtol ||b||, atol)``; ``info`` is 0 then, else the
    number of cycles run (``maxiter``, default 100).

    Examples
    --------
    >>> x, info = multigrid(Laplacian(b), b, rtol=1e-8, cycle="F")   # doctest: +SKIP
    """
    from .krylov import _prepare, _result
    mg = A if isinstance(A, Multigrid) else Multigrid(A, **options)
    if isinstance(A, Multigrid) and options:
        raise TypeError(f"multigrid: options {sorted(options)} given with a built Multigrid")
    space, _, _, x, bl, maxiter = _prepare(mg.A, b, x0, rtol, atol, maxiter, None, default_maxiter=100)
    top = mg.levels[0]
    g, inner = top.grid, top.grid.interior
    top.u[inner] = x
    top.b[inner] = bl
    bnorm = np.sqrt(space.dots((bl, bl))[0].real)
    tol = max(rtol * bnorm, atol)
    info = maxiter
    for it in range(maxiter + 1):
        g.residual(top.u, top.b, top.r)
        rr = top.r[inner]
        rnorm = np.sqrt(space.dots((rr, rr))[0].real)
        if rnorm <= tol:
            info = 0
            break
        if it == maxiter or not np.isfinite(rnorm):
            info = max(it, 1)
            break
        mg._cycle(0, mg.cycle)
        if callback is not None:
            callback(_result(b, top.u[inner]))
    return _result(b, top.u[inner]), info
