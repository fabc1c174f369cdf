"""The communication of the block-cyclic factorizations, counted from their step loops: pure, no MPI.

`factorization_cost` walks the same steps as `meshrt.linalg.factor` for one process of the grid and adds
up the words it receives and the messages it takes part in (a broadcast or allgather over a row or column
communicator of ``q`` processes counts ``ceil(log2 q)`` messages, a tree), and the flops of its trailing
updates. It runs on any grid size, a ``100 x 100`` grid of 10^4 processes included, in ``O(N / b * Pr)``
time, so the scaling model in docs/linalg.md is the implementation's and not a formula beside it.

ScaLAPACK's model for ``PDPOTRF`` (LAWN 100) is ``N^2 (1/Pr + 1/Pc) / 2`` words (in ``N/b log P`` messages)
per process: Cholesky here moves the same.

>>> c = factorization_cost("cholesky", 8192, 256, (1, 2), (0, 1))
>>> round(c.words / 8192 ** 2, 3), c.steps
(0.25, 32)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .blockcyclic import BlockCyclic

__all__ = ["Cost", "factorization_cost", "scalapack_words"]


@dataclass(frozen=True)
class Cost:
    """One process's share: ``words`` received, ``messages`` (tree steps), ``flops`` of its local updates,
    over ``steps`` panel steps."""

    words: int
    messages: int
    flops: float
    steps: int


def _tree(q: int) -> int:
    return math.ceil(math.log2(q)) if q > 1 else 0


def scalapack_words(kind: str, n: int, grid) -> float:
    """ScaLAPACK's per-process word count (LAWN 100's leading terms) for an ``n x n`` matrix."""
    pr, pc = grid
    if kind == "cholesky":
        return n * n * (1 / pr + 1 / pc) / 2
    return n * n * (1 / pr + 1 / pc)  # LU and QR: the panel along rows and the U block row down columns


def factorization_cost(kind: str, n: int, block: int, grid, coords) -> Cost:
    """The communication and work of ``kind`` (``"cholesky"``, ``"lu"`` or ``"qr"``) of an ``n x n`` matrix
    in ``block x block`` blocks on a ``grid``, for the process at ``coords``."""
    if kind not in ("cholesky", "lu", "qr"):
        raise ValueError(f"kind: {kind!r} is not 'cholesky', 'lu' or 'qr'")
    lay = BlockCyclic((n, n), (block, block), tuple(grid))
    pr_n, pc_n = lay.grid
    r, c = coords
    rows_total, cols_total = lay.local_shape(coords)
    words = messages = 0
    flops = 0.0
    steps = -(-n // block)
    for k in range(steps):
        g0, g1 = k * block, min(n, (k + 1) * block)
        w = g1 - g0
        rk, ck = k % pr_n, k % pc_n
        rows_g0 = rows_total - lay.row_start(g0, r)
        rows_g1 = rows_total - lay.row_start(g1, r)
        cols_g1 = cols_total - lay.col_start(g1, c)
        if kind == "cholesky":
            if c == ck:
                messages += _tree(pr_n)
                words += w * w if r != rk else 0
            messages += _tree(pc_n)
            words += rows_g1 * w if c != ck else 0
            if pr_n > 1:  # the transposed panel: an allgather over my process column
                messages += _tree(pr_n)
                words += _owned_elsewhere(lay, g1, r, c) * w
            flops += rows_g1 * cols_g1 * w  # 2 m n k, half of it below the diagonal
        else:
            if c == ck and pr_n > 1:  # the panel gathered over the process column
                messages += _tree(pr_n)
                words += (n - g0 - rows_g0) * w
            messages += 2 * _tree(pc_n)  # the pivots (or T) and the panel along the row
            words += rows_g0 * w if c != ck else 0
            if kind == "lu":
                messages += _tree(pr_n)  # U's block row down the column
                words += w * cols_g1 if r != rk else 0
                messages += 1 if pr_n > 1 else 0  # the row interchanges (an all-to-all in the column)
                words += 2 * w * cols_total if pr_n > 1 else 0
                flops += 2.0 * rows_g1 * cols_g1 * w
            else:
                messages += 2 * _tree(pr_n)  # V^H C summed over the column (an allreduce)
                words += 2 * w * cols_g1 if pr_n > 1 else 0
                flops += 4.0 * rows_g0 * cols_g1 * w
    return Cost(int(words), int(messages), flops, steps)


def _owned_elsewhere(lay: BlockCyclic, g1: int, r: int, c: int) -> int:
    """How many global indices from ``g1`` on are my process column's (``col_owner == c``) but another
    process row's: block arithmetic over the ``lcm(Pr, Pc)`` cycle, not a loop over the indices."""
    (pr_n, pc_n), nb, n = lay.grid, lay.block[0], lay.shape[0]
    period = pr_n * pc_n // math.gcd(pr_n, pc_n)
    first, last = g1 // nb, -(-n // nb)
    count = 0
    for phase in range(period):
        if phase % pc_n != c or phase % pr_n == r:
            continue
        # blocks b >= first with b % period == phase, below last
        start = first + ((phase - first) % period)
        if start >= last:
            continue
        nblocks = (last - 1 - start) // period + 1
        count += nblocks * nb
        if (start + (nblocks - 1) * period + 1) * nb > n:  # the short last block
            count -= (start + (nblocks - 1) * period + 1) * nb - n
    return count
