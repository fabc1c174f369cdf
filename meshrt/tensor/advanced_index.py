"""Advanced indexing of a `DistributedTensor`: integer arrays and boolean masks as keys, numpy arrays or
tensors (deferred expressions included), in ``t[key]`` and ``t[key] = value``.

``DistributedTensor.__getitem__``/``__setitem__`` hand a key here when it holds an array (see
`is_advanced`); a 0-d integer tensor in a key is read as the int it holds first (`scalar_key`).

* ``t[mask]`` with a boolean mask of ``t``'s whole shape, ``t`` split on dim 0 only (or not at all): each
  process selects from its own block (the mask laid out like ``t`` first); the result is 1-D, split over
  dim 0's mesh axes with uneven ``sharded_dims_offsets`` (one allgather of the per-shard counts).  The
  order is numpy's (row-major), since dim 0's shards follow each other in it.
* ``t[mask] = scalar`` (or a 0-d array or tensor), a mask of ``t``'s whole shape: each process writes its
  own block; nothing moves but the mask (when it is laid out otherwise).
* ``t[idx]`` with ``idx`` an integer tensor (any shape and sharding on ``t``'s mesh, deferred expressions
  included), ``t`` split on dim 0 only (or not at all): the rows asked for are fetched from their owners
  and nothing else moves: each process sends the indices of its block of ``idx`` to the processes owning
  those rows (one alltoall of counts, one alltoallv of indices) and gets the rows back (one alltoallv).
  The result has ``idx``'s sharding (its halos dropped) and ``t``'s trailing dims whole; an index out of
  range raises numpy's IndexError on every process.
* any other key (integer arrays, masks of leading dims, masks beside slices, tensors split on other dims,
  assigned arrays): the tensor and the key's arrays are gathered, numpy indexes the global array on every
  process, and each keeps its block of the result (split on dim 0 like ``t``'s dim 0).  This costs ``t``'s
  size in memory and traffic per process: the forms above are the cheap ones.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> t = DistributedTensor.from_global(np.arange(6.0), Sharding(Mesh((-1,)), [[0]]))
>>> t[t > 2.5].gather(), t[np.array([5, 0])].gather()
(array([3., 4., 5.]), array([5., 0.]))
"""

from __future__ import annotations

import numpy as np

from .. import collectives
from ..runtime import mpi as _mpi
from ..sharding.spec import Sharding
from .distributed_tensor import DistributedTensor


def is_advanced(key) -> bool:
    """Whether ``key`` holds an index array (a numpy array, a list, a tensor of more than 0 dims or of bools)."""
    for k in key if type(key) is tuple else (key,):
        if isinstance(k, DistributedTensor):
            if k.ndim or k.dtype == np.bool_:
                return True
        elif isinstance(k, (np.ndarray, list)):
            return True
    return False


def scalar_key(key):
    """``key`` with each 0-d integer tensor replaced by its int (the same on every process)."""
    if type(key) is tuple:
        if not any(isinstance(k, DistributedTensor) for k in key):
            return key
        return tuple(_scalar(k) for k in key)
    return _scalar(key)


def _scalar(k):
    if isinstance(k, DistributedTensor) and k.ndim == 0 and k.dtype.kind in "iu":
        return int(k)
    return k


def _plain(s: Sharding) -> Sharding:
    return s.replace(halo_sizes=None, partial_axes=()) if s.halo_sizes or s.is_partial else s


def _whole_mask(t: DistributedTensor, key):
    """The mask when ``key`` is one boolean tensor or array of ``t``'s whole shape (None otherwise)."""
    k = key[0] if type(key) is tuple and len(key) == 1 else key
    if isinstance(k, DistributedTensor) or isinstance(k, np.ndarray):
        if k.dtype == np.bool_ and tuple(k.shape) == t.global_shape and t.ndim:
            return k
    return None


def _mask_block(t: DistributedTensor, mask) -> np.ndarray:
    """``mask`` laid out like ``t``: this process's block of it."""
    if isinstance(mask, DistributedTensor):
        want = _plain(t.sharding)
        if mask.sharding != want:
            mask = mask.reshard(want)
        return mask._interior
    return mask[t._slices]


