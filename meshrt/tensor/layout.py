"""How a `DistributedTensor`'s sharding maps onto buffers, as pure planning on shardings and shapes.

The cached per-process layout of a (sharding, global shape) (`_Layout`), the checks a new tensor's
arguments pass, the gather layouts (`_block_layout`, `_gather_layout`), and the per-dim sharding
arithmetic of transpose, reshape and reductions (`_per_dim`, `_from_dims`, `_drop_dim`, ...).
Nothing here creates a tensor or talks to MPI beyond `_agree`'s agreement on an error.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
from typing import NamedTuple

import numpy as np

from ..runtime import mpi as _mpi
from ..errors import ShardingError
from ..halo import periodic_tuple
from ..mesh import Mesh
from ..sharding.spec import Sharding, split_offsets


def _to_view_index(plan) -> tuple:
    """The numpy index that takes a value of ``plan.result_shape`` to P's shape and order."""
    out, kept = [], 0
    flips = set(plan.flip_dims)
    for it in plan.items:
        if it is None:
            out.append(0)  # a None dim has size 1
        elif it.index is not None:
            out.append(None)
        else:
            out.append(slice(None, None, -1) if kept in flips else slice(None))
            kept += 1
    return tuple(out)


# -- the elementwise fast path ---------------------------------------------------------------------
class _Layout:
    """What a (sharding, global shape) means on this process, computed once: the owned region, the
    interior's index into the local buffer, the local shape."""

    __slots__ = ("slices", "index", "local_shape", "halos")

    def __init__(self, sharding: Sharding, shape: tuple):
        self.slices = sharding.shard_slices(shape)
        # the trailing Ellipsis keeps a 0-d tensor's interior a view, not a scalar
        self.index = _interior_index(sharding, shape) + (Ellipsis,)
        self.local_shape = sharding.local_shape(shape)
        self.halos = bool(sharding.halo_sizes)


_LAYOUTS: dict = {}


def _checked_layout(sharding: Sharding, global_shape) -> tuple:
    """``(global_shape validated as a tuple, its _Layout)``.  A tuple of ints that already has a
    layout was validated when that layout was made, so it is not checked again (a float or a
    numpy integer among the dims is, even where it compares equal to a cached shape)."""
    if type(global_shape) is tuple:
        layout = _LAYOUTS.get((sharding, global_shape))
        if layout is not None and all(type(n) is int for n in global_shape):
            return global_shape, layout
    shape = sharding.check_shape(global_shape)
    return shape, _layout(sharding, shape)


def _layout(sharding: Sharding, shape: tuple) -> _Layout:
    key = (sharding, shape)
    layout = _LAYOUTS.get(key)
    if layout is None:
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        layout = _LAYOUTS[key] = _Layout(sharding, shape)
    return layout


# -- helpers ---------------------------------------------------------------------------------------
def _check_sharding(sharding) -> Sharding:
    if not isinstance(sharding, Sharding):
        raise ShardingError(f"sharding: {sharding!r} is not a Sharding")
    if not isinstance(sharding.mesh, Mesh):
        raise ShardingError(
            f"sharding: its mesh {sharding.mesh!r} is an AbstractMesh with no processes behind it; "
            "a DistributedTensor needs a Mesh"
        )
    return sharding


def _normalize_periodic(periodic, ndim):
    """None (not given) stays None; anything else is one bool per tensor dim."""
    return None if periodic is None else periodic_tuple(periodic, ndim)


def _drop(flags, dim):
    return None if flags is None else flags[:dim] + flags[dim + 1:]


def _interior_index(sharding: Sharding, shape) -> tuple:
    out = []
    for d, n in enumerate(sharding.shard_shape(shape)):
        lo = sharding.halo_widths(d)[0]
        out.append(slice(lo, lo + n))
    return tuple(out)


def _zero_halos(local: np.ndarray, sharding: Sharding, shape) -> None:
    for d in sharding.sharded_dims:
        lo, hi = sharding.halo_widths(d)
        pre = (slice(None),) * d
        if lo:
            local[pre + (slice(0, lo),)] = 0
        if hi:
            local[pre + (slice(local.shape[d] - hi, None),)] = 0


def _check_global(shape, dtype, sharding, global_shape) -> tuple:
    if global_shape is not None:
        want = sharding.check_shape(global_shape)
        if tuple(shape) != want:
            raise ShardingError(f"array: shape {tuple(shape)} does not match global_shape {want}")
    return sharding.check_shape(shape)


