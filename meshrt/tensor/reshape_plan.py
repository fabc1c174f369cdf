"""Reshapes of split tensors planned as moves of row-major flat ranges (pure: no MPI).

A reshape keeps every element's row-major flat index.  A process's block is a box of
the old shape before the reshape and of the new shape after; each box covers a sorted
list of flat *runs* of one length (`flat_runs`).  The elements a process sends another
are the overlap of its source runs with the other's destination runs, taken in flat
order on both sides, so a message needs no header.  Each destination gets an element
from the one source that agrees with it on every mesh axis the source does not split
(replicas share the work, partial slots stay), as `meshrt.reshard`'s exchange does;
a process never sends itself anything, it copies.

A process's peers are found from its own runs: projected onto each dim of the other
shape they give the shards they can meet along it (bisection on the shard offsets), so
planning costs a process its runs and its peers, never a loop over the mesh.

>>> from meshrt.mesh import AbstractMesh
>>> from meshrt.sharding.spec import Sharding
>>> mesh = AbstractMesh((2, 2), ("x", "y"))
>>> sends, recvs = reshape_pieces(Sharding(mesh, [["x"], ["y"]]), (8, 12), Sharding(mesh, [["x"]]), (4, 24), 0)
>>> [(peer, offs.tolist(), lens.tolist()) for peer, offs, lens in recvs]
[(0, [0, 12, 24, 36], [6, 6, 6, 6]), (1, [6, 18, 30, 42], [6, 6, 6, 6])]
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["flat_runs", "reshape_pieces", "run_indices", "elements_sent", "is_local"]


def _row_strides(shape) -> tuple:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def flat_runs(box, shape) -> tuple:
    """``(starts, length)``: the row-major flat ranges ``[s, s + length)`` a box of ``shape``
    covers, ascending; run ``i`` is the local block's flat ``[i * length, (i + 1) * length)``.

    >>> flat_runs(((1, 3), (0, 4)), (4, 4))
    (array([4]), 8)
    >>> flat_runs(((0, 2), (1, 3)), (4, 4))
    (array([1, 5]), 2)
    """
    n = len(shape)
    if n == 0:
        return np.zeros(1, np.int64), 1
    if any(b <= a for a, b in box):
        return np.zeros(0, np.int64), 0
    strides = _row_strides(shape)
    j = n - 1
    while j > 0 and tuple(box[j]) == (0, shape[j]):
        j -= 1
    starts = np.zeros(1, np.int64)
    for i in range(j):
        a, b = box[i]
        starts = (starts[:, None] + np.arange(a, b, dtype=np.int64) * strides[i]).ravel()
    return starts + box[j][0] * strides[j], (box[j][1] - box[j][0]) * strides[j]


def _overlaps(a_starts, a_len, b_starts, b_len):
    """Where two ascending lists of equal-length runs overlap: ``(start, length, run of a, run of b)``
    arrays, in flat order."""
    if not len(a_starts) or not len(b_starts):
        e = np.zeros(0, np.int64)
        return e, e, e, e
    lo = np.searchsorted(b_starts + b_len, a_starts, "right")
    hi = np.searchsorted(b_starts, a_starts + a_len, "left")
    cnt = np.maximum(hi - lo, 0)
    ia = np.repeat(np.arange(len(a_starts)), cnt)
    first = np.cumsum(cnt) - cnt
    ib = np.arange(int(cnt.sum())) - np.repeat(first, cnt) + np.repeat(lo, cnt)
    s = np.maximum(a_starts[ia], b_starts[ib])
    e = np.minimum(a_starts[ia] + a_len, b_starts[ib] + b_len)
    keep = e > s
    return s[keep], (e - s)[keep], ia[keep], ib[keep]


def _coalesce(offs, lens):
    """Runs of a local block merged where one ends where the next starts."""
    if len(offs) < 2:
        return offs, lens
    brk = np.ones(len(offs), bool)
    brk[1:] = offs[1:] != offs[:-1] + lens[:-1]
    heads = np.nonzero(brk)[0]
    return offs[heads], np.add.reduceat(lens, heads)


def run_indices(offs, lens):
    """The flat indices of runs ``[o, o + n)``, concatenated.

    >>> run_indices(np.array([2, 10]), np.array([3, 2])).tolist()
    [2, 3, 4, 10, 11]
    """
    total = int(lens.sum())
    if len(offs) == 1:
        return np.arange(offs[0], offs[0] + total, dtype=np.int64)
    first = np.cumsum(lens) - lens
    return np.repeat(offs - first, lens) + np.arange(total, dtype=np.int64)


def _dim_shards(starts, length, shape, offsets) -> list:
    """Per dim of ``shape``, the shard indices (boundaries ``offsets[d]``) that the flat runs
    can meet along it: each run's projection onto the dim, as index intervals."""
    strides = _row_strides(shape)
    out = []
    for d, (n, t, offs) in enumerate(zip(shape, strides, offsets)):
        nshards = len(offs) - 1
        if nshards == 1:
            out.append(np.zeros(1, np.int64))
            continue
        q0 = starts // t
        q1 = (starts + length - 1) // t
        whole = (q1 - q0 + 1) >= n
        if whole.any():
            out.append(np.arange(nshards, dtype=np.int64))
            continue
        lo, hi = q0 % n, q1 % n  # hi inclusive; lo > hi wraps past the dim's end
        wrap = lo > hi
        ivs_lo = np.concatenate([lo, np.zeros(int(wrap.sum()), np.int64)])
        ivs_hi = np.concatenate([np.where(wrap, n - 1, hi), hi[wrap]])
        offs_a = np.asarray(offs)
        # shard k holds [offs[k], offs[k + 1]); the first shard holding lo and the last holding hi
        k0 = np.searchsorted(offs_a, ivs_lo, "right") - 1
        k1 = np.searchsorted(offs_a, ivs_hi, "right") - 1
        mark = np.zeros(nshards + 1, np.int64)
        np.add.at(mark, k0, 1)
        np.add.at(mark, k1 + 1, -1)
        ks = np.nonzero(np.cumsum(mark[:-1]) > 0)[0]
        # a zero-width shard meets nothing
        ks = ks[offs_a[ks + 1] > offs_a[ks]]
        out.append(ks.astype(np.int64))
    return out


