"""Sorting, searching and set functions of `meshrt.array_api` on a split axis, without gathering the data.

* `sample_sort`: ``sort``/``argsort`` of a 1-D tensor split on dim 0, as a sample sort: each process sorts
  its block, the processes agree on ``p - 1`` splitters from weighted samples of the sorted blocks (one small
  allgather), one alltoallv sends each element to its splitter's bucket, each process merges the runs it
  received, and a second alltoallv puts the result back into the input's blocks (the output has ``x``'s
  sharding). Ties are broken by the global index, so the sort is stable; ``descending`` sorts the reversed
  array ascending and reverses the result (numpy's order, NaNs last ascending and first descending, as the
  namespace's replicated path gives).
* `searchsorted_split`: the sorted ``x1`` split on dim 0 never moves: each process counts its block's
  elements below each value of ``x2`` and one allreduce adds the counts.
* `unique_split`: each process's distinct values (with counts and first global indices) are allgathered and
  merged identically everywhere; each element's inverse index is computed where it lives, so
  ``inverse_indices`` has ``x``'s sharding.
* `nonzero_split`: each process's nonzero coordinates, offset to global ones; the results are 1-D with
  uneven blocks over the split dim's mesh axes (one allgather of the counts).

The planning steps (`splitters`, `cut_points`, `overlaps`) are pure functions of numpy arrays.

>>> import numpy as np
>>> overlaps(np.array([0, 3]), np.array([3, 2]), 1, 4)     # the range [1, 4) meets [0, 3) and [3, 5)
(array([2, 1]), array([0, 2]))
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from .. import collectives
from ..runtime import mpi as _mpi
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor

__all__ = ["sortable_split", "sample_sort", "searchsorted_split", "unique_split", "nonzero_split",
           "splitters", "cut_points", "overlaps"]


# -- pure planning -------------------------------------------------------------------------------------------
def _key_order(v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The permutation that sorts the keys ``(v, t)`` (numpy's order for ``v``, NaNs last; ``t`` breaks ties)."""
    order = np.argsort(t, kind="stable")
    return order[np.argsort(v[order], kind="stable")]


def splitters(samples_v, samples_t, weights, total: int, p: int):
    """``p - 1`` splitter keys ``(values, ties)`` at the ``k * total / p`` quantiles of weighted samples.

    >>> splitters(np.array([5.0, 1.0, 3.0, 7.0]), np.arange(4), np.full(4, 2.0), 8, 2)
    (array([3.]), array([2]))
    """
    order = _key_order(samples_v, samples_t)
    sv, st = samples_v[order], samples_t[order]
    cum = np.cumsum(np.asarray(weights, np.float64)[order])
    targets = np.arange(1, p) * (total / p)
    at = np.minimum(np.searchsorted(cum, targets, side="left"), max(sv.size - 1, 0))
    return sv[at], st[at]


def cut_points(sorted_v, sorted_t, split_v, split_t) -> np.ndarray:
    """Bounds of the buckets of a run sorted by ``(v, t)``: bucket ``k`` holds the keys in
    ``[splitter k-1, splitter k)``; returns ``p + 1`` cut positions.

    >>> cut_points(np.array([1.0, 2, 2, 3]), np.array([0, 1, 5, 2]), np.array([2.0]), np.array([3]))
    array([0, 2, 4])
    """
    cuts = np.empty(split_v.size + 2, np.int64)
    cuts[0], cuts[-1] = 0, sorted_v.size
    lo = np.searchsorted(sorted_v, split_v, side="left")
    hi = np.searchsorted(sorted_v, split_v, side="right")
    for k in range(split_v.size):
        cuts[k + 1] = lo[k] + np.searchsorted(sorted_t[lo[k]:hi[k]], split_t[k], side="left")
    return np.maximum.accumulate(cuts)


def overlaps(starts, lengths, lo: int, hi: int):
    """How much of ``[lo, hi)`` falls in each block ``[starts[k], starts[k] + lengths[k])``, and where each
    part starts inside ``[lo, hi)``: ``(counts, displacements)``."""
    starts, lengths = np.asarray(starts, np.int64), np.asarray(lengths, np.int64)
    a = np.maximum(starts, lo)
    b = np.minimum(starts + lengths, hi)
    counts = np.maximum(b - a, 0)
    return counts, np.where(counts > 0, a - lo, 0)


