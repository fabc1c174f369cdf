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
    return s.replace(halo_sizes=None, partial_axes=None) if s.halo_sizes or s.is_partial else s


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
