"""The reshard planner as first written: every device against every block (O(P^2)).

Kept only as the oracle for tests/test_reshard_plan.py: the scalable planner in
meshrt/reshard.py must make exactly the same plans (steps, volumes, lower bound)
and the same per-device exchange pieces.
"""

from __future__ import annotations

import functools
import math

from meshrt.errors import ShardingError
from meshrt.mesh import AbstractMesh
from meshrt.reshard import ReshardPlan, ReshardStep
from meshrt.sharding.spec import Sharding, split_offsets

Box = tuple  # ((start, stop), ...) per tensor dim


def _intersect(a: Box, b: Box):
    out = tuple((max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(a, b))
    return out if all(lo < hi for lo, hi in out) else None


def _volume(box: Box) -> int:
    return math.prod(hi - lo for lo, hi in box)


def _owned_box(s: Sharding, shape: tuple, device: int) -> Box:
    return tuple((x.start, x.stop) for x in s.shard_slices(shape, device))


def _abstract(s: Sharding) -> Sharding:
    return s.replace(mesh=s.mesh.abstract()) if not type(s.mesh) is AbstractMesh else s


@functools.lru_cache(maxsize=1024)
def _plan(src: Sharding, dst: Sharding, shape: tuple, user_src: Sharding, user_dst: Sharding) -> ReshardPlan:
    steps = []
    cur = src.replace(halo_sizes=None)
    target = dst.replace(halo_sizes=None)

    if cur.is_partial and not (cur.partial_axes == target.partial_axes and cur.partial_type == target.partial_type):
        step = _reduce_step(cur, target, shape)
        steps.append(step)
        cur = step.after
    want = target.replace(partial_axes=(), partial_type="sum") if (
        target.is_partial and not cur.is_partial) else target
    if cur != want:
        step = _move_step(cur, want, shape)
        steps.append(step)
        cur = step.after
    if want != target:
        steps.append(ReshardStep("make_partial", target.partial_axes, (("kind", str(target.partial_type)),),
                                 cur, target, 0))
    if dst.halo_sizes:
        steps.append(ReshardStep("update_halo", (), (("halo_sizes", list(dst.halo_sizes)),), target, dst, 0))
    moved = sum(s.elements_moved for s in steps)
    bound = None if src.is_partial and steps and steps[0].op in ("all_reduce", "reduce_scatter") else lower_bound(
        src, dst, shape)
    return ReshardPlan(user_src, user_dst, shape, tuple(steps), moved, bound)


def lower_bound(src: Sharding, dst: Sharding, shape) -> int:
    """Elements each device lacks: its destination block minus what it owns in
    the source, summed over devices (owned data; halos are refilled after)."""
    shape = tuple(shape)
    total = 0
    for d in range(src.mesh.size):
        need = _owned_box(dst, shape, d)
        have = _intersect(need, _owned_box(src, shape, d))
        # (the original read `if have`, which took a 0-d tensor's box () for empty: lower bound 1 per device)
        total += _volume(need) - (_volume(have) if have is not None else 0)
    return total


# -- reductions -------------------------------------------------------------------


def _reduce_step(cur: Sharding, target: Sharding, shape) -> ReshardStep:
    kind = str(cur.partial_type)
    axes = cur.partial_axes
    g = math.prod(cur.mesh.shape[a] for a in axes)
    full = cur.replace(partial_axes=(), partial_type="sum")
    # reduce_scatter when the target splits one dim on (its current axes + exactly the partial axes)
    if not target.is_partial:
        for d in range(len(shape)):
            have, want = cur.dim_axes(d), target.dim_axes(d)
            if len(want) == len(have) + len(axes) and want[: len(have)] == have and set(want[len(have):]) == set(axes):
                split = list(full.split_axes) + [()] * (len(shape) - len(full.split_axes))
                split[d] = want
                after = Sharding(full.mesh, split)
                if _pieces_nest(full, after, shape, d) and not cur.sharded_dims_offsets:
                    local = sum(_volume(_owned_box(full, shape, dev)) for dev in range(cur.mesh.size))
                    return ReshardStep("reduce_scatter", tuple(want[len(have):]),
                                       (("reduction", kind), ("scatter_axis", d)),
                                       cur, after, local * (g - 1) // g)
    local = sum(_volume(_owned_box(full, shape, dev)) for dev in range(cur.mesh.size))
    return ReshardStep("all_reduce", axes, (("reduction", kind),), cur, full, 2 * local * (g - 1) // g)


def _pieces_nest(outer: Sharding, inner: Sharding, shape, dim) -> bool:
    """Whether splitting each of ``outer``'s blocks along ``dim`` with the uneven
    rule gives exactly ``inner``'s blocks (the collectives split that way)."""
    n_out, n_in = outer.dim_split_size(dim), inner.dim_split_size(dim)
    if n_in % n_out:
        return False
    outer_offs = outer.dim_offsets(shape)[dim]
    inner_offs = inner.dim_offsets(shape)[dim]
    k = n_in // n_out
    for j in range(n_out):
        lo, hi = outer_offs[j], outer_offs[j + 1]
        local = split_offsets(hi - lo, k)
        if tuple(lo + x for x in local) != tuple(inner_offs[j * k: (j + 1) * k + 1]):
            return False
    return True


# -- data movement ---------------------------------------------------------------------


def _move_step(cur: Sharding, want: Sharding, shape) -> ReshardStep:
    moved = _exchange_volume(cur, want, shape)
    if moved == 0:
        return ReshardStep("all_slice", (), (), cur, want, 0)
    for make in (_as_all_gather, _as_all_to_all):
        step = make(cur, want, shape, moved)
        if step is not None:
            return step
    if _is_permutation(cur, want, shape):
        return ReshardStep("permute", (), (), cur, want, moved)
    return ReshardStep("exchange", (), (), cur, want, moved)


def _exchange_volume(cur: Sharding, want: Sharding, shape) -> int:
    return sum(
        _volume(p[1]) for d in range(cur.mesh.size) for p in exchange_recvs(cur, want, shape, d) if p[0] != d
    )


def _dims_equal_except(cur, want, dims, shape) -> bool:
    offs_c, offs_w = cur.dim_offsets(shape), want.dim_offsets(shape)
    return all(
        cur.dim_axes(d) == want.dim_axes(d) and offs_c[d] == offs_w[d] for d in range(len(shape)) if d not in dims
    )


def _concat_matches(outer: Sharding, inner: Sharding, shape, dim) -> bool:
    """Whether concatenating runs of ``inner``'s blocks along ``dim`` gives ``outer``'s."""
    n_out, n_in = outer.dim_split_size(dim), inner.dim_split_size(dim)
    if n_in % n_out:
        return False
    k = n_in // n_out
    outer_offs, inner_offs = outer.dim_offsets(shape)[dim], inner.dim_offsets(shape)[dim]
    return all(outer_offs[j] == inner_offs[j * k] for j in range(n_out + 1))


def _as_all_gather(cur, want, shape, moved):
    for d in range(len(shape)):
        have, keep = cur.dim_axes(d), want.dim_axes(d)
        if len(keep) < len(have) and have[: len(keep)] == keep and _dims_equal_except(cur, want, {d}, shape):
            if _concat_matches(want, cur, shape, d):
                return ReshardStep("all_gather", have[len(keep):], (("gather_axis", d),), cur, want, moved)
    return None


def _as_all_to_all(cur, want, shape, moved):
    for i in range(len(shape)):
        for j in range(len(shape)):
            ci, cj, wi, wj = cur.dim_axes(i), cur.dim_axes(j), want.dim_axes(i), want.dim_axes(j)
            for n in range(1, len(ci) + 1):
                axes = ci[-n:]
                if i == j or ci[:-n] != wi or wj != cj + axes or not _dims_equal_except(cur, want, {i, j}, shape):
                    continue
                if _concat_matches(want, cur, shape, i) and _pieces_nest(cur, want, shape, j):
                    return ReshardStep("all_to_all", axes, (("split_axis", j), ("concat_axis", i)), cur, want, moved)
    return None


def _is_permutation(cur, want, shape) -> bool:
    for d in range(cur.mesh.size):
        remote = [p for p in exchange_recvs(cur, want, shape, d) if p[0] != d]
        if len(remote) > 1 or len(exchange_recvs(cur, want, shape, d)) > 1:
            return False
    return True


# -- the exchange pattern (also used by the executor) ---------------------------------


def _source_for(cur: Sharding, block_device: int, dest: int) -> int:
    """The device that sends ``block_device``'s source block to ``dest``: the holder
    agreeing with ``dest`` on every mesh axis the source does not split."""
    mesh = cur.mesh
    split = {a for axes in cur.split_axes for a in axes}
    c_block, c_dest = mesh.multi_index(block_device), mesh.multi_index(dest)
    return mesh.linear_index(tuple(c_block[a] if a in split else c_dest[a] for a in range(mesh.ndim)))


def _distinct_blocks(cur: Sharding, shape) -> list:
    """One representative device per distinct source block (the blocks tile the array once)."""
    seen, reps = set(), []
    mesh = cur.mesh
    split = {a for axes in cur.split_axes for a in axes}
    for d in range(mesh.size):
        c = mesh.multi_index(d)
        if all(c[a] == 0 for a in range(mesh.ndim) if a not in split):
            box = _owned_box(cur, shape, d)
            if box not in seen:
                seen.add(box)
                reps.append(d)
    return reps


@functools.lru_cache(maxsize=4096)
def exchange_recvs(cur: Sharding, want: Sharding, shape: tuple, dest: int) -> tuple:
    """``(source, global box)`` pieces that together make ``dest``'s destination block."""
    need = _owned_box(want, shape, dest)
    out = []
    for rep in _distinct_blocks(cur, shape):
        box = _intersect(need, _owned_box(cur, shape, rep))
        if box is not None:
            out.append((_source_for(cur, rep, dest), box))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def exchange_sends(cur: Sharding, want: Sharding, shape: tuple, source: int) -> tuple:
    """``(dest, global box)`` pieces ``source`` sends (its own piece included, dest == source)."""
    have = _owned_box(cur, shape, source)
    out = []
    mesh = cur.mesh
    split = {a for axes in cur.split_axes for a in axes}
    c_src = mesh.multi_index(source)
    for dest in range(mesh.size):
        c_dest = mesh.multi_index(dest)
        if any(c_src[a] != c_dest[a] for a in range(mesh.ndim) if a not in split):
            continue
        box = _intersect(_owned_box(want, shape, dest), have)
        if box is not None:
            out.append((dest, box))
    return tuple(out)




def reference_plan(src: Sharding, dst: Sharding, shape) -> ReshardPlan:
    """The plan the original planner makes (same checks left to the caller)."""
    return _plan(_abstract(src), _abstract(dst), tuple(shape), src, dst)