def _agree(mesh: Mesh, error: str | None, op: str) -> None:
    """Raise the same ShardingError on every process when any process found ``error``."""
    with _mpi.internal(op, "error agreement", mesh):
        errors = mesh.comm.allgather(error)
    bad = [d for d, e in enumerate(errors) if e is not None]
    if bad:
        raise ShardingError(f"{errors[bad[0]]} (on device{'s' if len(bad) > 1 else ''} {bad})")


def _check_root(root, mesh) -> int:
    if isinstance(root, bool) or not isinstance(root, numbers.Integral) or not 0 <= root < mesh.size:
        raise ShardingError(f"root: {root!r} is not a device of the mesh (linear index 0..{mesh.size - 1})")
    return int(root)


@functools.lru_cache(maxsize=64)  # shardings are immutable values; gather() in a loop plans once
def _block_layout(sharding: Sharding, shape) -> tuple:
    """Every device's owned block as arrays over devices: ``(starts, sizes)``, each of shape
    (P, ndim), from per-dim offsets with numpy: O(P) vector work, no Python loop over devices
    (65,536 simulated devices take milliseconds).

    >>> from meshrt import AbstractMesh
    >>> starts, sizes = _block_layout(Sharding(AbstractMesh((2, 2)), [[0], [1]]), (5, 4))
    >>> sizes.tolist()
    [[2, 2], [2, 2], [3, 2], [3, 2]]
    """
    mesh = sharding.mesh
    coords = _device_coords(mesh)
    offsets = sharding.dim_offsets(shape)
    starts = np.zeros((mesh.size, len(shape)), np.int64)
    sizes = np.tile(np.asarray(shape, np.int64), (mesh.size, 1))
    for d, offs in enumerate(offsets):
        axes = sharding.dim_axes(d)
        if not axes:
            continue
        k = np.zeros(mesh.size, np.int64)
        for a in mesh.axes(axes):  # first listed = outermost, as Mesh.in_group_index
            k = k * mesh.shape[a] + coords[:, a]
        offs = np.asarray(offs, np.int64)
        starts[:, d], sizes[:, d] = offs[k], offs[k + 1] - offs[k]
    starts.flags.writeable = sizes.flags.writeable = False  # shared through the cache
    return starts, sizes


def _device_coords(mesh) -> np.ndarray:
    """Every device's mesh coordinates, shape (P, ndim), in linear-index order."""
    if not mesh.ndim:
        return np.zeros((1, 0), np.int64)
    return np.stack(np.unravel_index(np.arange(mesh.size), mesh.shape), axis=1)


class _GatherLayout(NamedTuple):
    rest: tuple         # mesh axes that split no dim: only their coordinate-0 replicas send
    starts: np.ndarray  # (P, ndim) every device's block
    sizes: np.ndarray
    counts: np.ndarray  # bytes each device sends (0 for replicas that do not)
    displs: np.ndarray
    equal: bool         # every device sends the same nonzero count
    in_place: bool      # the blocks, in device order, are consecutive runs of whole rows of the result


# (sharding, global shape, dtype) -> the communicator, for gathers that are one Allgather of
# equal, contiguous blocks straight into the result; filled by gather()'s first such call.
_ALLGATHERS: dict = {}


@functools.lru_cache(maxsize=64)  # gather() in a loop plans once
def _gather_layout(sharding: Sharding, shape, itemsize: int) -> _GatherLayout:
    """Where every device's block travels in ``gather()``: one set of counts for all processes.

    >>> from meshrt import AbstractMesh
    >>> g = _gather_layout(Sharding(AbstractMesh((2, 2)), [[0]]), (5, 3), 8)
    >>> g.rest, g.counts.tolist(), g.equal, g.in_place
    ((1,), [48, 0, 72, 0], False, True)
    """
    mesh = sharding.mesh
    used = {a for axes in sharding.split_axes for a in axes}
    rest = tuple(a for a in range(mesh.ndim) if a not in used)
    starts, sizes = _block_layout(sharding, shape)
    senders = (_device_coords(mesh)[:, list(rest)] == 0).all(axis=1)  # all True without rest axes
    counts = np.where(senders, sizes.prod(axis=1) * itemsize, 0)
    displs = _displs(counts)
    row = math.prod(shape[1:]) * itemsize
    in_place = len(shape) > 0 and math.prod(shape) > 0 and \
        all(not sharding.dim_axes(d) for d in range(1, len(shape))) and \
        bool(np.array_equal(displs[senders], starts[senders, 0] * row))
    equal = bool(counts[0]) and bool((counts == counts[0]).all())
    for a in (counts, displs):
        a.flags.writeable = False  # shared through the cache
    return _GatherLayout(rest, starts, sizes, counts, displs, equal, in_place)