def _devices(s, dims_shards, coords, pinned_axes, free_axes) -> np.ndarray:
    """Linear indices of the devices holding the given shards of ``s`` (per dim), that agree with
    ``coords`` on every mesh axis in ``pinned_axes`` and take every value along ``free_axes``."""
    mesh = s.mesh
    strides = _row_strides(mesh.shape)
    split = {a for d in range(len(dims_shards)) for a in s.dim_axes(d)}
    lin = np.zeros(1, np.int64)
    for a in range(mesh.ndim):
        if a not in split and a in pinned_axes:
            lin = lin + coords[a] * strides[a]
    for d, ks in enumerate(dims_shards):
        axes = s.dim_axes(d)
        if not axes:
            continue
        sizes = [mesh.shape[a] for a in axes]
        digits = np.unravel_index(ks, sizes) if len(ks) else [ks] * len(axes)
        keep = np.ones(len(ks), bool)
        off = np.zeros(len(ks), np.int64)
        for a, dg in zip(axes, digits):
            if a in pinned_axes:
                keep &= dg == coords[a]
            off += dg * strides[a]
        lin = (lin[:, None] + off[keep][None, :]).ravel()
    for a in sorted(free_axes):
        lin = (lin[:, None] + np.arange(mesh.shape[a], dtype=np.int64)[None, :] * strides[a]).ravel()
    return np.sort(lin)


def _box(s, shape, device):
    return tuple((x.start, x.stop) for x in s.shard_slices(shape, device))


