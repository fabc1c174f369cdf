"""The per-operation fast paths of small, common operations: a read of one element (``t[i]``,
``t[i, j]``) as one broadcast from its owner, and the dot product of two 1-D tensors of one sharding
(``np.dot(a, a)``) as one local dot and one allreduce.

Each keeps what its general path planned the first time (the owner, the local index, the result's
sharding), keyed by the operands' shardings and shapes, so a loop pays a dictionary lookup, the numpy
call and the one MPI call, not a plan.  Anything else (partial tensors, mixed shardings, views with
flips, new dims) goes the general way.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> a = DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]]))
>>> float(a[2]), float(np.dot(a, a))
(2.0, 14.0)
"""

from __future__ import annotations

import numpy as np

from .. import collectives
from .distributed_tensor import DistributedTensor
from .index_exec import _index_plan

_READS: dict = {}  # (sharding, shape, key) -> (local index or None, bcast axes, bcast root, result sharding)
_DOTS: dict = {}  # (sharding, shape, dtype a, dtype b) -> (split axes, result sharding, result dtype)
_LIMIT = 4096


def read_element(t: DistributedTensor, key):
    """``t[key]`` for a key of ints naming one element (None: not this case, the general path runs)."""
    s = t._sharding
    ck = (s, t._global_shape, key)
    e = _READS.get(ck)
    if e is None:
        if s._partial_axes or len(key if type(key) is tuple else (key,)) != len(t._global_shape):
            return None
        plan, local, _ = _index_plan(t, key)
        if plan.flip_dims or plan.new_dims or plan.result_shape != ():
            return None
        owned = all(sl.stop > sl.start for sl in local[:-1])
        idx = tuple(sl.start for sl in local[:-1]) + (Ellipsis,) if owned else None
        if len(_READS) > _LIMIT:
            _READS.clear()
        e = _READS[ck] = (idx, plan.bcast_axes, plan.bcast_root, plan.result_sharding)
    idx, axes, root, rs = e
    if not axes:
        block = t._interior[idx]
    else:
        x = t._interior[idx] if idx is not None else np.empty((), t._local.dtype)
        block = collectives.broadcast(x, s.mesh, axes, root)
    return DistributedTensor._fast(block, block, rs, (), (), None)


def dot_1d(a, b, general):
    """``np.dot(a, b)`` of two 1-D tensors of one sharding (None: not this case); ``general`` is
    `meshrt.tensor.matmul.dot`, run the first time (it imports this module: passed, not imported)."""
    if type(a) is not DistributedTensor or type(b) is not DistributedTensor:
        return None
    s = a._sharding
    ck = (s, a._global_shape, a._local.dtype, b._sharding, b._global_shape, b._local.dtype)
    e = _DOTS.get(ck)
    if e is None:
        if len(a._global_shape) != 1 or s != b._sharding or a._global_shape != b._global_shape or s._partial_axes:
            return None
        r = general(a, b)  # the general path once: its result's sharding and dtype are kept
        if r._sharding._partial_axes or r._global_shape != ():
            return r
        if len(_DOTS) > _LIMIT:
            _DOTS.clear()
        _DOTS[ck] = (tuple(x for axes in s.split_axes for x in axes), r._sharding, r._local.dtype)
        return r
    axes, rs, dt = e
    local = np.empty((), dt)
    local[()] = np.dot(a._interior, b._interior)
    if axes:
        local = collectives.all_reduce(local, s._mesh, axes, reduction="sum")
    return DistributedTensor._fast(local, local, rs, (), (), None)
