"""Which process writes which chunk of a chunked file (Zarr): pure arithmetic, no MPI, no I/O.

A chunked array (Zarr) has one regular chunk grid. When every shard
boundary of a dim lies on a chunk boundary, each process writes whole chunks
of its own block and no two processes touch one chunk. Otherwise the tensor
is first resharded to the *chunk-aligned* layout: the same split axes, each
shard boundary moved up to the next chunk boundary, so a chunk belongs to the
shard its first element lies in (the fewest elements move). The reshard
planner does that move; this module only says where the boundaries go.

>>> from meshrt.mesh import AbstractMesh
>>> s = Sharding(AbstractMesh((4,)), [[0]])          # 10 -> widths 2, 2, 3, 3
>>> default_chunks(s, (10,))
(3,)
>>> aligned_sharding(s, (10,), (3,)).dim_offsets((10,))
((0, 3, 6, 9, 10),)
>>> owned_chunks(aligned_sharding(s, (10,), (3,)), (10,), (3,), device=3)
ChunkBox(start=(3,), stop=(4,), writes=True)

Costs: `default_chunks` and `aligned_sharding` are O(shards per dim) (the
offsets a Sharding already holds), `owned_chunks` is O(ndim): no loop over
devices, so a plan on a mesh of 10^5 devices costs what it costs on 4.
"""

from __future__ import annotations

import math
from collections import namedtuple

from ..errors import ShardingError
from .spec import Sharding

__all__ = ["default_chunks", "check_chunks", "aligned_sharding", "is_aligned", "owned_chunks", "ChunkBox",
           "writer_of_block"]

ChunkBox = namedtuple("ChunkBox", "start stop writes")
ChunkBox.__doc__ = ("The half-open box of chunk-grid indices a device writes (``start``/``stop`` per dim) "
                    "and whether it writes at all (one replica of each block does).")


def writer_of_block(sharding: Sharding, device=None) -> bool:
    """Whether ``device`` (default: this process) writes its block.

    Of the devices that hold the same block, the one at coordinate 0 on every
    mesh axis that splits no tensor dim writes it; the others hold replicas.

    Parameters
    ----------
    sharding : Sharding
        The tensor's sharding.
    device : int, optional
        A linear device index; default this process's.

    Returns
    -------
    bool
        True for exactly one device of each set of replicas.

    Examples
    --------
    >>> from meshrt.mesh import AbstractMesh
    >>> [writer_of_block(Sharding(AbstractMesh((2, 2)), [[1]]), d) for d in range(4)]
    [True, True, False, False]
    """
    mesh = sharding.mesh
    coords = mesh.coords if device is None else mesh.multi_index(device)
    used = {a for axes in sharding.split_axes for a in axes}
    return all(c == 0 for a, c in enumerate(coords) if a not in used)


def default_chunks(sharding: Sharding, global_shape) -> tuple:
    """Chunks that follow the sharding: along a split dim the widest shard, along
    any other dim the whole dim (at least 1 everywhere, as Zarr needs).

    Even shardings then write one chunk per process with no data moved.

    >>> from meshrt.mesh import AbstractMesh
    >>> default_chunks(Sharding(AbstractMesh((2, 2)), [[0], [1]]), (8, 6, 5))
    (4, 3, 5)
    """
    offsets = sharding.dim_offsets(global_shape)
    return tuple(max(1, max(b - a for a, b in zip(o, o[1:]))) for o in offsets)


def check_chunks(chunks, global_shape) -> tuple:
    """``chunks`` as a tuple of positive ints, one per dim, or a ShardingError naming the value."""
    shape = tuple(global_shape)
    if isinstance(chunks, int) and not isinstance(chunks, bool):
        chunks = (chunks,) * len(shape)
    try:
        out = tuple(c.__index__() for c in chunks if not isinstance(c, bool))
    except (TypeError, AttributeError):
        raise ShardingError(f"chunks: {chunks!r} is not an int or a sequence of ints") from None
    if len(out) != len(tuple(chunks)) or len(out) != len(shape) or any(c < 1 for c in out):
        raise ShardingError(
            f"chunks: {chunks!r} must give one positive int per dim of the {len(shape)}-d global shape {shape}")
    return out


def _aligned_offsets(offsets: tuple, chunk: int, size: int) -> tuple:
    return tuple(min(size, -(-o // chunk) * chunk) for o in offsets)


def aligned_sharding(sharding: Sharding, global_shape, chunks) -> Sharding:
    """The chunk-aligned layout of ``sharding``: every shard boundary rounded up to a
    chunk boundary, halos dropped (files hold no halos). Equal to
    ``sharding.replace(halo_sizes=None)`` when the boundaries already align.
    """
    shape = sharding.check_shape(global_shape)
    chunks = check_chunks(chunks, shape)
    if sharding.is_partial:
        raise ShardingError(f"sharding: {sharding} is partial; a file holds full values, reshard or reduce first")
    offsets = sharding.dim_offsets(shape)
    flat = []
    for d in sharding.sharded_dims:
        flat += _aligned_offsets(offsets[d], chunks[d], shape[d])
    if flat == [o for d in sharding.sharded_dims for o in offsets[d]]:
        return sharding.replace(halo_sizes=None)
    return sharding.replace(halo_sizes=None, sharded_dims_offsets=flat)


def is_aligned(sharding: Sharding, global_shape, chunks) -> bool:
    """Whether every shard boundary of ``sharding`` lies on a chunk boundary (or the array's end)."""
    shape = sharding.check_shape(global_shape)
    chunks = check_chunks(chunks, shape)
    offsets = sharding.dim_offsets(shape)
    return all(_aligned_offsets(offsets[d], chunks[d], shape[d]) == offsets[d] for d in sharding.sharded_dims)


def owned_chunks(aligned: Sharding, global_shape, chunks, device=None) -> ChunkBox:
    """The chunks ``device`` writes under a chunk-aligned sharding: a box of chunk
    indices (empty where its block is empty) and whether it is the writing replica.

    Every chunk of the grid lies in exactly one writing device's box.
    """
    shape = tuple(global_shape)
    chunks = check_chunks(chunks, shape)
    slices = aligned.shard_slices(shape, device)
    start, stop = [], []
    for s, c, n in zip(slices, chunks, shape):
        if s.start % c and s.start != n or s.stop % c and s.stop != n:
            raise ShardingError(f"sharding: {aligned} is not aligned to chunks {chunks} (block {s} of a dim of {n})")
        start.append(s.start // c)
        stop.append(-(-s.stop // c) if s.stop > s.start else s.start // c)  # an empty block at the end owns none
    return ChunkBox(tuple(start), tuple(stop), writer_of_block(aligned, device))


def chunk_count(box: ChunkBox) -> int:
    """How many chunks a box holds (0 for a non-writing replica)."""
    return math.prod(b - a for a, b in zip(box.start, box.stop)) if box.writes else 0
