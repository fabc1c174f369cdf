"""Stencil kernels for local buffers with halos, and the inner/rim split that overlaps halo exchange.

Each kernel updates one box of ``v`` (local indices, half-open) from ``u``;
a box must keep one cell away from the buffer's edge (halos supply the
neighbours).  Floating-point operations run in the order the docstrings
give, so a numpy expression written the same way matches bit for bit.

    >>> inner, rims = inner_and_rim([(1, 9), (1, 5)], 1)
    >>> inner, len(rims)
    ([(2, 8), (2, 4)], 4)

Overlap (ImplicitGlobalGrid's ``hide_communication``)::

    h = u.update_halo(wait=False)
    heat2d_box(u.local, v.local, r, inner)      # reads no halo
    h.wait()
    for box in rims:
        heat2d_box(u.local, v.local, r, box)
"""

import numpy as np
from numba import njit

__all__ = ["inner_and_rim", "interior_box", "heat2d_box", "heat3d_box", "life_box"]


def interior_box(tensor) -> list:
    """The owned block of a `DistributedTensor` as ``[(lo, hi), ...]`` in local indices."""
    s = tensor.sharding
    return [(s.halo_widths(d)[0], s.halo_widths(d)[0] + n) for d, n in enumerate(tensor.interior.shape)]


def inner_and_rim(box, width: int = 1):
    """Split ``box`` into the inner box (``width`` cells from every side) and rim boxes.

    The rim boxes and the inner box partition ``box``; cells of the inner box
    read no halo for a stencil of radius ``width``.
    """
    inner = [tuple(b) for b in box]
    rims = []
    for d in range(len(inner)):
        lo, hi = inner[d]
        ilo = min(lo + width, hi)
        ihi = max(hi - width, ilo)
        if ilo > lo:
            rims.append(inner[:d] + [(lo, ilo)] + inner[d + 1:])
        if hi > ihi:
            rims.append(inner[:d] + [(ihi, hi)] + inner[d + 1:])
        inner[d] = (ilo, ihi)
    return inner, rims


# The loops read rows through 1-D views: indexing the 2-D arrays directly keeps
# LLVM from vectorizing the inner loop (measured 2x slower, same bits).
@njit(cache=True, nogil=True)
def _heat2d(u, v, r, i0, i1, j0, j1):
    for i in range(i0, i1):
        north, row, south, out = u[i - 1], u[i], u[i + 1], v[i]
        for j in range(j0, j1):
            c = row[j]
            out[j] = c + r * (((north[j] + south[j]) + (row[j - 1] + row[j + 1])) - 4.0 * c)


def heat2d_box(u, v, r, box):
    """Explicit 5-point heat step on ``box``:
    ``v = c + r * (((n + s) + (w + e)) - 4.0 * c)``."""
    (i0, i1), (j0, j1) = box
    _check(u, v, box, 2)
    if i1 > i0 and j1 > j0:
        _heat2d(u, v, u.dtype.type(r), i0, i1, j0, j1)


@njit(cache=True, nogil=True)
def _heat3d(u, v, r, i0, i1, j0, j1, k0, k1):
    for i in range(i0, i1):
        for j in range(j0, j1):
            west, east = u[i - 1, j], u[i + 1, j]
            south, row, north, out = u[i, j - 1], u[i, j], u[i, j + 1], v[i, j]
            for k in range(k0, k1):
                c = row[k]
                out[k] = c + r * ((((west[k] + east[k]) + (south[k] + north[k])) + (row[k - 1] + row[k + 1])) - 6.0 * c)


def heat3d_box(u, v, r, box):
    """Explicit 7-point heat step on ``box``:
    ``v = c + r * ((((x- + x+) + (y- + y+)) + (z- + z+)) - 6.0 * c)``."""
    (i0, i1), (j0, j1), (k0, k1) = box
    _check(u, v, box, 3)
    if i1 > i0 and j1 > j0 and k1 > k0:
        _heat3d(u, v, u.dtype.type(r), i0, i1, j0, j1, k0, k1)


@njit(cache=True, nogil=True)
def _life(u, v, i0, i1, j0, j1):
    for i in range(i0, i1):
        for j in range(j0, j1):
            n = 0
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    if di != 0 or dj != 0:
                        n += u[i + di, j + dj]
            v[i, j] = 1 if n == 3 or (n == 2 and u[i, j] != 0) else 0


def life_box(u, v, box):
    """One Game of Life generation on ``box`` (9-point: corners count); cells are 0 or 1."""
    (i0, i1), (j0, j1) = box
    _check(u, v, box, 2)
    if i1 > i0 and j1 > j0:
        _life(u, v, i0, i1, j0, j1)


def _check(u, v, box, ndim):
    if not (isinstance(u, np.ndarray) and isinstance(v, np.ndarray)):
        raise ValueError("stencil: u and v must be numpy arrays")
    if u.ndim != ndim or u.shape != v.shape or u.dtype != v.dtype:
        raise ValueError(f"stencil: u {u.shape} {u.dtype} and v {v.shape} {v.dtype} must be {ndim}-d, alike")
    for d, (lo, hi) in enumerate(box):
        if hi > lo and (lo < 1 or hi > u.shape[d] - 1):
            raise ValueError(f"stencil: box {list(box)} reaches past the halo of a buffer of shape {u.shape}")
