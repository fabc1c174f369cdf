"""The 2-D block-cyclic layout of dense linear algebra: pure index arithmetic, no MPI.

ScaLAPACK's layout (its array descriptor without the context): an ``m x n`` matrix is cut into
``mb x nb`` blocks, and block ``(I, J)`` lives on process ``(I mod Pr, J mod Pc)`` of a ``Pr x Pc``
process grid, so every process keeps a share of every part of the matrix while a factorization moves
through it. Each process stores its blocks as one column-major local matrix (``numroc`` rows and
columns, in global order). The ``shard`` dialect splits a dim into one contiguous interval per device;
this layout is that dialect's ``split_axes = [[r], [c]]`` applied to the blocks rather than the elements,
which is why meshrt enters and leaves it by an exchange (`meshrt.linalg.cyclic`) and never hands it to
the sharding machinery.

>>> layout = BlockCyclic((10, 7), (4, 4), (2, 2))
>>> layout.local_shape((0, 0)), layout.local_shape((1, 1))
((6, 4), (4, 3))
>>> layout.global_rows(1).tolist()
[4, 5, 6, 7]
>>> numroc(10, 4, 0, 2), numroc(10, 4, 1, 2)
(6, 4)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BlockCyclic", "numroc", "owned", "local_index", "default_grid", "default_block"]


def numroc(n: int, nb: int, iproc: int, nprocs: int) -> int:
    """How many of the indices ``0 .. n-1`` process ``iproc`` of ``nprocs`` holds, blocks of ``nb`` dealt
    round-robin (ScaLAPACK's ``NUMROC`` with the first block on process 0). For ``n`` a global index it is
    also the local index where that process's part of ``n ..`` starts."""
    full, rest = divmod(n, nb)
    count = (full // nprocs) * nb
    extra = full % nprocs
    if iproc < extra:
        count += nb
    elif iproc == extra:
        count += rest
    return count


def owned(n: int, nb: int, iproc: int, nprocs: int, start: int = 0) -> np.ndarray:
    """The global indices in ``start .. n-1`` that process ``iproc`` holds, ascending."""
    idx = np.arange(start, n)
    return idx[(idx // nb) % nprocs == iproc]


def local_index(g, nb: int, nprocs: int):
    """The local index of global index (or array of indices) ``g`` on the process that holds it."""
    return (g // (nb * nprocs)) * nb + g % nb


def default_grid(nprocs: int) -> tuple:
    """``(Pr, Pc)``: the most square grid of ``nprocs`` processes with ``Pr <= Pc`` (ScaLAPACK's advice:
    a row of processes beats a column for LU's and QR's panels).

    >>> default_grid(6), default_grid(2), default_grid(7)
    ((2, 3), (1, 2), (1, 7))
    """
    pr = int(math.isqrt(nprocs))
    while nprocs % pr:
        pr -= 1
    return pr, nprocs // pr


#: the largest default block: a block of 256 keeps the local GEMMs at BLAS speed and the panels small
MAX_BLOCK = 256


def default_block(shape, grid) -> int:
    """The default square block size: 256, or smaller for a matrix with fewer than four blocks per process
    along a dim (at least 8), so small matrices still spread over the grid.

    >>> default_block((8192, 8192), (1, 2)), default_block((100, 100), (2, 2))
    (256, 12)
    """
    m, n = shape
    per = min(m // max(1, grid[0]), n // max(1, grid[1]))
    return int(max(8, min(MAX_BLOCK, per // 4)))


@dataclass(frozen=True)
class BlockCyclic:
    """An ``m x n`` matrix in ``mb x nb`` blocks over a ``Pr x Pc`` process grid (process ``(r, c)`` is rank
    ``r * Pc + c`` of the grid's communicator)."""

    shape: tuple
    block: tuple
    grid: tuple

    def __post_init__(self):
        for name, value in (("shape", self.shape), ("block", self.block), ("grid", self.grid)):
            v = tuple(value)
            if len(v) != 2 or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
                raise ValueError(f"BlockCyclic: {name} must be two ints, got {value!r}")
            lowest = 0 if name == "shape" else 1
            if min(v) < lowest:
                raise ValueError(f"BlockCyclic: {name} {v} must be >= {lowest} in each dim")
            object.__setattr__(self, name, tuple(int(x) for x in v))

    @classmethod
    def default(cls, shape, nprocs: int, block=None, grid=None) -> "BlockCyclic":
        """The layout meshrt picks for a ``shape`` matrix on ``nprocs`` processes (`default_grid`,
        `default_block`); ``block`` (an int or a pair) and ``grid`` override them."""
        grid = default_grid(nprocs) if grid is None else tuple(grid)
        if len(grid) != 2 or grid[0] * grid[1] != nprocs:
            raise ValueError(f"grid: {grid!r} does not hold the {nprocs} processes")
        if block is None:
            block = default_block(shape, grid)
        if isinstance(block, (int, np.integer)):
            block = (block, block)
        return cls(tuple(shape), tuple(block), grid)

    @property
    def nprocs(self) -> int:
        return self.grid[0] * self.grid[1]

    def rank(self, coords) -> int:
        return coords[0] * self.grid[1] + coords[1]

    def coords(self, rank: int) -> tuple:
        return divmod(rank, self.grid[1])

    def local_shape(self, coords) -> tuple:
        return (numroc(self.shape[0], self.block[0], coords[0], self.grid[0]),
                numroc(self.shape[1], self.block[1], coords[1], self.grid[1]))

    def global_rows(self, prow: int, start: int = 0) -> np.ndarray:
        """The global rows process row ``prow`` holds (from ``start``), in local order."""
        return owned(self.shape[0], self.block[0], prow, self.grid[0], start)

    def global_cols(self, pcol: int, start: int = 0) -> np.ndarray:
        return owned(self.shape[1], self.block[1], pcol, self.grid[1], start)

    def row_start(self, g: int, prow: int) -> int:
        """Process row ``prow``'s first local row at or after global row ``g``."""
        return numroc(g, self.block[0], prow, self.grid[0])

    def col_start(self, g: int, pcol: int) -> int:
        return numroc(g, self.block[1], pcol, self.grid[1])

    def row_owner(self, g):
        return (g // self.block[0]) % self.grid[0]

    def col_owner(self, g):
        return (g // self.block[1]) % self.grid[1]

    def __str__(self):
        (m, n), (mb, nb), (pr, pc) = self.shape, self.block, self.grid
        return f"block_cyclic<{m}x{n}, block {mb}x{nb}, grid {pr}x{pc}>"
