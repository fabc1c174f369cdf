"""Planning for basic indexing of a `DistributedTensor`: pure functions, no MPI.

A key (ints, slices, ``...``, ``None``) is first normalized against the
global shape, then planned against a sharding.  The plan describes the
*positive view* P of the key: every int becomes a length-1 slice and every
negative step its positive mirror, so P is an ordinary strided view of each
process's owned block with uneven ``sharded_dims_offsets``.  The steps that
turn P into ``t[key]`` are listed apart: drop the int dims (one broadcast
from the owner where such a dim is split), reverse the negative-step dims
(a swap between mirror devices where such a dim is split), insert the
``None`` dims.

>>> from meshrt import AbstractMesh, Sharding
>>> s = Sharding(AbstractMesh((2,)), [[0]])
>>> p = plan_index(s, (10, 6), normalize_key((slice(2, None), slice(None, None, 2)), (10, 6)))
>>> p.view_sharding.sharded_dims_offsets, p.result_shape, p.moves_data
((0, 3, 8), (8, 3), False)
"""

from __future__ import annotations

import bisect
import functools
import numbers
from typing import NamedTuple

import numpy as np

from ..sharding.spec import Sharding, split_offsets

__all__ = ["normalize_key", "plan_index", "IndexPlan", "local_view_slices", "SUPPORTED_KEYS"]

SUPPORTED_KEYS = "ints, slices (any step), ... and None"


class Item(NamedTuple):
    """One normalized key entry for one source dim: ``index`` (an int) or ``start, step, n`` (a slice)."""

    index: int | None
    start: int
    step: int
    n: int