@functools.lru_cache(maxsize=256)
def reshape_pieces(src, old_shape: tuple, dst, new_shape: tuple, rank: int) -> tuple:
    """``(sends, recvs)`` of ``rank`` for a tensor split by ``src`` over ``old_shape`` that
    becomes ``new_shape`` split by ``dst`` (same mesh, no halos).

    ``sends``: ``(dest, offsets, lengths)``, runs of ``rank``'s source block (flat, C order)
    to send ``dest`` in that order; ``recvs``: ``(source, offsets, lengths)``, runs of its
    destination block to fill from ``source``'s message.  Both include ``rank`` itself
    (a local copy) and are sorted by peer.
    """
    mesh = src.mesh
    coords = mesh.multi_index(rank)
    src_split = {a for d in range(len(old_shape)) for a in src.dim_axes(d)}
    dst_split = {a for d in range(len(new_shape)) for a in dst.dim_axes(d)}
    others = set(range(mesh.ndim)) - src_split  # a pair of peers agrees on these axes
    a_starts, a_len = flat_runs(_box(src, old_shape, rank), old_shape)
    b_starts, b_len = flat_runs(_box(dst, new_shape, rank), new_shape)
    src_offs = src.dim_offsets(old_shape)
    dst_offs = dst.dim_offsets(new_shape)

    sends = []
    if len(a_starts):
        dests = _devices(dst, _dim_shards(a_starts, a_len, new_shape, dst_offs), coords,
                         pinned_axes=others, free_axes=src_split - dst_split)
        for dest in dests.tolist():
            d_starts, d_len = flat_runs(_box(dst, new_shape, dest), new_shape)
            g, n, ia, _ = _overlaps(a_starts, a_len, d_starts, d_len)
            if len(g):
                sends.append((dest, *_coalesce(ia * a_len + (g - a_starts[ia]), n)))
    recvs = []
    if len(b_starts):
        sources = _devices(src, _dim_shards(b_starts, b_len, old_shape, src_offs), coords,
                           pinned_axes=others, free_axes=())
        for source in sources.tolist():
            s_starts, s_len = flat_runs(_box(src, old_shape, source), old_shape)
            g, n, _, ib = _overlaps(s_starts, s_len, b_starts, b_len)
            if len(g):
                recvs.append((source, *_coalesce(ib * b_len + (g - b_starts[ib]), n)))
    return tuple(sends), tuple(recvs)


def elements_sent(src, old_shape, dst, new_shape, rank) -> int:
    """Elements ``rank`` sends other processes in the reshape (its own piece not counted)."""
    sends, _ = reshape_pieces(src, tuple(old_shape), dst, tuple(new_shape), rank)
    return sum(int(lens.sum()) for dest, _, lens in sends if dest != rank)


def is_local(src, old_shape, dst, new_shape, rank) -> bool:
    """Whether ``rank``'s destination block is its source block, reinterpreted, and no other
    process needs anything from it: the reshape is a view there, with no communication."""
    sends, recvs = reshape_pieces(src, tuple(old_shape), dst, tuple(new_shape), rank)
    if not sends and not recvs:
        return (math.prod(b - a for a, b in _box(dst, new_shape, rank)) == 0
                and math.prod(b - a for a, b in _box(src, old_shape, rank)) == 0)
    if len(sends) != 1 or len(recvs) != 1 or sends[0][0] != rank or recvs[0][0] != rank:
        return False
    (_, so, sl), (_, ro, rl) = sends[0], recvs[0]
    size_src = math.prod(b - a for a, b in _box(src, old_shape, rank))
    size_dst = math.prod(b - a for a, b in _box(dst, new_shape, rank))
    return (len(so) == 1 and len(ro) == 1 and so[0] == 0 and ro[0] == 0
            and sl[0] == size_src == size_dst and rl[0] == size_dst)