# -- MPI -----------------------------------------------------------------------------------------------------
def sortable_split(x: DistributedTensor) -> bool:
    """Whether ``x`` is 1-D and split on dim 0 (no halos, no partial values): the sample sort's case."""
    s = x.sharding
    return x.ndim == 1 and bool(s.dim_axes(0)) and not s.is_partial and not s.halo_sizes


def _alltoallv(comm, send: np.ndarray, scounts, sdispls, rcounts, rdispls, dtype, what: str):
    n = int(np.sum(rcounts))
    recv = np.empty(n, dtype)
    isz = np.dtype(dtype).itemsize
    sb = np.ascontiguousarray(send).view(np.uint8)
    rb = recv.view(np.uint8)
    with _mpi.internal("array_api.sort", what, comm):
        comm.Alltoallv([sb, (np.asarray(scounts) * isz, np.asarray(sdispls) * isz), MPI.BYTE],
                       [rb, (np.asarray(rcounts) * isz, np.asarray(rdispls) * isz), MPI.BYTE])
    return recv


def _displs(counts, order=None):
    counts = np.asarray(counts, np.int64)
    if order is None:
        return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    d = np.zeros(counts.size, np.int64)
    d[order] = np.concatenate([[0], np.cumsum(counts[order])[:-1]])
    return d


def sample_sort(x: DistributedTensor, *, descending: bool, want_indices: bool) -> DistributedTensor:
    """``sort`` (``want_indices=False``) or ``argsort`` of a 1-D tensor split on dim 0 (see the module
    docstring); the result has ``x``'s sharding."""
    s = x.sharding
    comm = x.mesh.group(s.dim_axes(0))
    p, me = comm.Get_size(), comm.Get_rank()
    n = x.shape[0]
    block = np.ascontiguousarray(x.interior)
    ni, off = block.size, x.shard_slices[0].start
    # descending: sort the reversed array ascending (ties by the reversed index t), then reverse
    b = block[::-1] if descending else block
    toff = n - off - ni if descending else off
    perm = np.argsort(b, kind="stable")
    sv, st = b[perm], toff + perm.astype(np.int64)
    ns = min(ni, 4 * p)
    pos = (np.arange(ns) * ni) // ns if ns else np.zeros(0, np.int64)
    with _mpi.internal("array_api.sort", "the blocks' offsets and samples", comm):
        parts = comm.allgather((off, ni, toff, sv[pos], st[pos]))
    offs = np.array([q[0] for q in parts], np.int64)
    sizes = np.array([q[1] for q in parts], np.int64)
    toffs = np.array([q[2] for q in parts], np.int64)
    weights = np.concatenate([np.full(q[3].size, q[1] / max(q[3].size, 1)) for q in parts])
    samp_v = np.concatenate([q[3] for q in parts]).astype(x.dtype, copy=False)
    samp_t = np.concatenate([q[4] for q in parts]).astype(np.int64, copy=False)
    if samp_v.size == 0:  # an empty array: every bucket empty
        split_v, split_t = np.zeros(p - 1, x.dtype), np.zeros(p - 1, np.int64)
    else:
        split_v, split_t = splitters(samp_v, samp_t, weights, n, p)
    cuts = cut_points(sv, st, split_v, split_t)
    scounts = np.diff(cuts)
    with _mpi.internal("array_api.sort", "the bucket sizes", comm):
        rcounts = np.empty(p, np.int64)
        comm.Alltoall(scounts, rcounts)
        bucket = np.empty(p, np.int64)
        comm.Allreduce(scounts, bucket, op=MPI.SUM)
    # the runs received are placed in the order of their sources' (tie) offsets, so a stable merge by value
    # orders equal values by global index
    rdispls = _displs(rcounts, np.argsort(toffs, kind="stable"))
    sdispls = cuts[:-1]
    rv = _alltoallv(comm, sv, scounts, sdispls, rcounts, rdispls, x.dtype, "the buckets' values")
    merge = np.argsort(rv, kind="stable")
    if want_indices:
        rt = _alltoallv(comm, st, scounts, sdispls, rcounts, rdispls, np.int64, "the buckets' indices")
        mine = rt[merge]
        if descending:
            mine = (n - 1) - mine
        dtype = np.int64
    else:
        mine, dtype = rv[merge], x.dtype
    # back into x's blocks: bucket `me` holds the ascending positions [start, start + m)
    start = int(np.sum(bucket[:me]))
    lo = n - start - bucket[me] if descending else start
    if descending:
        mine = mine[::-1]
    sc, sd = overlaps(offs, sizes, lo, lo + bucket[me])
    starts = np.concatenate([[0], np.cumsum(bucket)[:-1]])
    src_lo = n - starts - bucket if descending else starts
    rc, rd = overlaps(src_lo, bucket, off, off + ni)
    out = _alltoallv(comm, mine, sc, sd, rc, rd, dtype, "the sorted values to x's blocks")
    plain = s.replace(halo_sizes=None, partial_axes=()) if (s.halo_sizes or s.is_partial) else s
    return DistributedTensor(out, plain, x.shape)


