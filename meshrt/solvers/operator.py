"""Linear operators on DistributedTensors: what the Krylov solvers and multigrid take as ``A`` and ``M``.

Inside a solver every vector is this process's owned block (a contiguous
numpy array) of the tensors shaped like ``b``; an operator *bound* to ``b``
maps one owned block to another (``_apply(x, out)``).  `LinearOperator` wraps
a function on tensors; `Laplacian` is the diffusion stencil that the solvers
run natively (no tensor round trip) and that `Multigrid` coarsens.
"""

from __future__ import annotations

import numpy as np

from ..tensor.distributed_tensor import DistributedTensor
from .grid import Grid, normalize_boundary

__all__ = ["LinearOperator", "Laplacian", "StencilOperator", "aslinearoperator"]


class LinearOperator:
    """A linear map of DistributedTensors, as `scipy.sparse.linalg.LinearOperator`.

    Parameters
    ----------
    shape : tuple
        ``(N, N)`` with ``N`` the number of unknowns (``b.size``), or the global
        shape of the tensors it maps.
    matvec : callable
        ``matvec(x) -> y``: ``x`` a DistributedTensor shaped like ``b``, ``y`` a
        DistributedTensor (lazy expressions are fine) of the same global shape.
    dtype : dtype, optional
        Default float64.

    Examples
    --------
    >>> A = LinearOperator((n * n, n * n), lambda x: 2.0 * x)     # doctest: +SKIP
    >>> x, info = cg(A, b)                                        # doctest: +SKIP
    """

    def __init__(self, shape, matvec=None, dtype=np.float64):
        if matvec is None and type(self).matvec is LinearOperator.matvec:
            raise TypeError("LinearOperator: matvec is required (a callable on DistributedTensors), got None")
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self._matvec = matvec

    def matvec(self, x: DistributedTensor) -> DistributedTensor:
        """``A x`` as a DistributedTensor."""
        return self._matvec(x)

    __call__ = matvec

    def _check_shape(self, b):
        if self.shape not in ((b.size, b.size), tuple(b.global_shape)):
            raise ValueError(f"A: shape {self.shape} does not fit b of global shape {tuple(b.global_shape)}: "
                             f"expected ({b.size}, {b.size}) or {tuple(b.global_shape)}")

    def _bind(self, b):
        self._check_shape(b)
        return _TensorBound(self.matvec, b, "A")

    def __repr__(self):
        return f"<{type(self).__name__} shape={self.shape} dtype={self.dtype}>"


class _TensorBound:
    """An operator on tensors, applied to owned blocks through one work tensor shaped like ``b``."""

    def __init__(self, fn, b, what):
        self.fn, self.what = fn, what
        self.like = b
        self.xt = DistributedTensor.zeros(b.global_shape, b.sharding, b.dtype, periodic=b.periodic)

    def _apply(self, x, out):
        self.xt.interior[...] = x
        y = self.fn(self.xt)
        if not isinstance(y, DistributedTensor):
            raise TypeError(f"{self.what}: returned {type(y).__name__}; an operator must return a DistributedTensor")
        if tuple(y.global_shape) != tuple(self.like.global_shape):
            raise ValueError(f"{self.what}: returned global shape {tuple(y.global_shape)}, expected "
                             f"{tuple(self.like.global_shape)} (the shape of b)")
        if not _same_layout(y, self.like):  # decided from global metadata: every process alike
            y = y.reshard(self.like.sharding)
        np.copyto(out, y.interior)


def _same_layout(a, b) -> bool:
    """Whether two tensors of one global shape own the same blocks on every process."""
    if a.sharding.mesh is not b.sharding.mesh and a.sharding.mesh != b.sharding.mesh:
        return False
    shape = tuple(b.global_shape)
    return all(a.sharding.dim_axes(d) == b.sharding.dim_axes(d) for d in range(len(shape))) and \
        a.sharding.replace(halo_sizes=None).dim_offsets(shape) == b.sharding.replace(halo_sizes=None).dim_offsets(shape)


