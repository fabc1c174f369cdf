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

Planning scales with a process's peers, not with the mesh: each process
computes only its own pieces (along each dim, the shards a block meets are a
contiguous run found by bisection), and the whole-mesh totals are products
over dims, never loops over devices (65,536 devices: about 1 ms per plan).

Shardy sub-axis shardings (``{"x":(1)2}``) live on a refinement of their
mesh; resharding between them and full-axis ones plans on the common
refinement, and the executor binds it to the same processes.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import weakref
from dataclasses import dataclass

import numpy as np

from .errors import ShardingError
from .mesh import AbstractMesh, Mesh
from .reduction import ReductionKind
from .sharding.spec import Sharding

__all__ = [
    "ReshardPlan", "ReshardStep", "plan_reshard", "explain_reshard", "execute_reshard", "lower_bound", "same_devices",
]

Box = tuple  # ((start, stop), ...) per tensor dim


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
    """The plan `DistributedTensor.reshard` runs; print it to read it.

    The same as `plan_reshard`, named for reading: its ``str`` lists the steps,
    the elements each one moves and the lower bound for the data movement.

    Parameters
    ----------
    src : Sharding
        The tensor's current sharding.
    dst : Sharding
        The sharding wanted.
    global_shape : sequence of int
        The tensor's global shape.

    Returns
    -------
    ReshardPlan
        The steps from ``src`` to ``dst``.

    Raises
    ------
    ShardingError
        An argument is not a `Sharding`, the shape does not fit both shardings,
        or the meshes differ (and are not sub-axis refinements of one mesh).

    See Also
    --------
    plan_reshard, DistributedTensor.reshard

    Examples
    --------
    Moving the ``y`` split from dim 1 onto dim 0 of a 2x2 mesh is one
    ``all_to_all``:

    >>> from meshrt import AbstractMesh, Sharding
    >>> mesh = AbstractMesh((2, 2), ("x", "y"))
    >>> print(explain_reshard(Sharding(mesh, [["x"], ["y"]]), Sharding(mesh, [["x", "y"]]), (8, 8)))
    reshard (8, 8) on mesh (2, 2)
      from shard.sharding @mesh split_axes = [[0], [1]]
      to   shard.sharding @mesh split_axes = [[0, 1]]
      1. all_to_all(mesh_axes=[1], split_axis=0, concat_axis=1)  moves 32 elements
      elements moved between processes: 32 (lower bound for the data movement: 32)
    """
    return plan_reshard(src, dst, global_shape)


def plan_reshard(src: Sharding, dst: Sharding, global_shape) -> ReshardPlan:
    """A pure, cached plan from ``src`` to ``dst`` for a tensor of ``global_shape``.

    Never touches MPI: works on `AbstractMesh` and `Mesh` shardings alike, so a
    plan for 65,536 devices can be read on a laptop.  Each step is one
    collective of the shard dialect (or a local step); see the module docstring
    for the order in which steps are preferred.

    Parameters
    ----------
    src : Sharding
        The tensor's current sharding.
    dst : Sharding
        The sharding wanted (on the same mesh, or a sub-axis refinement of it).
    global_shape : sequence of int
        The tensor's global shape.

    Returns
    -------
    ReshardPlan
        ``steps`` (each a `ReshardStep` with ``op``, ``mesh_axes``, ``attrs``
        and ``elements_moved``), the total ``elements_moved`` and its
        ``lower_bound``.

    Raises
    ------
    ShardingError
        An argument is not a `Sharding`, the shape does not fit both shardings,
        or the meshes differ (and are not sub-axis refinements of one mesh).

    See Also
    --------
    explain_reshard, DistributedTensor.reshard

    Examples
    --------
    >>> from meshrt import AbstractMesh, Sharding
    >>> mesh = AbstractMesh((2, 2), ("x", "y"))
    >>> plan = plan_reshard(Sharding(mesh, [["x"]], partial_axes=["y"]), Sharding(mesh, [["x", "y"]]), (8, 8))
    >>> [(step.op, step.mesh_axes) for step in plan.steps]
    [('reduce_scatter', (1,))]
    >>> plan_reshard(Sharding(mesh, [["x"]]), Sharding(mesh, [["x"]]), (8, 8)).steps
    ()
    """
    if not isinstance(src, Sharding) or not isinstance(dst, Sharding):
        raise ShardingError(f"reshard: expected two Shardings, got {src!r} and {dst!r}")
    shape = src.check_shape(global_shape)
    dst.check_shape(shape)
    a, b = src.mesh.abstract(), dst.mesh.abstract()
    if a == b:
        return _plan(_abstract(src), _abstract(dst), shape, src, dst)
    if not same_devices(a, b):
        raise ShardingError(
            f"reshard: source mesh {src.mesh!r} and destination mesh {dst.mesh!r} differ "
            "(and are not sub-axis refinements of one mesh)"
        )
    mesh, runs_a, runs_b = _refinement(a, b)
    return _plan(_lift(src, mesh, runs_a), _lift(dst, mesh, runs_b), shape, src, dst)