def _dim0_only(t: DistributedTensor) -> bool:
    s = t.sharding
    return not s.is_partial and all(not s.dim_axes(d) for d in range(1, t.ndim))


def getitem(t: DistributedTensor, key) -> DistributedTensor:
    """``t[key]`` for a key holding index arrays (see the module docstring)."""
    mask = _whole_mask(t, key)
    if mask is not None and _dim0_only(t):
        return _select(t, _mask_block(t, mask))
    idx = _index_tensor(t, key)
    if idx is not None:
        return _take_rows(t, idx)
    g = t.gather()[_gathered_key(key)]
    return _keep_block(np.asarray(g), t)


def _select(t: DistributedTensor, mblock: np.ndarray) -> DistributedTensor:
    """``t[mask]`` from each process's own block: 1-D, split over dim 0's axes by the per-shard counts."""
    mine = t._interior[mblock]
    axes = t.sharding.dim_axes(0)
    mesh = t.mesh
    if not axes:
        return DistributedTensor(np.ascontiguousarray(mine), Sharding(mesh, []), mine.shape)
    counts = collectives.all_gather(np.array([mine.size], np.int64), mesh, axes, 0)
    offsets = [0] + np.cumsum(counts).tolist()
    s = Sharding(mesh, [list(axes)], sharded_dims_offsets=offsets)
    return DistributedTensor(np.ascontiguousarray(mine), s, (offsets[-1],))


def _index_tensor(t: DistributedTensor, key):
    """The index tensor when ``key`` is one integer tensor on ``t``'s mesh and ``t`` (not 0-d) is split on
    dim 0 only (None otherwise: the general path)."""
    k = key[0] if type(key) is tuple and len(key) == 1 else key
    if not isinstance(k, DistributedTensor) or k.dtype.kind not in "iu" or not t.ndim or not _dim0_only(t):
        return None
    if k.sharding.is_partial or k.mesh != t.mesh:
        return None
    return k


def route_rows(wanted: np.ndarray, starts) -> tuple:
    """Where each wanted row lives: (the order that groups the rows by owning shard, rows per shard, each
    row's index inside its owner's block, in that order).  ``starts``: each shard's first row, then the end.

    >>> order, counts, local = route_rows(np.array([5, 0, 3, 4]), (0, 2, 4, 6))
    >>> order.tolist(), counts.tolist(), local.tolist()
    ([1, 2, 0, 3], [1, 1, 2], [0, 1, 1, 0])
    """
    starts = np.asarray(starts, np.int64)
    shard = np.searchsorted(starts, wanted, side="right") - 1
    order = np.argsort(shard, kind="stable")
    counts = np.bincount(shard, minlength=len(starts) - 1)
    return order, counts, wanted[order] - starts[shard[order]]


