"""Random shardings and a numpy reference model of partial values, shared by the
serial planner tests and the MPI reshard tests (same seed -> same cases on every rank)."""

import math

import numpy as np

from meshrt import Sharding

KINDS = ("sum", "max", "min", "product", "bitwise_or", "bitwise_xor")


def random_sharding(rng: np.random.Generator, mesh, shape, *, partial=True, halos=True, offsets=True):
    ndim = len(shape)
    axes = list(rng.permutation(mesh.ndim))
    nsplit = int(rng.integers(0, mesh.ndim + 1))
    split = [[] for _ in range(ndim)]
    for a in axes[:nsplit]:
        split[int(rng.integers(0, ndim))].append(int(a))
    rest = axes[nsplit:]
    partial_axes = [int(a) for a in rest if partial and rng.random() < 0.4]
    kind = str(rng.choice(KINDS))
    sharded = [d for d in range(ndim) if split[d]]
    offs = None
    if offsets and sharded and rng.random() < 0.3:
        offs = []
        for d in sharded:
            n = math.prod(mesh.shape[a] for a in split[d])
            offs += [0, *sorted(int(c) for c in rng.integers(0, shape[d] + 1, n - 1)), shape[d]]
    s = Sharding(mesh, split, partial_axes=partial_axes, partial_type=kind, sharded_dims_offsets=offs)
    if halos and sharded and rng.random() < 0.3:
        h = [int(x) for x in rng.integers(0, 2, 2 * len(sharded))]
        widths = [min(s.shard_shape(shape, dev)[d] for dev in range(mesh.size)) for d in sharded]
        if all(x <= widths[k // 2] for k, x in enumerate(h)):
            s = s.replace(halo_sizes=h)
    return s


def identity(kind, dtype):
    if kind in ("sum", "bitwise_or", "bitwise_xor"):
        return 0
    if kind == "product":
        return 1
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def partial_slot(sharding, device):
    """Index of a device among the partial contributions of its block (0 when not partial)."""
    return sharding.mesh.in_group_index(device, sharding.partial_axes) if sharding.is_partial else 0


def owned_input(global_array, sharding, device, seed=7):
    """The owned block ``device`` holds so that the reduction over its partial group is ``global_array``."""
    block = global_array[sharding.shard_slices(global_array.shape, device)]
    if not sharding.is_partial:
        return block.copy()
    kind = str(sharding.partial_type)
    slot = partial_slot(sharding, device)
    n = sharding.mesh.axes_size(sharding.partial_axes)
    # every slot's contribution is derived from the same seeded noise, so all ranks agree
    noise = [np.random.default_rng(seed + k).integers(0, 4, global_array.shape).astype(global_array.dtype)
             for k in range(n)]
    sl = sharding.shard_slices(global_array.shape, device)
    if kind == "sum":
        return (block - sum(noise[k][sl] for k in range(1, n)) if slot == 0 else noise[slot][sl]).astype(block.dtype)
    if kind == "bitwise_xor":
        acc = np.zeros_like(block)
        for k in range(1, n):
            acc ^= noise[k][sl]
        return block ^ acc if slot == 0 else noise[slot][sl]
    if kind == "bitwise_or":
        return block if slot == 0 else block & noise[slot][sl]
    if kind == "max":
        return block if slot == 0 else block - noise[slot][sl]
    if kind == "min":
        return block if slot == 0 else block + noise[slot][sl]
    if kind == "product":
        return block if slot == 0 else np.ones_like(block)
    raise AssertionError(kind)


def reduce_blocks(kind, blocks):
    out = blocks[0].copy()
    for b in blocks[1:]:
        if kind == "sum":
            out = out + b
        elif kind == "product":
            out = out * b
        elif kind == "max":
            out = np.maximum(out, b)
        elif kind == "min":
            out = np.minimum(out, b)
        elif kind == "bitwise_or":
            out = out | b
        elif kind == "bitwise_xor":
            out = out ^ b
        elif kind == "bitwise_and":
            out = out & b
    return out


def check_result(global_array, sharding, blocks):
    """``blocks[d]`` is device d's owned block after a reshard to ``sharding``; check the value."""
    mesh = sharding.mesh
    shape = global_array.shape
    for d in range(mesh.size):
        sl = sharding.shard_slices(shape, d)
        if sharding.is_partial:
            group = mesh.group_devices(sharding.partial_axes, d)
            got = reduce_blocks(str(sharding.partial_type), [blocks[g] for g in group])
        else:
            got = blocks[d]
        np.testing.assert_array_equal(got, global_array[sl], err_msg=f"device {d}, sharding {sharding}")