def _abstract(s: Sharding) -> Sharding:
    return s.replace(mesh=s.mesh.abstract()) if not type(s.mesh) is AbstractMesh else s


# -- meshes that split each other's axes (Shardy sub-axes) ------------------------------


def same_devices(a: AbstractMesh, b: AbstractMesh) -> bool:
    """Whether a tensor can be resharded from mesh ``a`` to mesh ``b``: the same mesh, or
    sub-axis refinements of one mesh (a Shardy sharding ``{"x":(1)2}`` lives on a mesh
    whose axis ``"x"`` is split into ``"x:(1)2"`` and ``"x:(2)2"``), same processes.

    >>> from meshrt import Sharding
    >>> m = AbstractMesh((4, 3), ("x", "y"))
    >>> same_devices(m, Sharding.parse('#sdy.sharding<@mesh, [{"x":(2)2}]>', m).mesh)
    True
    >>> same_devices(AbstractMesh((4,)), AbstractMesh((2, 2)))  # no names: no sub-axes, two meshes
    False
    """
    if isinstance(a, Mesh) or isinstance(b, Mesh):
        if not (isinstance(a, Mesh) and isinstance(b, Mesh)) or not (a.comm is b.comm or a.comm == b.comm):
            return False
    a, b = a.abstract(), b.abstract()
    if a == b:
        return True
    return (a.axis_names is not None and _base_names(a) == _base_names(b)
            and _refinement(a, b) is not None)


def _base_names(mesh: AbstractMesh) -> tuple | None:
    """The full axes behind a mesh's (sub-)axis names, with their sizes:
    ``("x:(1)2", "x:(2)2", "y")`` on ``(2, 2, 3)`` -> ``(("x", 4), ("y", 3))``."""
    if mesh.axis_names is None:
        return None
    out = []
    for name, n in zip(mesh.axis_names, mesh.shape):
        base = name.split(":(", 1)[0]
        if out and out[-1][0] == base:
            out[-1][1] *= n
        else:
            out.append([base, n])
    return tuple(map(tuple, out))