def _displs(counts) -> np.ndarray:
    """Each piece's start in a buffer holding the pieces back to back."""
    counts = np.asarray(counts, np.int64)
    return np.concatenate(([0], np.cumsum(counts)[:-1])) if counts.size else counts


def _drop_dim(s: Sharding, dim: int, partial_axes, partial_type) -> Sharding:
    """The sharding of a tensor with ``dim`` removed (its split axes, halos and offsets dropped)."""
    split = list(s.split_axes) + [()] * max(0, dim + 1 - len(s.split_axes))
    del split[dim]
    sharded = s.sharded_dims
    halos = list(s.halo_sizes)
    offsets = list(s.sharded_dims_offsets)
    if dim in sharded:
        k = sharded.index(dim)
        if halos:
            del halos[2 * k: 2 * k + 2]
        if offsets:
            start = sum(s.dim_split_size(d) + 1 for d in sharded[:k])
            del offsets[start: start + s.dim_split_size(dim) + 1]
    return Sharding(s.mesh, split, partial_axes=partial_axes, partial_type=partial_type,
                    halo_sizes=halos or None, sharded_dims_offsets=offsets or None)


# -- layout helpers --------------------------------------------------------------------------------
def _check_perm(axes, ndim) -> tuple:
    try:
        perm = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(f"axes: {axes!r} is not a sequence of ints") from None
    norm = tuple(a % ndim if -ndim <= a < ndim else a for a in perm)
    if sorted(norm) != list(range(ndim)):
        raise ValueError(f"axes: {list(perm)} is not a permutation of the {ndim} dims")
    return norm


def _per_dim(s: Sharding, shape) -> list:
    """Per tensor dim: (split axes, offsets or None, halo widths)."""
    offs = s.dim_offsets(shape) if s.sharded_dims_offsets else None
    return [(s.dim_axes(d), offs[d] if offs and s.dim_axes(d) else None, s.halo_widths(d)) for d in range(len(shape))]


def _from_dims(like: Sharding, dims, shape, *, keep_halos=True) -> Sharding:
    """A sharding from per-dim (split axes, offsets or None for even, halo widths), ``like``'s partial axes.

    Offsets are written only where some split dim is uneven."""
    split = [axes for axes, _, _ in dims]
    offs = [(o if o is not None else split_offsets(n, _axes_size(like, axes))) if axes else None
            for (axes, o, _), n in zip(dims, shape)]
    uneven = any(a and tuple(o) != split_offsets(n, _axes_size(like, a)) for (a, _, _), o, n in zip(dims, offs, shape))
    flat = [x for o in offs if o is not None for x in o] if uneven else None
    halos = [w for axes, _, hw in dims if axes for w in hw] if keep_halos and like.halo_sizes else None
    return Sharding(like.mesh, split, partial_axes=like.partial_axes, partial_type=like.partial_type,
                    halo_sizes=halos, sharded_dims_offsets=flat)


def _permute_sharding(s: Sharding, shape, perm) -> Sharding:
    dims = _per_dim(s, shape)
    return _from_dims(s, [dims[p] for p in perm], [shape[p] for p in perm])


def _reshape_target(old, shape) -> tuple:
    try:
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"shape: {shape!r} is not a sequence of ints") from None
    size = math.prod(old)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        rest = math.prod(n for n in shape if n != -1)
        if rest == 0 or size % rest:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // rest if n == -1 else n for n in shape)
    if any(n < 0 for n in shape) or math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def _reshape_groups(old, new):
    """Pair runs of old dims with runs of new dims of equal size (numpy's C-order reshape factoring)."""
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        gi, gj = [i] if i < len(old) else [], [j] if j < len(new) else []
        po = old[i] if i < len(old) else 1
        pn = new[j] if j < len(new) else 1
        i, j = i + bool(gi), j + bool(gj)
        while po != pn:
            if po < pn:
                gi.append(i)
                po *= old[i]
                i += 1
            else:
                gj.append(j)
                pn *= new[j]
                j += 1
        groups.append((gi, gj))
    return groups


def _axes_size(s: Sharding, axes) -> int:
    return math.prod(s.mesh.shape[a] for a in axes)


def _axes_tuple(axes, ndim, field) -> tuple:
    axes = (axes,) if isinstance(axes, numbers.Integral) else tuple(axes)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim, field)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in `{field}` argument")
    return tuple(out)