def searchsorted_split(x1: DistributedTensor, values: np.ndarray, side: str) -> np.ndarray:
    """The insertion points of ``values`` (a numpy array, the same on every process) in the sorted 1-D ``x1``
    split on dim 0: each process's counts over its block, summed by one allreduce (x1 never moves)."""
    comm = x1.mesh.group(x1.sharding.dim_axes(0))
    mine = np.searchsorted(np.ascontiguousarray(x1.interior), values, side=side).astype(np.int64)
    total = np.empty_like(mine)
    with _mpi.internal("array_api.searchsorted", "the sum of each block's counts", comm):
        comm.Allreduce(np.ascontiguousarray(mine), total, op=MPI.SUM)
    return total


def unique_split(x: DistributedTensor, group, *, want_index: bool, want_inverse: bool):
    """``(values, counts, first_indices or None, inverse block or None)`` of a split tensor: each process's
    distinct values, counts and first global (row-major) indices are allgathered and merged identically
    everywhere; the inverse indices of this process's block are computed here (NaNs are each distinct, as
    the standard asks)."""
    block = np.ascontiguousarray(x.interior)
    # return_index makes numpy's sort stable: NaNs (each distinct) get their slots in row-major order
    kw = dict(equal_nan=False, return_counts=True, return_index=True, return_inverse=want_inverse)
    r = np.unique(block.ravel(), **kw)
    v, rest = r[0], list(r[1:])
    first = rest.pop(0)
    local_inv = rest.pop(0) if want_inverse else None
    c = rest.pop(0)
    if not want_index:
        first = None
    else:
        coords = np.unravel_index(first, block.shape) if block.ndim else ()
        starts = [sl.start for sl in x.shard_slices]
        first = (np.ravel_multi_index(tuple(ci + s0 for ci, s0 in zip(coords, starts)), x.shape)
                 if block.ndim else first).astype(np.int64)
    with _mpi.internal("array_api.unique", "the distinct values of each block", group):
        parts = group.allgather((v, c, first))
    vals = np.concatenate([q[0] for q in parts]).astype(x.dtype, copy=False)
    counts = np.concatenate([q[1] for q in parts])
    u, _, inv = np.unique(vals, equal_nan=False, return_index=True, return_inverse=True)
    total = np.bincount(inv, weights=counts, minlength=u.size).astype(np.int64)
    idx = None
    if want_index:
        idx = np.full(u.size, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(idx, inv, np.concatenate([q[2] for q in parts]))
    inverse = None
    if want_inverse:
        before = sum(q[0].size for q in parts[:group.Get_rank()])
        inverse = inv[before + local_inv].astype(np.int64).reshape(block.shape)
    return u, total, idx, inverse


def nonzero_split(x: DistributedTensor):
    """The indices of ``x``'s nonzero elements (row-major order), one 1-D tensor per dim, split over the mesh
    axes of ``x``'s split dims with uneven blocks; ``x`` is first resharded to dim 0 (an all-to-all) when other
    dims are split."""
    s = x.sharding
    axes = [a for d in range(x.ndim) for a in s.dim_axes(d)]
    if s.is_partial or s.halo_sizes or any(s.dim_axes(d) for d in range(1, x.ndim)):
        x = x.reshard(Sharding(x.mesh, [axes] + [[] for _ in range(x.ndim - 1)]))
    block = x.interior
    local = np.nonzero(block)
    mine = [np.ascontiguousarray(i.astype(np.int64) + sl.start) for i, sl in zip(local, x.shard_slices)]
    counts = collectives.all_gather(np.array([mine[0].size], np.int64), x.mesh, tuple(axes), 0)
    offsets = [0] + np.cumsum(counts).tolist()
    out = Sharding(x.mesh, [list(axes)], sharded_dims_offsets=offsets)
    return tuple(DistributedTensor(m, out, (offsets[-1],)) for m in mine)