class StencilOperator(LinearOperator):
    """``A x`` computed by a kernel of `apply_stencil`: ``kernel(lo, hi, out, x, *args)``.

    Ghost cells of ``x`` are filled by ``boundary`` (`Dirichlet`, `Neumann`,
    default Dirichlet(0.0)); periodic dims wrap through ``b``'s periodic flags.
    ``b`` needs halos as wide as the kernel reaches.

    Examples
    --------
    >>> @numba.njit(cache=True)                                   # doctest: +SKIP
    ... def lap(lo, hi, out, u):
    ...     for i in range(lo[0], hi[0]):
    ...         for j in range(lo[1], hi[1]):
    ...             out[i, j] = 4 * u[i, j] - u[i - 1, j] - u[i + 1, j] - u[i, j - 1] - u[i, j + 1]
    >>> x, info = cg(StencilOperator(lap), b)                     # doctest: +SKIP
    """

    def __init__(self, kernel, *args, boundary=None):
        super().__init__((0, 0))
        self.kernel, self.args = kernel, args
        if boundary is None:
            from ..stencil import Dirichlet
            boundary = Dirichlet(0.0)
        self.boundary = boundary

    def matvec(self, x):
        from ..stencil import apply_stencil
        out = DistributedTensor.zeros(x.global_shape, x.sharding, x.dtype, periodic=x.periodic)
        apply_stencil(self.kernel, out, x, *self.args, reads=[x], boundary=self.boundary)
        return out

    def _bind(self, b):
        from ..stencil import apply_stencil
        out = DistributedTensor.zeros(b.global_shape, b.sharding, b.dtype, periodic=b.periodic)

        def fn(x):
            apply_stencil(self.kernel, out, x, *self.args, reads=[x], boundary=self.boundary)
            return out
        return _TensorBound(fn, b, "A (stencil)")


class _MatrixOperator(LinearOperator):
    """A split 2-D matrix applied with the tensor matmul."""

    def __init__(self, mat):
        super().__init__(mat.global_shape, dtype=mat.dtype)
        self.mat = mat

    def matvec(self, x):
        return self.mat @ x

    def _bind(self, b):
        if b.ndim != 1 or self.shape != (b.size, b.size):
            raise ValueError(f"A: a matrix of global shape {self.shape} does not fit b of global shape "
                             f"{tuple(b.global_shape)}; expected a square matrix and a 1-D b")
        return _TensorBound(lambda x: self.mat @ x, b, "A (matrix)")


def aslinearoperator(A, what="A"):
    """``A`` as a `LinearOperator`: one already, a split 2-D matrix, a stencil kernel or a callable on tensors."""
    if isinstance(A, LinearOperator):
        return A
    if isinstance(A, DistributedTensor):
        if A.ndim != 2:
            raise ValueError(f"{what}: a DistributedTensor of {A.ndim} dims; a matrix operator is 2-D")
        return _MatrixOperator(A)
    if hasattr(A, "py_func") and callable(A):  # a numba dispatcher: a stencil kernel
        return StencilOperator(A)
    if callable(A):
        return _Callable(A)
    raise TypeError(f"{what}: {type(A).__name__} is not an operator; expected a LinearOperator, a split 2-D "
                    f"DistributedTensor, a stencil kernel (numba.njit) or a callable on DistributedTensors")


class _Callable(LinearOperator):
    def __init__(self, fn):
        super().__init__((0, 0), fn)

    def _bind(self, b):
        return _TensorBound(self._matvec, b, "A (callable)")


def _owned(value, grid, what):
    """``value`` (scalar, DistributedTensor, global numpy array or callable on global indices) on the owned block."""
    if np.isscalar(value):
        return float(value)
    shape = grid.shape
    sl = tuple(slice(s, s + n) for s, n in zip(grid.start, grid.n))
    if isinstance(value, DistributedTensor):
        if tuple(value.global_shape) != shape:
            raise ValueError(f"{what}: global shape {tuple(value.global_shape)}, expected {shape}")
        same = tuple(value.sharding.dim_axes(d) for d in range(len(shape))) == grid.split_axes and \
            value.sharding.replace(halo_sizes=None).dim_offsets(shape) == grid.offsets
        mine = value if same else value.reshard(grid.sharding.replace(halo_sizes=None))
        return np.ascontiguousarray(mine.interior, dtype=np.float64)
    if callable(value):
        idx = np.ogrid[sl]
        return np.ascontiguousarray(np.broadcast_to(np.asarray(value(*idx), dtype=np.float64), grid.n))
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{what}: array of shape {arr.shape}, expected {shape} (the global grid)")
    return np.ascontiguousarray(arr[sl])


