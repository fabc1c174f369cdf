"""Resharding: a pure, cached planner and a small executor.

`plan_reshard(src, dst, global_shape)` turns a pair of shardings into a short
list of steps, each one collective of the shard dialect (or a local copy), and
never touches MPI, so it runs on an `AbstractMesh`:

>>> from meshrt.mesh import AbstractMesh
>>> mesh = AbstractMesh((2,), ("x",))
>>> plan = plan_reshard(Sharding(mesh, [["x"]]), Sharding(mesh, [[], ["x"]]), (4, 4))
>>> [step.op for step in plan.steps], plan.elements_moved
(['all_to_all'], 8)

`execute_reshard(plan, owned, mesh)` runs the steps on this process's owned
block.  Reductions and gathers call the collectives; ``all_to_all``,
``permute`` and ``exchange`` run through one point-to-point engine that packs
with the compiled block copy, sends contiguous pieces straight from the array,
and copies a device's own piece locally instead of through MPI.

Step choice, in order of preference:

* partial source: ``reduce_scatter`` when the destination splits one dim on
  exactly the partial axes (appended as its minor axes), else ``all_reduce``;
* no element has to move: ``all_slice`` (slicing only);
* one dim loses its trailing axes: ``all_gather`` over them;
* one mesh axis moves from the end of one dim to the end of another:
  ``all_to_all``;
* every device needs exactly one other device's block: ``permute``
  (point-to-point);
* anything else: one ``exchange`` step in which every process sends each
  destination exactly the intersection of what it owns and what that
  destination must own (one ``Alltoallv``).

Each source element a destination needs is sent by exactly one device, the
one that agrees with the destination on every mesh axis the source does not
split (so replicas share the work and partial contributions stay in their
slot); a device never sends itself anything.  The elements that cross process
boundaries therefore equal the lower bound: what each device lacks.
Destination halos are then filled by one halo update.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .errors import ShardingError
from .mesh import AbstractMesh
from .reduction import ReductionKind
from .sharding import Sharding, split_offsets

__all__ = ["ReshardPlan", "ReshardStep", "plan_reshard", "explain_reshard", "execute_reshard", "lower_bound"]

Box = tuple  # ((start, stop), ...) per tensor dim


def _intersect(a: Box, b: Box):
    out = tuple((max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(a, b))
    return out if all(lo < hi for lo, hi in out) else None


def _volume(box: Box) -> int:
    return math.prod(hi - lo for lo, hi in box)


def _owned_box(s: Sharding, shape: tuple, device: int) -> Box:
    return tuple((x.start, x.stop) for x in s.shard_slices(shape, device))


@dataclass(frozen=True)
class ReshardStep:
    """One collective (or local step) of a plan.

    ``op`` is a shard-dialect op name (``all_reduce``, ``reduce_scatter``,
    ``all_gather``, ``all_slice``, ``all_to_all``), or ``permute``,
    ``exchange``, ``local_copy``, ``make_partial``, ``update_halo``.
    ``before``/``after`` are the shardings of the owned data around the step;
    ``elements_moved`` counts elements crossing process boundaries, summed
    over all devices.
    """

    op: str
    mesh_axes: tuple
    attrs: tuple
    before: Sharding
    after: Sharding
    elements_moved: int

    def __str__(self):
        attrs = "".join(f", {k}={v}" for k, v in self.attrs)
        group = f"mesh_axes={list(self.mesh_axes)}" if self.mesh_axes else "no group"
        return f"{self.op}({group}{attrs})  moves {self.elements_moved} elements"


@dataclass(frozen=True)
class ReshardPlan:
    """The steps from ``src`` to ``dst`` for a tensor of ``global_shape``."""

    src: Sharding
    dst: Sharding
    global_shape: tuple
    steps: tuple
    elements_moved: int
    lower_bound: int | None = None

    def __str__(self):
        lines = [
            f"reshard {self.global_shape} on mesh {self.src.mesh.shape}",
            f"  from {self.src}",
            f"  to   {self.dst}",
        ]
        if not self.steps:
            lines.append("  nothing to do")
        for i, step in enumerate(self.steps):
            lines.append(f"  {i + 1}. {step}")
        lines.append(
            f"  elements moved between processes: {self.elements_moved}"
            + (f" (lower bound for the data movement: {self.lower_bound})" if self.lower_bound is not None else "")
        )
        return "\n".join(lines)


def explain_reshard(src: Sharding, dst: Sharding, global_shape) -> ReshardPlan:
    """The plan `DistributedTensor.reshard` runs; print it to read it."""
    return plan_reshard(src, dst, global_shape)


def plan_reshard(src: Sharding, dst: Sharding, global_shape) -> ReshardPlan:
    """A pure, cached plan (works on `AbstractMesh` and `Mesh` shardings alike)."""
    if not isinstance(src, Sharding) or not isinstance(dst, Sharding):
        raise ShardingError(f"reshard: expected two Shardings, got {src!r} and {dst!r}")
    if src.mesh.abstract() != dst.mesh.abstract():
        raise ShardingError(f"reshard: source mesh {src.mesh!r} and destination mesh {dst.mesh!r} differ")
    shape = src.check_shape(global_shape)
    dst.check_shape(shape)
    return _plan(_abstract(src), _abstract(dst), shape, src, dst)


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
        total += _volume(need) - (_volume(have) if have else 0)
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


def partial_keeper(kind, coords, partial_axes) -> bool:
    """Whether a device keeps the value when a full tensor becomes partial of ``kind``
    (the others hold the identity): idempotent kinds keep it everywhere."""
    kind = ReductionKind(kind)
    if kind in (ReductionKind.max, ReductionKind.min, ReductionKind.average,
                ReductionKind.bitwise_and, ReductionKind.bitwise_or):
        return True
    return all(coords[a] == 0 for a in partial_axes)


# -- execution ---------------------------------------------------------------------------


def execute_reshard(plan: ReshardPlan, owned, mesh, out=None):
    """Run ``plan`` on this process's owned block (no halos); return the new owned block.

    ``out``, if given, receives the final block (e.g. the interior view of a
    buffer with halos); the ``update_halo`` step is left to the caller, which
    knows the buffer and the domain's periodicity.
    """
    import numpy as np

    from . import collectives

    shape = plan.global_shape
    x = owned
    steps = [s for s in plan.steps if s.op != "update_halo"]
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        attrs = dict(step.attrs)
        target = out if last else None
        # the last step writes straight into ``out`` where the collective can
        contiguous_out = target if target is not None and target.flags.c_contiguous else None
        if step.op == "all_reduce":
            x = collectives.all_reduce(x, mesh, step.mesh_axes, attrs["reduction"],
                                       out=contiguous_out)
        elif step.op == "reduce_scatter":
            x = collectives.reduce_scatter(x, mesh, step.mesh_axes, attrs["reduction"],
                                           attrs["scatter_axis"], out=contiguous_out)
        elif step.op == "all_gather":
            d = attrs["gather_axis"]
            group = mesh.group_devices(step.mesh_axes, mesh.rank)
            sizes = [step.before.shard_shape(shape, dev)[d] for dev in group]
            x = collectives.all_gather(x, mesh, step.mesh_axes, d, sizes=sizes,
                                       out=contiguous_out)
        elif step.op == "all_slice":
            x = _local_slice(step, x, shape, mesh.rank)
        elif step.op in ("all_to_all", "permute", "exchange"):
            x = _exchange(step, x, shape, mesh, target)
        elif step.op == "make_partial":
            x = np.array(x, copy=True) if x is owned else x
            if not partial_keeper(attrs["kind"], mesh.coords, step.mesh_axes):
                x[...] = 1 if attrs["kind"] == "product" else 0
        else:  # pragma: no cover - the planner makes no other ops
            raise AssertionError(step.op)
    if out is not None and x is not out:
        from ._blockcopy import copy_block

        copy_block(out, np.asarray(x))
        x = out
    return x


def _local_slice(step: ReshardStep, x, shape, rank):
    have = _owned_box(step.before, shape, rank)
    need = _owned_box(step.after, shape, rank)
    return x[tuple(slice(n0 - h0, n1 - h0) for (n0, n1), (h0, _) in zip(need, have))]


@functools.lru_cache(maxsize=256)
def _exchange_program(before: Sharding, after: Sharding, shape: tuple, rank: int):
    """This rank's sends and receives as local slices: pure, cached per plan."""
    have = _owned_box(before, shape, rank)
    need = _owned_box(after, shape, rank)

    def local(box, origin):
        return tuple(slice(b0 - o0, b1 - o0) for (b0, b1), (o0, _) in zip(box, origin))

    sends = tuple((dest, local(box, have)) for dest, box in exchange_sends(before, after, shape, rank))
    recvs = tuple((src, local(box, need)) for src, box in exchange_recvs(before, after, shape, rank))
    return sends, recvs, tuple(b - a for a, b in need)


