"""One grid level: a padded block per process, its halo exchange, boundary ghosts and the diffusion operator.

A level buffer holds the owned block plus one ghost layer on *every* side
(also along dims that are not split: there the ghosts are domain ghosts).
Split dims exchange through a `HaloExchange` planned once per buffer;
domain ghosts are filled here: Dirichlet 0 (homogeneous; an inhomogeneous
value belongs in the right-hand side), Neumann mirror, periodic wrap (on a
split dim the exchange wraps).  A *serial* level (``mesh=None``) is a whole
grid held by one process: the coarse levels once the mesh is merged down to it.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShardingError
from ..halo import HaloExchange
from ..sharding.spec import Sharding

try:
    from ..kernels import multigrid as _k
except ImportError:  # a source checkout: kernels/ becomes meshrt.kernels when installed
    from kernels import multigrid as _k

__all__ = ["Grid", "BOUNDARIES", "normalize_boundary"]

BOUNDARIES = ("dirichlet", "neumann", "periodic")


def normalize_boundary(boundary, ndim: int) -> tuple:
    """``boundary`` as a ``(low side, high side)`` pair of BOUNDARIES per dim.

    ``boundary`` is a name or a stencil spec (`Dirichlet`, `Neumann`) for every
    side, or one entry per dim, each a name, a spec or a ``(low, high)`` pair.

    >>> normalize_boundary(("dirichlet", ("dirichlet", "neumann")), 2)
    (('dirichlet', 'dirichlet'), ('dirichlet', 'neumann'))
    """
    def one(b):
        name = type(b).__name__.lower() if not isinstance(b, str) else b.lower()
        if name not in BOUNDARIES:
            raise ValueError(f"boundary: {b!r}; expected one of {BOUNDARIES} (or Dirichlet(0.0), Neumann()), "
                             f"one for every dim, one per dim, or a (low, high) pair per dim")
        if name == "dirichlet" and not isinstance(b, str) and getattr(b, "value", 0.0) != 0.0:
            raise ValueError(f"boundary: {b!r}; the operator takes homogeneous Dirichlet(0.0) only: move the "
                             f"boundary value into the right-hand side")
        return name

    def sides(b, d):
        if isinstance(b, str) or not hasattr(b, "__len__"):
            return (one(b),) * 2
        if len(b) != 2:
            raise ValueError(f"boundary[{d}]: {b!r}; expected a name or a (low, high) pair")
        pair = (one(b[0]), one(b[1]))
        if (pair[0] == "periodic") != (pair[1] == "periodic"):
            raise ValueError(f"boundary[{d}]: {b!r}; periodic is both sides or neither")
        return pair
    if isinstance(boundary, (str,)) or not hasattr(boundary, "__len__"):
        return (sides(boundary, None),) * ndim
    if len(boundary) != ndim:
        raise ValueError(f"boundary: {len(boundary)} entries for {ndim} dims; give one for every dim or one per dim")
    return tuple(sides(b, d) for d, b in enumerate(boundary))


def _axis(ndim, d, s):
    return (slice(None),) * d + (s,) + (slice(None),) * (ndim - d - 1)


class Grid:
    """The layout of one level (global shape, owned block, ghosts) and its operator's coefficients."""

    def __init__(self, shape, bcs, h, mesh=None, split_axes=None, offsets=None, wall=None):
        self.shape = tuple(int(n) for n in shape)
        self.ndim = nd = len(self.shape)
        if nd not in (2, 3):
            raise ValueError(f"shape: {self.shape}; the multigrid operator is 2-D or 3-D")
        self.bcs = tuple(bcs)  # per dim, (low side, high side)
        self.periodic = tuple(b[0] == "periodic" for b in self.bcs)
        self.h = tuple(float(x) for x in h)
        self.mesh = mesh
        # per dim, the distance (in cells of this grid) from the first/last cell to the Dirichlet wall:
        # 1 on the fine grid; a coarse grid of an even fine size ends half a coarse cell from it
        self.wall = tuple(wall) if wall is not None else ((1.0, 1.0),) * nd
        self.dist = mesh is not None
        self.offsets = None
        sharded = ()
        if self.dist:
            self.split_axes = split_axes
            sh = Sharding(mesh, split_axes)
            sharded = sh.sharded_dims
            self.offsets = tuple(tuple(int(o) for o in offsets[d]) for d in range(nd))
            flat = [o for d in sharded for o in self.offsets[d]]
            self.sharding = Sharding(mesh, split_axes, halo_sizes=[1, 1] * len(sharded),
                                     sharded_dims_offsets=flat)
            sl = self.sharding.shard_slices(self.shape)
            self.start = tuple(s.start for s in sl)
            self.n = tuple(s.stop - s.start for s in sl)
            # unsplit dims carry their ghosts as part of the "global" extent the exchange sees
            self.xshape = tuple(n if d in sharded else n + 2 for d, n in enumerate(self.shape))
            self.comm = mesh.comm
        else:
            self.start = (0,) * nd
            self.n = self.shape
            self.comm = None
        self.sharded = sharded
        self.padded = tuple(n + 2 for n in self.n)
        # which domain ghosts this process fills itself
        fills = []
        for d in range(nd):
            if d in sharded:
                if self.periodic[d]:
                    fills.append((False, False))
                else:
                    fills.append((self.start[d] == 0, self.start[d] + self.n[d] == self.shape[d]))
            else:
                fills.append((True, True))
        self.fills = tuple(fills)
        self.interior = tuple(slice(1, n + 1) for n in self.n)
        self._ex = {}

    # -- buffers and ghosts ---------------------------------------------------------------------

    def zeros(self):
        """A padded buffer of zeros, its pages touched now (so that a first solve does not fault them in)."""
        buf = np.empty(self.padded)
        buf.fill(0.0)
        return buf

    def plan(self, *bufs):
        """Plan the halo exchanges of ``bufs`` now (collective), not at their first use."""
        for buf in bufs:
            self.exchange(buf)

    def nbytes_owned(self) -> int:
        return int(np.prod(self.n)) * 8

    def exchange(self, buf):
        """The HaloExchange of ``buf`` (planned on first use), or None on a serial level."""
        if not self.dist or not self.sharded:
            return None
        ex = self._ex.get(id(buf))
        if ex is None or ex.array is not buf:
            per = [self.periodic[d] and d in self.sharded for d in range(self.ndim)]
            ex = self._ex[id(buf)] = HaloExchange(buf, self.sharding, self.xshape, periodic=per)
        return ex

    def fill(self, buf, coefficient=False):
        """Domain ghosts of ``buf`` (after any exchange): zero, mirror or wrap; a coefficient mirrors at Dirichlet."""
        nd = self.ndim
        for d in range(nd):
            lo, hi = self.fills[d]
            if not (lo or hi):
                continue
            n = self.n[d]
            if self.periodic[d]:  # only where the whole dim is here
                buf[_axis(nd, d, 0)] = buf[_axis(nd, d, n)]
                buf[_axis(nd, d, n + 1)] = buf[_axis(nd, d, 1)]
                continue
            for own, ghost, edge, bc in ((lo, 0, 1, self.bcs[d][0]), (hi, n + 1, n, self.bcs[d][1])):
                if not own:
                    continue
                if bc == "neumann" or coefficient:
                    buf[_axis(nd, d, ghost)] = buf[_axis(nd, d, edge)]
                else:
                    buf[_axis(nd, d, ghost)] = 0.0

    def update(self, buf, coefficient=False):
        """Blocking: exchange and fill the ghosts of ``buf``."""
        ex = self.exchange(buf)
        if ex is not None:
            ex()
        self.fill(buf, coefficient)

    # -- the operator ---------------------------------------------------------------------------

    def set_coefficients(self, k, c):
        """Faces and diagonal from the diffusion coefficient ``k`` and the shift ``c``.

        ``k`` is a float or a padded buffer (ghosts are filled here); ``c`` a float or an owned-shape array.
        """
        nd = self.ndim
        self.k, self.c = k, c
        if np.isscalar(k):
            self.faces = tuple(np.broadcast_to(np.float64(k / hh ** 2), self.padded) for hh in self.h)
            dsum = sum(2.0 * k / hh ** 2 for hh in self.h)
            if np.isscalar(c):
                self.diag = np.broadcast_to(np.float64(dsum + c), self.padded)
            else:
                diag = np.full(self.padded, dsum)
                diag[self.interior] += c
                self.diag = diag
        else:
            self.update(k, coefficient=True)
            faces = []
            diag = np.zeros(self.padded)
            inner = self.interior
            for d, hh in enumerate(self.h):
                f = np.zeros(self.padded)
                lo = _axis(nd, d, slice(0, -1))
                up = _axis(nd, d, slice(1, None))
                f[lo] = 0.5 * (k[lo] + k[up]) / hh ** 2
                faces.append(f)
                diag[inner] += f[inner] + f[tuple(slice(s.start - (e == d), s.stop - (e == d))
                                                  for e, s in enumerate(inner))]
            if not np.isscalar(c):
                diag[inner] += c
            elif c:
                diag[inner] += c
            self.faces = tuple(faces)
            self.diag = diag
        self.const = None
        if all(f.strides[0] == 0 for f in self.faces) and self.diag.strides[0] == 0:
            self.const = (float(self.diag.flat[0]),) + tuple(float(f.flat[0]) for f in self.faces)
            # the diagonal's wall corrections, one small vector per dim (added: dg + w0[i] + w1[j])
            self.wdiag = tuple(np.zeros(p) for p in self.padded)
        self._near_walls()
        # boxes: the whole owned block, its inner box (reads no halo) and the rim
        whole = [(1, n + 1) for n in self.n]
        self.whole = whole
        inner_box = [tuple(b) for b in whole]
        rims = []
        for d in range(nd):
            lo, hi = inner_box[d]
            split = d in self.sharded
            w = 1 if split else 0
            ilo, ihi = min(lo + w, hi), max(hi - w, min(lo + w, hi))
            if ilo > lo:
                rims.append(inner_box[:d] + [(lo, ilo)] + inner_box[d + 1:])
            if hi > ihi:
                rims.append(inner_box[:d] + [(ihi, hi)] + inner_box[d + 1:])
            inner_box[d] = (ilo, ihi)
        self.inner_box, self.rims = inner_box, rims

    def _near_walls(self):
        """A wall nearer than one cell: its face coefficient grows as 1 / distance (the Galerkin diagonal of
        linear interpolation); only the diagonal changes, the ghost beyond is 0."""
        nd = self.ndim
        for d in range(nd):
            for side, (own, pos, face) in enumerate(((self.fills[d][0], 1, 0), (self.fills[d][1], self.n[d],
                                                                                  self.n[d]))):
                dist = self.wall[d][side]
                if not own or dist == 1.0 or self.bcs[d][side] != "dirichlet":
                    continue
                if self.const is not None:
                    self.wdiag[d][pos] += self.const[1 + d] * (1.0 / dist - 1.0)
                    continue
                if self.diag.strides[0] == 0 or not self.diag.flags.writeable:
                    self.diag = np.array(self.diag)
                self.diag[_axis(nd, d, pos)] += self.faces[d][_axis(nd, d, face)] * (1.0 / dist - 1.0)

    def diag_owned(self) -> np.ndarray:
        """The diagonal on the owned block (for Jacobi and Chebyshev; built on each call when constant)."""
        if self.const is None:
            return self.diag[self.interior]
        nd = self.ndim
        out = self.const[0]
        for d in range(nd):
            shape = [1] * nd
            shape[d] = self.n[d]
            out = out + self.wdiag[d][1:-1].reshape(shape)
        return np.broadcast_to(out, self.n)

    def memory(self) -> int:
        """Bytes of the coefficient arrays held (broadcast ones cost nothing)."""
        arrs = list(self.faces) + [self.diag]
        return sum(a.nbytes for a in arrs if a.strides[0] != 0)

    def warm(self, buf):
        """Load the compiled kernels this grid's operator and smoother call (from Numba's cache) now, each
        on an empty box of ``buf``, so that the first solve does not pay for it."""
        empty = [(1, 1)] * self.ndim
        self._run = lambda u, kernel, overlap=True: kernel(empty)
        try:
            self.apply(buf, np.empty(self.n))
            self.residual(buf, buf, buf)
            self.gs(buf, buf, 0)
        finally:
            del self._run  # (the method again)

    def _run(self, buf, kernel, overlap=True):
        """Exchange ``buf``'s halos around ``kernel(box)``: inner box while the messages travel, then the rim."""
        # Domain ghosts first: a zero-copy send may span them, and they must not change while it is in
        # flight.  Corners (left stale by this order) are not read by a 5-/7-point kernel.
        self.fill(buf)
        ex = self.exchange(buf)
        if ex is None:
            kernel(self.whole)
            return
        if not overlap:
            ex()
            kernel(self.whole)
            return
        h = ex.start()
        if all(hi > lo for lo, hi in self.inner_box):
            kernel(self.inner_box)
        h.wait()
        for box in self.rims:
            if all(hi > lo for lo, hi in box):
                kernel(box)

    def apply(self, u, out, overlap=True):
        """``out`` (owned shape) = A u; ``u`` is a padded buffer whose interior is set."""
        f, dg = self.faces, self.diag
        c = self.const
        wd = self.wdiag if c is not None else None
        if c is not None and self.ndim == 2:
            def kern(b):
                _k.apply2c(u, out, c[0], c[1], c[2], wd[0], wd[1], b[0][0], b[0][1], b[1][0], b[1][1], 1, 1)
        elif c is not None:
            def kern(b):
                _k.apply3c(u, out, c[0], c[1], c[2], c[3], wd[0], wd[1], wd[2],
                           b[0][0], b[0][1], b[1][0], b[1][1], b[2][0], b[2][1], 1, 1, 1)
        elif self.ndim == 2:
            def kern(b):
                _k.apply2(u, out, dg, f[0], f[1], b[0][0], b[0][1], b[1][0], b[1][1], 1, 1)
        else:
            def kern(b):
                _k.apply3(u, out, dg, f[0], f[1], f[2], b[0][0], b[0][1], b[1][0], b[1][1], b[2][0], b[2][1],
                          1, 1, 1)
        self._run(u, kern, overlap)

    def residual(self, u, b, r, overlap=True):
        """r = b - A u on the owned block (padded buffers)."""
        f, dg = self.faces, self.diag
        c = self.const
        wd = self.wdiag if c is not None else None
        if c is not None and self.ndim == 2:
            def kern(x):
                _k.resid2c(u, b, r, c[0], c[1], c[2], wd[0], wd[1], x[0][0], x[0][1], x[1][0], x[1][1])
        elif c is not None:
            def kern(x):
                _k.resid3c(u, b, r, c[0], c[1], c[2], c[3], wd[0], wd[1], wd[2],
                           x[0][0], x[0][1], x[1][0], x[1][1], x[2][0], x[2][1])
        elif self.ndim == 2:
            def kern(x):
                _k.resid2(u, b, r, dg, f[0], f[1], x[0][0], x[0][1], x[1][0], x[1][1])
        else:
            def kern(x):
                _k.resid3(u, b, r, dg, f[0], f[1], f[2], x[0][0], x[0][1], x[1][0], x[1][1], x[2][0], x[2][1])
        self._run(u, kern, overlap)

    def gs(self, u, b, color):
        """One colour of red-black Gauss-Seidel, in place."""
        f, dg = self.faces, self.diag
        g = tuple(s - 1 for s in self.start)
        c = self.const
        wd = self.wdiag if c is not None else None
        if c is not None and self.ndim == 2:
            def kern(x):
                _k.gs2c(u, b, c[0], c[1], c[2], wd[0], wd[1], color, g[0], g[1],
                        x[0][0], x[0][1], x[1][0], x[1][1])
        elif c is not None:
            def kern(x):
                _k.gs3c(u, b, c[0], c[1], c[2], c[3], wd[0], wd[1], wd[2], color, g[0], g[1], g[2],
                        x[0][0], x[0][1], x[1][0], x[1][1], x[2][0], x[2][1])
        elif self.ndim == 2:
            def kern(x):
                _k.gs2(u, b, dg, f[0], f[1], color, g[0], g[1], x[0][0], x[0][1], x[1][0], x[1][1])
        else:
            def kern(x):
                _k.gs3(u, b, dg, f[0], f[1], f[2], color, g[0], g[1], g[2],
                       x[0][0], x[0][1], x[1][0], x[1][1], x[2][0], x[2][1])
        self._run(u, kern)

    def dense(self) -> np.ndarray:
        """The assembled matrix of a serial level (for the coarsest direct solve)."""
        if self.dist:
            raise ShardingError("dense(): only a serial level assembles its matrix")
        size = int(np.prod(self.n))
        mat = np.empty((size, size))
        u = self.zeros()
        out = np.empty(self.n)
        for col in range(size):
            u[...] = 0.0
            u[self.interior].flat[col] = 1.0
            self.apply(u, out)
            mat[:, col] = out.ravel()
        return mat

    def free(self):
        for ex in self._ex.values():
            ex.free()
        self._ex.clear()