class Laplacian(LinearOperator):
    """``A u = -div(k grad u) + c u`` on a 2-D or 3-D grid: the 5-/7-point stencil, split like a tensor.

    The grid is the cells of a DistributedTensor layout (``like``); ``b`` and
    ``x`` of the solvers are tensors of that layout.  Cell ``i`` couples to
    ``i +- e_d`` through the face coefficient ``(k[i] + k[i +- e_d]) / 2 / h_d**2``.
    Boundaries (one for every side, one per dim, or a ``(low, high)`` pair per
    dim): ``"dirichlet"`` (the value 0
    one cell outside the grid), ``"neumann"`` (the ghost mirrors the boundary
    cell: zero flux through the face), ``"periodic"``.  The solvers apply it
    with compiled loops, halo exchange overlapped with the inner cells, and
    `Multigrid` builds its coarse levels from it.

    Parameters
    ----------
    like : DistributedTensor or Sharding
        The layout (a tensor, or a sharding with ``global_shape``).
    global_shape : tuple, optional
        Needed with a Sharding.
    coeff : float or DistributedTensor or ndarray or callable, optional
        The diffusion coefficient ``k`` (> 0) per cell; a callable gets global
        index arrays, as `DistributedTensor.from_function`.  Default 1.0.
    shift : float or DistributedTensor or ndarray or callable, optional
        The reaction term ``c`` (>= 0), e.g. ``1 / dt`` of backward Euler. Default 0.
    boundary : str or sequence, optional
        Default ``"dirichlet"``; e.g. ``(("dirichlet", "neumann"), "periodic")``.
    h : float or sequence of float, optional
        Grid spacing, per dim or one for all. Default 1.0.

    Examples
    --------
    >>> A = Laplacian(b, boundary="dirichlet", h=1.0 / (n + 1))   # doctest: +SKIP
    >>> x, info = cg(A, b, M=Multigrid(A), rtol=1e-8)             # doctest: +SKIP
    """

    def __init__(self, like, global_shape=None, *, coeff=1.0, shift=0.0, boundary="dirichlet", h=1.0):
        if isinstance(like, DistributedTensor):
            sharding, shape = like.sharding, tuple(like.global_shape)
        else:
            sharding, shape = like, global_shape
            if shape is None:
                raise ValueError("global_shape: needed when like is a Sharding")
            shape = tuple(int(n) for n in shape)
        nd = len(shape)
        if nd not in (2, 3):
            raise ValueError(f"global shape {shape}: Laplacian is 2-D or 3-D")
        if min(shape) < 1:
            raise ValueError(f"global shape {shape}: every dim needs at least one cell")
        super().__init__(shape)
        bcs = normalize_boundary(boundary, nd)
        hs = (float(h),) * nd if np.isscalar(h) else tuple(float(x) for x in h)
        if len(hs) != nd or min(hs) <= 0:
            raise ValueError(f"h: {h!r}; expected a positive spacing, one for every dim or one per dim")
        if sharding.is_partial:
            raise ValueError("like: a partial sharding; the grid needs owned values")
        split = tuple(sharding.dim_axes(d) for d in range(nd))
        offsets = sharding.replace(halo_sizes=None).dim_offsets(shape)
        self.grid = Grid(shape, bcs, hs, sharding.mesh, split, offsets)
        self.boundary, self.h = bcs, hs
        k = _owned(coeff, self.grid, "coeff")
        c = _owned(shift, self.grid, "shift")
        if np.min(k) <= 0 if not np.isscalar(k) else k <= 0:
            raise ValueError("coeff: the diffusion coefficient must be positive")
        if not np.isscalar(k):
            kp = self.grid.zeros()
            kp[self.grid.interior] = k
            k = kp
        self.coeff, self.shift = k, c
        self.grid.set_coefficients(k, c)
        self._u = self.grid.zeros()
        self.grid.plan(self._u)  # (collective: every process builds the operator)
        self.grid.warm(self._u)

    def _check_layout(self, b, what="b"):
        g = self.grid
        if tuple(b.global_shape) != g.shape:
            raise ValueError(f"{what}: global shape {tuple(b.global_shape)}, expected {g.shape} (the operator's grid)")
        if b.sharding.replace(halo_sizes=None).dim_offsets(g.shape) != g.offsets or \
                tuple(b.sharding.dim_axes(d) for d in range(g.ndim)) != g.split_axes:
            raise ValueError(f"{what}: its sharding splits the grid differently from the operator's; "
                             f"build the operator from a tensor of the same layout")

    def _bind(self, b):
        self._check_layout(b)
        return self

    def _apply(self, x, out):
        u = self._u
        u[self.grid.interior] = x
        self.grid.apply(u, out)

    def matvec(self, x):
        self._check_layout(x, "x")
        y = DistributedTensor.zeros(x.global_shape, x.sharding, periodic=x.periodic)
        out = np.empty(self.grid.n)
        self._apply(np.asarray(x.interior), out)
        y.interior[...] = out
        return y

    __call__ = matvec