def normalize_key(key, shape) -> tuple:
    """Normalize ``key`` against ``shape``: a tuple of `Item` (one per source dim) and None (new dims).

    Raises IndexError (out of range, too many indices) and TypeError (advanced
    indexing), like numpy, with the same message on every process.

    >>> normalize_key((1, ..., None), (4, 5))
    (Item(index=1, start=1, step=1, n=1), Item(index=None, start=0, step=1, n=5), None)
    """
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (numbers.Integral, np.integer)):
            what = f"array of dtype {k.dtype}" if isinstance(k, np.ndarray) else type(k).__name__
            raise TypeError(
                f"index: {what} ({_short(k)}) is not a supported index on a DistributedTensor; supported: "
                f"{SUPPORTED_KEYS} (basic indexing). Boolean masks and integer arrays (advanced indexing): "
                "gather() first, or use where(mask, x, y)"
            )
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > len(shape):
        raise IndexError(f"too many indices for a DistributedTensor: it is {len(shape)}-dimensional, but {used} "
                         "were indexed")
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - used) + key[i + 1:]
    else:
        key = key + (slice(None),) * (len(shape) - used)
    out, d = [], 0
    for k in key:
        if k is None:
            out.append(None)
            continue
        size = shape[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(size)
            n = len(range(start, stop, step))
            out.append(Item(None, start, step, n))
        else:
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size {size}")
            i %= size
            out.append(Item(i, i, 1, 1))
        d += 1
    return tuple(out)


def _short(k) -> str:
    r = repr(k)
    return r if len(r) <= 40 else r[:37] + "..."


class IndexPlan(NamedTuple):
    """How to compute ``t[key]`` (see the module docstring); every field is a tuple or a value."""

    items: tuple              # the normalized key
    view_shape: tuple         # P's global shape: one dim per source dim
    view_sharding: Sharding   # P's sharding: the source's split axes, offsets of the selected elements, no halos
    int_dims: tuple           # P dims indexed by an int (length 1), dropped in the result
    bcast_axes: tuple         # mesh axes that split an int dim: the result is broadcast over them ...
    bcast_root: tuple         # ... from the device with these coordinates on them
    dropped_sharding: Sharding  # after the int dims are dropped (split int dims replicated)
    flip_dims: tuple          # dims of the dropped tensor to reverse (negative steps)
    new_dims: tuple           # positions of the None dims in the result
    result_sharding: Sharding
    result_shape: tuple

    @property
    def moves_data(self) -> bool:
        return bool(self.bcast_axes) or any(self.dropped_sharding.dim_axes(d) for d in self.flip_dims)


@functools.lru_cache(maxsize=1024)
def plan_index(sharding: Sharding, shape: tuple, items: tuple) -> IndexPlan:
    """Plan ``t[key]`` for a tensor of ``shape`` laid out by ``sharding`` (``items`` from `normalize_key`)."""
    src = [it for it in items if it is not None]
    offsets = sharding.dim_offsets(shape)
    mesh = sharding.mesh
    dims = []  # per P dim: (split axes, offsets)
    view_shape = []
    for d, it in enumerate(src):
        start, step, n = _positive(it)
        view_shape.append(n)
        axes = sharding.dim_axes(d)
        dims.append((axes, selected_offsets(offsets[d], start, step, n) if axes else None))
    view_sharding = _make(sharding, dims, view_shape)

    int_dims = tuple(d for d, it in enumerate(src) if it.index is not None)
    bcast = {}
    for d in int_dims:
        axes = sharding.dim_axes(d)
        if axes:
            k = owner_shard(offsets[d], src[d].index)
            sizes = [mesh.shape[a] for a in axes]
            bcast.update(zip(axes, np.unravel_index(k, sizes)))
    bcast_axes = tuple(sorted(bcast))
    bcast_root = tuple(int(bcast[a]) for a in bcast_axes)
    kept = [d for d in range(len(src)) if d not in int_dims]
    dropped = _make(sharding, [dims[d] for d in kept], [view_shape[d] for d in kept])

    flip_dims = tuple(j for j, d in enumerate(kept) if src[d].step < 0)
    # a split dim reversed by a swap between mirror devices: device k then holds mirror block n-1-k
    final = []
    for j, d in enumerate(kept):
        axes, offs = dims[d]
        if axes and j in flip_dims:
            offs = tuple(view_shape[d] - o for o in reversed(offs))
        final.append((axes, offs))
    final_shape = [view_shape[d] for d in kept]
    new_dims, pos = [], 0
    for it in items:
        if it is None:
            new_dims.append(pos)
            pos += 1
        elif it.index is None:
            pos += 1
    for p in new_dims:
        final.insert(p, ((), None))
        final_shape.insert(p, 1)
    result = _make(sharding, final, final_shape)
    return IndexPlan(items, tuple(view_shape), view_sharding, int_dims, bcast_axes, bcast_root, dropped,
                     flip_dims, tuple(new_dims), result, tuple(final_shape))


def _positive(it: Item):
    """The same elements with a positive step (a negative step walks them backwards)."""
    if it.step > 0 or it.n == 0:
        return it.start, abs(it.step), it.n
    return it.start + (it.n - 1) * it.step, -it.step, it.n


def selected_offsets(offs, start: int, step: int, n: int) -> tuple:
    """Shard boundaries in the view of elements ``start + j*step`` (``step > 0``), ``j < n``.

    >>> selected_offsets((0, 5, 10), 1, 2, 5)   # elements 1, 3, 5, 7, 9
    (0, 2, 5)
    """
    return tuple(min(n, max(0, -(-(b - start) // step))) for b in offs)


def owner_shard(offs, i: int) -> int:
    """The shard that holds global index ``i`` (empty shards hold nothing).

    >>> owner_shard((0, 2, 2, 5), 2)
    2
    """
    return bisect.bisect_right(offs, i) - 1


def local_view_slices(items: tuple, shard_slices: tuple) -> tuple:
    """Slices of the owned block (global region ``shard_slices``) that select its part of P.

    >>> local_view_slices(normalize_key(slice(1, None, 2), (10,)), (slice(5, 10),))
    (slice(0, 5, 2),)
    """
    out = []
    for it, sl in zip((it for it in items if it is not None), shard_slices):
        start, step, n = _positive(it)
        j0, j1 = selected_offsets((sl.start, sl.stop), start, step, n)
        lo = start + j0 * step - sl.start
        out.append(slice(lo, lo + (j1 - j0 - 1) * step + 1, step) if j1 > j0 else slice(0, 0))
    return tuple(out)


def _make(like: Sharding, dims, shape) -> Sharding:
    """A sharding with ``dims`` = [(split axes, offsets or None)], ``like``'s partial axes, no halos.

    Offsets are left out when every split dim is split evenly, so a view
    that selects whole evenly split dims has the same sharding as a fresh tensor.
    """
    split = [axes for axes, _ in dims]
    uneven = any(axes and tuple(offs) != split_offsets(n, _count(like, axes)) for (axes, offs), n in zip(dims, shape))
    flat = [o for axes, offs in dims if axes for o in offs] if uneven else None
    return Sharding(like.mesh, split, partial_axes=like.partial_axes, partial_type=like.partial_type,
                    sharded_dims_offsets=flat)


def _count(s: Sharding, axes) -> int:
    n = 1
    for a in axes:
        n *= s.mesh.shape[a]
    return n
