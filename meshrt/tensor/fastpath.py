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

import bisect

import numpy as np

from .. import collectives
from .distributed_tensor import DistributedTensor
from .index_exec import _index_plan

_READS: dict = {}  # (sharding, shape, key) -> (local index or None, bcast axes, bcast root, result sharding)
_DOTS: dict = {}  # (sharding, shape, dtype a, dtype b) -> (split axes, result sharding, result dtype)
_LAYOUTS: dict = {}  # (sharding, shape) -> per dim (offsets, axes, sizes) or None, 0-d result sharding; or False
_LIMIT = 4096


def read_element(t: DistributedTensor, key):
    """``t[key]`` for a key of ints naming one element (None: not this case, the general path runs)."""
    s = t._sharding
    ck = (s, t._global_shape, key)
    e = _READS.get(ck)
    if e is None:
        if s._partial_axes or len(key if type(key) is tuple else (key,)) != len(t._global_shape):
            return None
        e = element_owner(t, key if type(key) is tuple else (key,))
        if e is None:
            return None
        if len(_READS) > _LIMIT:
            _READS.clear()
        _READS[ck] = e
    idx, axes, root, rs = e
    if not axes:
        block = t._interior[idx]
    else:
        x = t._interior[idx] if idx is not None else np.empty((), t._local.dtype)
        block = collectives.broadcast(x, s.mesh, axes, root)
    return DistributedTensor._fast(block, block, rs, (), (), None)


def _element_layout(t: DistributedTensor):
    """Per (sharding, shape): per dim ``(offsets, mesh axes, their sizes)`` (None where not split), and the
    0-d result's sharding (False: a partial tensor or an empty one, not this case)."""
    ck = (t._sharding, t._global_shape)
    e = _LAYOUTS.get(ck)
    if e is None:
        s, shape = ck
        e = False
        if not s._partial_axes and all(shape):
            plan = _index_plan(t, (0,) * len(shape))[0]  # the general path once: the 0-d result's sharding
            offs, sizes = s.dim_offsets(shape), s.mesh.shape
            dims = tuple((tuple(offs[d]), axes, tuple(sizes[a] for a in axes)) if (axes := s.dim_axes(d)) else None
                         for d in range(len(shape)))
            e = (dims, plan.result_sharding)
        if len(_LAYOUTS) > _LIMIT:
            _LAYOUTS.clear()
        _LAYOUTS[ck] = e
    return e


def element_owner(t: DistributedTensor, key: tuple):
    """``(local index or None, broadcast axes, broadcast root, result sharding)`` for the element ``t[key]``
    (a tuple of ints, one per dim), by arithmetic on the sharding's offsets: no plan.  None: an index out
    of range or a tensor this does not cover (the general path raises or runs)."""
    lay = _element_layout(t)
    if lay is False:
        return None
    dims, rs = lay
    shape, slices = t._global_shape, t._slices
    coords = t._sharding._mesh.coords
    idx, root = [], {}
    owned = True
    for d, i in enumerate(key):
        n = shape[d]
        if i < 0:
            i += n
        if not 0 <= i < n:
            return None
        info = dims[d]
        if info is not None:
            offs, axes, sizes = info
            k = bisect.bisect_right(offs, i) - 1
            for a, size in zip(reversed(axes), reversed(sizes)):  # k over the dim's axes, last fastest
                k, c = divmod(k, size)
                root[a] = c
                owned = owned and coords[a] == c
        idx.append(i - slices[d].start)
    axes = tuple(sorted(root))
    return (tuple(idx) + (Ellipsis,) if owned else None, axes, tuple(root[a] for a in axes), rs)


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