def _take_rows(t: DistributedTensor, idx: DistributedTensor) -> DistributedTensor:
    """``t[idx]``: each process fetches the rows its block of ``idx`` names from their owners."""
    n = t._global_shape[0]
    block = idx._interior
    wanted = np.asarray(block, np.int64).reshape(-1)
    if block.dtype.kind == "u" and block.size and block.max() > np.iinfo(np.int64).max:
        wanted = np.full(1, n, np.int64)  # (reported as out of range below)
    bad = wanted[(wanted < -n) | (wanted >= n)]
    wanted = np.where(wanted < 0, wanted + n, wanted)
    axes = t._sharding.dim_axes(0)
    mesh = t.mesh
    rest = t._global_shape[1:]
    width = int(np.prod(rest, dtype=np.int64))
    rows = t._interior.reshape(t._interior.shape[0], width)
    comm = mesh.group(axes) if axes else None
    size = comm.Get_size() if comm is not None else 1
    # The counts carry each process's verdict on its indices, so a bad one raises everywhere.
    starts = t._sharding.dim_offsets(t._global_shape)[0] if axes else (0, n)
    if bad.size:
        order, counts, local = np.arange(0), np.zeros(size, np.int64), np.arange(0)
    else:
        order, counts, local = route_rows(wanted, starts)
    flag = np.array([1, int(bad[0])] if bad.size else [0, 0], np.int64)
    if set(a for ax in idx.sharding.split_axes for a in ax) - set(axes):
        # idx differs along mesh axes the row exchange does not span: the verdict is agreed over the mesh
        verdicts = np.empty((mesh.size, 2), np.int64)
        with _mpi.internal("x[idx]", "index check", mesh):
            mesh.comm.Allgather(flag, verdicts)
        flagged = np.flatnonzero(verdicts[:, 0])
        if flagged.size:
            raise IndexError(f"index {int(verdicts[flagged[0], 1])} is out of bounds for axis 0 with size {n}")
    if comm is not None:
        from mpi4py import MPI

        send = np.empty((size, 3), np.int64)
        send[:, 0] = counts
        send[:, 1:] = flag
        recv = np.empty_like(send)
        with _mpi.internal("x[idx]", "request counts", (mesh, axes)):
            comm.Alltoall(send, recv)
            flagged = np.flatnonzero(recv[:, 1])
            if flagged.size:
                value = int(recv[flagged[0], 2])
            else:
                got = recv[:, 0]
                asked = np.empty(int(got.sum()), np.int64)
                sdisp = np.concatenate(([0], np.cumsum(counts)[:-1]))
                rdisp = np.concatenate(([0], np.cumsum(got)[:-1]))
                comm.Alltoallv([local, (counts, sdisp), MPI.INT64_T], [asked, (got, rdisp), MPI.INT64_T])
                reply = np.ascontiguousarray(rows[asked])
                out = np.empty((wanted.size, width), t._local.dtype)
                dt = MPI.BYTE.Create_contiguous(width * out.itemsize).Commit() if width else None
                try:
                    if dt is not None:
                        comm.Alltoallv([reply.view(np.uint8).reshape(-1), (got, rdisp), dt],
                                       [out.view(np.uint8).reshape(-1), (counts, sdisp), dt])
                finally:
                    if dt is not None:
                        dt.Free()
    else:
        value = int(bad[0]) if bad.size else None
        flagged = np.arange(1) if bad.size else np.arange(0)
        if not bad.size:
            out = rows[local]
    if flagged.size:
        raise IndexError(f"index {value} is out of bounds for axis 0 with size {n}")
    values = np.empty((wanted.size, width), t._local.dtype)
    values[order] = out
    shape = tuple(idx._global_shape) + rest
    s = _plain(idx.sharding)
    return DistributedTensor(values.reshape(block.shape + rest), s, shape)


def _gathered_key(key):
    items = key if type(key) is tuple else (key,)
    out = tuple(k.gather() if isinstance(k, DistributedTensor) else k for k in items)
    return out if type(key) is tuple else out[0]


def _keep_block(g: np.ndarray, like: DistributedTensor) -> DistributedTensor:
    """``g`` (the same global array on every process) as a tensor split on dim 0 like ``like``'s dim 0."""
    axes = like.sharding.dim_axes(0) if like.ndim and g.ndim else ()
    if axes and g.shape[0] < _size(like.mesh, axes):
        axes = ()  # fewer rows than shards: keep it whole
    s = Sharding(like.mesh, [list(axes)] if axes else [])
    out = DistributedTensor.empty(g.shape, s, g.dtype)
    out._interior[...] = g[out.shard_slices + (Ellipsis,)]
    return out


def _size(mesh, axes) -> int:
    n = 1
    for a in axes:
        n *= mesh.shape[a]
    return n


def setitem(t: DistributedTensor, key, value) -> None:
    """``t[key] = value`` for a key holding index arrays (see the module docstring)."""
    mask = _whole_mask(t, key)
    if isinstance(value, DistributedTensor) and value.ndim == 0:
        value = np.asarray(value._full_interior())
    if mask is not None and not t.sharding.is_partial and np.ndim(value) == 0:
        t._interior[_mask_block(t, mask)] = value
        return
    g = t.gather()
    g[_gathered_key(key)] = value.gather() if isinstance(value, DistributedTensor) else value
    t._interior[...] = g[t._slices]