@functools.lru_cache(maxsize=64)
def _refinement(a: AbstractMesh, b: AbstractMesh):
    """``(mesh, runs_a, runs_b)``: the coarsest mesh whose axes split every axis of ``a``
    and of ``b`` with row-major linear indices kept, and for each axis of ``a`` (``b``)
    the run of its axes, major to minor, that make it; None where there is none.

    >>> _refinement(AbstractMesh((4,)), AbstractMesh((2, 2)))[1:]
    (((0, 1),), ((0,), (1,)))
    """
    if a.size != b.size:
        return None
    strides_a, strides_b = _strides(a.shape), _strides(b.shape)
    cuts = sorted({s * n for s, n in zip(strides_a + strides_b, a.shape + b.shape)} | {1}, reverse=True)
    if any(hi % lo for hi, lo in zip(cuts, cuts[1:])):
        return None  # an axis of one mesh straddles a boundary of the other's
    # (stride, size, tag): one axis per digit range, plus every size-1 axis of either mesh
    parts = [(lo, hi // lo, None) for hi, lo in zip(cuts, cuts[1:])]
    for tag, (m, strides) in enumerate(((a, strides_a), (b, strides_b))):
        parts += [(st, 1, (tag, i)) for i, (st, n) in enumerate(zip(strides, m.shape)) if n == 1]
    parts.sort(key=lambda p: (-p[0], p[1] == 1))  # stable: size-1 axes after the axis of their stride
    shape = tuple(n for _, n, _ in parts)
    mesh = a if shape == a.shape else b if shape == b.shape else AbstractMesh(shape, name=a.name)

    def runs(tag, m, strides):
        if mesh is m:
            return tuple((i,) for i in range(m.ndim))
        out = []
        for i, (st, n) in enumerate(zip(strides, m.shape)):
            if n == 1:
                out.append(tuple(j for j, p in enumerate(parts) if p[2] == (tag, i)))
            else:
                out.append(tuple(j for j, (s, k, _) in enumerate(parts) if k > 1 and st <= s < st * n))
        return tuple(out)

    return mesh, runs(0, a, strides_a), runs(1, b, strides_b)


def _lift(s: Sharding, mesh: AbstractMesh, runs: tuple) -> Sharding:
    """``s`` on the finer ``mesh``: every axis replaced by its run (the shard numbering is unchanged)."""
    return Sharding(
        mesh, [[r for a in axes for r in runs[a]] for axes in s.split_axes],
        partial_axes=[r for a in s.partial_axes for r in runs[a]], partial_type=s.partial_type,
        halo_sizes=s.halo_sizes or None, sharded_dims_offsets=s.sharded_dims_offsets or None,
    )


_BOUND: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _bind(mesh: Mesh, abstract: AbstractMesh, plan: "ReshardPlan") -> Mesh:
    """A `Mesh` of ``abstract``'s shape over ``mesh``'s processes: ``mesh`` or the plan's
    source or destination mesh where one matches, else one made once and cached."""
    for m in (mesh, plan.src.mesh, plan.dst.mesh):
        if isinstance(m, Mesh) and m.abstract() == abstract and (m.comm is mesh.comm or m.comm == mesh.comm):
            return m
    bound = _BOUND.setdefault(mesh, {})
    if abstract not in bound:
        bound[abstract] = Mesh(abstract.shape, abstract.axis_names, comm=mesh.comm, name=mesh.name)
    return bound[abstract]


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
    the source, summed over devices (owned data; halos are refilled after).

    Every combination of one shard per dim is held by ``size / blocks`` devices,
    so the destination total is a product; the part devices already own is a
    product over groups of dims that share mesh axes (`_self_overlap`), never a
    loop over devices:

    >>> mesh = AbstractMesh((4, 4))
    >>> lower_bound(Sharding(mesh, [[0], [1]]), Sharding(mesh, [[1], [0]]), (8, 8))
    48
    """
    shape = tuple(shape)
    return _total_volume(dst, shape) - _self_overlap(src, dst, shape)


def _total_volume(s: Sharding, shape: tuple) -> int:
    """Owned elements summed over all devices: each block is held by ``size / blocks`` devices."""
    blocks = math.prod(s.dim_split_size(d) for d in range(len(shape)))
    return s.mesh.size // blocks * math.prod(shape)


@functools.lru_cache(maxsize=256)
def _self_overlap(src: Sharding, dst: Sharding, shape: tuple) -> int:
    """Elements every device owns in both ``src`` and ``dst``, summed over devices.

    A dim's overlap depends only on the mesh axes that split it in either
    sharding, so the sum is a product over groups of dims linked by shared axes
    (times the size of every axis neither sharding uses).  In a group whose dims
    all use the same axes (a transpose, a change of offsets) only overlapping
    (source shard, destination shard) pairs count: at most ``n_src + n_dst`` per
    dim, found by merging the offsets.  Other groups are summed with numpy over
    the sub-grid of their axes.
    """
    mesh = src.mesh
    dims = [d for d in range(len(shape)) if src.dim_axes(d) or dst.dim_axes(d)]
    axes_of = {d: frozenset(src.dim_axes(d) + dst.dim_axes(d)) for d in dims}
    used = frozenset().union(*axes_of.values())
    total = math.prod(shape[d] for d in range(len(shape)) if d not in axes_of)
    total *= math.prod(n for a, n in enumerate(mesh.shape) if a not in used)
    for group in _linked(dims, axes_of):
        axes = sorted(frozenset().union(*(axes_of[d] for d in group)))
        # int64 unless a sum could overflow it (then exact Python ints, slowly)
        big = math.prod(mesh.shape[a] for a in axes) * max(math.prod(shape[d] for d in group), 1) >= 2 ** 62
        overlap = _overlap_pairs if all(axes_of[d] == set(axes) for d in group) else _overlap_grid
        total *= overlap(src, dst, shape, group, axes, object if big else np.int64)
    return total


@functools.lru_cache(maxsize=256)
def _offsets_array(s: Sharding, shape: tuple, dim: int):
    """``s.dim_offsets(shape)[dim]`` as a read-only int64 array."""
    offs = s.dim_offsets(shape)[dim]
    out = np.fromiter(offs, np.int64, len(offs))
    out.flags.writeable = False
    return out


def _linked(dims: list, axes_of: dict) -> list:
    """Groups of dims connected through shared mesh axes."""
    groups = []
    for d in dims:
        joined = [g for g in groups if any(axes_of[d] & axes_of[e] for e in g)]
        groups = [g for g in groups if g not in joined] + [sum(joined, []) + [d]]
    return groups


def _overlap_pairs(src, dst, shape, group, axes, dtype) -> int:
    """`_self_overlap` of a group of dims that all use exactly ``axes``: per dim, the
    overlapping shard pairs, keyed by the device coordinates they imply over ``axes``."""
    mesh = src.mesh
    radix = dict(zip(axes, _strides(tuple(mesh.shape[a] for a in axes))))
    keys = weights = None
    for d in group:
        oc, ow = _offsets_array(src, shape, d), _offsets_array(dst, shape, d)
        cuts = np.concatenate([oc, ow])
        cuts.sort(kind="stable")  # two sorted runs: a merge
        cuts = cuts[np.concatenate([[True], cuts[1:] != cuts[:-1]])]
        lo = cuts[:-1]
        digits, ok = {}, np.ones(len(lo), bool)
        for s, offs in ((src, oc), (dst, ow)):
            k = np.searchsorted(offs, lo, "right") - 1  # the shard holding [lo, next cut)
            for a in reversed(s.dim_axes(d)):
                k, digit = np.divmod(k, mesh.shape[a])
                if a in digits:
                    ok &= digits[a] == digit  # an axis splitting the dim in both: one coordinate
                else:
                    digits[a] = digit
        code = sum(digits[a] * radix[a] for a in axes)[ok]
        width = np.diff(cuts)[ok].astype(dtype)
        order = np.argsort(code)
        code, width = code[order], width[order]
        if keys is None:
            keys, weights = code, width
        else:
            keys, i, j = np.intersect1d(keys, code, assume_unique=True, return_indices=True)
            weights = weights[i] * width[j]
    return int(weights.sum())


def _overlap_grid(src, dst, shape, group, axes, dtype) -> int:
    """`_self_overlap` of a group of dims, summed over every coordinate of its ``axes``."""
    mesh = src.mesh
    grid = np.indices([mesh.shape[a] for a in axes], dtype=np.int64).reshape(len(axes), -1)
    coords = dict(zip(axes, grid))
    total = np.ones(grid.shape[1], dtype)
    for d in group:
        lo_s, hi_s = _bounds_on_grid(src, shape, d, coords, dtype)
        lo_d, hi_d = _bounds_on_grid(dst, shape, d, coords, dtype)
        total *= np.maximum(np.minimum(hi_s, hi_d) - np.maximum(lo_s, lo_d), 0)
    return int(total.sum())


def _bounds_on_grid(s: Sharding, shape: tuple, dim: int, coords: dict, dtype):
    offs = s.dim_offsets(shape)[dim]
    axes = s.dim_axes(dim)
    if not axes:
        return 0, offs[-1]
    k = 0
    for a in axes:
        k = k * s.mesh.shape[a] + coords[a]
    offs = np.asarray(offs, dtype)
    return offs[k], offs[k + 1]


# -- reductions -------------------------------------------------------------------


def _reduce_step(cur: Sharding, target: Sharding, shape) -> ReshardStep:
    kind = str(cur.partial_type)
    axes = cur.partial_axes
    g = math.prod(cur.mesh.shape[a] for a in axes)
    full = cur.replace(partial_axes=(), partial_type="sum")
    local = _total_volume(full, shape)
    after = scatter_target(cur, target, shape)
    if after is not None:
        d = next(d for d in range(len(shape)) if after.dim_axes(d) != cur.dim_axes(d))
        return ReshardStep("reduce_scatter", after.dim_axes(d)[len(cur.dim_axes(d)):],
                           (("reduction", kind), ("scatter_axis", d)), cur, after, local * (g - 1) // g)
    return ReshardStep("all_reduce", axes, (("reduction", kind),), cur, full, 2 * local * (g - 1) // g)


def scatter_target(cur: Sharding, target: Sharding, shape):
    """The sharding a partial ``cur`` reaches by one reduce_scatter on its way to ``target``, or None.

    That is when ``target`` (not partial) splits one dim on that dim's current
    axes followed by exactly the partial axes, and the scattered pieces nest in
    ``cur``'s blocks as the collective cuts them; otherwise the planner reduces
    with an all_reduce. Shared by `plan_reshard` and matmul's cost model.
    """
    if target.is_partial or cur.sharded_dims_offsets:
        return None
    axes = cur.partial_axes
    full = cur.replace(partial_axes=(), partial_type="sum")
    for d in range(len(shape)):
        have, want = cur.dim_axes(d), target.dim_axes(d)
        if len(want) == len(have) + len(axes) and want[: len(have)] == have and set(want[len(have):]) == set(axes):
            split = list(full.split_axes) + [()] * (len(shape) - len(full.split_axes))
            split[d] = want
            after = Sharding(full.mesh, split)
            if _pieces_nest(full, after, shape, d):
                return after
    return None


def _pieces_nest(outer: Sharding, inner: Sharding, shape, dim) -> bool:
    """Whether splitting each of ``outer``'s blocks along ``dim`` with the uneven
    rule gives exactly ``inner``'s blocks (the collectives split that way)."""
    n_out, n_in = outer.dim_split_size(dim), inner.dim_split_size(dim)
    if n_in % n_out:
        return False
    k = n_in // n_out
    outer_offs, inner_offs = _offsets_array(outer, shape, dim), _offsets_array(inner, shape, dim)
    # split_offsets(w, k)[i] == i * (w // k) + max(0, i - (k - w % k)), for every outer block at once
    width = (outer_offs[1:] - outer_offs[:-1])[:, None]
    i = np.arange(k + 1)[None, :]
    expect = outer_offs[:-1, None] + i * (width // k) + np.maximum(0, i - (k - width % k))
    return bool((inner_offs[np.arange(n_out)[:, None] * k + i] == expect).all())


# -- data movement ---------------------------------------------------------------------


def _move_step(cur: Sharding, want: Sharding, shape) -> ReshardStep:
    # Each missing element is sent once and a device's own piece never travels,
    # so the exchange moves exactly the lower bound.
    moved = lower_bound(cur, want, shape)
    if moved == 0:
        return ReshardStep("all_slice", (), (), cur, want, 0)
    for make in (_as_all_gather, _as_all_to_all):
        step = make(cur, want, shape, moved)
        if step is not None:
            return step
    if _is_permutation(cur, want, shape):
        return ReshardStep("permute", (), (), cur, want, moved)
    return ReshardStep("exchange", (), (), cur, want, moved)


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
    return outer.dim_offsets(shape)[dim] == inner.dim_offsets(shape)[dim][:: n_in // n_out]


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
    """Whether every destination block meets at most one source block.

    Along each dim, count the source shards each destination shard meets; every
    combination of one shard per dim is some device's block, so a block meets
    several source blocks iff one dim has a shard meeting two or more while no
    dim is empty."""
    most = []
    for d in range(len(shape)):
        oc, ow = _offsets_array(cur, shape, d), _offsets_array(want, shape, d)
        wide = oc[1:] > oc[:-1]
        starts, ends = oc[:-1][wide], oc[1:][wide]
        lo, hi = ow[:-1], ow[1:]
        meets = np.searchsorted(starts, hi, "left") - np.searchsorted(ends, lo, "right")
        meets[hi <= lo] = 0
        most.append(int(meets.max()))
    return 0 in most or all(m <= 1 for m in most)


# -- the exchange pattern (also used by the executor) ---------------------------------
#
# A process plans only its own pieces: along each tensor dim, the shards that meet
# an interval form a contiguous run found by bisection of the shard offsets, and a
# piece is one shard per dim, so the cost grows with the peers, not the mesh.


def _strides(mesh_shape: tuple) -> tuple:
    out, step = [], 1
    for n in reversed(mesh_shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


@functools.lru_cache(maxsize=4096)
def _dim_layout(s: Sharding, shape: tuple) -> tuple:
    """Per tensor dim ``(offsets, axis sizes, axis strides)``: the shard boundaries, and
    the sizes and linear-index strides of the mesh axes (major to minor) that number them."""
    strides = _strides(s.mesh.shape)
    return tuple(
        (offs, tuple(s.mesh.shape[a] for a in s.dim_axes(d)), tuple(strides[a] for a in s.dim_axes(d)))
        for d, offs in enumerate(s.dim_offsets(shape))
    )


def _run(offs: tuple, lo: int, hi: int) -> range:
    """The shards (boundaries ``offs``) that can meet ``[lo, hi)``; zero-width ones in it meet nothing.

    >>> _run((0, 2, 4, 7, 10), 3, 8)
    range(1, 4)
    """
    if hi <= lo:
        return range(0)
    return range(max(bisect.bisect_right(offs, lo) - 1, 0), min(bisect.bisect_left(offs, hi), len(offs) - 1))


def _shards_in(run: range, sizes: tuple, strides: tuple, pinned: dict) -> list:
    """``(k, linear offset)`` for every shard ``k`` in ``run`` whose digits (mixed radix
    over ``sizes``, major first) agree with ``pinned`` (digit position -> value); the
    offset is the sum of digit x stride.  Only sub-ranges meeting the run are visited.

    >>> _shards_in(range(1, 6), (2, 4), (4, 1), {1: 2})
    [(2, 2)]
    """
    out = []
    if not run:
        return out
    n = len(sizes)
    span = [1] * (n + 1)
    for j in range(n - 1, -1, -1):
        span[j] = span[j + 1] * sizes[j]

    def visit(j, k, lin):
        if j == n:
            out.append((k, lin))
            return
        width, first = span[j + 1], k * sizes[j]
        if j in pinned:
            digits = (pinned[j],)
        else:
            digits = range(max((run.start - first * width) // width, 0), sizes[j])
        for v in digits:
            lo = (first + v) * width
            if lo >= run.stop:
                break
            if lo + width > run.start:
                visit(j + 1, first + v, lin + v * strides[j])

    visit(0, 0, 0)
    return out


def _pieces(layout: tuple, box: Box, pinned_of) -> list | None:
    """Per dim, ``(linear offset, (lo, hi))`` for the shards meeting ``box``; None if a dim has none."""
    per_dim = []
    for d, ((offs, sizes, strides), (lo, hi)) in enumerate(zip(layout, box)):
        opts = []
        for k, lin in _shards_in(_run(offs, lo, hi), sizes, strides, pinned_of(d)):
            a, b = max(lo, offs[k]), min(hi, offs[k + 1])
            if a < b:
                opts.append((lin, (a, b)))
        if not opts:
            return None
        per_dim.append(opts)
    return per_dim


def _combine(base: int, per_dim: list, extra=(0,)) -> tuple:
    """Every choice of one option per dim: ``(base + offsets + e, box)`` for each ``e`` in ``extra``, sorted."""
    acc = [(base, ())]
    for opts in per_dim:
        acc = [(lin + o, box + (iv,)) for lin, box in acc for o, iv in opts]
    if extra != (0,):
        acc = [(lin + e, box) for lin, box in acc for e in extra]
    acc.sort()
    return tuple(acc)


@functools.lru_cache(maxsize=4096)
def exchange_recvs(cur: Sharding, want: Sharding, shape: tuple, dest: int) -> tuple:
    """``(source, global box)`` pieces that together make ``dest``'s destination block,
    by source.  Each comes from the holder that agrees with ``dest`` on every mesh axis
    the source does not split (so replicas share the work and partial slots stay)."""
    mesh = cur.mesh
    c = mesh.multi_index(dest)
    strides = _strides(mesh.shape)
    split = {a for axes in cur.split_axes for a in axes}
    base = sum(c[a] * strides[a] for a in range(mesh.ndim) if a not in split)
    per_dim = _pieces(_dim_layout(cur, shape), _owned_box(want, shape, dest), lambda d: {})
    return () if per_dim is None else _combine(base, per_dim)


@functools.lru_cache(maxsize=4096)
def exchange_sends(cur: Sharding, want: Sharding, shape: tuple, source: int) -> tuple:
    """``(dest, global box)`` pieces ``source`` sends (its own piece included, dest == source), by dest."""
    mesh = cur.mesh
    c = mesh.multi_index(source)
    strides = _strides(mesh.shape)
    split = {a for axes in cur.split_axes for a in axes}
    wanted = {a for axes in want.split_axes for a in axes}
    # destinations agree with the source on the axes the source does not split
    base = sum(c[a] * strides[a] for a in range(mesh.ndim) if a not in split and a not in wanted)

    def pinned(d):
        return {j: c[a] for j, a in enumerate(want.dim_axes(d)) if a not in split}

    per_dim = _pieces(_dim_layout(want, shape), _owned_box(cur, shape, source), pinned)
    if per_dim is None:
        return ()
    # the destination replicates along axes the source splits and it does not: every replica needs the piece
    free = [[v * strides[a] for v in range(mesh.shape[a])] for a in sorted(split - wanted)]
    return _combine(base, per_dim, [sum(x) for x in itertools.product(*free)])


@functools.lru_cache(maxsize=256)
def gather_sizes(step: ReshardStep, shape: tuple, device: int) -> tuple:
    """Sizes along the gather axis of the pieces ``device``'s group gathers in an
    ``all_gather`` step, in group order (the group's shards of that dim, in a row).

    >>> mesh = AbstractMesh((2, 3))
    >>> src = Sharding(mesh, [[0, 1]], sharded_dims_offsets=[0, 1, 3, 6, 7, 9, 12])
    >>> step = plan_reshard(src, Sharding(mesh, [[0]], sharded_dims_offsets=[0, 6, 12]), (12,)).steps[0]
    >>> step.op, gather_sizes(step, (12,), 4)
    ('all_gather', (1, 2, 3))
    """
    d = dict(step.attrs)["gather_axis"]
    offs = step.before.dim_offsets(shape)[d]
    k = step.before.shard_index(d, device)
    n = step.before.mesh.axes_size(step.mesh_axes)
    # the gathered axes are the minor end of the dim's axes: the group's shards are consecutive
    first = k - k % n
    return tuple(offs[first + i + 1] - offs[first + i] for i in range(n))


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
    from . import collectives

    shape = plan.global_shape
    if 0 in shape:  # nothing to move, yet the empty blocks' shapes may change (a dim of 1 row over 2 devices)
        block = plan.dst.shard_shape(shape, mesh.rank)
        return out if out is not None else np.empty(block, owned.dtype)
    x = owned
    steps = [s for s in plan.steps if s.op != "update_halo"]
    if steps:  # the steps' mesh, finer than ``mesh`` when one side uses sub-axes
        mesh = _bind(mesh, steps[0].before.mesh, plan)
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
            x = collectives.all_gather(x, mesh, step.mesh_axes, d, sizes=gather_sizes(step, shape, mesh.rank),
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
    if any(n1 <= n0 for n0, n1 in need):  # an empty block: its shape, whatever this process held
        return np.empty(tuple(max(0, n1 - n0) for n0, n1 in need), x.dtype)
    return x[tuple(slice(n0 - h0, n1 - h0) for (n0, n1), (h0, _) in zip(need, have))]


@functools.lru_cache(maxsize=256)
def _exchange_program(before: Sharding, after: Sharding, shape: tuple, rank: int):
    """This rank's sends and receives as local slices: pure, cached per plan."""
    have = _owned_box(before, shape, rank)
    need = _owned_box(after, shape, rank)

    def local(box, origin):
        return tuple([slice(b0 - o0, b1 - o0) for (b0, b1), (o0, _) in zip(box, origin)])

    sends = tuple((dest, local(box, have)) for dest, box in exchange_sends(before, after, shape, rank))
    recvs = tuple((src, local(box, need)) for src, box in exchange_recvs(before, after, shape, rank))
    return sends, recvs, tuple(b - a for a, b in need)


_TAG_EXCHANGE = 0x5e5


def _exchange(step: ReshardStep, x, shape, mesh, out):
    from mpi4py import MPI

    from . import _collfront
    from .runtime import mpi as _mpi
    from ._blockcopy import copy_block

    sends, recvs, out_shape = _exchange_program(_abstract(step.before), _abstract(step.after), shape, mesh.rank)
    if out is None:
        out = np.empty(out_shape, x.dtype)
    comm = mesh.comm
    peers = _mpi.Peers(mesh, tuple(sorted({d for d, _ in recvs} | {d for d, _ in sends})))
    with _mpi.internal("reshard", "point-to-point exchange", peers):
        unpack, rbufs, sbufs = [], [], []
        for src, sl in recvs:
            if src == mesh.rank:
                continue
            view = out[sl]
            if view.flags.c_contiguous:
                buf = view
            else:
                buf = np.empty(view.shape, x.dtype)
                unpack.append((view, buf))
            rbufs.append((buf, src))
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
            sbufs.append((view, dest))
        # the MPI library's Irecv/Isend/Waitall from C (meshrt._collfront), else mpi4py's
        if not _collfront.exchange(comm, rbufs, sbufs, _TAG_EXCHANGE):
            reqs = [comm.Irecv([b.view(np.uint8).reshape(-1) if b.size else b, MPI.BYTE], p, _TAG_EXCHANGE)
                    for b, p in rbufs]
            reqs += [comm.Isend([b.view(np.uint8).reshape(-1) if b.size else b, MPI.BYTE], p, _TAG_EXCHANGE)
                     for b, p in sbufs]
            MPI.Request.Waitall(reqs)
    for view, buf in unpack:
        copy_block(view, buf)
    return out