_TAG_EXCHANGE = 0x5e5


def _exchange(step: ReshardStep, x, shape, mesh, out):
    import numpy as np
    from mpi4py import MPI

    from ._blockcopy import copy_block

    sends, recvs, out_shape = _exchange_program(_abstract(step.before), _abstract(step.after), shape, mesh.rank)
    if out is None:
        out = np.empty(out_shape, x.dtype)
    comm = mesh.comm
    reqs, unpack, keep = [], [], []
    for src, sl in recvs:
        if src == mesh.rank:
            continue
        view = out[sl]
        if view.flags.c_contiguous:
            buf = view
        else:
            buf = np.empty(view.shape, x.dtype)
            unpack.append((view, buf))
        reqs.append(comm.Irecv([buf.view(np.uint8).reshape(-1) if buf.size else buf, MPI.BYTE], src, _TAG_EXCHANGE))
    for dest, sl in sends:
        view = x[sl]
        if dest == mesh.rank:
            own = [r for r in recvs if r[0] == mesh.rank]
            copy_block(out[own[0][1]], view)
            continue
        if not view.flags.c_contiguous:
            buf = np.empty(view.shape, x.dtype)
            copy_block(buf, view)
            view = buf
        keep.append(view)
        reqs.append(comm.Isend([view.view(np.uint8).reshape(-1) if view.size else view, MPI.BYTE], dest, _TAG_EXCHANGE))
    MPI.Request.Waitall(reqs)
    for view, buf in unpack:
        copy_block(view, buf)
    return out
