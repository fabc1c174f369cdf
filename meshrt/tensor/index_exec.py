"""Running an index plan on a `DistributedTensor`: the steps of ``t[key]`` and ``t[key] = value`` that
move data, and the plan cache.

``_indexing.py`` plans a key (pure functions, no MPI); here `_index_plan` caches those plans per
(sharding, shape, key), `_drop_ints` broadcasts an int-indexed dim from its owner, `_flip` swaps
blocks between mirror devices for a negative step, and `_to_view_layout` lays an assigned tensor
out like the target's positive view.  ``tensor.py``'s ``__getitem__`` and ``__setitem__`` call them.
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime import mpi as _mpi
from .. import collectives
from .._blockcopy import copy_block
from .index_plan import local_view_slices, normalize_key, plan_index
from .._keys import key_id as _key_id
from ..errors import ShardingError
from .layout import _drop_dim


def _drop_ints(block, plan, mesh, shape):
    """Index the int dims of P's local block; broadcast from the owner over the axes that split them."""
    # the trailing Ellipsis keeps a 0-d result a view, not a scalar
    pick = tuple(0 if d in plan.int_dims else slice(None) for d in range(block.ndim)) + (Ellipsis,)
    if not plan.bcast_axes:
        return block[pick]
    dropped_shape = tuple(n for d, n in enumerate(plan.view_shape) if d not in plan.int_dims)
    owner = all(mesh.coords[a] == c for a, c in zip(plan.bcast_axes, plan.bcast_root))
    x = block[pick] if owner else np.broadcast_to(np.zeros((), block.dtype),
                                                   plan.dropped_sharding.shard_shape(dropped_shape))
    return collectives.broadcast(x, mesh, plan.bcast_axes, plan.bcast_root)


def _flip(block, plan, mesh):
    """Reverse the negative-step dims; where such a dim is split, blocks go to the mirror device."""
    s = plan.dropped_sharding
    rev = tuple(slice(None, None, -1) if d in plan.flip_dims else slice(None) for d in range(block.ndim))
    block = block[rev]
    coords = list(mesh.coords)
    for d in plan.flip_dims:
        axes = s.dim_axes(d)
        if axes:
            sizes = [mesh.shape[a] for a in axes]
            k = s.shard_index(d)
            coords_k = np.unravel_index(math.prod(sizes) - 1 - k, sizes)
            for a, c in zip(axes, coords_k):
                coords[a] = int(c)
    partner = mesh.linear_index(coords)
    if partner == mesh.rank:
        return block
    shape = tuple(n for d, n in enumerate(plan.view_shape) if d not in plan.int_dims)
    send = np.empty(block.shape, block.dtype)
    copy_block(send, block)
    recv = np.empty(s.shard_shape(shape, partner), block.dtype)
    peers = _mpi.Peers(mesh, tuple(sorted((mesh.rank, partner))))
    with _mpi.internal("DistributedTensor.__getitem__", "exchange of reversed blocks", peers):
        mesh.comm.Sendrecv(send.view(np.uint8).reshape(-1), partner, _TAG_FLIP,
                           recv.view(np.uint8).reshape(-1), partner, _TAG_FLIP)
    return recv


_TAG_FLIP = 0x1D9


def _to_view_layout(value: "DistributedTensor", plan, mesh) -> "DistributedTensor":
    """``value`` (of the selection's shape) as a tensor laid out like P, the positive view."""
    if value.mesh != mesh:
        raise ShardingError(f"value: its mesh {value.mesh!r} is not the target's mesh {mesh!r}")
    if value.global_shape != plan.result_shape:
        raise ShardingError(
            f"value: a DistributedTensor of global shape {value.global_shape} cannot be assigned to a selection of "
            f"shape {plan.result_shape}; shapes must match (no broadcasting between tensors)"
        )
    if 0 in plan.result_shape:
        return None  # nothing to write (and nothing to move), on every process alike
    # Undo the key on the value, dim by dim, without moving data where possible: squeeze the None dims
    # (unsplit first, so squeezing is local), reverse the negative-step dims, insert the int dims as
    # length-1 dims; then one reshard to P's sharding if it still differs.
    s = value.sharding
    if any(s.dim_axes(p) for p in plan.new_dims):
        value = value.reshard(s.replace(split_axes=[() if p in plan.new_dims else s.dim_axes(p)
                                                    for p in range(value.ndim)], halo_sizes=None,
                                        sharded_dims_offsets=None))
        s = value.sharding
    block = value._interior
    if plan.new_dims:
        block = block[tuple(0 if p in plan.new_dims else slice(None) for p in range(value.ndim))]
        for p in sorted(plan.new_dims, reverse=True):
            s = _drop_dim(s, p, s.partial_axes, s.partial_type)
    shape = tuple(n for p, n in enumerate(value.global_shape) if p not in plan.new_dims)
    kept = type(value)(block, s.replace(halo_sizes=None), shape)
    if plan.flip_dims:
        kept = kept[tuple(slice(None, None, -1) if d in plan.flip_dims else slice(None) for d in range(kept.ndim))]
    if plan.int_dims:
        kept = kept[tuple(None if d in plan.int_dims else slice(None) for d in range(len(plan.view_shape)))]
    if kept.sharding != plan.view_sharding:
        kept = kept.reshard(plan.view_sharding)
    return kept


# -- indexing plans, cached per (sharding, shape, key) ---------------------------------------------------
_INDEX_PLANS: dict = {}


def _index_plan(t: "DistributedTensor", key):
    """(IndexPlan, this process's slices of the owned block, the same for a write) for ``t[key]``."""
    kid = _key_id(key)
    ck = (t._sharding, t._global_shape, kid)
    entry = _INDEX_PLANS.get(ck) if kid is not None else None
    if entry is None:
        plan = plan_index(t._sharding, t._global_shape, normalize_key(key, t._global_shape))
        local = local_view_slices(plan.items, t._slices)
        # for writes, an owned int index stays an int: numpy assigns through it faster than a length-1 slice
        src = [it for it in plan.items if it is not None]
        write = tuple(sl.start if it.index is not None and sl.stop > sl.start else sl for it, sl in zip(src, local))
        entry = plan, local + (Ellipsis,), write
        if kid is not None:
            if len(_INDEX_PLANS) > 4096:
                _INDEX_PLANS.clear()
            _INDEX_PLANS[ck] = entry
    return entry
